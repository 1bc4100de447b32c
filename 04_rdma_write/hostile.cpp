// Not the lesson: the client that lies in its half of the handshake
// (--hostile KIND), to show what the server has to take on trust
// (docs/04-rdma-write.md, "What the handshake is trusted for"). The verbs
// check none of it: the server's QP takes whatever the handshake says.
#include <cstdio>
#include <string>

#include "rdma_tutorial/command_line.hpp"
#include "stage.hpp"

namespace stage04 {

hostile_kind parse_hostile(std::string_view name) {
  if (name == "psn-behind") return hostile_kind::psn_behind;
  if (name == "other-qpn") return hostile_kind::other_qpn;
  throw rdma::usage_error("--hostile takes 'psn-behind' or 'other-qpn', got '" + std::string(name) + "'");
}

rdma::wire::endpoint lie(rdma::wire::endpoint& ours, hostile_kind kind) {
  if (kind == hostile_kind::psn_behind) {
    // From the upper half of the 24-bit PSN space: what Soft-RoCE (Linux
    // 6.1) then does with our packets is the same on every run (chapter).
    ours.psn = 0x800000 | (ours.psn & 0x3fffff);
  }
  rdma::wire::endpoint told = ours;
  switch (kind) {
    case hostile_kind::none: break;
    case hostile_kind::psn_behind: told.psn = (ours.psn + 256) & 0xffffff; break;
    case hostile_kind::other_qpn: told.qp_num = (ours.qp_num + 256) & 0xffffff; break;
  }
  std::printf("hostile: we send from PSN 0x%x as QP 0x%x, and tell the server PSN 0x%x, QP 0x%x\n", ours.psn,
              ours.qp_num, told.psn, told.qp_num);
  return told;
}

}  // namespace stage04
