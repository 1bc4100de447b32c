// Stage 07's protocol: stage 04's story, with the TCP side channel replaced
// by rdma_cm. What went over TCP now rides in the CM's own messages, as
// their private data; the event each side sees is on the right.
//
//   client (cm_events -s ADDR)                 server (cm_events)
//                                              rdma_bind_addr(--bind, -p),
//                                              rdma_listen
//   rdma_resolve_addr: which local device
//     and port reach ADDR (ARP)         ADDR_RESOLVED
//   rdma_resolve_route                  ROUTE_RESOLVED
//   creates its QP on the id
//   rdma_connect, private data: hello -------->  CONNECT_REQUEST, on a new id
//     (8 bytes: magic, --size)                 checks the hello (too big:
//                                              rdma_reject with a reason ->
//                                              the client sees REJECTED),
//                                              registers the landing region,
//                                              creates its QP on the new id,
//                                              posts a Recv for the notice
//     (too big: REJECTED <-- rdma_reject, private data: why, as text)
//   ESTABLISHED <-------- rdma_accept, private data: region
//                         (20 bytes: magic, rkey, addr, length)
//                                              ESTABLISHED
//   RDMA Write: payload -> region[0, size) ===>  (no completion here)
//   RDMA Read: region[0, size) -> our copy ===>  (no completion here either;
//     (needs the server's responder_resources   the server's QP answers it)
//      and our initiator_depth >= 1)
//   the notice, a Send (8 bytes) ============>  its Recv completes
//   rdma_disconnect -------------------------->  DISCONNECTED; releases the
//   DISCONNECTED                                region
//
// ---> is a CM message (REQ, REP/RTU, REJ, DREQ/DREP), ===> is RDMA on the
// QP. The CM pads private data to its message's field (56 bytes in a
// connect request, 196 in a reply), so what arrives is longer than what was
// sent: each message starts with its own magic and is checked by fields.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdma_tutorial/checksum.hpp"
#include "rdma_tutorial/cm_events.hpp"
#include "rdma_tutorial/wire.hpp"

namespace stage07 {

using rdma::fnv1a;

// rdma_connect's private data, client -> server.
//   offset 0  magic  "cm07" as a big-endian 32-bit number
//   offset 4  size   bytes the client will write and read back (>= 1)
inline constexpr std::size_t hello_size = 8;
// rdma_accept's private data, server -> client: the landing region.
//   offset 0  magic   "cm07"
//   offset 4  rkey
//   offset 8  addr    (64 bits)
//   offset 16 length  bytes the client may write and read
inline constexpr std::size_t region_size = 20;
inline constexpr std::uint32_t magic = 0x636d3037;  // "cm07"

struct hello {
  std::uint32_t size = 0;
};
struct region {
  std::uint32_t rkey = 0;
  std::uint64_t addr = 0;
  std::uint32_t length = 0;
};

std::array<std::byte, hello_size> encode_hello(const hello& h);
std::array<std::byte, region_size> encode_region(const region& r);
// Both take what the event carried (maybe padded, maybe anything: it comes
// from the peer) and throw rdma::tutorial_error saying what is wrong.
hello decode_hello(std::span<const std::byte> data);
region decode_region(std::span<const std::byte> data);

// The notice, a Send after the writes: what the client wrote and its
// checksum, two big-endian 32-bit numbers.
inline constexpr std::size_t notice_size = 8;
struct notice {
  std::uint32_t bytes = 0;
  std::uint32_t fnv1a = 0;
};
std::array<std::byte, notice_size> encode_notice(const notice& n);
notice decode_notice(std::span<const std::byte, notice_size> in);

// rdma_reject's private data (the REJ message, server -> client): why, as
// printable text: rdma::cm::encode_reject_text and reject_text
// (common/include/rdma_tutorial/cm_events.hpp).
using rdma::cm::encode_reject_text;
using rdma::cm::max_reject_text;
using rdma::cm::reject_text;

// What the client writes: this text, then bytes that depend on their offset.
inline constexpr std::string_view payload_text = "hello over rdma_cm";

inline void fill_payload(std::span<char> payload) {
  for (std::size_t i = 0; i < payload.size(); ++i) {
    payload[i] = i < payload_text.size() ? payload_text[i] : static_cast<char>((i * 31 + 7) & 0x7f);
  }
}

}  // namespace stage07
