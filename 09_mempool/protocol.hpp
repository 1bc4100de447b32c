// Stage 09's protocol: who sends what to whom, in order.
//
//   each client (mempool -s ADDR)                 the server (mempool --clients N)
//                                                 one pool (--pool-chunks x --chunk-size,
//                                                 registered per chunk, MW_BIND), one SRQ of
//                                                 Recvs (limit armed), one CQ on a
//                                                 completion channel, rdma_listen
//   registers an 8-byte credit word (REMOTE_WRITE)
//   rdma_connect, private data: hello ---------->  CONNECT_REQUEST: checks the hello,
//                                                 takes a chunk from the pool, a QP on
//                                                 the SRQ, a memory window for the chunk
//   ESTABLISHED  <---------- rdma_accept, private data: grant
//                                                 ESTABLISHED: binds the window to the
//                                                 chunk, on this client's QP, REMOTE_WRITE
//   <================ RDMA Write into the credit word: the credit edge (the window is open)
//   record n, --record-size bytes, into slot      the completion's qp_num names the
//     first + n % slots, imm DATA|slot,           client; type, slot (in its grant),
//     while n < edge ==============================> byte_len checked; then the record's
//                                                 sequence number and checksum; the Recv
//                                                 reposted (in batches)
//   <================ credit edge = consumed + slots, every --credit-batch records
//   0 bytes, imm END|records =====================> checks the count; the last edge
//   waits for the edge records + 1 + slots,
//   rdma_disconnect ----------------------------->  DISCONNECTED: rdma_disconnect, QP in
//                                                 ERR, drained; window deallocated, QP
//                                                 destroyed, chunk back to the pool
//
// ---> is an rdma_cm message, ===> RDMA. Every number on the wire is
// big-endian (network byte order): the hello and the grant below, the
// immediate, 8 bits of type and 24 of index (imm.hpp), the credit edge (8
// bytes), and a record's sequence number and checksum. A slot is a
// record's place in the pool: slot s is in chunk s / slots, at
// (s % slots) x record size; a client is granted one chunk, so slots
// first .. first + slots - 1, at addr + (s - first) x record size. The
// records are stage 06's (common/include/rdma_tutorial/record.hpp):
// sequence number (8 bytes), body, FNV-1a (4 bytes).
//
// hello, in the connect request (24 bytes, big-endian; the CM pads it):
//   offset  0 magic        "mp09"
//   offset  4 version      1
//   offset  6 flags        1: latency mode, a credit back for every record
//   offset  8 record_size  bytes per record
//   offset 12 credit_rkey  the credit word's rkey
//   offset 16 credit_addr  the credit word's address
// grant, in the accept (36 bytes, big-endian):
//   offset  0 magic        "mp09"
//   offset  4 version      1
//   offset  6 (zero)
//   offset  8 first_slot   the first slot of the grant
//   offset 12 slots        how many
//   offset 16 rkey         the memory window's rkey: it opens these slots only
//   offset 20 addr         the address of the first slot
//   offset 28 record_size  bytes per slot
//   offset 32 chunk_bytes  the chunk the slots are in (where the neighbours start)
// A reject (rdma_reject) carries why as text.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace stage09 {

inline constexpr std::uint32_t magic = 0x6d703039;  // "mp09"
inline constexpr std::uint16_t version = 1;

inline constexpr std::uint8_t imm_data = 0x01;  // index: the slot written
inline constexpr std::uint8_t imm_end = 0x02;   // index: how many records came before, mod 2^24

inline constexpr std::uint16_t flag_latency = 1;

// The most a server grants, and so the most a client accepts from one (a
// grant comes from the peer: a client that believed any would allocate and
// register whatever a broken or lying server named). The server's options
// stop at the same numbers.
inline constexpr std::uint32_t max_window = 1024;        // slots per grant (--window)
inline constexpr std::uint32_t max_record = 1u << 20;    // bytes per record (--record-size)
inline constexpr std::uint32_t max_chunk = 1u << 26;     // bytes per chunk (--chunk-size)

struct hello {
  std::uint16_t version = stage09::version;
  std::uint16_t flags = 0;
  std::uint32_t record_size = 0;
  std::uint32_t credit_rkey = 0;
  std::uint64_t credit_addr = 0;
};
inline constexpr std::size_t hello_size = 24;

struct grant_msg {
  std::uint32_t first_slot = 0;
  std::uint32_t slots = 0;
  std::uint32_t rkey = 0;
  std::uint64_t addr = 0;
  std::uint32_t record_size = 0;
  std::uint32_t chunk_bytes = 0;
};
inline constexpr std::size_t grant_size = 36;

std::array<std::byte, hello_size> encode_hello(const hello& h);
std::array<std::byte, grant_size> encode_grant(const grant_msg& g);
// Both take what the event carried (padded by the CM, or anything at all:
// it comes from the peer) and throw rdma::tutorial_error saying what is
// wrong: too short, not ours, another version; a grant also past the
// bounds above, or whose slots do not fit its chunk.
hello decode_hello(std::span<const std::byte> data);
grant_msg decode_grant(std::span<const std::byte> data);

}  // namespace stage09
