// The shared receive queue (stage 06, docs/06-srq-credits.md): one queue of
// Recvs that every QP created with it takes from, and the async events that
// tell how it is doing. What stage 06 taught, for the stages after it.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "rdma_tutorial/coarse_clock.hpp"
#include "rdma_tutorial/handles.hpp"
#include "rdma_tutorial/waiting.hpp"

namespace rdma {

// ibv_create_srq with room for `depth` Recvs of no SGE: a Write with
// Immediate consumes a Recv but puts nothing in its buffer, so a Recv here
// needs none (a Send arriving would fail with a length error).
srq_ptr create_srq(ibv_pd* pd, std::uint32_t depth);

// `count` Recvs in one ibv_post_srq_recv: a linked list, one doorbell.
void post_srq_receives(ibv_srq* srq, std::uint32_t count);

// ibv_modify_srq(IBV_SRQ_LIMIT): one IBV_EVENT_SRQ_LIMIT_REACHED when fewer
// than `limit` Recvs are posted, then the limit is off until armed again.
void arm_srq_limit(ibv_srq* srq, std::uint32_t limit);

// The device's async event queue (ibv_get_async_event), made non-blocking
// so the server's loop can look at it between completions.
class async_events {
 public:
  explicit async_events(ibv_context* ctx);
  int fd() const { return ctx_->async_fd; }
  // Every event waiting now, each acked after `handle` saw it.
  void drain(const std::function<void(const ibv_async_event&)>& handle);

 private:
  ibv_context* ctx_;
};

// "IBV_EVENT_SRQ_LIMIT_REACHED", ...
std::string async_event_name(ibv_event_type type);

// A QP that takes its Recvs from an SRQ, leaving (docs/06-srq-credits.md,
// "A client that goes away"). Moved to ERR, it may still hold Recvs it took from the SRQ;
// the device completes them flushed and then raises
// IBV_EVENT_QP_LAST_WQE_REACHED: from then on it takes none. Destroyed
// before its flushed completions are polled, those Recvs are never counted,
// so never reposted (a NIC's provider may even wipe them from the CQ when
// the QP goes: mlx5 does), and the SRQ is one Recv shorter for good. The
// order the InfiniBand specification asks for (section 10.3.1, quoted in
// Linux 6.12's __ib_drain_srq; 6.1 has no such function), after the move
// to ERR and a marker posted on the send queue:
//   1. IBV_EVENT_QP_LAST_WQE_REACHED arrives;
//   2. the CQ is polled empty after it: every completion of the QP is taken;
//   3. the marker came back flushed: its send queue is empty too;
// then destroy. A device that never sends the event (Soft-RoCE on Linux
// 6.1) is waited for `event_wait`, then the QP goes after its marker alone.
// This class only keeps the books (no verbs call): the stage moves the QP,
// posts the marker, polls the CQ and counts the polls that found it empty.
class srq_qp_departure {
 public:
  using clock = coarse_clock;  // its wait is of milliseconds (coarse_clock.hpp)
  enum class outcome {
    waiting,       // not yet
    last_wqe,      // the event, then the CQ polled empty (and the marker back)
    no_event,      // no event within event_wait: the marker alone
    gave_up,       // neither the event nor the marker within event_wait
  };
  // `marker_posted` false: the send queue refused it (full); then the event
  // alone decides.
  srq_qp_departure(clock::time_point left_at, clock::duration event_wait, bool marker_posted);
  void marker_flushed() { marker_back_ = true; }
  // `cq_empties`: how many polls had found the CQ empty when the event came.
  void last_wqe_reached(std::uint64_t cq_empties);
  bool event_seen() const { return event_seen_; }
  outcome check(clock::time_point now, std::uint64_t cq_empties) const;
  // What check() said, for the line a stage prints: "IBV_EVENT_QP_LAST_WQE_REACHED,
  // then the CQ polled empty", ...
  std::string describe(outcome o) const;

 private:
  clock::time_point left_at_;
  clock::duration event_wait_;
  bool marker_back_;
  bool event_seen_ = false;
  std::uint64_t empties_at_event_ = 0;
};

// IBV_EVENT_QP_LAST_WQE_REACHED for a QP of the SRQ, kept until the stage
// decides. Asked for (the stage moved the QP to ERR: a departure exists),
// it goes to the departure at once. Unasked, the QP broke on its own: the
// failed completion that says how (a write the device refused) was posted
// before the event, but the CQ's channel and the async queue are two
// descriptors and the event may be read first (measured on Soft-RoCE,
// Linux 6.12). So it is only noted; due() says when the CQ has been polled
// empty after it, and with it every completion of that QP taken: a stage
// that has not let the QP go by then lets it go for the event alone.
class last_wqe_notice {
 public:
  void event(std::optional<srq_qp_departure>& departure, std::uint64_t cq_empties) {
    if (departure) {
      departure->last_wqe_reached(cq_empties);
    } else {
      unasked_at_ = cq_empties;
    }
  }
  bool due(std::uint64_t cq_empties) const { return unasked_at_ && cq_empties > *unasked_at_; }
  // A departure begun after an unasked event: it has already come.
  void pass_to(srq_qp_departure& departure) const {
    if (unasked_at_) departure.last_wqe_reached(*unasked_at_);
  }

 private:
  std::optional<std::uint64_t> unasked_at_;
};

// How long a departing QP waits for IBV_EVENT_QP_LAST_WQE_REACHED on this
// device: Soft-RoCE (vendor_id 0xffffff, the kernel's RXE_VENDOR_ID) sends
// it from Linux 6.12's rxe on (flush_recv_queue in rxe_resp.c; 6.1's has no
// such event), a few milliseconds after the move to ERR: waiting a short
// `soft_roce_last_wqe_wait` covers both kernels. Any other device is held to
// the specification: it waits the whole `wait`.
std::chrono::milliseconds last_wqe_wait(const ibv_device_attr& attr, std::chrono::milliseconds wait);
inline constexpr std::uint32_t soft_roce_vendor_id = 0xffffff;
inline constexpr std::chrono::milliseconds soft_roce_last_wqe_wait = waiting_policy::soft_roce_last_wqe;

}  // namespace rdma
