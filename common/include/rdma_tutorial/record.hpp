// A record that can tell what happened to it on the way, as stage 06's
// clients stream them (and stage 09's): its sequence number (8 bytes,
// big-endian), bytes that depend on the sequence number, and the FNV-1a of
// all that in its last 4 bytes (big-endian). Both numbers are in network
// byte order like every number this tutorial puts on the wire (stage 04),
// so a peer on a host of the other byte order reads them right. The
// receiver learns from one record
// whether it is the one it expected (a lower number: a duplicate; a higher:
// records were lost) and whether its bytes are the ones that were sent.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "rdma_tutorial/checksum.hpp"
#include "rdma_tutorial/wire.hpp"

namespace rdma {

// Sequence number + 4 bytes + checksum.
inline constexpr std::uint32_t min_record = 16;

inline void fill_record(std::span<char> record, std::uint64_t seq) {
  wire::store_be64(reinterpret_cast<std::byte*>(record.data()), seq);
  const std::size_t body_end = record.size() - 4;
  for (std::size_t i = 8; i < body_end; ++i) record[i] = static_cast<char>((seq * 131 + i * 7) & 0xff);
  wire::store_be32(reinterpret_cast<std::byte*>(record.data() + body_end), fnv1a(record.first(body_end)));
}

// The sequence number a record carries, unchecked.
inline std::uint64_t record_seq(std::span<const char> record) {
  return wire::load_be64(reinterpret_cast<const std::byte*>(record.data()));
}

// What is wrong with a record that should carry sequence number `expected`:
// "" when nothing.
inline std::string check_record(std::span<const char> record, std::uint64_t expected) {
  const std::uint64_t seq = record_seq(record);
  const std::size_t body_end = record.size() - 4;
  const std::uint32_t sum = wire::load_be32(reinterpret_cast<const std::byte*>(record.data() + body_end));
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
