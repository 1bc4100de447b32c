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
// on the sequence number, and the FNV-1a of all that in its last 4 bytes
// (common/include/rdma_tutorial/record.hpp).
#pragma once

#include <cstdint>

#include "rdma_tutorial/record.hpp"

namespace stage06 {

inline constexpr std::uint8_t imm_data = 0x01;  // index: the slot written, < the client's window
inline constexpr std::uint8_t imm_end = 0x02;   // index: how many records came before, mod 2^24

// The record and its checks (common/include/rdma_tutorial/record.hpp).
inline constexpr std::uint32_t min_record = rdma::min_record;
using rdma::check_record;
using rdma::fill_record;

}  // namespace stage06
