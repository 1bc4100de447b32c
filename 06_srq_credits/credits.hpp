// The arithmetic of stage 06, apart from any device so the unit tests can
// hold it to its word: how deep the shared receive queue must be, and the
// credit ledgers that keep every client inside its window.
//
// Credits, in one paragraph: the server gives each client a window of W
// writes. A write in flight holds one credit until the server has taken
// its completion; then the server hands the credit back by writing the
// count of writes it has consumed, cumulative, into an 8-byte word in the
// client's memory (an RDMA Write: no Recv, no CPU at the client). The
// client may post while sent - consumed < W. A cumulative count cannot be
// lost or counted twice: a newer value only ever replaces an older one, so
// the server may batch its returns and skip one when its send queue is full.
#pragma once

#include <cstdint>
#include <string>

namespace stage06 {

// The receive side's sizes, as the server prints them before it starts.
struct srq_sizing {
  std::uint32_t clients = 4;
  std::uint32_t window = 16;   // writes in flight per client
  std::uint32_t depth = 0;     // Recvs the SRQ holds
  std::uint32_t batch = 16;    // consumed Recvs reposted together
  std::uint32_t limit = 0;     // the SRQ limit: an event when fewer are posted

  // Every client's whole window at once.
  std::uint64_t in_flight() const { return std::uint64_t{clients} * window; }
  // The fewest Recvs still posted in the worst case: every window in
  // flight and a batch short of reposting (negative: the queue can run dry).
  std::int64_t fewest_posted() const {
    return static_cast<std::int64_t>(depth) - static_cast<std::int64_t>(in_flight()) - (batch - 1);
  }
  // Whether the limit can fire while every client keeps to its credits.
  bool limit_can_fire() const { return static_cast<std::int64_t>(limit) > fewest_posted(); }
  // Whether the limit event alone keeps the queue from running dry: it
  // fires below `limit`, and before the server has reposted, at most every
  // window plus one CQ poll's worth of returned credits can arrive.
  bool limit_rescues() const { return limit > in_flight() + poll_batch; }
  bool can_run_dry() const { return fewest_posted() <= 0 && !limit_rescues(); }

  static constexpr std::uint32_t poll_batch = 32;  // completions per ibv_poll_cq

  // "SRQ: 128 Recvs for 4 clients x window 16 = 64 in flight; ..."
  std::string describe() const;
};

// The depth a server picks when --srq-depth is not given: every window,
// a repost batch, and as much again for the limit to stay quiet.
std::uint32_t default_depth(std::uint32_t clients, std::uint32_t window, std::uint32_t batch);

// The client's side: what it may still post.
class credit_window {
 public:
  explicit credit_window(std::uint32_t window) : window_(window) {}

  bool can_send() const { return sent_ - consumed_ < window_; }
  void on_sent();
  // A new value of the credit word. Older values (the word read before a
  // newer write landed) change nothing; a count above what was sent is the
  // server's bug, and throws.
  void on_credit(std::uint64_t consumed);

  std::uint32_t window() const { return window_; }
  std::uint64_t sent() const { return sent_; }
  std::uint64_t consumed() const { return consumed_; }
  std::uint64_t in_flight() const { return sent_ - consumed_; }
  std::uint64_t most_in_flight() const { return most_in_flight_; }

 private:
  std::uint32_t window_;
  std::uint64_t sent_ = 0;
  std::uint64_t consumed_ = 0;
  std::uint64_t most_in_flight_ = 0;
};

// The server's side, one per client: what it consumed, what it told the
// client. Returns are due every `batch` consumed (batch <= window, or a
// client that used its whole window would wait for a return that never
// comes), or at once when `urgent` (the client's END).
class credit_ledger {
 public:
  credit_ledger(std::uint32_t window, std::uint32_t batch);

  void on_consumed() { ++consumed_; }
  bool due() const { return consumed_ - returned_ >= batch_ || (urgent_ && consumed_ != returned_); }
  void make_urgent() { urgent_ = true; }
  // The value to write into the client's credit word; the ledger counts it
  // as told.
  std::uint64_t take_return() {
    returned_ = consumed_;
    return consumed_;
  }

  std::uint64_t consumed() const { return consumed_; }
  std::uint64_t returned() const { return returned_; }

 private:
  std::uint32_t batch_;
  std::uint64_t consumed_ = 0;
  std::uint64_t returned_ = 0;
  bool urgent_ = false;
};

}  // namespace stage06
