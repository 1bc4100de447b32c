// write_imm's command line and latency report: pure logic, no device.
#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <vector>

#include "rdma_tutorial/command_line.hpp"
#include "stage.hpp"

namespace {

stage05::options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "write_imm");
  stage05::options opts;
  REQUIRE(stage05::parse_options(static_cast<int>(args.size()), args.data(), opts));
  return opts;
}

std::string usage_error_of(std::vector<const char*> args) {
  args.insert(args.begin(), "write_imm");
  stage05::options opts;
  try {
    stage05::parse_options(static_cast<int>(args.size()), args.data(), opts);
  } catch (const rdma::usage_error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("defaults should be a server with 4 slots of 4096 bytes and 512 Recvs") {
  const auto o = parse({});
  CHECK(o.peer.server.empty());
  CHECK(o.slots == 4);
  CHECK(o.size == 4096);
  CHECK(o.rx_depth == 512);
  CHECK_FALSE(o.rnr_retry.has_value());
  CHECK_FALSE(o.iters.has_value());
}

TEST_CASE("--latency alone should mean 1000 round trips, as ib_write_lat") {
  const auto o = parse({"-s", "192.0.2.1", "--latency"});
  CHECK(o.latency);
  CHECK(*o.iters == 1000);
}

TEST_CASE("--send-imm should take any 32-bit value, hex or decimal, and nothing else") {
  CHECK(*parse({"-s", "h", "--send-imm", "0x01000009"}).send_imm == 0x01000009u);
  CHECK(*parse({"-s", "h", "--send-imm", "4294967295"}).send_imm == 0xffffffffu);
  CHECK(usage_error_of({"-s", "h", "--send-imm", "0x1g"}) == "--send-imm expects a 32-bit number (0x... or decimal), got '0x1g'");
  CHECK(usage_error_of({"-s", "h", "--send-imm", "4294967296"}).starts_with("--send-imm expects"));
}

TEST_CASE("role and range mistakes should be usage errors naming the option") {
  CHECK(usage_error_of({"--latency"}) == "--latency is for the client (with -s ADDR)");
  CHECK(usage_error_of({"--send-imm", "1"}) == "--send-imm is for the client (with -s ADDR)");
  CHECK(usage_error_of({"-s", "h", "--accept-ms", "5"}) == "--accept-ms is for the server (without -s)");
  CHECK(usage_error_of({"--rnr-retry", "8"}) == "--rnr-retry must be between 0 and 7, got 8");
  CHECK(usage_error_of({"--slots", "0"}) == "--slots must be between 1 and 4096, got 0");
  CHECK(usage_error_of({"--slots", "4096", "--size", "1000000"}) == "--slots times --size must stay within 1 GiB");
}

TEST_CASE("--tx-depth should size both sides' send queues, down to one write in flight") {
  CHECK(parse({"-s", "h", "--latency", "--tx-depth", "1"}).tx_depth == 1);
  CHECK(parse({"--tx-depth", "2"}).tx_depth == 2);  // the server's answers
  CHECK(usage_error_of({"--tx-depth", "0"}) == "--tx-depth must be between 1 and 4096, got 0");
}

TEST_CASE("the latency report should give perftest's columns: median as t_typical, 99% and 99.9% by rank") {
  std::vector<double> samples;
  for (int i = 1000; i >= 1; --i) samples.push_back(i);  // 1 .. 1000 us, unsorted
  const std::string r = stage05::latency_report(8, samples);
  INFO(r);
  CHECK(r.starts_with(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"));
  std::smatch m;
  REQUIRE(std::regex_search(r, m, std::regex(R"(\n (\d+) +(\d+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+))")));
  CHECK(m[1] == "8");
  CHECK(m[2] == "1000");
  CHECK(m[3] == "1.00");
  CHECK(m[4] == "1000.00");
  CHECK(m[5] == "500.00");   // the 500th of 1000
  CHECK(m[6] == "500.50");
  CHECK(m[8] == "990.00");   // the 990th
  CHECK(m[9] == "999.00");   // the 999th
  CHECK(stage05::latency_report(8, {}) == "no samples\n");
}

TEST_CASE("a slot's bytes should start with its text and differ from slot to slot") {
  std::vector<char> a(64);
  std::vector<char> b(64);
  stage05::fill_slot(a, 0);
  stage05::fill_slot(b, 1);
  CHECK(std::string(a.data(), 22) == "slot 0 from the client");
  CHECK(stage05::fnv1a(a) != stage05::fnv1a(b));
}
