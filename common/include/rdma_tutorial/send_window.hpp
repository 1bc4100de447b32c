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

// The window's rule kept one post at a time, for the ping-pongs of stages
// 05 and 08, which post as the peer answers rather than from a loop: a WR
// goes into the send queue only while it has room. A queue holds every WR
// posted and not yet known complete; only signaled WRs ever say they are,
// and one that does says the same of every WR before it. So the sender
// counts what it posted, notes the wr_id of each signaled completion, and
// before posting `count` more makes sure they fit; when they do not, it
// polls until a signaled completion frees room. Relying on ACKs to come
// back fast enough instead is what works on Soft-RoCE and fails on a NIC
// whose queue is short or whose peer is slow: ibv_post_send then refuses
// with ENOMEM, or a provider that does not check overwrites a WQE in use.
// wr_id must be the number next() gave: the WR's place in the sequence.
class send_queue_room {
 public:
  // `signal_every` <= `depth`, or a full queue could hold nothing signaled.
  send_queue_room(std::uint32_t depth, std::uint32_t signal_every);
  std::uint64_t next() const { return posted_; }
  // Whether WR number `n` asks for a completion.
  bool signaled(std::uint64_t n) const { return (n + 1) % signal_every_ == 0; }
  bool fits(std::uint32_t count = 1) const { return posted_ - completed_ + count <= depth_; }
  void posted(std::uint32_t count = 1) { posted_ += count; }
  // A signaled WR's completion: it and every WR before it have left the queue.
  void completed(std::uint64_t wr_id) { completed_ = wr_id + 1; }
  std::uint64_t in_queue() const { return posted_ - completed_; }
  // A signaled WR posted and its completion not yet seen: before a caller
  // waits for one particular completion (an END), these must be reaped.
  bool signaled_due() const {
    const std::uint64_t last = posted_ / signal_every_ * signal_every_;  // one past the last signaled WR
    return last > completed_;
  }
  std::uint32_t depth() const { return depth_; }

 private:
  std::uint32_t depth_;
  std::uint32_t signal_every_;
  std::uint64_t posted_ = 0;
  std::uint64_t completed_ = 0;
};

// One WR in how many to signal, for a send queue of `depth`: 64 (one
// completion to poll per 64 sends), or half the queue when that is shorter,
// so a full queue always holds a signaled WR to wait for.
std::uint32_t signal_interval(std::uint32_t depth);

// perftest's result line for a stream (MB is 2^20 bytes, Mpps a million
// messages a second), with its header:
//  #bytes     #iterations    BW average[MB/sec]   MsgRate[Mpps]
//  64         5000           1.97                 0.032207
std::string bw_report(std::uint32_t bytes, std::uint32_t iterations, double seconds);

}  // namespace rdma
