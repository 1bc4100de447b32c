// EXERCISE: sending needs RTS, not just RTR
// SYMPTOM: ibv_post_send\(QP B\) failed
//
// This is connect.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh 03_qp_state/stop_at_rtr
//
// TODO: QP B only answers, so whoever wrote this stopped it at RTR, "ready to
// receive". The first message (A -> B) arrives; the answer cannot leave.
// Bring QP B all the way to RTS. (Hint: docs/03-qp-state.md, section
// "RTR -> RTS".)
#include <cstdio>
#include <string>

#include "stage.hpp"

namespace stage03 {

namespace {

void connect_qp_rtr(ibv_qp* qp, std::string_view label, const peer_info& peer, const path_params& path) {
  std::printf("%.*s (qp_num 0x%x) to peer qp_num 0x%x\n", static_cast<int>(label.size()), label.data(), qp->qp_num,
              peer.qp_num);
  std::printf("  %-14s now %s\n", "created", state_name(query_state(qp, label)).c_str());
  modify_qp(qp, label, init_transition(path.port, 0));
  modify_qp(qp, label, rtr_transition(peer, path));
}

}  // namespace

void connect_qp_rts(ibv_qp* qp, std::string_view label, std::uint32_t sq_psn, const peer_info& peer,
                    const path_params& path) {
  connect_qp_rtr(qp, label, peer, path);
  modify_qp(qp, label, rts_transition(sq_psn, path));
}

void connect_pair(const qp_end& a, const qp_end& b, const ibv_gid& gid, const path_params& path) {
  connect_qp_rts(a.qp, a.label, a.sq_psn, peer_info{b.qp->qp_num, b.sq_psn, gid}, path);
  // QP B receives A's message, and RTR is "ready to receive"...
  connect_qp_rtr(b.qp, b.label, peer_info{a.qp->qp_num, a.sq_psn, gid}, path);
}

}  // namespace stage03
