// The private data, byte by byte (protocol.hpp has the layout).
#include <string>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/imm.hpp"
#include "rdma_tutorial/record.hpp"
#include "rdma_tutorial/wire.hpp"
#include "stage.hpp"

namespace stage09 {

namespace {

using rdma::wire::load_be32;
using rdma::wire::load_be64;
using rdma::wire::store_be32;
using rdma::wire::store_be64;

// Magic and version first: a peer of another program, or of another version
// of this one, is named as such instead of misread field by field.
void check_header(std::span<const std::byte> data, std::size_t size, const char* what) {
  if (data.size() < size) {
    throw rdma::tutorial_error(std::string(what) + " of " + std::to_string(data.size()) + " bytes; it needs " +
                                   std::to_string(size),
                               "the peer is not a mempool of this version");
  }
  if (load_be32(&data[0]) != magic) {
    throw rdma::tutorial_error(std::string(what) + " does not start with \"mp09\"", "the peer is not a mempool");
  }
  const std::uint32_t theirs = (std::uint32_t{static_cast<std::uint8_t>(data[4])} << 8) | static_cast<std::uint8_t>(data[5]);
  if (theirs != version) {
    throw rdma::tutorial_error(std::string(what) + " of protocol version " + std::to_string(theirs) + "; we speak " +
                                   std::to_string(version),
                               "run the same version of mempool at both ends");
  }
}

void store_header(std::byte* out, std::uint16_t v) {
  store_be32(out, magic);
  out[4] = static_cast<std::byte>(v >> 8);
  out[5] = static_cast<std::byte>(v & 0xff);
}

}  // namespace

std::array<std::byte, hello_size> encode_hello(const hello& h) {
  std::array<std::byte, hello_size> out{};
  store_header(out.data(), h.version);
  out[6] = static_cast<std::byte>(h.flags >> 8);
  out[7] = static_cast<std::byte>(h.flags & 0xff);
  store_be32(&out[8], h.record_size);
  store_be32(&out[12], h.credit_rkey);
  store_be64(&out[16], h.credit_addr);
  return out;
}

hello decode_hello(std::span<const std::byte> data) {
  check_header(data, hello_size, "a hello");
  hello h;
  h.flags = static_cast<std::uint16_t>((std::uint32_t{static_cast<std::uint8_t>(data[6])} << 8) | static_cast<std::uint8_t>(data[7]));
  h.record_size = load_be32(&data[8]);
  h.credit_rkey = load_be32(&data[12]);
  h.credit_addr = load_be64(&data[16]);
  return h;
}

std::array<std::byte, grant_size> encode_grant(const grant_msg& g) {
  std::array<std::byte, grant_size> out{};
  store_header(out.data(), version);
  store_be32(&out[8], g.first_slot);
  store_be32(&out[12], g.slots);
  store_be32(&out[16], g.rkey);
  store_be64(&out[20], g.addr);
  store_be32(&out[28], g.record_size);
  store_be32(&out[32], g.chunk_bytes);
  return out;
}

grant_msg decode_grant(std::span<const std::byte> data) {
  check_header(data, grant_size, "a grant");
  grant_msg g;
  g.first_slot = load_be32(&data[8]);
  g.slots = load_be32(&data[12]);
  g.rkey = load_be32(&data[16]);
  g.addr = load_be64(&data[20]);
  g.record_size = load_be32(&data[28]);
  g.chunk_bytes = load_be32(&data[32]);
  const char* broken = "the server is not this stage's, or is broken: a grant past these bounds is never made";
  if (g.slots == 0) throw rdma::tutorial_error("a grant of 0 slots", "the server's pool is misconfigured");
  if (g.slots > max_window) {
    throw rdma::tutorial_error("a grant of " + std::to_string(g.slots) + " slots; a server grants " +
                               std::to_string(max_window) + " at most", broken);
  }
  if (g.record_size < rdma::min_record || g.record_size > max_record) {
    throw rdma::tutorial_error("a grant of " + std::to_string(g.record_size) + "-byte slots; records are " +
                               std::to_string(rdma::min_record) + " to " + std::to_string(max_record) + " bytes", broken);
  }
  if (g.chunk_bytes > max_chunk || std::uint64_t{g.slots} * g.record_size > g.chunk_bytes) {
    throw rdma::tutorial_error("a grant of " + std::to_string(g.slots) + " slots of " + std::to_string(g.record_size) +
                               " bytes in a chunk of " + std::to_string(g.chunk_bytes) + " (at most " +
                               std::to_string(max_chunk) + ")", broken);
  }
  if (g.first_slot > rdma::imm::index_limit - g.slots) {
    throw rdma::tutorial_error("a grant from slot " + std::to_string(g.first_slot) +
                               ": its slots do not fit the immediate's 24-bit index", broken);
  }
  return g;
}

}  // namespace stage09
