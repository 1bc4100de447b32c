// Not the lesson: what the ping-pong measures and prints around its rounds
// (bench.cpp, cpu.cpp; exchange.cpp calls them). None of it touches the CQ
// or the channel.
//
// Nothing here allocates or makes a system call once the rounds run: a
// sample is a read of the CPU's counter (rdma::read_ticks, tick_clock.hpp),
// made microseconds once at the end, and the words a failed wait would say
// are written into a buffer of their own.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rdma_tutorial/tick_clock.hpp"
#include "stage.hpp"

namespace stage08 {

// How a side's waits went, over the measured rounds (exchange.cpp counts).
struct wait_counts {
  std::uint64_t spinning = 0;     // --hybrid: the burst was there while spinning
  std::uint64_t after_arm = 0;    // --hybrid: found by the look just after arming
  std::uint64_t slept = 0;        // --hybrid: needed the channel
};

// "round N's messages", what a failed wait says it waited for: written
// into our own buffer each round, no allocation, since nearly always no
// wait fails.
class round_words {
 public:
  // Inline, like everything a round calls here: from another file it would
  // cost a call and its copies a round (callgrind: 53 instructions and a
  // strlen against 30 for the conversion, scripts/icount.sh --only 08).
  void name(std::uint32_t round) {
    constexpr std::string_view before = "round ", after = "'s messages";
    char* end = std::copy(before.begin(), before.end(), text_.data());
    end = std::to_chars(end, end + 10, round).ptr;
    end = std::copy(after.begin(), after.end(), end);
    length_ = static_cast<std::size_t>(end - text_.data());
  }
  std::string_view view() const { return {text_.data(), length_}; }

 private:
  std::array<char, 32> text_{};
  std::size_t length_ = 0;
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
  void start();
  void wait_for(std::uint32_t round);

 private:
  std::uint32_t rate_;
  std::uint64_t start_ns_ = 0;
  std::uint64_t late_ = 0;
};

// cpu.cpp: what waiting costs, in CPU per message.
struct cpu_sample {
  double user_s = 0;
  double sys_s = 0;
  double wall_s = 0;
};
// getrusage(RUSAGE_SELF) and the monotonic clock, now.
cpu_sample cpu_now();
// "CPU: 0.41 s user + 0.12 s sys in 0.45 s for 1000 messages: 530.00 us per
// message (1.18 s of CPU per second)"; pure.
std::string cpu_report(const cpu_sample& from, const cpu_sample& to, std::uint64_t messages);
// CPU microseconds (user + sys) per message; 0 for no messages; pure.
double cpu_us_per_message(const cpu_sample& from, const cpu_sample& to, std::uint64_t messages);

// One side's measurement: a sample per measured round, its CPU, its pace.
class round_bench {
 public:
  round_bench(const side& s, wait_counts& counts);
  // The client, before it posts a round: a paced run waits for its time.
  void before_post(std::uint32_t round) {
    if (!pace_.paced() || round == 0) return;
    pace_.wait_for(round);
    previous_ = rdma::read_ticks();
  }
  // After each round: the warm-up (round 0) starts the measurement and
  // zeroes the counts; every later round is a sample.
  void after_round(std::uint32_t round) {
    const rdma::ticks now = rdma::read_ticks();
    if (round == 0) {
      start();
      return;
    }
    samples_.push_back(rdma::tick_span(previous_, now));
    previous_ = now;
  }
  // The latency line, a paced client's late rounds, the wake-ups, the
  // hybrid's counts, the CPU per message.
  void report();

 private:
  void start();  // the warm-up is over: the CPU, the counts and the clock start

  const side& s_;
  wait_counts& counts_;
  std::vector<double> samples_;  // in ticks until the end, then microseconds
  rdma::tick_calibration calibration_;
  rdma::ticks previous_ = 0;
  cpu_sample cpu_from_{};
  pacer pace_;
};

}  // namespace stage08
