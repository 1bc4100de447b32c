// What a registration costs. ibv_reg_mr walks every page of the buffer, pins
// it and writes its address into the device's translation table;
// ibv_dereg_mr undoes both. So the cost grows with the number of pages, and
// registering per message, on the data path, is what RDMA programs avoid:
// register once, reuse (stage 09 builds a pool on this).
//
// Each size is registered and deregistered `iters` times; the median hides
// the odd slow run. The buffer is touched before timing, so page faults are
// not counted as registration cost.
// (Exercise: exercises/leaked_registrations.cpp is this file with a leak.)
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
  for (const std::size_t size : sizes) {
    rdma::aligned_buffer buf(size);
    std::vector<double> samples;
    for (int i = 0; i < iters; ++i) {
      const auto start = std::chrono::steady_clock::now();
      rdma::mr_ptr mr(rdma::check_ptr(ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE),
                                     "ibv_reg_mr(" + size_text(size) + ")"));
      rdma::check_rc(ibv_dereg_mr(mr.get()), "ibv_dereg_mr(" + size_text(size) + ")");
      mr.release();  // deregistered; had it failed, the handle would still own the MR
      samples.push_back(microseconds_since(start));
    }
    const double total = median(samples);
    const double pages = static_cast<double>(size / page_size);
    std::printf("%9s %7zu   %.1f us   %.2f us/page\n", size_text(size).c_str(), size / page_size, total,
                total / pages);
  }
}

}  // namespace stage02
