// Connecting an RC queue pair, as taught in stage 03 (docs/03-qp-state.md),
// for every stage after it.
//
//   transitions.cpp  the three steps RESET -> INIT -> RTR -> RTS, each an
//                    ibv_qp_attr plus its mask, the one table of the bits each
//                    step requires, and the names and hints around them (pure);
//   qp.cpp           creating an RC QP, the one ibv_modify_qp call, and
//                    connect_qp_rts, which walks a QP to RTS with it.
//
// Nothing here prints: a stage that wants to show each step passes a
// step_observer to connect_qp_rts.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "rdma_tutorial/handles.hpp"

namespace rdma {

// One ibv_modify_qp call: the attributes and the mask saying which of them
// the device reads. Fields outside the mask are ignored.
struct transition {
  ibv_qp_state from = IBV_QPS_RESET;
  ibv_qp_state to = IBV_QPS_RESET;
  ibv_qp_attr attr{};
  int mask = 0;
};

// What a QP must know about the other end before RTR. In stage 03 both ends
// live in one process; from stage 04 on this crosses the network first.
struct peer_info {
  std::uint32_t qp_num = 0;
  std::uint32_t psn = 0;  // the first PSN the peer sends (its sq_psn) = our rq_psn
  ibv_gid gid{};
};

// How this QP reaches its peer and behaves as a sender (docs/03-qp-state.md,
// sections "The mask — common/src/transitions.cpp" and "RTR → RTS: how to
// send, how long to wait").
struct qp_params {
  std::uint8_t port = 1;
  std::uint8_t gid_index = 0;        // our GID entry (rdma::choose_gid)
  ibv_mtu path_mtu = IBV_MTU_1024;   // equal at both ends, <= active_mtu
  unsigned qp_access_flags = 0;      // what the peer may do here: none for Sends, REMOTE_WRITE from stage 04
  // The retry knobs (RTR -> RTS). 7 is special: rnr_retry 7 retries forever
  // by the spec; retry_cnt 7 is seven retries by the spec, but Soft-RoCE
  // retries forever. Defaults of 3 make a broken connection fail in well
  // under a second instead of hanging.
  std::uint8_t timeout = 14;         // ACK timeout 4.096 us * 2^14 = 67 ms; 0 waits forever
  std::uint8_t retry_cnt = 3;        // resends of unacknowledged packets
  std::uint8_t rnr_retry = 3;        // retries after "receiver not ready" NAKs
  std::uint8_t min_rnr_timer = 12;   // how long our peer waits after our RNR NAK: 12 is 0.64 ms,
                                     // 1 the shortest (0.01 ms), 0 the longest (655.36 ms)
  // The address vector's traffic class: on RoCE v2 the IP header's type of
  // service byte of every packet we send (DSCP x 4 + ECN), which a fabric's
  // switches classify on (a PFC priority, an ECN queue). 0: best effort.
  std::uint8_t traffic_class = 0;
};

// The ACK timeout of the stages whose peers may sit across the two-guest
// wire (06, 08, 09): rdma::default_ack_timeout (transport.hpp), 18 on
// Soft-RoCE and 14 elsewhere, or their --ack-timeout (waiting.hpp says why).

// transitions.cpp ------------------------------------------------------------

// The bits an RC QP must pass for a forward step, from the one table in
// transitions.cpp; 0 for a step it does not list.
int required_mask(ibv_qp_state from, ibv_qp_state to);

// Each step with exactly its required mask.
transition init_transition(const qp_params& params);
transition rtr_transition(const peer_info& peer, const qp_params& params);
transition rts_transition(std::uint32_t sq_psn, const qp_params& params);

std::string qp_state_name(ibv_qp_state state);  // "RESET", "INIT", "RTR", ...
std::string mask_names(int mask);               // "STATE|ACCESS_FLAGS|PKEY_INDEX|PORT" (enum order)
// The masked fields and their values: "port_num 1, pkey_index 0, ...".
std::string describe_values(const ibv_qp_attr& attr, int mask);
// Why ibv_modify_qp may have refused `t` with `err`: the bits the mask lacks,
// else (EINVAL) the mask it passed and the values usually wrong for the step;
// "" when the table in error.cpp knows better.
std::string modify_hint(const transition& t, int err);

// qp.cpp ---------------------------------------------------------------------

// ibv_create_qp of an RC QP in `pd` (sq_sig_all 0: only signaled sends
// complete). `cap` is what to ask for; on return it holds what ibv_create_qp
// wrote back. (That is not always what the queues really hold: ibv_query_qp
// tells, see chapter 03.) `label` names the QP in errors: "QP A".
qp_ptr create_rc_qp(ibv_pd* pd, ibv_cq* send_cq, ibv_cq* recv_cq, ibv_qp_cap& cap, std::string_view label);

// ibv_query_qp of the fields in `mask`.
ibv_qp_attr query_qp(ibv_qp* qp, int mask, std::string_view label, ibv_qp_init_attr* init_attr = nullptr);
ibv_qp_state query_qp_state(ibv_qp* qp, std::string_view label);

// The one ibv_modify_qp: throws rdma::verbs_error naming the QP and the step,
// with modify_hint as its likely fix.
void modify_qp(ibv_qp* qp, const transition& t, std::string_view label);

// Called after each step that succeeded, before the next one.
using step_observer = std::function<void(const transition&)>;

// RESET -> INIT -> RTR -> RTS, sending from `sq_psn` and expecting `peer`.
void connect_qp_rts(ibv_qp* qp, std::string_view label, std::uint32_t sq_psn, const peer_info& peer,
                    const qp_params& params, const step_observer& after_step = {});

}  // namespace rdma
