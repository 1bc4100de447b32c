// The handshake's wire format (common/src/wire.cpp): pure, no device.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/peer.hpp"
#include "rdma_tutorial/wire.hpp"

using rdma::wire::decode_endpoint;
using rdma::wire::encode_endpoint;
using rdma::wire::endpoint;

namespace {

endpoint sample() {
  endpoint e;
  e.qp_num = 0x123456;
  e.psn = 0xabcdef;
  const unsigned char gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1};
  std::memcpy(e.gid.raw, gid, sizeof gid);
  e.addr = 0x00007f0012345000;
  e.rkey = 0xdeadbeef;
  e.length = 4104;
  e.mtu = 2048;
  return e;
}

// The message's error text, or "" when it decodes.
std::string rejection(std::span<const std::byte> bytes) {
  try {
    decode_endpoint(bytes);
    return {};
  } catch (const rdma::tutorial_error& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("an endpoint should round-trip through its 52 bytes") {
  const endpoint e = sample();
  const auto bytes = encode_endpoint(e);
  const endpoint back = decode_endpoint(bytes);
  CHECK(back.qp_num == e.qp_num);
  CHECK(back.psn == e.psn);
  CHECK(std::memcmp(back.gid.raw, e.gid.raw, 16) == 0);
  CHECK(back.addr == e.addr);
  CHECK(back.rkey == e.rkey);
  CHECK(back.length == e.length);
  CHECK(back.mtu == e.mtu);
}

TEST_CASE("the encoding should be big-endian at the documented offsets, whatever this machine's byte order") {
  const auto b = encode_endpoint(sample());
  auto at = [&](std::size_t i) { return std::to_integer<unsigned>(b[i]); };
  CHECK(at(0) == 'R');
  CHECK(at(3) == 'T');
  CHECK((at(4) == 0 && at(5) == 2));     // version 2
  CHECK((at(6) == 0 && at(7) == 52));    // size
  CHECK((at(9) == 0x12 && at(11) == 0x56));
  CHECK((at(13) == 0xab && at(15) == 0xef));
  CHECK((at(26) == 0xff && at(31) == 1));  // the GID's bytes as they are
  CHECK((at(34) == 0x7f && at(39) == 0x00 && at(38) == 0x50));
  CHECK((at(40) == 0xde && at(43) == 0xef));
  CHECK((at(46) == 0x10 && at(47) == 0x08));
  CHECK((at(48) == 0 && at(49) == 0 && at(50) == 0x08 && at(51) == 0));  // mtu 2048
}

TEST_CASE("a truncated message should be refused, saying how much came") {
  const auto b = encode_endpoint(sample());
  CHECK(rejection(std::span(b).first(5)) == "handshake: truncated message: 5 of 52 bytes");
  CHECK(rejection(std::span(b).first(51)) == "handshake: truncated message: 51 of 52 bytes");
  CHECK(rejection({}) == "handshake: truncated message: 0 of 52 bytes");
}

TEST_CASE("garbage and another version should be refused from the 8-byte header alone") {
  std::array<std::byte, 52> junk{};
  std::memcpy(junk.data(), "GET / HTTP/1.1\r\n", 16);
  CHECK(rejection(junk).starts_with("handshake: bad magic 0x47455420"));
  auto v1 = encode_endpoint(sample());
  v1[5] = std::byte{1};  // the 48-byte handshake before the MTU joined it
  CHECK(rejection(std::span(v1).first(8)) == "handshake: protocol version 1, this program speaks version 2");
  auto big = encode_endpoint(sample());
  big[6] = std::byte{0xff};
  CHECK(rejection(big).starts_with("handshake: message size 65332"));
}

TEST_CASE("an MTU that is not a path MTU should be refused, naming it") {
  endpoint e = sample();
  e.mtu = 1500;  // an Ethernet MTU, not an RDMA one
  CHECK(rejection(encode_endpoint(e)) == "handshake: mtu 1500 is not a path MTU (256, 512, 1024, 2048 or 4096)");
}

TEST_CASE("hostile field values should be refused before anything uses them") {
  auto with = [](auto change) {
    endpoint e = sample();
    change(e);
    return rejection(encode_endpoint(e));
  };
  CHECK(with([](endpoint& e) { e.qp_num = 0x1000000; }).find("qp_num 0x1000000 is not an RC QPN") != std::string::npos);
  CHECK(with([](endpoint& e) { e.qp_num = 1; }).find("is not an RC QPN") != std::string::npos);
  CHECK(with([](endpoint& e) { e.psn = 0xffffffff; }).find("does not fit 24 bits") != std::string::npos);
  CHECK(with([](endpoint& e) { std::memset(e.gid.raw, 0, 16); }).find("GID is all zeros") != std::string::npos);
  CHECK(with([](endpoint& e) { e.addr = UINT64_MAX - 100; }).find("wraps around") != std::string::npos);
  CHECK(with([](endpoint& e) { e.length = 0; }).find("without a length") != std::string::npos);
  // A peer that exposes nothing sends zeros in all three.
  CHECK(with([](endpoint& e) { e.length = 0; e.addr = 0; e.rkey = 0; }).empty());
}

TEST_CASE("describe should show the memory only when some is exposed") {
  endpoint e = sample();
  CHECK(rdma::wire::describe(e) ==
        "qp_num 0x123456, psn 0xabcdef, gid ::ffff:192.0.2.1, 4104 bytes at 0x7f0012345000, rkey 0xdeadbeef");
  e.length = 0;
  CHECK(rdma::wire::describe(e) == "qp_num 0x123456, psn 0xabcdef, gid ::ffff:192.0.2.1");
}

TEST_CASE("the path MTU should be the smaller of both ends'") {
  CHECK(rdma::agree_path_mtu(IBV_MTU_1024, 4096) == IBV_MTU_1024);
  CHECK(rdma::agree_path_mtu(IBV_MTU_4096, 1024) == IBV_MTU_1024);
  CHECK(rdma::agree_path_mtu(IBV_MTU_4096, 4096) == IBV_MTU_4096);
  CHECK(rdma::agree_path_mtu(IBV_MTU_2048, 256) == IBV_MTU_256);
}
