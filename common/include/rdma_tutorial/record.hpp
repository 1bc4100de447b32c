// A record that can tell what happened to it on the way, as stage 06's
// clients stream them (and stage 09's): its sequence number (8 bytes,
// little-endian), bytes that depend on the sequence number, and the FNV-1a
// of all that in its last 4 bytes. The receiver learns from one record
// whether it is the one it expected (a lower number: a duplicate; a higher:
// records were lost) and whether its bytes are the ones that were sent.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "rdma_tutorial/checksum.hpp"

namespace rdma {

// Sequence number + 4 bytes + checksum.
inline constexpr std::uint32_t min_record = 16;

inline void fill_record(std::span<char> record, std::uint64_t seq) {
  for (int i = 0; i < 8; ++i) record[static_cast<std::size_t>(i)] = static_cast<char>(seq >> (8 * i));
  const std::size_t body_end = record.size() - 4;
  for (std::size_t i = 8; i < body_end; ++i) record[i] = static_cast<char>((seq * 131 + i * 7) & 0xff);
  const std::uint32_t sum = fnv1a(record.first(body_end));
  std::memcpy(record.data() + body_end, &sum, 4);
}

// The sequence number a record carries, unchecked.
inline std::uint64_t record_seq(std::span<const char> record) {
  std::uint64_t seq = 0;
  for (int i = 0; i < 8; ++i) seq |= std::uint64_t{static_cast<unsigned char>(record[static_cast<std::size_t>(i)])} << (8 * i);
  return seq;
}

// What is wrong with a record that should carry sequence number `expected`:
// "" when nothing.
inline std::string check_record(std::span<const char> record, std::uint64_t expected) {
  const std::uint64_t seq = record_seq(record);
  const std::size_t body_end = record.size() - 4;
  std::uint32_t sum = 0;
  std::memcpy(&sum, record.data() + body_end, 4);
  if (sum != fnv1a(record.first(body_end))) {
    return "record " + std::to_string(expected) + ": checksum mismatch (the bytes changed under us, or never arrived)";
  }
  if (seq != expected) {
    return "record " + std::to_string(expected) + " carries sequence number " + std::to_string(seq) +
           (seq < expected ? " (a duplicate)" : " (records were lost)");
  }
  return "";
}

}  // namespace rdma
