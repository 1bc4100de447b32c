// Many sends in flight, as taught in stage 04 (docs/04-rdma-write.md,
// section "Many writes"), for every stage after it that streams.
//
// Three habits make a stream fast:
//   a window   up to `depth` WRs in flight: the wire never waits for us;
//   selective  only one WR in `signal_every` asks for a completion; a QP's
//   signaling  sends complete in order, so that one completing means every
//              WR before it completed too;
//   batching   the free part of the window is posted as one linked list of
//              WRs (one ibv_post_send), and ibv_poll_cq takes up to 16
//              completions a call.
// Unsignaled WRs still occupy the send queue until a later signaled one
// completes, so the window counts every posted WR, signaled or not.
//
// The stage fills in what each WR does (opcode, SGEs, remote address, imm:
// each stage's own lesson); the loop sets wr_id (the WR's number), the
// signaled flag and the chaining.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <functional>
#include <string>

namespace rdma {

struct window_params {
  std::uint32_t count = 0;         // WRs to post in all
  std::uint32_t depth = 128;       // in flight at most (<= the QP's max_send_wr)
  std::uint32_t signal_every = 100;  // <= depth, or the window could fill with nothing to wait for
  int wait_ms = 5000;              // bound on each wait for a completion
};

// fill(wr, n): what the n-th WR (0-based) does. wr arrives zeroed.
using wr_filler = std::function<void(ibv_send_wr& wr, std::uint32_t n)>;

// Posts params.count WRs through the window on `qp`, reaping completions
// from `cq` (which must carry nothing else meanwhile). Throws on an error
// completion or when a wait passes wait_ms. Returns the seconds from the
// first post to the last completion.
double post_window(ibv_qp* qp, ibv_cq* cq, const window_params& params, const wr_filler& fill);

// perftest's result line for a stream (MB is 2^20 bytes, Mpps a million
// messages a second), with its header:
//  #bytes     #iterations    BW average[MB/sec]   MsgRate[Mpps]
//  64         5000           1.97                 0.032207
std::string bw_report(std::uint32_t bytes, std::uint32_t iterations, double seconds);

}  // namespace rdma
