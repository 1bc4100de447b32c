// Connecting an RC QP: RESET -> INIT -> RTR -> RTS, with the peer's QPN, PSN
// and GID. Nothing is sent on the wire by any of these steps; they only tell
// the local device what to expect and how to send.
#include <cstdio>
#include <string>

#include "stage.hpp"

namespace stage03 {

void connect_qp_rts(ibv_qp* qp, std::string_view label, std::uint32_t sq_psn, const peer_info& peer,
                    const path_params& path) {
  std::printf("%.*s (qp_num 0x%x) to peer qp_num 0x%x\n", static_cast<int>(label.size()), label.data(), qp->qp_num,
              peer.qp_num);
  std::printf("  %-14s now %s\n", "created", state_name(query_state(qp, label)).c_str());
  modify_qp(qp, label, init_transition(path.port, 0));
  modify_qp(qp, label, rtr_transition(peer, path));
  modify_qp(qp, label, rts_transition(sq_psn, path));
}

// Both ends are in this process, so each one's "peer info" is simply read
// from the other; stage 04 gets the same three values over TCP.
void connect_pair(const qp_end& a, const qp_end& b, const ibv_gid& gid, const path_params& path) {
  connect_qp_rts(a.qp, a.label, a.sq_psn, peer_info{b.qp->qp_num, b.sq_psn, gid}, path);
  connect_qp_rts(b.qp, b.label, b.sq_psn, peer_info{a.qp->qp_num, a.sq_psn, gid}, path);
}

}  // namespace stage03
