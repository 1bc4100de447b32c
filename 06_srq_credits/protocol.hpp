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
//   <==================== RDMA Write of "consumed", 8 bytes big-endian, into the
//                        credit word, every --credit-batch records (and at once
//                        after END)
//   0 bytes, imm END|records (a credit too) ==>  checks the count
//   waits until consumed = records + 1, closes -->  destroys that client's QP
//
// ---> is TCP, ===> RDMA. Every number on the wire is big-endian (network
// byte order): the endpoint (common/include/rdma_tutorial/wire.hpp), the
// immediate, 8 bits of type and 24 of index (imm.hpp), the credit word,
// and a record's two numbers: its sequence number (8 bytes), then bytes
// that depend on it, and the FNV-1a of all that in its last 4 bytes
// (common/include/rdma_tutorial/record.hpp). Slot i of a window is at
// addr + i x --size.
#pragma once

#include <cstdint>

#include "rdma_tutorial/record.hpp"

namespace stage06 {

inline constexpr std::uint8_t imm_data = 0x01;  // index: the slot written, < the client's window
inline constexpr std::uint8_t imm_end = 0x02;   // index: how many records came before, mod 2^24

// The most slots a window has (the server's --window takes 1 to this): a
// client sizes its source buffer and its list of work requests by the
// window a server grants, and takes no more from a peer than a server of
// this stage would give.
inline constexpr std::uint32_t max_window = 1024;

// The record and its checks (common/include/rdma_tutorial/record.hpp).
inline constexpr std::uint32_t min_record = rdma::min_record;
using rdma::check_record;
using rdma::fill_record;

}  // namespace stage06
