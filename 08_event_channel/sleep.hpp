// The sleep in the lesson: poll() on the completion channel's fd and the
// peer's TCP socket, bounded by --wait-ms. channel.cpp (and each exercise,
// a copy of it) calls it between the arm and ibv_get_cq_event. All inline:
// it runs on every wake-up, and a call into another file costs
// instructions there (scripts/icount.sh --only 08 counts them).
#pragma once

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <string_view>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/tcp.hpp"

namespace stage08 {

// CLOCK_MONOTONIC_COARSE, in milliseconds: the time at the kernel's last
// tick (at most a few ms ago), read from memory the kernel shares with
// every process, so never a system call, not even where the precise clock
// is one (this guest's emulated HPET: 0.05 us a read against 0.8 us).
// Precise enough for a deadline of seconds.
inline long long coarse_now_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return static_cast<long long>(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
}

// One sleep on the channel: poll() on its fd and the peer's socket, for at
// most wait_ms in all, however often until_readable is called.
class channel_sleep {
 public:
  channel_sleep(int channel_fd, const rdma::tcp::socket& peer, std::string_view who, std::string_view what,
                int wait_ms);
  // Returns once the channel's fd is readable. Throws when wait_ms have
  // passed without that, or when the peer closed the connection.
  void until_readable();

 private:
  int left_ms() const;

  int channel_fd_;
  const rdma::tcp::socket& peer_;
  std::string_view who_;   // "the server", "the client"
  std::string_view what_;  // "round 3's messages"
  int wait_ms_;
  int timeout_ms_;
  long long deadline_ms_;
  bool woken_ = false;
};

// poll()'s own timeout bounds the sleep: no timer to arm on the way to
// sleep, and no clock read that is a system call (either would be one more
// per wake-up; the coarse clock is read from memory).
inline channel_sleep::channel_sleep(int channel_fd, const rdma::tcp::socket& peer, std::string_view who,
                             std::string_view what, int wait_ms)
    : channel_fd_(channel_fd), peer_(peer), who_(who), what_(what), wait_ms_(wait_ms), timeout_ms_(wait_ms),
      deadline_ms_(coarse_now_ms() + wait_ms) {}

inline void channel_sleep::until_readable() {
  // A wake-up that brings no event (a signal; the socket readable, the
  // peer still there; the fd readable, and no event to take) sleeps on for
  // what is left of wait_ms.
  if (woken_) timeout_ms_ = left_ms();
  woken_ = true;
  for (;; timeout_ms_ = left_ms()) {
    pollfd fds[2] = {{channel_fd_, POLLIN, 0}, {peer_.fd(), POLLIN, 0}};
    const int ready = ::poll(fds, 2, timeout_ms_);
    if (ready == 0) {
      throw rdma::tutorial_error("no CQ event within " + std::to_string(wait_ms_) + " ms while we waited for " +
                                     std::string(what_),
                                 "was the CQ re-armed (ibv_req_notify_cq) after each event, and drained after that? "
                                 "Otherwise " + std::string(who_) + " is stuck; its own output says why");
    }
    if (ready < 0) {
      if (errno == EINTR) continue;
      rdma::check_errno(-1, "poll(the channel, the peer's socket)");
    }
    if ((fds[0].revents & POLLIN) != 0) return;
    // The channel first: a closing peer matters only when no event came.
    if (fds[1].revents != 0 && rdma::tcp::peer_closed(peer_)) {
      throw rdma::tutorial_error(std::string(who_) + " closed the connection while we waited for " + std::string(what_),
                                 std::string(who_) + " failed or gave up; its own output says why");
    }
  }
}

inline int channel_sleep::left_ms() const { return static_cast<int>(std::max(0LL, deadline_ms_ - coarse_now_ms())); }

}  // namespace stage08
