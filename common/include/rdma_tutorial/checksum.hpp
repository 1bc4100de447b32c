// FNV-1a, 32 bits: the checksum both peers print, so a test (or a reader)
// can see that the bytes one side wrote are the bytes the other side read.
#pragma once

#include <cstdint>
#include <span>

namespace rdma {

inline std::uint32_t fnv1a(std::span<const char> bytes) {
  std::uint32_t h = 2166136261u;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

}  // namespace rdma
