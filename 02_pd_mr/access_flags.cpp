// The access flags of each demo buffer, chosen for what the buffer is for and
// nothing more. Every remote flag is a door the peer can walk through, so a
// buffer gets only the ones its role needs:
//
//   - the NIC writes into a receive buffer: LOCAL_WRITE;
//   - a peer's RDMA Write lands in a target buffer: REMOTE_WRITE, and the
//     verbs demand LOCAL_WRITE with it (ibv_reg_mr fails with EINVAL without);
//   - a peer's RDMA Read only reads: REMOTE_READ alone is allowed.
// (Exercise: exercises/remote_write_alone.cpp is this file with one flag missing.)
#include "stage.hpp"

namespace stage02 {

std::vector<buffer_plan> buffer_plans() {
  return {
      {"recv", "our receives land here", IBV_ACCESS_LOCAL_WRITE},
      {"target", "the peer's RDMA Writes land here", IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE},
      {"source", "the peer RDMA-Reads from here", IBV_ACCESS_REMOTE_READ},
  };
}

}  // namespace stage02
