// EXERCISE: both sides report every round, then neither program ends
//
// This is channel.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh unacked_destroy
//
// TODO: every round completes and both sides print their reports; then
// neither program ends. Read what ibv_destroy_cq waits for. (Hint:
// docs/08-event-channel.md, section "Acks, and the CQ's destruction".)
// The lesson in raw verbs: a completion channel, a CQ bound to it, and the
// order of the calls that puts a thread to sleep until a completion comes.
//
//   ibv_req_notify_cq     arm: the CQ's next completion raises one event
//   poll()                asleep on the channel's fd (and the peer's
//                         socket), until one is readable or time is up
//                         (sleep.hpp)
//   ibv_get_cq_event      take the event (which CQ it is for)
//   ibv_ack_cq_events     give it back; batched
//   ibv_req_notify_cq     re-arm
//   ibv_poll_cq ...       drain until empty
#include <fcntl.h>

#include <cerrno>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage08 {

void event_acks::count_one() {
  if (++unacked_ == batch) {
    ibv_ack_cq_events(cq_, unacked_);
    unacked_ = 0;
    ++calls_;
  }
}

// Acks go out in batches of 16 (count_one); the CQ goes next.  // TODO
event_acks::~event_acks() {
  // The CQ is going away: its events go with it.  // TODO
}

notified_cq::notified_cq(ibv_context* ctx, int entries)
    : channel_(rdma::check_ptr(ibv_create_comp_channel(ctx), "ibv_create_comp_channel")),
      // The fourth argument binds the CQ to the channel: its events are read there.
      cq_(rdma::check_ptr(ibv_create_cq(ctx, entries, nullptr, channel_.get(), 0), "ibv_create_cq")),
      acks_(cq_.get()) {
  // Non-blocking: ibv_get_cq_event then never blocks (it fails with EAGAIN
  // when there is no event), and the fd can wait in one poll() with others.
  const int flags = rdma::check_errno(fcntl(channel_->fd, F_GETFL), "fcntl(the channel's fd, F_GETFL)");
  rdma::check_errno(fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK), "fcntl(the channel's fd, F_SETFL, O_NONBLOCK)");
}

void notified_cq::arm(bool solicited_only) {
  rdma::check_rc(ibv_req_notify_cq(cq_.get(), solicited_only ? 1 : 0), "ibv_req_notify_cq");
}

std::size_t notified_cq::drain(take_completion take) {
  std::size_t taken = 0;
  ibv_wc wcs[16];
  for (;;) {
    const int n = rdma::check_poll(ibv_poll_cq(cq_.get(), 16, wcs));
    for (int i = 0; i < n; ++i) take(wcs[i]);
    taken += static_cast<std::size_t>(n);
    if (n == 0) return taken;
  }
}

std::size_t notified_cq::take_stale_events() {
  std::size_t taken = 0;
  ibv_cq* cq = nullptr;
  void* cq_context = nullptr;
  while (ibv_get_cq_event(channel_.get(), &cq, &cq_context) == 0) {
    if (cq != cq_.get()) {
      ibv_ack_cq_events(cq, 1);
      throw rdma::tutorial_error("ibv_get_cq_event returned an event for a CQ that is not ours");
    }
    acks_.count_one();
    ++taken;
  }
  if (errno != EAGAIN) rdma::check_errno(-1, "ibv_get_cq_event");
  return taken;
}

std::size_t notified_cq::sleep_and_drain(const rdma::tcp::socket& peer, std::string_view who, std::string_view what,
                                         int wait_ms, bool solicited_only, take_completion take) {
  channel_sleep sleep(channel_->fd, peer, who, what, wait_ms);
  ibv_cq* cq = nullptr;
  void* cq_context = nullptr;
  for (;;) {
    sleep.until_readable();  // poll(): sleep.hpp
    if (ibv_get_cq_event(channel_.get(), &cq, &cq_context) == 0) break;
    // EAGAIN: another reader took it (not here), or a spurious wake-up.
    if (errno != EAGAIN) rdma::check_errno(-1, "ibv_get_cq_event");
  }
  if (cq != cq_.get()) {
    // Acked all the same: that CQ's ibv_destroy_cq would wait for it for ever.
    ibv_ack_cq_events(cq, 1);
    throw rdma::tutorial_error("ibv_get_cq_event returned an event for a CQ that is not ours");
  }
  ++wake_ups_;
  acks_.count_one();
  // The notification is edge-triggered: it fires once, for the first
  // completion after the arm, and is then spent. So: re-arm first, then
  // drain until ibv_poll_cq finds nothing. In the other order, a
  // completion that arrives after the last poll and before the re-arm
  // raises no event and is never looked at: we would sleep with it in
  // the CQ. Re-armed first, anything that arrives while we drain either
  // is taken by the drain or raises the next event (at worst a wake-up
  // that finds the CQ empty, which costs nothing but the wake-up).
  arm(solicited_only);
  const std::size_t taken = drain(take);
  if (taken == 0) ++empty_wake_ups_;
  return taken;
}

}  // namespace stage08
