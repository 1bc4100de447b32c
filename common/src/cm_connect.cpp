// The client's rdma_connect, retried while nobody listens yet (cm_events.hpp).
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

#include "rdma_tutorial/cm_events.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/waiting.hpp"

namespace rdma::cm {

namespace {

// A bound on a call that may block in the kernel. rdma_connect only starts
// the connect on InfiniBand and RoCE (the REQ leaves, the answer is an
// event), and on most iWARP devices; on Soft-iWARP (siw, Linux 6.1 and
// 6.12) the call makes the TCP connection itself, blocking (siw_cm.c,
// siw_connect: "connect() is called in blocking mode"), so against an
// address nobody answers it returns only when TCP gives up on its SYNs:
// 130 s measured in the guest, --wait-ms or not. At the deadline a timer
// sends this thread a signal whose handler does nothing and restarts
// nothing (no SA_RESTART): the blocked call returns EINTR, and siw undoes
// the half-made connection on the way out. Where the call does not block,
// the timer is deleted unfired.
class call_deadline {
 public:
  explicit call_deadline(int ms) {
    struct sigaction wake{};
    wake.sa_handler = [](int) {};
    sigemptyset(&wake.sa_mask);
    check_errno(sigaction(SIGALRM, &wake, &previous_), "sigaction(SIGALRM)");
    sigevent to_us{};
    to_us.sigev_notify = SIGEV_THREAD_ID;
    to_us.sigev_signo = SIGALRM;
    to_us._sigev_un._tid = gettid();  // sigev_notify_thread_id: glibc 2.36 spells it only so
    if (timer_create(CLOCK_MONOTONIC, &to_us, &timer_) != 0) {
      const int err = errno;
      sigaction(SIGALRM, &previous_, nullptr);
      throw verbs_error(err, "timer_create");
    }
    itimerspec at{};
    at.it_value.tv_sec = ms / 1000;
    at.it_value.tv_nsec = static_cast<long>(ms % 1000) * 1000000L + 1;  // never 0: that disarms
    if (timer_settime(timer_, 0, &at, nullptr) != 0) {
      const int err = errno;
      timer_delete(timer_);
      sigaction(SIGALRM, &previous_, nullptr);
      throw verbs_error(err, "timer_settime");
    }
  }
  ~call_deadline() {
    timer_delete(timer_);
    sigaction(SIGALRM, &previous_, nullptr);
  }
  call_deadline(const call_deadline&) = delete;
  call_deadline& operator=(const call_deadline&) = delete;

 private:
  struct sigaction previous_{};
  timer_t timer_{};
};

}  // namespace

void set_ack_timeout(rdma_cm_id* id, std::uint8_t timeout) {
  check_errno(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof timeout),
              "rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT)");
}

void set_tos(rdma_cm_id* id, std::uint8_t tos) {
  check_errno(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof tos), "rdma_set_option(RDMA_OPTION_ID_TOS)");
}

cm_event connect(rdma_event_channel* channel, cm_id_ptr& id, const connect_target& to, const rdma_conn_param& param,
                 int wait_ms, const std::function<void(rdma_cm_id* next)>& move_qp) {
  const std::string step = "rdma_connect(" + to.name + ")";
  const std::string within = "within --wait-ms " + std::to_string(wait_ms);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  // rdma_connect takes a non-const pointer and only reads through it.
  rdma_conn_param ours = param;
  for (;;) {
    int refused = 0;  // an errno from the call itself that means "nobody listens"
    {
      const call_deadline bound(ms_left(deadline));
      if (rdma_connect(id.get(), &ours) != 0) {
        const int err = failure_errno();
        if (err == EINTR) {
          throw tutorial_error("no answer to " + step + " " + within + " (the call itself was still connecting)",
                               "is a server running there? On Soft-iWARP rdma_connect makes the TCP connection "
                               "itself and would wait for TCP to give up, about 130 s; --wait-ms bounds our wait");
        }
        if (err != ECONNREFUSED) throw verbs_error(err, step);
        refused = err;
      }
    }
    if (refused == 0) {
      // Our own deadline: an unanswered connect request is retried by the CM
      // for about 100 s before UNREACHABLE arrives.
      cm_event answer = next_event(channel, ms_left(deadline), "answer to " + step + " (ESTABLISHED) " + within,
                                   "is a server running there? The CM would retry for about 100 s before "
                                   "RDMA_CM_EVENT_UNREACHABLE; --wait-ms bounds our wait");
      if (answer.id != id.get()) throw about_another_id(answer, rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), step);
      if (answer.type == RDMA_CM_EVENT_ESTABLISHED) return answer;
      // Nobody listens yet: a server started beside us may still be on its
      // way. A rejected id cannot connect again; take a new one and retry
      // until the deadline.
      const bool nobody = answer.type == RDMA_CM_EVENT_REJECTED && nobody_listens(answer.status);
      if (!nobody || ms_left(deadline) < waiting_policy::cm_connect_least.count()) {
        throw explain(answer, rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), step);
      }
    } else if (ms_left(deadline) < waiting_policy::cm_connect_least.count()) {
      // siw's refused TCP connection, from the call: the same news as a
      // REJECTED event for nobody listening, a moment sooner.
      throw verbs_error(refused, step, "nobody listens on that address and port: start the server first, or check -p");
    }
    std::this_thread::sleep_for(waiting_policy::cm_connect_retry);
    cm_id_ptr next = resolve(channel, to.address, to.name, to.resolve_ms, to.ack_timeout, to.tos);
    // The caller's PD and CQ belong to the device the first id resolved to.
    if (next->verbs != id->verbs) {
      throw tutorial_error(step + ": the address is now reached through another device");
    }
    move_qp(next.get());
    id = std::move(next);
  }
}

}  // namespace rdma::cm
