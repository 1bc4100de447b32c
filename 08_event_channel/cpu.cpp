// What waiting costs: CPU seconds (user + sys, from getrusage) per message.
// A program that polls is never off the CPU, so it is charged for every
// microsecond of the run; one that sleeps is charged for the work alone.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>

#include "rdma_tutorial/error.hpp"
#include "bench.hpp"

namespace stage08 {

namespace {

double seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; }

}  // namespace

cpu_sample cpu_now() {
  rusage usage{};
  rdma::check_errno(getrusage(RUSAGE_SELF, &usage), "getrusage");
  const auto wall = std::chrono::steady_clock::now().time_since_epoch();
  return {seconds(usage.ru_utime), seconds(usage.ru_stime), std::chrono::duration<double>(wall).count()};
}

double cpu_us_per_message(const cpu_sample& from, const cpu_sample& to, std::uint64_t messages) {
  if (messages == 0) return 0;
  const double cpu_s = (to.user_s - from.user_s) + (to.sys_s - from.sys_s);
  return cpu_s * 1e6 / static_cast<double>(messages);
}

std::string cpu_report(const cpu_sample& from, const cpu_sample& to, std::uint64_t messages) {
  const double user = to.user_s - from.user_s;
  const double sys = to.sys_s - from.sys_s;
  const double wall = to.wall_s - from.wall_s;
  char text[200];
  std::snprintf(text, sizeof text,
                "CPU: %.2f s user + %.2f s sys in %.2f s for %llu messages: %.2f us per message (%.2f s of CPU per "
                "second)\n",
                user, sys, wall, static_cast<unsigned long long>(messages), cpu_us_per_message(from, to, messages),
                wall > 0 ? (user + sys) / wall : 0.0);
  return text;
}

}  // namespace stage08
