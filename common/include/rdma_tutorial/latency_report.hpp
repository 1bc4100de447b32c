// perftest's latency line, as stage 05 first printed it (docs/05-write-imm.md)
// and stage 08 reuses it for its three ways of waiting.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rdma {

// perftest's latency line from one-way samples in microseconds (half of
// each round trip): min, max, median (t_typical), mean, 99th and 99.9th
// percentiles, with its header. Pure; "no samples\n" for none.
std::string latency_report(std::uint32_t bytes, std::vector<double> samples_us);

}  // namespace rdma
