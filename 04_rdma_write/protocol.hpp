// Stage 04's protocol: who sends what to whom, in order.
//
//   client (rdma_write -s ADDR)                server (rdma_write)
//                                              registers the landing region
//                                              (REMOTE_WRITE), listens on
//                                              --bind ADDR, -p PORT
//   TCP connect ------------------------------>
//   endpoint: QPN, PSN, GID, MTU (52 bytes) -->  checks every field, walks its
//                                              QP to RTS, posts a Recv for
//                                              the notice (--notify send)
//   <------------------ endpoint: QPN, PSN, GID, the landing region's
//                       addr, rkey and length (52 bytes)
//   walks its QP to RTS; checks that --size
//   fits the region
//   RDMA Write: payload -> region[0, size) ===>  (nothing: no completion, no
//                                              interrupt, the CPU is not told)
//   the notice, 8 bytes ======================>
//     --notify send: a Send, which consumes     its Recv completes:
//       the server's posted Recv                IBV_WC_RECV, 8 bytes
//     --notify flag: an RDMA Write to the       it polls that word in memory
//       flag word, region[capacity, +8)         until it is non-zero
//   closes the TCP connection ---------------->  waits for that close, then
//                                              releases the region
//
// ---> is TCP, ===> is RDMA on the QP. The endpoint message is
// common/include/rdma_tutorial/wire.hpp; the notice is below. The landing
// region is the payload's capacity (the server's --size, rounded up to a
// multiple of 8) plus the 8-byte flag word; the server's advertised length
// covers both, so the flag word is the region's last 8 bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "rdma_tutorial/checksum.hpp"
#include "rdma_tutorial/wire.hpp"

namespace stage04 {

using rdma::fnv1a;

// The notice: what the client wrote, as two big-endian 32-bit numbers.
//   offset 0  bytes   bytes per write, at region offset 0 (>= 1)
//   offset 4  writes  how many times it wrote them (>= 1)
// Neither is ever 0, so as a flag word it is non-zero exactly when written.
inline constexpr std::size_t notice_size = 8;
struct notice {
  std::uint32_t bytes = 0;
  std::uint32_t writes = 0;
};

inline std::array<std::byte, notice_size> encode_notice(const notice& n) {
  std::array<std::byte, notice_size> out{};
  rdma::wire::store_be32(&out[0], n.bytes);
  rdma::wire::store_be32(&out[4], n.writes);
  return out;
}

inline notice decode_notice(std::span<const std::byte, notice_size> in) {
  return {rdma::wire::load_be32(&in[0]), rdma::wire::load_be32(&in[4])};
}

// Where the flag word starts: --size rounded up to a multiple of 8. The
// region starts on a page, so the word is 8-byte aligned, which
// std::atomic_ref<std::uint64_t> requires and which the flag rests on: the
// server sees the word whole only if the device stores it, and the server
// loads it, as one aligned 8-byte access. The verbs promise neither; an
// aligned word is one store in practice, a word across a cache line may be
// seen half-written.
inline constexpr std::uint32_t payload_capacity(std::uint32_t size) {
  return (size + (notice_size - 1)) / notice_size * notice_size;
}

// What the client writes, so the server can tell it arrived whole: this
// text, then bytes that depend on their offset.
inline constexpr std::string_view payload_text = "hello from the client";

inline void fill_payload(std::span<char> payload) {
  for (std::size_t i = 0; i < payload.size(); ++i) {
    payload[i] = i < payload_text.size() ? payload_text[i] : static_cast<char>((i * 31 + 7) & 0x7f);
  }
}

}  // namespace stage04
