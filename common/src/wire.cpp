#include "rdma_tutorial/wire.hpp"

#include <cstdio>
#include <cstring>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/gid.hpp"

namespace rdma::wire {

namespace {

constexpr const char* foreign_hint =
    "the peer is not this tutorial's program (or not this version of it): check the address and -p on both sides";

void store_be16(std::byte* at, std::uint16_t v) {
  at[0] = static_cast<std::byte>(v >> 8);
  at[1] = static_cast<std::byte>(v);
}

std::uint16_t load_be16(const std::byte* at) {
  return static_cast<std::uint16_t>((std::to_integer<unsigned>(at[0]) << 8) | std::to_integer<unsigned>(at[1]));
}

std::string hex(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

[[noreturn]] void reject(const std::string& what) {
  throw tutorial_error("handshake: " + what, foreign_hint);
}

}  // namespace

void store_be32(std::byte* at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::byte>(v >> (24 - 8 * i));
}

std::uint32_t load_be32(const std::byte* at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | std::to_integer<std::uint32_t>(at[i]);
  return v;
}

void store_be64(std::byte* at, std::uint64_t v) {
  store_be32(at, static_cast<std::uint32_t>(v >> 32));
  store_be32(at + 4, static_cast<std::uint32_t>(v));
}

std::uint64_t load_be64(const std::byte* at) {
  return (std::uint64_t{load_be32(at)} << 32) | load_be32(at + 4);
}

std::array<std::byte, endpoint_size> encode_endpoint(const endpoint& e) {
  std::array<std::byte, endpoint_size> out{};
  store_be32(&out[0], magic);
  store_be16(&out[4], version);
  store_be16(&out[6], static_cast<std::uint16_t>(endpoint_size));
  store_be32(&out[8], e.qp_num);
  store_be32(&out[12], e.psn);
  std::memcpy(&out[16], e.gid.raw, sizeof e.gid.raw);
  store_be64(&out[32], e.addr);
  store_be32(&out[40], e.rkey);
  store_be32(&out[44], e.length);
  store_be32(&out[48], e.mtu);
  return out;
}

void check_header(std::span<const std::byte> header) {
  if (header.size() < header_size) {
    reject("truncated message: " + std::to_string(header.size()) + " of " + std::to_string(endpoint_size) + " bytes");
  }
  if (const std::uint32_t m = load_be32(&header[0]); m != magic) {
    reject("bad magic " + hex(m) + " (expected " + hex(magic) + ", \"RDMT\")");
  }
  if (const std::uint16_t v = load_be16(&header[4]); v != version) {
    throw tutorial_error("handshake: protocol version " + std::to_string(v) + ", this program speaks version " +
                             std::to_string(version),
                         "run the same version of the program on both sides");
  }
  if (const std::uint16_t size = load_be16(&header[6]); size != endpoint_size) {
    reject("message size " + std::to_string(size) + ", version " + std::to_string(version) + " messages are " +
           std::to_string(endpoint_size));
  }
}

endpoint decode_endpoint(std::span<const std::byte> bytes) {
  check_header(bytes);
  if (bytes.size() != endpoint_size) {
    reject("truncated message: " + std::to_string(bytes.size()) + " of " + std::to_string(endpoint_size) + " bytes");
  }
  endpoint e;
  e.qp_num = load_be32(&bytes[8]);
  e.psn = load_be32(&bytes[12]);
  std::memcpy(e.gid.raw, &bytes[16], sizeof e.gid.raw);
  e.addr = load_be64(&bytes[32]);
  e.rkey = load_be32(&bytes[40]);
  e.length = load_be32(&bytes[44]);
  e.mtu = load_be32(&bytes[48]);
  // QPNs and PSNs are 24-bit; QPN 0 and 1 are the special QPs (SMI, GSI).
  if (e.qp_num > 0xffffff || e.qp_num < 2) reject("qp_num " + hex(e.qp_num) + " is not an RC QPN (2 .. 0xffffff)");
  if (e.psn > 0xffffff) reject("psn " + hex(e.psn) + " does not fit 24 bits");
  if (e.gid.global.subnet_prefix == 0 && e.gid.global.interface_id == 0) reject("the GID is all zeros");
  if (e.length == 0 && (e.addr != 0 || e.rkey != 0)) reject("an rkey or address without a length");
  if (e.mtu != 256 && e.mtu != 512 && e.mtu != 1024 && e.mtu != 2048 && e.mtu != 4096) {
    reject("mtu " + std::to_string(e.mtu) + " is not a path MTU (256, 512, 1024, 2048 or 4096)");
  }
  if (e.length != 0 && e.addr > UINT64_MAX - e.length) {
    reject("the region " + hex(e.addr) + " + " + std::to_string(e.length) + " wraps around the address space");
  }
  return e;
}

std::string describe(const endpoint& e) {
  std::string text = "qp_num " + hex(e.qp_num) + ", psn " + hex(e.psn) + ", gid " + gid_to_string(e.gid);
  if (e.length != 0) text += ", " + std::to_string(e.length) + " bytes at " + hex(e.addr) + ", rkey " + hex(e.rkey);
  return text;
}

}  // namespace rdma::wire
