// Stage 03 — the queue pair state machine (docs/03-qp-state.md).
//
// Reading order, as the chapter tells it:
//   qp_state.cpp                  main: the device, a PD, a buffer, one CQ and two RC QPs
//   common/src/qp.cpp             ibv_create_qp, the one ibv_modify_qp and the walk to RTS
//   common/src/transitions.cpp    the three steps as attributes plus the one mask table
//   connect.cpp                   both QPs walked to RTS, each step read back from the device
//   options.cpp                   the knobs on the command line (PSNs, MTU, timers)
//   exchange.cpp                  one Send each way, every wait bounded
// with their declarations in common/include/rdma_tutorial/qp.hpp (qp_params
// and its defaults), completion.hpp (poll_cq_until, check_poll) and
// error.hpp (the error idiom).
//
// The QP code lives in common/ because every later stage connects its QPs
// the same way; this stage is where it is taught.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "rdma_tutorial/command_line.hpp"
#include "rdma_tutorial/qp.hpp"

namespace stage03 {

// options.cpp: qp_state's command line, the device options every stage
// shares plus the knobs of the connection.
struct options {
  rdma::device_options device;
  std::optional<ibv_mtu> mtu;   // empty: the port's active_mtu
  std::uint32_t psn_a = 4000;   // QP A's sq_psn (QP B's rq_psn)
  std::uint32_t psn_b = 2000;   // QP B's sq_psn (QP A's rq_psn)
  rdma::qp_params params;       // timeout, retry_cnt, rnr_retry, min_rnr_timer
  int wait_ms = 2000;           // bound on every CQ wait
  std::size_t size = 15;        // bytes per message: the 15-byte text, zero-padded
};

// 256, 512, 1024, 2048, 4096 -> IBV_MTU_*; empty for anything else.
std::optional<ibv_mtu> mtu_from_bytes(long bytes);

// Returns false after --help. Throws rdma::usage_error on a bad command line.
bool parse_options(int argc, const char* const* argv, options& out);

// The parameters as the QPs will use them: the options, with path_mtu
// defaulting to the port's active_mtu and our GID entry. A path_mtu above
// active_mtu is refused here: rxe would accept it and then send packets the
// link cannot carry.
rdma::qp_params params_from_options(const options& opts, ibv_mtu active_mtu, int gid_index);

// connect.cpp
struct qp_end {
  std::string_view label;  // "QP A"
  ibv_qp* qp;
  std::uint32_t sq_psn;
};
// One QP from RESET to RTS, printing after each step what ibv_query_qp
// reads back from the device for that step's mask.
void connect_qp(const qp_end& end, const rdma::peer_info& peer, const rdma::qp_params& params);
// Both QPs, each with the other as its peer.
void connect_pair(const qp_end& a, const qp_end& b, const ibv_gid& gid, const rdma::qp_params& params);

// exchange.cpp
struct qp_buffers {
  std::string_view label;
  ibv_qp* qp;
  std::span<char> send_buf;
  std::span<char> recv_buf;
  std::uint32_t lkey;
  std::uint32_t max_inline_data;
};
// Sends `size` bytes (`text`, then zeros; size >= text.size()) from `from`
// to `to` and waits, at most wait_ms, for both completions.
void send_message(ibv_cq* cq, const qp_buffers& from, const qp_buffers& to, std::string_view text,
                  std::size_t size, std::uint64_t first_wr_id, int wait_ms);

}  // namespace stage03
