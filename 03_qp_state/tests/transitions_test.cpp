// The transition builders and mask helpers of stage 03, without a device.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstring>

#include "../stage.hpp"

using namespace stage03;

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

TEST_CASE("RESET to INIT should carry exactly port, pkey index and access flags") {
  const transition t = init_transition(1, IBV_ACCESS_REMOTE_WRITE);
  CHECK(t.from == IBV_QPS_RESET);
  CHECK(t.to == IBV_QPS_INIT);
  CHECK(t.attr.qp_state == IBV_QPS_INIT);
  CHECK(t.mask == required_mask(IBV_QPS_RESET, IBV_QPS_INIT));
  CHECK(mask_names(t.mask) == "STATE|ACCESS_FLAGS|PKEY_INDEX|PORT");
  CHECK(t.attr.port_num == 1);
  CHECK(t.attr.pkey_index == 0);
  CHECK(t.attr.qp_access_flags == IBV_ACCESS_REMOTE_WRITE);
}

TEST_CASE("INIT to RTR should address the peer through the GRH with its QPN and PSN") {
  path_params path;
  path.port = 1;
  path.gid_index = 3;
  path.path_mtu = IBV_MTU_2048;
  path.min_rnr_timer = 14;
  const peer_info peer = some_peer();
  const transition t = rtr_transition(peer, path);
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
  CHECK(t.attr.ah_attr.port_num == 1);
}

TEST_CASE("RTR to RTS should carry our sq_psn and the retry knobs") {
  path_params path;
  path.timeout = 10;
  path.retry_cnt = 2;
  path.rnr_retry = 7;
  const transition t = rts_transition(4242, path);
  CHECK(t.to == IBV_QPS_RTS);
  CHECK(t.mask == required_mask(IBV_QPS_RTR, IBV_QPS_RTS));
  CHECK(mask_names(t.mask) == "STATE|TIMEOUT|RETRY_CNT|RNR_RETRY|MAX_QP_RD_ATOMIC|SQ_PSN");
  CHECK(t.attr.sq_psn == 4242);
  CHECK(t.attr.timeout == 10);
  CHECK(t.attr.retry_cnt == 2);
  CHECK(t.attr.rnr_retry == 7);
  CHECK(t.attr.max_rd_atomic >= 1);
}

TEST_CASE("the values line should show only what the mask passes") {
  path_params path;
  const transition t = rtr_transition(some_peer(), path);
  const std::string values = describe_values(t);
  CHECK(values.find("dest_qp_num 0x1234") != std::string::npos);
  CHECK(values.find("rq_psn 777") != std::string::npos);
  CHECK(values.find("dgid ::ffff:192.0.0.1") != std::string::npos);
  CHECK(values.find("sq_psn") == std::string::npos);
  CHECK(describe_values(init_transition(1, 0)) == "port_num 1, pkey_index 0, qp_access_flags none");
}

TEST_CASE("a failed step's hint should name the missing mask bits") {
  transition t = rtr_transition(some_peer(), path_params{});
  t.mask &= ~(IBV_QP_MIN_RNR_TIMER | IBV_QP_AV);
  const std::string hint = modify_hint(t, EINVAL);
  CHECK(hint.starts_with("the mask lacks AV|MIN_RNR_TIMER; INIT -> RTR needs "));
}

TEST_CASE("a failed step with a complete mask should point at the values") {
  CHECK(modify_hint(rtr_transition(some_peer(), path_params{}), EINVAL).find("sgid_index") != std::string::npos);
  CHECK(modify_hint(init_transition(1, 0), EINVAL).find("port_num") != std::string::npos);
  CHECK(modify_hint(rts_transition(1, path_params{}), EINVAL).find("retry_cnt") != std::string::npos);
}

TEST_CASE("state names should follow the verbs enum") {
  CHECK(state_name(IBV_QPS_RESET) == "RESET");
  CHECK(state_name(IBV_QPS_RTR) == "RTR");
  CHECK(state_name(IBV_QPS_ERR) == "ERR");
  CHECK(required_mask(IBV_QPS_RTS, IBV_QPS_ERR) == 0);
}
