// Not the lesson: the measurement around the ping-pong's rounds
// (bench.hpp), the way ib_send_lat takes it.
#include "bench.hpp"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <utility>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/latency_report.hpp"

namespace stage08 {

namespace {

std::uint64_t now_ns() {
  timespec t{};
  rdma::check_errno(clock_gettime(CLOCK_MONOTONIC, &t), "clock_gettime");
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000 + static_cast<std::uint64_t>(t.tv_nsec);
}

}  // namespace

void pacer::start() {
  start_ns_ = now_ns();
  late_ = 0;
}

void pacer::wait_for(std::uint32_t round) {
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

round_bench::round_bench(const side& s, wait_counts& counts) : s_(s), counts_(counts), pace_(s.opts.rate) {
  samples_.reserve(s.run.rounds);
}

// One read of the CPU's counter per round (two when paced), made
// microseconds once at the end (tick_clock.hpp: in the guest a
// steady_clock read is a system call of about 1 us, a part of what is
// measured). Back to back, a sample is half the time from one round's end
// to the next's, as ib_send_lat's; paced, half the time from our post to
// the answer's last message, leaving out the wait for the round's turn.
void round_bench::start() {
  cpu_from_ = cpu_now();
  s_.events.reset_counts();
  counts_ = {};
  calibration_.start();
  if (pace_.paced()) pace_.start();
  previous_ = rdma::read_ticks();
}

void round_bench::report() {
  const run_params& run = s_.run;
  const double us_per_half_tick = calibration_.us_per_tick() / 2;
  for (double& sample : samples_) sample *= us_per_half_tick;
  const cpu_sample cpu_to = cpu_now();
  const std::uint64_t messages = std::uint64_t{run.rounds} * run.burst;
  std::printf("%s", rdma::latency_report(run.size, std::move(samples_)).c_str());
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
  std::printf("%s", cpu_report(cpu_from_, cpu_to, messages).c_str());
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

}  // namespace stage08
