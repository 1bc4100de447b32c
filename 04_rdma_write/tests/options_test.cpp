// rdma_write's command line and its notice message: pure logic, no device.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "rdma_tutorial/command_line.hpp"
#include "stage.hpp"

namespace {

stage04::options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "rdma_write");
  stage04::options opts;
  REQUIRE(stage04::parse_options(static_cast<int>(args.size()), args.data(), opts));
  return opts;
}

std::string usage_error_of(std::vector<const char*> args) {
  args.insert(args.begin(), "rdma_write");
  stage04::options opts;
  try {
    stage04::parse_options(static_cast<int>(args.size()), args.data(), opts);
  } catch (const rdma::usage_error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("with no -s it should be the server, with perftest's port and depth") {
  const auto o = parse({});
  CHECK(o.peer.server.empty());
  CHECK(o.peer.port == 18515);
  CHECK(o.size == 4096);
  CHECK(o.tx_depth == 128);
  CHECK(o.cq_mod == 100);
  CHECK(o.notify == stage04::notify_by::send);
  CHECK_FALSE(o.iters.has_value());
}

TEST_CASE("-s, -p and the throughput knobs should make a client") {
  const auto o = parse({"-s", "192.0.2.1", "-p", "20000", "--iters", "500", "--tx-depth", "16", "--notify=flag"});
  CHECK(o.peer.server == "192.0.2.1");
  CHECK(o.peer.port == 20000);
  CHECK(*o.iters == 500);
  CHECK(o.tx_depth == 16);
  CHECK(o.cq_mod == 16);  // lowered to the depth, as perftest does
  CHECK(o.notify == stage04::notify_by::flag);
}

TEST_CASE("values that make no sense should be usage errors naming the option") {
  CHECK(usage_error_of({"-p", "0"}) == "--port must be between 1 and 65535, got 0");
  CHECK(usage_error_of({"-p", "70000"}) == "--port must be between 1 and 65535, got 70000");
  CHECK(usage_error_of({"--size", "0"}) == "--size must be between 1 and 67108864, got 0");
  CHECK(usage_error_of({"--bind", "example.org"}) == "--bind expects an IPv4 address, got 'example.org'");
  CHECK(usage_error_of({"--notify", "irq"}) == "--notify takes 'send' or 'flag', got 'irq'");
  CHECK(usage_error_of({"--iters", "10"}) == "--iters is for the client (with -s ADDR)");
  CHECK(usage_error_of({"-s", "h", "--hostile", "lie"}) == "--hostile takes 'psn-behind' or 'other-qpn', got 'lie'");
  CHECK(usage_error_of({"--hostile", "other-qpn"}) == "--hostile is for the client (with -s ADDR)");
  CHECK(usage_error_of({"-s", "h", "--bind", "192.0.2.1"}) == "--bind is for the server (without -s)");
  CHECK(usage_error_of({"-s", "h", "--tx-depth", "8", "--cq-mod", "9"}) == "--cq-mod must not exceed --tx-depth");
  CHECK(usage_error_of({"-s", ""}) == "--server needs an address");
}

TEST_CASE("the notice should round-trip big-endian and never be zero when written") {
  const auto bytes = stage04::encode_notice({4096, 3});
  CHECK(std::to_integer<int>(bytes[2]) == 0x10);
  CHECK(std::to_integer<int>(bytes[7]) == 3);
  const auto n = stage04::decode_notice(bytes);
  CHECK(n.bytes == 4096);
  CHECK(n.writes == 3);
}

TEST_CASE("the flag word should start at --size rounded up to 8 bytes") {
  CHECK(stage04::payload_capacity(1) == 8);
  CHECK(stage04::payload_capacity(8) == 8);
  CHECK(stage04::payload_capacity(61) == 64);
  CHECK(stage04::payload_capacity(100) == 104);
  CHECK(stage04::payload_capacity(4096) == 4096);
  CHECK(stage04::payload_capacity(1 << 26) == (1u << 26));
}

TEST_CASE("the payload should start with its text and its checksum should see every byte") {
  std::vector<char> a(64);
  stage04::fill_payload(a);
  CHECK(std::string(a.data(), stage04::payload_text.size()) == stage04::payload_text);
  std::vector<char> b = a;
  b[63] ^= 1;
  CHECK(stage04::fnv1a(a) != stage04::fnv1a(b));
  CHECK(stage04::fnv1a({}) == 2166136261u);
}
