// The transition builders and the mask table, without a device.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstring>

#include "rdma_tutorial/qp.hpp"

using namespace rdma;

namespace {

peer_info some_peer() {
  peer_info peer;
  peer.qp_num = 0x1234;
  peer.psn = 777;
  peer.gid.raw[10] = 0xff;
  peer.gid.raw[11] = 0xff;
  peer.gid.raw[12] = 192;
  peer.gid.raw[15] = 1;
  return peer;
}

}  // namespace

TEST_CASE("the required masks should be the specification's, bit for bit") {
  // ibv_modify_qp(3), "RC QP" column: written out here as the man page
  // spells them, so the table in transitions.cpp is checked against a second
  // reading of the spec, not against itself.
  CHECK(mask_names(required_mask(IBV_QPS_RESET, IBV_QPS_INIT)) == "STATE|ACCESS_FLAGS|PKEY_INDEX|PORT");
  CHECK(mask_names(required_mask(IBV_QPS_INIT, IBV_QPS_RTR)) ==
        "STATE|AV|PATH_MTU|RQ_PSN|MIN_RNR_TIMER|MAX_DEST_RD_ATOMIC|DEST_QPN");
  CHECK(mask_names(required_mask(IBV_QPS_RTR, IBV_QPS_RTS)) ==
        "STATE|TIMEOUT|RETRY_CNT|RNR_RETRY|MAX_QP_RD_ATOMIC|SQ_PSN");
  CHECK(required_mask(IBV_QPS_RTS, IBV_QPS_ERR) == 0);
}

TEST_CASE("RESET to INIT should carry exactly port, pkey index and access flags") {
  qp_params params;
  params.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  const transition t = init_transition(params);
  CHECK(t.from == IBV_QPS_RESET);
  CHECK(t.to == IBV_QPS_INIT);
  CHECK(t.attr.qp_state == IBV_QPS_INIT);
  CHECK(t.mask == required_mask(IBV_QPS_RESET, IBV_QPS_INIT));
  CHECK(t.attr.port_num == 1);
  CHECK(t.attr.pkey_index == 0);
  CHECK(t.attr.qp_access_flags == IBV_ACCESS_REMOTE_WRITE);
}

TEST_CASE("INIT to RTR should address the peer through the GRH with its QPN and PSN") {
  qp_params params;
  params.port = 2;
  params.gid_index = 3;
  params.path_mtu = IBV_MTU_2048;
  params.min_rnr_timer = 14;
  const peer_info peer = some_peer();
  const transition t = rtr_transition(peer, params);
  CHECK(t.to == IBV_QPS_RTR);
  CHECK(t.attr.qp_state == IBV_QPS_RTR);
  CHECK(t.mask == required_mask(IBV_QPS_INIT, IBV_QPS_RTR));
  CHECK(t.attr.dest_qp_num == 0x1234);
  CHECK(t.attr.rq_psn == 777);
  CHECK(t.attr.path_mtu == IBV_MTU_2048);
  CHECK(t.attr.min_rnr_timer == 14);
  CHECK(t.attr.max_dest_rd_atomic >= 1);
  CHECK(t.attr.ah_attr.is_global == 1);
  CHECK(std::memcmp(t.attr.ah_attr.grh.dgid.raw, peer.gid.raw, sizeof peer.gid.raw) == 0);
  CHECK(t.attr.ah_attr.grh.sgid_index == 3);
  CHECK(t.attr.ah_attr.grh.hop_limit > 0);
  CHECK(t.attr.ah_attr.port_num == 2);
}

TEST_CASE("RTR to RTS should carry our sq_psn and the retry knobs") {
  qp_params params;
  params.timeout = 10;
  params.retry_cnt = 2;
  params.rnr_retry = 7;
  const transition t = rts_transition(4242, params);
  CHECK(t.to == IBV_QPS_RTS);
  CHECK(t.mask == required_mask(IBV_QPS_RTR, IBV_QPS_RTS));
  CHECK(t.attr.sq_psn == 4242);
  CHECK(t.attr.timeout == 10);
  CHECK(t.attr.retry_cnt == 2);
  CHECK(t.attr.rnr_retry == 7);
  CHECK(t.attr.max_rd_atomic >= 1);
}

TEST_CASE("the defaults should give up on a dead peer instead of retrying forever") {
  const qp_params defaults;
  CHECK(defaults.retry_cnt < 7);
  CHECK(defaults.rnr_retry < 7);
  CHECK(defaults.timeout > 0);
}

TEST_CASE("the values line should show only what the mask passes") {
  const transition t = rtr_transition(some_peer(), qp_params{});
  const std::string values = describe_values(t.attr, t.mask);
  CHECK(values.find("dest_qp_num 0x1234") != std::string::npos);
  CHECK(values.find("rq_psn 777") != std::string::npos);
  CHECK(values.find("dgid ::ffff:192.0.0.1") != std::string::npos);
  CHECK(values.find("sq_psn") == std::string::npos);
  const transition init = init_transition(qp_params{});
  CHECK(describe_values(init.attr, init.mask) == "port_num 1, pkey_index 0, qp_access_flags none");
}

TEST_CASE("a failed step's hint should name the bits its mask lacks") {
  transition t = rtr_transition(some_peer(), qp_params{});
  t.mask &= ~(IBV_QP_MIN_RNR_TIMER | IBV_QP_AV);
  CHECK(modify_hint(t, EINVAL).starts_with("the mask lacks AV|MIN_RNR_TIMER; INIT -> RTR needs "));
}

TEST_CASE("a failed step with a complete mask should show the mask and point at the values") {
  const transition rtr = rtr_transition(some_peer(), qp_params{});
  const std::string hint = modify_hint(rtr, EINVAL);
  CHECK(hint.starts_with("the mask was STATE|AV|PATH_MTU|RQ_PSN|MIN_RNR_TIMER|MAX_DEST_RD_ATOMIC|DEST_QPN "));
  CHECK(hint.find("sgid_index") != std::string::npos);
  CHECK(modify_hint(init_transition(qp_params{}), EINVAL).find("port_num") != std::string::npos);
  CHECK(modify_hint(rts_transition(1, qp_params{}), EINVAL).find("retry_cnt") != std::string::npos);
}

TEST_CASE("an errno other than EINVAL should leave the hint to the error table") {
  CHECK(modify_hint(rtr_transition(some_peer(), qp_params{}), ENETUNREACH).empty());
}

TEST_CASE("state names should follow the verbs enum") {
  CHECK(qp_state_name(IBV_QPS_RESET) == "RESET");
  CHECK(qp_state_name(IBV_QPS_RTR) == "RTR");
  CHECK(qp_state_name(IBV_QPS_ERR) == "ERR");
}
