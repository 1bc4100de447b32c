// qp_state's command line: the device options every stage shares, plus the
// knobs of the connection (chapter sections "PSNs", "Path MTU" and
// "RTR -> RTS: how to send, how long to wait").
#pragma once

#include <cstdint>
#include <optional>

#include "rdma_tutorial/options.hpp"
#include "stage.hpp"

namespace stage03 {

struct options {
  rdma::device_options device;
  std::optional<ibv_mtu> mtu;   // empty: the port's active_mtu
  std::uint32_t psn_a = 4000;   // QP A's sq_psn (QP B's rq_psn)
  std::uint32_t psn_b = 2000;   // QP B's sq_psn (QP A's rq_psn)
  path_params path;             // timeout, retry_cnt, rnr_retry, min_rnr_timer
  int wait_ms = 2000;           // bound on every CQ wait
  std::size_t size = 15;        // bytes per message: the 15-byte text, zero-padded
};

// 256, 512, 1024, 2048, 4096 -> IBV_MTU_*; empty for anything else.
std::optional<ibv_mtu> mtu_from_bytes(long bytes);

// Returns false after --help. Throws rdma::usage_error on a bad command line.
bool parse_options(int argc, const char* const* argv, options& out);

// The path as the QPs will use it: the options, with path_mtu defaulting to
// the port's active_mtu. A path_mtu above active_mtu is refused here: rxe
// would accept it and then send packets the link cannot carry.
path_params path_from_options(const options& opts, ibv_mtu active_mtu);

}  // namespace stage03
