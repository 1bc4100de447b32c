// Stage 08's protocol: who sends what to whom, in order.
//
//   client (event_channel -s ADDR)                server (event_channel)
//                                                 listens
//   TCP connect, endpoint (52 bytes) ----------->
//   the run (16 bytes): rounds, burst, size,
//     solicited_every, each a big-endian u32 --->  checks it, QP to RTS, posts
//                                                 2 x burst Recvs of size bytes
//   <------------------------------------ endpoint (52 bytes)
//   QP to RTS, posts 2 x burst Recvs
//   round 0 (the warm-up), then rounds 1..N:
//     burst Sends of size bytes =============>   waits for the whole burst,
//                                                 reposting each Recv it takes
//     <=========================================  burst Sends back
//   waits for the whole burst
//   prints its report, closes TCP ------------->  prints its report once the
//                                                 last round is answered, waits
//                                                 for that close, leaves
//
// Each peer waits its own way (--poll, --event, --hybrid): how a side
// learns that a completion arrived is its own business, and the two may
// differ. With solicited_every N > 0, message i of a burst (from 0) carries
// IBV_SEND_SOLICITED when (i + 1) % N == 0, in both directions, and both
// sides arm their CQ for solicited completions only.
//
// ---> is TCP, ===> Sends on the QP. A message's first 8 bytes are its
// round and its index in the burst, each a big-endian u32; the rest is a
// pattern. The endpoint message is common/include/rdma_tutorial/wire.hpp.
#pragma once

#include <arpa/inet.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace stage08 {

// What the client asks for; the server follows it.
struct run_params {
  std::uint32_t rounds = 1000;          // measured rounds, after one warm-up round
  std::uint32_t burst = 1;              // Sends per round in each direction
  std::uint32_t size = 8;               // bytes per Send, at least 8
  std::uint32_t solicited_every = 0;    // 0: no message is solicited
};

inline constexpr std::size_t run_params_bytes = 16;

// What either side agrees to at most. The run comes from the peer: the
// server checks it against these before it sizes anything by it (each
// measured round keeps one sample: 10 million rounds are 80 MB of them).
inline constexpr std::uint32_t max_rounds = 10000000;
inline constexpr std::uint32_t max_burst = 256;
inline constexpr std::uint32_t min_size = 8;          // the header
inline constexpr std::uint32_t max_size = 1u << 20;

inline std::array<std::byte, run_params_bytes> encode(const run_params& p) {
  std::array<std::byte, run_params_bytes> out{};
  const std::uint32_t words[4] = {htonl(p.rounds), htonl(p.burst), htonl(p.size), htonl(p.solicited_every)};
  std::memcpy(out.data(), words, sizeof words);
  return out;
}

inline run_params decode(std::span<const std::byte, run_params_bytes> in) {
  std::uint32_t words[4];
  std::memcpy(words, in.data(), sizeof words);
  return {ntohl(words[0]), ntohl(words[1]), ntohl(words[2]), ntohl(words[3])};
}

// Whether message `index` of a burst asks the receiver to wake up.
inline bool solicited(const run_params& p, std::uint32_t index) {
  return p.solicited_every != 0 && (index + 1) % p.solicited_every == 0;
}

// The 8-byte header of every message.
inline void write_header(char* message, std::uint32_t round, std::uint32_t index) {
  const std::uint32_t words[2] = {htonl(round), htonl(index)};
  std::memcpy(message, words, sizeof words);
}
struct header {
  std::uint32_t round;
  std::uint32_t index;
};
inline header read_header(const char* message) {
  std::uint32_t words[2];
  std::memcpy(words, message, sizeof words);
  return {ntohl(words[0]), ntohl(words[1])};
}

}  // namespace stage08
