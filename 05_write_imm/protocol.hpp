// Stage 05's protocol: who sends what to whom, in order.
//
//   client (write_imm -s ADDR)                   server (write_imm)
//                                                registers the landing region,
//                                                --slots slots of --size bytes
//                                                (REMOTE_WRITE), listens
//   TCP connect, endpoint (52 bytes) ---------->  checks it, QP to RTS, posts
//                                                --rx-depth Recvs
//   <---------------- endpoint + the region: addr, rkey, slots x size
//   the self-test: two Writes with Immediate
//     of 0 bytes, imm 0x12345678, 0xDEADBEEF ==>  each completes one Recv
//                                                (IBV_WC_RECV_RDMA_WITH_IMM);
//                                                the imm must read back exactly
//   one per slot: --size bytes into slot i,
//     at addr + i x size, imm DATA|i ==========>  checks type and slot, then that
//                                                byte_len is at most --size (a
//                                                shorter write is accepted), then
//                                                reads the slot; reposts the Recv
//   0 bytes, imm END|n (n DATA writes) ========>  checks n, answers nothing
//   closes the TCP connection ----------------->  waits for that close, then
//                                                releases the region
//
// --iters N (throughput): N DATA writes into slot n % slots instead of one
// per slot, then END. --latency --iters N: the client exposes --size bytes
// of its own (its endpoint has a region), and every DATA write is answered
// by a Write with Immediate DATA|0 into it, a ping-pong; then END.
//
// ---> is TCP, ===> RDMA on the QP. The endpoint message is
// common/include/rdma_tutorial/wire.hpp; the immediate is 8 bits of type
// and 24 of index (common/include/rdma_tutorial/imm.hpp), in network byte
// order on the wire, like every number of the handshake. The slots' bytes
// are the payload (fill_slot below): no number in them is read.
// The server's Recvs have no buffer: a Send with bytes from the client
// fails (IBV_WC_LOC_QP_OP_ERR here, IBV_WC_REM_OP_ERR at the sender), and
// one of 0 bytes completes as IBV_WC_RECV, refused as having no immediate.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "rdma_tutorial/checksum.hpp"
#include "rdma_tutorial/imm.hpp"

namespace stage05 {

using rdma::fnv1a;

// The immediate's types (bits 31..24).
inline constexpr std::uint8_t imm_data = 0x01;  // index: the slot written
inline constexpr std::uint8_t imm_end = 0x02;   // index: how many DATA writes came before, mod 2^24

// Sent raw (no type) before anything else: a byte-order mistake turns
// 0x12345678 into 0x78563412, and no value reads the same both ways.
inline constexpr std::array<std::uint32_t, 2> self_test_values{0x12345678, 0xDEADBEEF};

// What a slot holds: "slot 2 from the client", then bytes that depend on
// their offset, so every slot and every byte differs.
inline std::string slot_text(std::uint32_t index) { return "slot " + std::to_string(index) + " from the client"; }

inline void fill_slot(std::span<char> slot, std::uint32_t index) {
  const std::string text = slot_text(index);
  for (std::size_t i = 0; i < slot.size(); ++i) {
    slot[i] = i < text.size() ? text[i] : static_cast<char>((i * 31 + index + 7) & 0x7f);
  }
}

}  // namespace stage05
