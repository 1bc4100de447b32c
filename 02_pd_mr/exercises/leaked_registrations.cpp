// EXERCISE: the registration cost table stops part-way with ENOMEM
//
// This is cost_table.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh leaked_registrations
// As shipped the table stops part-way, well below the sizes the memlock limit
// allows, with
//   pd_mr: ibv_reg_mr(1 MiB) failed (ENOMEM): Cannot allocate memory
//
// TODO: this version times only ibv_reg_mr and tidies up "later". Every
// registration stays pinned, and counted against the memlock limit, until
// ibv_dereg_mr; here none ends before the table does, so the registrations of
// every size and every run pile up until the limit refuses the next one.
// Make each registration end right after it is made, and time what the
// reference times (register and deregister). (Hint: docs/02-pd-mr.md,
// sections "Deregister before free" and "The memlock limit".)
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage02 {

namespace {

constexpr std::size_t largest_size = std::size_t{64} << 20;  // keeps the run short where memlock is unlimited

double microseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void print_cost_table(ibv_pd* pd, const rlimit& memlock, int iters) {
  const std::size_t limit = memlock.rlim_cur == RLIM_INFINITY ? largest_size * 2 : memlock.rlim_cur;
  const auto sizes = table_sizes(limit, largest_size);
  if (sizes.empty()) {
    std::printf("\nno cost table: the memlock limit leaves no room for even one page\n");
    return;
  }
  std::printf("\nregistration cost, ibv_reg_mr + ibv_dereg_mr, median of %d runs (up to half the memlock limit)\n",
              iters);
  std::printf("%9s %7s   %s\n", "size", "pages", "reg+dereg   per page");
  std::vector<ibv_mr*> registered;  // deregistered after the table  // TODO
  for (const std::size_t size : sizes) {
    rdma::aligned_buffer buf(size);
    std::vector<double> samples;
    for (int i = 0; i < iters; ++i) {
      const auto start = std::chrono::steady_clock::now();
      registered.push_back(rdma::check_ptr(ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE),  // TODO
                                           "ibv_reg_mr(" + size_text(size) + ")"));  // TODO
      samples.push_back(microseconds_since(start));
    }
    const double total = median(samples);
    const double pages = static_cast<double>(size / page_size);
    std::printf("%9s %7zu   %.1f us   %.2f us/page\n", size_text(size).c_str(), size / page_size, total,
                total / pages);
  }
  for (ibv_mr* mr : registered) rdma::check_rc(ibv_dereg_mr(mr), "ibv_dereg_mr");  // TODO
}

}  // namespace stage02
