// The exchange: a ping-pong of Sends, burst against burst, the way
// ib_send_lat measures (with -e: asleep on events). What differs between
// --poll, --event and --hybrid is only how a side waits for the peer's
// burst: wait_for_burst below. Only one Send in 64 is signaled, so a side
// wakes for the peer's messages, not for its own sends; a burst is posted
// only once the send queue has room for all of it (rdma::send_queue_room).
// Nothing on the way of a round allocates or makes a system call it does
// not need: the work requests are built once, the samples are read from
// the CPU's counter (rdma::read_ticks), and the words an error would say
// are formatted into a buffer of our own.
#include <time.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/latency_report.hpp"
#include "rdma_tutorial/send_window.hpp"
#include "rdma_tutorial/tick_clock.hpp"
#include "stage.hpp"

namespace stage08 {

namespace {

constexpr std::uint32_t signal_every = 64;

// Unsignaled sends leave the queue only when a later signaled one is
// polled: up to 2 x 64 of them, plus the burst being posted.
std::uint32_t send_queue_depth(const run_params& run) { return 2 * signal_every + run.burst; }

// How a side's waits went, over the measured rounds.
struct wait_counts {
  std::uint64_t spinning = 0;     // --hybrid: the burst was there while spinning
  std::uint64_t after_arm = 0;    // --hybrid: found by the look just after arming
  std::uint64_t slept = 0;        // --hybrid: needed the channel
};

// --rate: round n of the measured ones is due n / rate seconds after the
// warm-up, an absolute time (clock_nanosleep with TIMER_ABSTIME), so a late
// round does not push the later ones back. A round whose time has passed
// when the one before ends starts at once, and is counted late.
class pacer {
 public:
  explicit pacer(std::uint32_t rate) : rate_(rate) {}
  bool paced() const noexcept { return rate_ != 0; }
  std::uint64_t late() const noexcept { return late_; }

  void start() {
    start_ns_ = now_ns();
    late_ = 0;
  }
  void wait_for(std::uint32_t round) {
    const std::uint64_t due = start_ns_ + std::uint64_t{round} * 1000000000 / rate_;
    if (now_ns() >= due) {
      ++late_;
      return;
    }
    const timespec at{static_cast<time_t>(due / 1000000000), static_cast<long>(due % 1000000000)};
    int rc;
    while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr)) == EINTR) {
    }
    rdma::check_rc(rc, "clock_nanosleep");
  }

 private:
  static std::uint64_t now_ns() {
    timespec t{};
    rdma::check_errno(clock_gettime(CLOCK_MONOTONIC, &t), "clock_gettime");
    return static_cast<std::uint64_t>(t.tv_sec) * 1000000000 + static_cast<std::uint64_t>(t.tv_nsec);
  }

  std::uint32_t rate_;
  std::uint64_t start_ns_ = 0;
  std::uint64_t late_ = 0;
};

class ping_pong {
 public:
  explicit ping_pong(const side& s)
      : s_(s), solicited_only_(s.run.solicited_every != 0), room_(send_queue_depth(s.run), signal_every),
        sges_(s.run.burst), wrs_(s.run.burst), pace_(s.opts.rate) {
    // The burst's work requests, built once: a round changes only their
    // wr_id, their flags and the header in each message.
    for (std::uint32_t i = 0; i < s.run.burst; ++i) {
      const char* message = s.buffers.send.data() + std::size_t{i} * s.run.size;
      sges_[i] = {reinterpret_cast<std::uintptr_t>(message), s.run.size, s.buffers.send.lkey()};
      ibv_send_wr& wr = wrs_[i];
      wr.sg_list = &sges_[i];
      wr.num_sge = 1;
      wr.opcode = IBV_WR_SEND;
      wr.next = i + 1 < s.run.burst ? &wrs_[i + 1] : nullptr;
    }
  }

  void run() {
    const run_params& run = s_.run;
    std::vector<double> samples;  // in ticks until the end, then microseconds
    samples.reserve(run.rounds);
    if (s_.opts.mode != wait_mode::poll) {
      // Armed before the first wait; then one look, since whatever arrived
      // before the arm raised no event. That look may already take part of
      // round 0 (the server: the client sends as soon as it has our
      // endpoint), so it counts toward round 0 like any other.
      s_.events.arm(solicited_only_);
      s_.events.drain([this](const ibv_wc& wc) { take(wc); });
    }
    cpu_sample cpu_from{};
    // One read of the CPU's counter per round (two when paced), made
    // microseconds once at the end (tick_clock.hpp: in the guest a
    // steady_clock read is a system call of about 1 us, a part of what is
    // measured). Back to back, a sample is half the time from one round's
    // end to the next's, as ib_send_lat's; paced, half the time from our
    // post to the answer's last message, leaving out the wait for the
    // round's turn.
    rdma::tick_calibration calibration;
    rdma::ticks previous = 0;
    for (round_ = 0; round_ <= run.rounds; ++round_) {
      name_round();
      if (s_.client) {
        if (pace_.paced() && round_ > 0) {
          pace_.wait_for(round_);
          previous = rdma::read_ticks();
        }
        post_burst();
      }
      wait_for_burst();
      received_ = 0;  // the next round's burst comes only after our answer
      if (!s_.client) post_burst();
      const rdma::ticks now = rdma::read_ticks();
      if (round_ == 0) {  // the warm-up: nothing of it is counted
        cpu_from = cpu_now();
        s_.events.reset_counts();
        counts_ = {};
        calibration.start();
        if (pace_.paced()) pace_.start();
        previous = rdma::read_ticks();
        continue;
      }
      samples.push_back(rdma::tick_span(previous, now));
      previous = now;
    }
    const double us_per_half_tick = calibration.us_per_tick() / 2;
    for (double& sample : samples) sample *= us_per_half_tick;
    const cpu_sample cpu_to = cpu_now();
    const std::uint64_t messages = std::uint64_t{run.rounds} * run.burst;
    std::printf("%s", rdma::latency_report(run.size, std::move(samples)).c_str());
    if (pace_.paced()) {
      std::printf("paced: %u rounds a second, %llu of %u rounds started late\n", s_.opts.rate,
                  static_cast<unsigned long long>(pace_.late()), run.rounds);
    }
    if (s_.opts.mode != wait_mode::poll) {
      std::printf("wake-ups: %llu for %llu messages received, %llu of them found the CQ empty\n",
                  static_cast<unsigned long long>(s_.events.wake_ups()), static_cast<unsigned long long>(messages),
                  static_cast<unsigned long long>(s_.events.empty_wake_ups()));
    }
    if (s_.opts.mode == wait_mode::hybrid) {
      std::printf("hybrid: %llu rounds found while spinning, %llu just after arming, %llu after sleeping\n",
                  static_cast<unsigned long long>(counts_.spinning), static_cast<unsigned long long>(counts_.after_arm),
                  static_cast<unsigned long long>(counts_.slept));
    }
    std::printf("%s", cpu_report(cpu_from, cpu_to, messages).c_str());
  }

 private:
  // One completion: a signaled send's, or a Recv of the peer's burst.
  void take(const ibv_wc& wc) {
    rdma::check_wc(wc);
    if (wc.opcode == IBV_WC_SEND) {  // its only news: the send queue has room again
      room_.completed(wc.wr_id);
      return;
    }
    if (wc.opcode != IBV_WC_RECV) throw rdma::tutorial_error("an unexpected completion: " + rdma::describe_wc(wc));
    const char* message = s_.buffers.recv.data() + wc.wr_id * s_.run.size;
    const header h = read_header(message);
    // RC delivers in order, and a burst comes only after ours: anything
    // else means a message was lost, or taken twice.
    if (wc.byte_len != s_.run.size || h.round != round_ || h.index != received_) {
      throw rdma::tutorial_error("message round " + std::to_string(h.round) + " #" + std::to_string(h.index) + " (" +
                                 std::to_string(wc.byte_len) + " bytes) arrived; round " + std::to_string(round_) +
                                 " #" + std::to_string(received_) + " (" + std::to_string(s_.run.size) +
                                 " bytes) was due");
    }
    s_.buffers.post_receive(s_.qp, wc.wr_id);
    ++received_;
  }

  bool burst_complete() const { return received_ == s_.run.burst; }

  // "round N's messages", what a failed wait says it waited for: written
  // into our own buffer each round, no allocation, since nearly always no
  // wait fails.
  void name_round() {
    constexpr std::string_view before = "round ", after = "'s messages";
    char* end = std::copy(before.begin(), before.end(), what_.data());
    end = std::to_chars(end, end + 10, round_).ptr;
    end = std::copy(after.begin(), after.end(), end);
    what_length_ = static_cast<std::size_t>(end - what_.data());
  }
  std::string_view what() const { return {what_.data(), what_length_}; }

  // The burst of this round as one list of work requests (one ibv_post_send),
  // once the send queue has room for all of it. ACKs normally free it long
  // before (a round trip per round); a slow peer or a short queue must not
  // make us post into a full one.
  void post_burst() {
    const run_params& run = s_.run;
    if (!room_.fits(run.burst)) {
      rdma::wait_while_connected(s_.peer, s_.peer_name, "room in our send queue", s_.opts.peer.wait_ms, [this] {
        s_.events.drain([this](const ibv_wc& wc) { take(wc); });
        return room_.fits(s_.run.burst);
      });
    }
    for (std::uint32_t i = 0; i < run.burst; ++i) {
      write_header(s_.buffers.send.data() + std::size_t{i} * run.size, round_, i);
      ibv_send_wr& wr = wrs_[i];
      wr.wr_id = room_.next() + i;
      wr.send_flags = 0;
      if (room_.signaled(wr.wr_id)) wr.send_flags |= IBV_SEND_SIGNALED;
      if (run.size <= 64) wr.send_flags |= IBV_SEND_INLINE;
      // Solicited: the receiver's CQ, armed for solicited completions
      // only, raises an event for this one (and for no unsolicited one).
      if (solicited(run, i)) wr.send_flags |= IBV_SEND_SOLICITED;
    }
    ibv_send_wr* bad = nullptr;
    if (const int rc = ibv_post_send(s_.qp, wrs_.data(), &bad); rc != 0) {
      throw rdma::verbs_error(rc, "ibv_post_send(round " + std::to_string(round_) + ")");
    }
    room_.posted(run.burst);
  }

  void wait_for_burst() {
    auto take_one = [this](const ibv_wc& wc) { take(wc); };
    notified_cq& events = s_.events;
    const int wait_ms = s_.opts.peer.wait_ms;
    switch (s_.opts.mode) {
      case wait_mode::poll:
        // Stage 05's way: look, look again, never sleep.
        rdma::wait_while_connected(s_.peer, s_.peer_name, what(), wait_ms, [this] {
          s_.events.drain([this](const ibv_wc& wc) { take(wc); });
          return burst_complete();
        }, rdma::waiting::spins);
        return;
      case wait_mode::event:
        while (!burst_complete()) events.sleep_and_drain(s_.peer, s_.peer_name, what(), wait_ms, solicited_only_, take_one);
        return;
      case wait_mode::hybrid: {
        using clock = std::chrono::steady_clock;
        spin_then_sleep policy(s_.opts.spin_us);
        std::optional<clock::time_point> start;
        auto elapsed_us = [&] {
          const auto now = clock::now();
          if (!start) start = now;
          return std::chrono::duration<double, std::micro>(now - *start).count();
        };
        for (std::uint32_t looks = 1;; ++looks) {
          events.drain(take_one);
          if (burst_complete()) {
            ++counts_.spinning;
            return;
          }
          if (!policy.keep_spinning(looks, elapsed_us)) break;
        }
        // Going to sleep. The CQ may still be armed from the last sleep, and
        // what we polled while spinning raised its event: take those first
        // (or the sleep would end at once, on nothing). Then arm, then look
        // once more: a completion that came after the last look and before
        // the arm raised no event.
        events.take_stale_events();
        events.arm(solicited_only_);
        events.drain(take_one);
        if (burst_complete()) {
          ++counts_.after_arm;
          return;
        }
        while (!burst_complete()) events.sleep_and_drain(s_.peer, s_.peer_name, what(), wait_ms, solicited_only_, take_one);
        ++counts_.slept;
        return;
      }
    }
  }

  const side& s_;
  const bool solicited_only_;
  std::uint32_t round_ = 0;
  std::uint32_t received_ = 0;  // of this round's burst (zeroed only once the burst is complete)
  rdma::send_queue_room room_;
  std::vector<ibv_sge> sges_;       // one per message of the burst, built once
  std::vector<ibv_send_wr> wrs_;    // chained by next, built once
  std::array<char, 32> what_{};     // "round N's messages"
  std::size_t what_length_ = 0;
  pacer pace_;
  wait_counts counts_;
};

}  // namespace

message_buffers::message_buffers(ibv_pd* pd, const run_params& r)
    : run(r),
      send(pd, std::size_t{r.burst} * r.size, 0, "send buffer"),
      recv(pd, std::size_t{2} * r.burst * r.size, IBV_ACCESS_LOCAL_WRITE, "receive buffer") {}

void message_buffers::post_receive(ibv_qp* qp, std::uint64_t slot) const {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(recv.data() + slot * run.size), run.size, recv.lkey()};
  ibv_recv_wr wr{};
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (const int rc = ibv_post_recv(qp, &wr, &bad); rc != 0) {
    throw rdma::verbs_error(rc, "ibv_post_recv(slot " + std::to_string(slot) + ")");
  }
}

void message_buffers::post_receives(ibv_qp* qp) const {
  for (std::uint32_t slot = 0; slot < slots(); ++slot) post_receive(qp, slot);
}

rdma::qp_ptr create_qp(const rdma::rdma_device& dev, const notified_cq& events, const run_params& run, bool client) {
  // The queues the run needs, against what the device takes: too many for
  // the client's own --burst is a usage error; the server, which only
  // follows the client's, cannot serve that run (exit 1).
  const char* burst = client ? "--burst" : "";
  dev.limits.queue_depth(send_queue_depth(run), client ? "Sends in the send queue" : "Sends in the send queue for the client's burst", burst);
  dev.limits.queue_depth(2 * run.burst, client ? "Recvs posted" : "Recvs posted for the client's burst", burst);
  ibv_qp_cap cap{};
  cap.max_send_wr = send_queue_depth(run);
  cap.max_recv_wr = 2 * run.burst;
  cap.max_send_sge = 1;
  cap.max_recv_sge = 1;
  cap.max_inline_data = 64;  // small Sends travel inside the WQE
  // One CQ, bound to the channel, for both queues.
  return rdma::create_rc_qp(dev.pd.get(), events.cq(), events.cq(), cap, "our QP");
}

void connect_and_say(ibv_qp* qp, const rdma::wire::endpoint& ours, const rdma::wire::endpoint& peer,
                     const rdma::qp_params& params) {
  rdma::connect_to_peer(qp, ours, peer, params);
  std::printf("QP 0x%x: RESET -> INIT -> RTR -> RTS (sq_psn 0x%x, rq_psn 0x%x)\n", qp->qp_num, ours.psn, peer.psn);
}

void describe_run(const side& s) {
  const run_params& run = s.run;
  std::printf("rounds: %u after a warm-up, %u x %u bytes each way", run.rounds, run.burst, run.size);
  if (run.solicited_every != 0) std::printf(", 1 Send in %u solicited", run.solicited_every);
  if (s.client && s.opts.rate != 0) {
    std::printf(", paced at %u a second: a sample is half the time from our post to the answer's last message",
                s.opts.rate);
  }
  std::printf("\n");
  const char* arming = run.solicited_every != 0 ? "solicited completions only" : "every completion";
  switch (s.opts.mode) {
    case wait_mode::poll:
      std::printf("waiting: --poll, ibv_poll_cq in a loop, never asleep\n");
      break;
    case wait_mode::event:
      std::printf("waiting: --event, asleep on the completion channel, armed for %s\n", arming);
      break;
    case wait_mode::hybrid:
      std::printf("waiting: --hybrid, polling for %u us, then asleep on the channel, armed for %s\n", s.opts.spin_us,
                  arming);
      break;
  }
}

void exchange(const side& s) { ping_pong(s).run(); }

}  // namespace stage08
