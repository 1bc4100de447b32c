// A clock for a sample per message that costs no system call: the CPU's
// own counter (x86's TSC, ARM's virtual counter), as perftest reads it.
//
// steady_clock is the right clock for deadlines, but reading it is a
// system call where the kernel's clock source cannot be read from user
// space: in this tutorial's qemu guests it is an emulated HPET, and one
// read there costs about 1 us (measured: 0.98 us per read on Linux 6.1,
// against 0.015 us for the TSC), as much as the Recv and completion a
// round trip is measured for. So the latency modes (05's --latency, 08's
// ping-pong) stamp each round with ticks, and turn ticks into microseconds
// once, at the end, from two steady_clock reads around the whole run
// (perftest calibrates its cycles against gettimeofday the same way).
//
// On a NIC's host the counter is constant-rate and synchronized across
// cores (x86: the "constant_tsc" and "nonstop_tsc" flags in /proc/cpuinfo);
// a sample that straddles a move to a core whose counter differs is off by
// that difference, and a negative one is counted as 0 (tick_span).
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace rdma {

using ticks = std::uint64_t;

inline ticks read_ticks() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#elif defined(__aarch64__)
  std::uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  // No counter we know of: the clock itself (a tick is a nanosecond).
  return static_cast<ticks>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now().time_since_epoch())
                                .count());
#endif
}

// The ticks from `from` to `to` as a double; 0 when `to` reads earlier
// (the two reads were on cores whose counters disagree).
inline double tick_span(ticks from, ticks to) noexcept { return to > from ? static_cast<double>(to - from) : 0.0; }

// Microseconds per tick over one run: start() at its beginning, then
// us_per_tick() at its end (two steady_clock reads in all).
class tick_calibration {
 public:
  void start() noexcept {
    wall_ = std::chrono::steady_clock::now();
    ticks_ = read_ticks();
  }
  double us_per_tick() const noexcept {
    const ticks t = read_ticks();
    const auto wall = std::chrono::steady_clock::now();
    const double span = tick_span(ticks_, t);
    return span > 0 ? std::chrono::duration<double, std::micro>(wall - wall_).count() / span : 0.0;
  }

 private:
  std::chrono::steady_clock::time_point wall_{};
  ticks ticks_ = 0;
};

}  // namespace rdma
