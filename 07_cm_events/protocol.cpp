// The private data of stage 07's CM messages, byte by byte (protocol.hpp
// has the layout). Pure: unit-tested without a device.
#include <algorithm>
#include <string>

#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage07 {

namespace {

// What arrived is the CM message's whole private-data field, padded with
// zeros: at least `size` bytes, starting with our magic.
void check_message(std::span<const std::byte> data, std::size_t size, const char* what) {
  if (data.size() < size) {
    throw rdma::tutorial_error(std::string(what) + ": " + std::to_string(data.size()) + " bytes of private data, " +
                                   std::to_string(size) + " expected",
                               "is the peer a cm_events of this stage?");
  }
  if (rdma::wire::load_be32(data.data()) != magic) {
    throw rdma::tutorial_error(std::string(what) + ": the private data does not start with \"cm07\"",
                               "is the peer a cm_events of this stage?");
  }
}

}  // namespace

std::array<std::byte, hello_size> encode_hello(const hello& h) {
  std::array<std::byte, hello_size> out{};
  rdma::wire::store_be32(&out[0], magic);
  rdma::wire::store_be32(&out[4], h.size);
  return out;
}

hello decode_hello(std::span<const std::byte> data) {
  check_message(data, hello_size, "the client's hello");
  const hello h{rdma::wire::load_be32(&data[4])};
  if (h.size == 0) throw rdma::tutorial_error("the client's hello asks for 0 bytes");
  return h;
}

std::array<std::byte, region_size> encode_region(const region& r) {
  std::array<std::byte, region_size> out{};
  rdma::wire::store_be32(&out[0], magic);
  rdma::wire::store_be32(&out[4], r.rkey);
  rdma::wire::store_be64(&out[8], r.addr);
  rdma::wire::store_be32(&out[16], r.length);
  return out;
}

region decode_region(std::span<const std::byte> data) {
  check_message(data, region_size, "the server's region");
  return {rdma::wire::load_be32(&data[4]), rdma::wire::load_be64(&data[8]), rdma::wire::load_be32(&data[16])};
}

std::array<std::byte, notice_size> encode_notice(const notice& n) {
  std::array<std::byte, notice_size> out{};
  rdma::wire::store_be32(&out[0], n.bytes);
  rdma::wire::store_be32(&out[4], n.fnv1a);
  return out;
}

notice decode_notice(std::span<const std::byte, notice_size> in) {
  return {rdma::wire::load_be32(&in[0]), rdma::wire::load_be32(&in[4])};
}

}  // namespace stage07
