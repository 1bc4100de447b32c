// Stage 08 — sleeping instead of spinning.
//
// Stages 04-05 waited for completions by polling the CQ in a loop: the
// lowest latency, and a CPU kept busy doing nothing. Here a CQ is bound to a
// completion channel, a file descriptor the thread can sleep on, and the
// same ping-pong of Sends runs three ways: --poll, --event (asleep on the
// channel) and --hybrid (poll a little, then sleep). Each side prints its
// latency percentiles, its wake-ups and the CPU it spent per message.
//
//   server:  event_channel [--bind ADDR] [-p PORT] [--poll | --event | --hybrid [--spin-us US]]
//   client:  event_channel -s ADDR [-p PORT] [--poll | --event | --hybrid [--spin-us US]]
//                          [--iters N] [--rate N] [--burst N] [--size BYTES] [--solicited-every N]
//   both:    [-d NAME] [-i PORT] [-g INDEX] [--wait-ms MS]
//
// Read it beside docs/08-event-channel.md; stage.hpp lists the files in reading order.
#include <infiniband/verbs.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "rdma_tutorial/main.hpp"
#include "rdma_tutorial/transport.hpp"
#include "stage.hpp"

namespace {

// ibv_destroy_cq is the one wait in this program that takes no deadline: it
// blocks until every event ibv_get_cq_event delivered has been acked, and
// once the CQ is being destroyed nobody else will ack them. Started when the
// run is over, this turns such a hang into one line and exit 1.
class teardown_deadline {
 public:
  teardown_deadline() = default;
  teardown_deadline(const teardown_deadline&) = delete;
  teardown_deadline& operator=(const teardown_deadline&) = delete;
  ~teardown_deadline() {
    if (!watcher_.joinable()) return;
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_changed_.notify_one();
    watcher_.join();
  }

  void start(int wait_ms) {
    watcher_ = std::thread([this, wait_ms] {
      std::unique_lock lock(mutex_);
      if (done_changed_.wait_for(lock, std::chrono::milliseconds(wait_ms), [this] { return done_; })) return;
      std::fflush(stdout);
      std::fprintf(stderr,
                   "event_channel: the teardown has not finished within %d ms: ibv_destroy_cq is waiting for CQ "
                   "events that were never acked\n"
                   "  likely fix: every event from ibv_get_cq_event needs its ibv_ack_cq_events before the CQ is "
                   "destroyed\n",
                   wait_ms);
      std::_Exit(1);
    });
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::thread watcher_;
};

}  // namespace

int main(int argc, char** argv) {
  return rdma::run_main("event_channel", [&] {
    stage08::options opts;
    if (!stage08::parse_options(argc, argv, opts)) return 0;

    // Stages 01-04 (common/src/peer.cpp), without the usual CQ (0 entries):
    // this stage makes its own, bound to a completion channel.
    rdma::rdma_device dev = rdma::open_rdma_device(opts.device, 0, 0);
    // 1.07 s a try for an ACK on Soft-RoCE, not 67 ms: across the two-guest
    // wire, with both sides slowed down, 67 ms ran out; 14 on a NIC
    // (waiting.hpp); --ack-timeout says otherwise.
    dev.params.timeout = opts.ack_timeout.value_or(rdma::default_ack_timeout(dev.limits.attr()));
    std::printf("%s\n", rdma::describe(dev).c_str());
    dev.limits.cq_entries(stage08::cq_entries);
    teardown_deadline teardown;  // declared before the CQ: it outlives the CQ's destruction
    stage08::notified_cq events(dev.ctx.get(), stage08::cq_entries);
    std::printf("completion channel created (its fd non-blocking), a CQ of %d entries bound to it\n",
                events.cq()->cqe);

    const int rc = opts.peer.server.empty() ? stage08::run_server(opts, dev, events)
                                            : stage08::run_client(opts, dev, events);
    teardown.start(opts.peer.wait_ms);
    return rc;  // ~notified_cq: the acks still owed, ibv_destroy_cq, ibv_destroy_comp_channel
  });
}
