// The handshake's wire format, as taught in stage 04 (docs/04-rdma-write.md,
// section "The handshake"), for every stage after it that connects over TCP.
//
// RDMA does not find its peer: before a QP can go to RTR it needs the other
// side's QPN, first PSN and GID, and before it can write it needs the rkey,
// address and length of the memory the other side exposes. Both peers send
// one `endpoint` message over TCP. Its layout is fixed, every multi-byte
// field is big-endian (network order), and nothing is sent as a C struct:
// padding and byte order would then depend on the compiler and the machine.
//
//   offset  size  field
//        0     4  magic      0x52444d54 ("RDMT"): this tutorial's handshake
//        4     2  version    2
//        6     2  size       52, the whole message
//        8     4  qp_num     24 bits used; the upper 8 must be 0
//       12     4  psn        the first PSN the sender sends; 24 bits
//       16    16  gid        as in the GID table (already network order)
//       32     8  addr       the exposed region's address, 0 if none
//       40     4  rkey       its rkey, 0 if none
//       44     4  length     its length in bytes, 0 if none
//       48     4  mtu        the largest path MTU the sender's port takes
//                            (its active_mtu, in bytes: 256 ... 4096); both
//                            sides use the smaller of the two
//
// decode_endpoint checks every field before any of it is used: a truncated,
// garbled or foreign message, or another version of it, is an error that
// says which field is wrong. Pure functions; the sockets are in tcp.hpp.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace rdma::wire {

inline constexpr std::uint32_t magic = 0x52444d54;  // "RDMT"
inline constexpr std::uint16_t version = 2;
inline constexpr std::size_t endpoint_size = 52;
inline constexpr std::size_t header_size = 8;  // magic, version, size

struct endpoint {
  std::uint32_t qp_num = 0;
  std::uint32_t psn = 0;
  ibv_gid gid{};
  std::uint64_t addr = 0;    // exposed memory: all three 0 when there is none
  std::uint32_t rkey = 0;
  std::uint32_t length = 0;
  std::uint32_t mtu = 1024;  // bytes: 256, 512, 1024, 2048 or 4096
};

std::array<std::byte, endpoint_size> encode_endpoint(const endpoint& e);

// The first header_size bytes: throws rdma::tutorial_error for a foreign
// magic, another version or another size, so a receiver can refuse garbage
// before it waits for the rest.
void check_header(std::span<const std::byte> header);

// check_header, then every field; throws rdma::tutorial_error naming the
// field that is wrong. `bytes` must be exactly endpoint_size long (fewer:
// "truncated").
endpoint decode_endpoint(std::span<const std::byte> bytes);

// "qp_num 0x11, psn 0x3a2b1c, gid ::ffff:192.0.2.1" plus, when it exposes
// memory, ", 4104 bytes at 0x7f00..., rkey 0x1234".
std::string describe(const endpoint& e);

// Big-endian loads and stores, for the messages stages build on top of this.
void store_be32(std::byte* at, std::uint32_t value);
std::uint32_t load_be32(const std::byte* at);
void store_be64(std::byte* at, std::uint64_t value);
std::uint64_t load_be64(const std::byte* at);

}  // namespace rdma::wire
