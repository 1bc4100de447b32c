// The 32 bits of immediate data as a tagged value, as taught in stage 05
// (docs/05-write-imm.md, section "What to put in 32 bits"):
//
//   bits 31..24  type    what the message is (a stage's own numbering)
//   bits 23..0   index   a slot, or a sequence number modulo 2^24
//
// Never a pointer: the receiver must be able to check every value it is
// sent against what it exposed, before it touches anything the value names.
//
// These functions work in host byte order. The verbs carry imm_data in
// network byte order: htonl once at the sender (wr.imm_data), ntohl once at
// the target (wc.imm_data), nowhere else.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace rdma::imm {

inline constexpr std::uint32_t index_limit = 1u << 24;

struct tagged {
  std::uint8_t type = 0;
  std::uint32_t index = 0;
};

// Throws rdma::tutorial_error when index does not fit 24 bits. Inline: a
// message is encoded and decoded on the hot path (the throw is not).
[[noreturn]] void throw_index_too_big(std::uint32_t index);
inline std::uint32_t encode(std::uint8_t type, std::uint32_t index) {
  if (index >= index_limit) throw_index_too_big(index);
  return (std::uint32_t{type} << 24) | index;
}
inline tagged decode(std::uint32_t value) {
  return {static_cast<std::uint8_t>(value >> 24), value & (index_limit - 1)};
}

// A type a receiver accepts, and the indexes valid for it (index < limit).
struct accepted {
  std::uint8_t type;
  const char* name;
  std::uint32_t limit;
};

// decode, then check against what the receiver accepts: the type must be
// listed and its index below that type's limit. Throws rdma::tutorial_error
// naming the value and what is wrong with it; returns the matching entry.
const accepted& validate(std::uint32_t value, std::span<const accepted> rules);

// "0x01000002"
std::string hex(std::uint32_t value);

}  // namespace rdma::imm
