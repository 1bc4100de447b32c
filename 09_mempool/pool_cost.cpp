// Why the pool exists, in numbers. Stage 02's cost table showed that one
// ibv_reg_mr + ibv_dereg_mr grows with the number of pages; a program that
// registered each message's buffer would pay that on every message. Here the
// same measurement stands beside what the pool costs per message: one alloc
// and one release, which touch no verb at all.
//
// Both sides are timed without their set-up: the registered size's buffer is
// allocated and touched before its timing starts (as in stage 02), and the
// pool's single ibv_reg_mr happens before its timing starts, because paying
// it once at start-up is the whole point.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "pool.hpp"
#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/error.hpp"

namespace stage09 {

namespace {

constexpr std::size_t smallest_size = 4096;
constexpr std::size_t largest_size = std::size_t{4} << 20;
// One pair takes tens of nanoseconds: timed alone it would be mostly the
// clock's own cost, so each run times this many and divides.
constexpr int pairs_per_run = 1000;

using clock_type = std::chrono::steady_clock;

double microseconds_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
}

// Upper median for an even count: close enough for a table of five runs.
double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// The median over `runs` of one registration and deregistration of `size`
// bytes: what registering per message would cost each message.
double reg_dereg_us(ibv_pd* pd, std::size_t size, int runs) {
  const rdma::aligned_buffer buf(size);  // page-aligned and touched, outside the timing
  std::vector<double> samples;
  for (int run = 0; run < runs; ++run) {
    const auto start = clock_type::now();
    rdma::mr_ptr mr(rdma::check_ptr(ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE),
                                   "ibv_reg_mr(" + size_text(size) + ")"));
    rdma::check_rc(ibv_dereg_mr(mr.get()), "ibv_dereg_mr(" + size_text(size) + ")");
    mr.release();  // deregistered; had it failed, the handle would still own the MR
    samples.push_back(microseconds_since(start));
  }
  return median(samples);
}

// The median over `runs` of one alloc + release, from a pool registered
// before the clock starts.
double pool_pair_us(ibv_pd* pd, std::size_t size, int runs) {
  // One chunk, not more: alloc and release cost the same whatever the count
  // (a stack push and pop), while every chunk is pinned memory. The guest's
  // RLIMIT_MEMLOCK is 8 MiB; a pool of 4 MiB chunks holding two of them
  // would take all of it.
  memory_pool pool(pd, static_cast<std::uint32_t>(size), 1, IBV_ACCESS_LOCAL_WRITE);
  std::vector<double> samples;
  for (int run = 0; run < runs; ++run) {
    const auto start = clock_type::now();
    for (int i = 0; i < pairs_per_run; ++i) {
      const chunk c = pool.alloc();
      pool.release(c.addr);
    }
    samples.push_back(microseconds_since(start) / pairs_per_run);
  }
  return median(samples);
}

struct cost_row {
  std::size_t bytes;
  double reg_us;
  double pool_us;
  double ratio;
};

}  // namespace

void print_pool_cost(ibv_pd* pd, int runs) {
  if (runs < 1) throw rdma::tutorial_error("print_pool_cost needs at least one run, not " + std::to_string(runs));
  std::printf("\nregistering per message vs a pre-registered pool: ibv_reg_mr + ibv_dereg_mr against one pool\n"
              "alloc + release, median of %d runs (%d pairs a run for the pool)\n",
              runs, pairs_per_run);
  std::printf("%9s %12s %20s %9s\n", "size", "reg+dereg", "pool alloc+release", "ratio");

  std::vector<cost_row> rows;
  for (std::size_t size = smallest_size; size <= largest_size; size *= 2) {
    // The pool is measured and gone (deregistered, unmapped) before the
    // registration loop starts: at most one size's worth is pinned at a time,
    // 4 MiB at the largest, half the guest's memlock limit.
    const double pool_us = pool_pair_us(pd, size, runs);
    const double reg_us = reg_dereg_us(pd, size, runs);
    const double ratio = pool_us > 0 ? reg_us / pool_us : 0;
    rows.push_back({size, reg_us, pool_us, ratio});
    std::printf("%9s %9.1f us %17.3f us %8.0fx\n", size_text(size).c_str(), reg_us, pool_us, ratio);
  }

  // For scripts/bench.sh: one line per size, fixed fields.
  std::printf("\n");
  for (const cost_row& r : rows) std::printf("pool-cost %zu %.3f %.3f %.0f\n", r.bytes, r.reg_us, r.pool_us, r.ratio);
}

}  // namespace stage09
