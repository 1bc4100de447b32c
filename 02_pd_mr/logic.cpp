#include "stage.hpp"

#include <infiniband/verbs.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <utility>

namespace stage02 {

std::string access_text(int access) {
  static constexpr std::array<std::pair<int, const char*>, 5> names{{
      {IBV_ACCESS_LOCAL_WRITE, "LOCAL_WRITE"},
      {IBV_ACCESS_REMOTE_WRITE, "REMOTE_WRITE"},
      {IBV_ACCESS_REMOTE_READ, "REMOTE_READ"},
      {IBV_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC"},
      {IBV_ACCESS_MW_BIND, "MW_BIND"},
  }};
  if (access == 0) return "none (local read only)";
  std::string text;
  int rest = access;
  for (const auto& [bit, name] : names) {
    if ((access & bit) == 0) continue;
    text += (text.empty() ? "" : " | ") + std::string(name);
    rest &= ~bit;
  }
  if (rest != 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%x", static_cast<unsigned>(rest));
    text += (text.empty() ? "" : " | ") + std::string(hex);
  }
  return text;
}

std::string size_text(std::size_t bytes) {
  constexpr std::size_t kib = 1024;
  constexpr std::size_t mib = kib * kib;
  if (bytes != 0 && bytes % mib == 0) return std::to_string(bytes / mib) + " MiB";
  if (bytes != 0 && bytes % kib == 0) return std::to_string(bytes / kib) + " KiB";
  return std::to_string(bytes) + " bytes";
}

std::vector<std::size_t> table_sizes(std::size_t memlock_bytes, std::size_t cap) {
  const std::size_t largest = std::min(memlock_bytes / 2, cap);
  std::vector<std::size_t> sizes;
  for (std::size_t size = page_size; size <= largest; size *= 2) sizes.push_back(size);
  return sizes;
}

double median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const std::size_t mid = samples.size() / 2;
  return samples.size() % 2 == 1 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
}

}  // namespace stage02
