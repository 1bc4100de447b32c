// The clock our deadlines are read on: CLOCK_MONOTONIC_COARSE, the time at
// the kernel's last tick (at most a few ms behind: 4 ms on Debian's
// kernels, HZ 250). The vDSO reads it from memory the kernel shares with
// every process, whatever the clock source, so it is never a system call.
// The precise clock (steady_clock, CLOCK_MONOTONIC) is read from the clock
// source itself, and where that is not the CPU's TSC it is a system call:
// in our guests it is an emulated HPET (the kernel does not trust TSCs
// under TCG), 0.8 us a read against 0.05 (stage 08's chapter). A loop that
// looks at a deadline while it waits for a completion reads it thousands
// of times: on Soft-RoCE with Linux 6.12, whose round trips pass through
// rxe's work items, stage 05's loops did 13 such system calls per round
// trip, and perftest, which reads no clock in its loops, none
// (scripts/kcount.sh). A deadline of milliseconds needs nothing finer.
// A measurement does: it keeps steady_clock, or the TSC (tick_clock.hpp).
#pragma once

#include <time.h>

#include <chrono>

namespace rdma {

struct coarse_clock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<coarse_clock>;
  static constexpr bool is_steady = true;

  static time_point now() noexcept {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return time_point(std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec));
  }
};

}  // namespace rdma
