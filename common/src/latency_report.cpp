// perftest's latency line, computed from one-way samples (pure; unit-tested
// in 05_write_imm/tests/options_test.cpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "rdma_tutorial/latency_report.hpp"

namespace rdma {

namespace {

// Nearest rank: the smallest sample with at least p of all at or below it.
double percentile(const std::vector<double>& sorted, double p) {
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

std::string latency_report(std::uint32_t bytes, std::vector<double> samples_us) {
  if (samples_us.empty()) return "no samples\n";
  std::sort(samples_us.begin(), samples_us.end());
  const double n = static_cast<double>(samples_us.size());
  const double mean = std::accumulate(samples_us.begin(), samples_us.end(), 0.0) / n;
  double var = 0;
  for (double s : samples_us) var += (s - mean) * (s - mean);
  char text[400];
  std::snprintf(text, sizeof text,
                " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
                "   99%% percentile[usec]   99.9%% percentile[usec]\n"
                " %-7u %-10zu     %-7.2f        %-7.2f      %-7.2f            %-7.2f        %-7.2f          %-7.2f"
                "                %-7.2f\n",
                bytes, samples_us.size(), samples_us.front(), samples_us.back(), percentile(samples_us, 0.5), mean,
                std::sqrt(var / n), percentile(samples_us, 0.99), percentile(samples_us, 0.999));
  return text;
}

}  // namespace rdma
