// EXERCISE: the buffer the peer is to write cannot be registered
//
// This is access_flags.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh remote_write_alone
// As shipped the program stops at the second buffer with
//   pd_mr: ibv_reg_mr(target, REMOTE_WRITE) failed (EINVAL): Invalid argument
//
// TODO: the target buffer asks for exactly what the peer needs, which looks
// minimal, and the kernel still refuses it. Read which combinations of
// access flags ibv_reg_mr(3) refuses. The peer must still be able to write
// the buffer, and be given no more than that. (Hint: docs/02-pd-mr.md,
// section "Access flags".)
#include "stage.hpp"

namespace stage02 {

std::vector<buffer_plan> buffer_plans() {
  return {
      {"recv", "our receives land here", IBV_ACCESS_LOCAL_WRITE},
      {"target", "the peer's RDMA Writes land here", IBV_ACCESS_REMOTE_WRITE},  // TODO
      {"source", "the peer RDMA-Reads from here", IBV_ACCESS_REMOTE_READ},
  };
}

}  // namespace stage02
