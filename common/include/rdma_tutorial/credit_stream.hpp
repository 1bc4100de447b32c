// A client streaming Writes with Immediate into a server's slots, paced by
// a credit word the server's device writes into our memory (stage 06,
// docs/06-srq-credits.md, "Credits"; stage 09 reuses it). What the word
// means is the stage's: 06's counts what the server consumed, 09's is an
// edge. This holds what both do around it: the word read, completions
// reaped, how many writes may go now, the waits paced and bounded.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <functional>
#include <string>

namespace rdma {

class credit_stream {
 public:
  // What the stage says while it waits: `on_word` gets each value read;
  // `stalled(what)` is the error once --wait-ms pass without `ready`;
  // `check_peer(what)` throws if the server has gone (its TCP connection
  // closed, its rdma_cm event), looked at every looks_per_peer_check looks.
  struct hooks {
    std::function<void(std::uint64_t word)> on_word;
    std::function<std::string(const char* what)> stalled;
    std::function<void(const char* what)> check_peer;
  };

  // `slots`: source slots, each reused only once the write that last read
  // it is complete; `send_queue`: WRs the QP holds.
  credit_stream(ibv_qp* qp, ibv_cq* cq, std::uint64_t* credit_word, std::uint32_t slots, std::uint32_t send_queue,
                int wait_ms, hooks h);

  // The word changes under us (the server's device writes it), so it is
  // read with an atomic acquire load, stage 04's std::atomic_ref: the
  // compiler must read memory each time. The word is page-aligned
  // (registered_buffer), so the load is one aligned 8-byte access; that the
  // device's store is one too is what Soft-RoCE's memcpy and a NIC's
  // cache-line writes do in practice, not what the verbs promise
  // (docs/06-srq-credits.md, "Credits"). Big-endian on the wire.
  std::uint64_t read_word() const;

  // Every completion there is: sends complete in order, so WR n done means
  // every WR up to n is. A failure throws ("write N failed: ...").
  void reap();

  // Writes that may go now, given `credits` the server allows: no more
  // than the send queue has room for, and none into a source slot whose
  // last write is not known complete. A credit says the server consumed a
  // record; it does not say our device is done reading its source: until
  // the WR's own completion, a resend after a lost ACK reads those bytes
  // again (ibv_post_send(3)). WR n is write n.
  std::uint64_t room(std::uint64_t credits) const;
  // The send queue's room alone: what a client that ignores both (the
  // tests' --hostile ignore-credits) could post.
  std::uint64_t queue_room() const { return send_queue_ - (posted_ - completed_); }

  // Until ready(): reap and read the word, at the pace of nap_wait.hpp
  // (flat out, then napping: the server and Soft-RoCE's kernel work need
  // these CPUs too). Bounded by --wait-ms and by the server leaving.
  void wait_until(const char* what, const std::function<bool()>& ready);

  // `k` WRs linked from `first` in one ibv_post_send (on Soft-RoCE each post
  // is a system call: one per credit return, not one per record): writes
  // posted() .. posted() + k - 1.
  void post(ibv_send_wr* first, std::size_t k);

  std::uint64_t posted() const { return posted_; }
  std::uint64_t completed() const { return completed_; }

 private:
  ibv_qp* qp_;
  ibv_cq* cq_;
  std::uint64_t* word_;  // written by the server's device
  std::uint32_t slots_;
  std::uint32_t send_queue_;
  int wait_ms_;
  hooks hooks_;
  std::uint64_t posted_ = 0;     // WRs in the send queue, signaled or not
  std::uint64_t completed_ = 0;  // WRs known complete
};

}  // namespace rdma
