// EXERCISE: QP B receives, but its answer cannot be posted
//
// This is connect.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh stop_at_rtr
//
// TODO: QP B only answers. The first message (A -> B) arrives; posting the
// answer fails, before anything reaches the wire. Compare the steps each QP
// is taken through, and what each state allows. (Hint: docs/03-qp-state.md,
// section "The state machine".)
#include <cstdio>
#include <string>

#include "stage.hpp"

namespace stage03 {

namespace {

void show_step(const qp_end& end, const rdma::transition& t) {
  const ibv_qp_attr now = rdma::query_qp(end.qp, t.mask, end.label);
  const std::string step = rdma::qp_state_name(t.from) + " -> " + rdma::qp_state_name(t.to);
  const std::string held = rdma::describe_values(now, t.mask);
  const std::string asked = rdma::describe_values(t.attr, t.mask);
  std::printf("  %-14s now %-5s mask %s\n", step.c_str(), rdma::qp_state_name(now.qp_state).c_str(),
              rdma::mask_names(t.mask).c_str());
  std::printf("  %-14s %s\n", "", held.c_str());
  // A device may adjust a value it was given; then both are shown.
  if (held != asked) std::printf("  %-14s (asked: %s)\n", "", asked.c_str());
}

}  // namespace

void connect_qp(const qp_end& end, const rdma::peer_info& peer, const rdma::qp_params& params) {
  std::printf("%.*s (qp_num 0x%x) to peer qp_num 0x%x\n", static_cast<int>(end.label.size()), end.label.data(),
              end.qp->qp_num, peer.qp_num);
  std::printf("  %-14s now %s\n", "created", rdma::qp_state_name(rdma::query_qp_state(end.qp, end.label)).c_str());
  rdma::connect_qp_rts(end.qp, end.label, end.sq_psn, peer, params,
                       [&](const rdma::transition& t) { show_step(end, t); });
}

// Both ends are in this process, so each one's peer info is simply read from
// the other; stage 04 gets the same three values over TCP.
void connect_pair(const qp_end& a, const qp_end& b, const ibv_gid& gid, const rdma::qp_params& params) {
  connect_qp(a, rdma::peer_info{b.qp->qp_num, b.sq_psn, gid}, params);
  // QP B only answers, and RTR is "ready to receive": walk it that far.  // TODO
  const rdma::peer_info peer_of_b{a.qp->qp_num, a.sq_psn, gid};  // TODO
  rdma::modify_qp(b.qp, rdma::init_transition(params), b.label);  // TODO
  rdma::modify_qp(b.qp, rdma::rtr_transition(peer_of_b, params), b.label);  // TODO
}

}  // namespace stage03
