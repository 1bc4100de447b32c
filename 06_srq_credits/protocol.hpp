// Stage 06's protocol: who sends what to whom, in order.
//
//   each client (srq_credits -s ADDR)            the server (srq_credits --clients N)
//                                                creates one SRQ of --srq-depth Recvs,
//                                                posts them, arms its limit; registers
//                                                N windows of --window slots (REMOTE_WRITE)
//   registers an 8-byte credit word
//     (REMOTE_WRITE), the only memory it exposes
//   TCP connect, endpoint + the credit word --->  a QP on the shared SRQ, to RTS
//   <---------------- endpoint + this client's window: addr, rkey, window x size
//   record n: --size bytes into slot n % window,
//     imm DATA|slot, while n - consumed < window ==>  checks type, slot, byte_len, then
//                                                the record's sequence number and
//                                                checksum; reposts the Recv (in batches)
//   <==================== RDMA Write of "consumed", 8 bytes, into the credit word,
//                        every --credit-batch records (and at once after END)
//   0 bytes, imm END|records (a credit too) ==>  checks the count
//   waits until consumed = records + 1, closes -->  destroys that client's QP
//
// ---> is TCP, ===> RDMA. The immediate is 8 bits of type and 24 of index
// (common/include/rdma_tutorial/imm.hpp), network byte order on the wire.
// A record: its sequence number (8 bytes, little-endian), bytes that depend
// on the sequence number, and the FNV-1a of all that in its last 4 bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "rdma_tutorial/checksum.hpp"

namespace stage06 {

inline constexpr std::uint8_t imm_data = 0x01;  // index: the slot written, < the client's window
inline constexpr std::uint8_t imm_end = 0x02;   // index: how many records came before, mod 2^24

inline constexpr std::uint32_t min_record = 16;  // sequence number + 4 bytes + checksum

inline void fill_record(std::span<char> record, std::uint64_t seq) {
  for (int i = 0; i < 8; ++i) record[static_cast<std::size_t>(i)] = static_cast<char>(seq >> (8 * i));
  const std::size_t body_end = record.size() - 4;
  for (std::size_t i = 8; i < body_end; ++i) record[i] = static_cast<char>((seq * 131 + i * 7) & 0xff);
  const std::uint32_t sum = rdma::fnv1a(record.first(body_end));
  std::memcpy(record.data() + body_end, &sum, 4);
}

// What is wrong with a record that should carry sequence number `expected`:
// "" when nothing.
inline std::string check_record(std::span<const char> record, std::uint64_t expected) {
  std::uint64_t seq = 0;
  for (int i = 0; i < 8; ++i) seq |= std::uint64_t{static_cast<unsigned char>(record[static_cast<std::size_t>(i)])} << (8 * i);
  const std::size_t body_end = record.size() - 4;
  std::uint32_t sum = 0;
  std::memcpy(&sum, record.data() + body_end, 4);
  if (sum != rdma::fnv1a(record.first(body_end))) {
    return "record " + std::to_string(expected) + ": checksum mismatch (the bytes changed under us, or never arrived)";
  }
  if (seq != expected) {
    return "record " + std::to_string(expected) + " carries sequence number " + std::to_string(seq) +
           (seq < expected ? " (a duplicate)" : " (records were lost)");
  }
  return "";
}

}  // namespace stage06
