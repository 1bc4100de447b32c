#include <doctest/doctest.h>

#include <vector>

#include "rdma_tutorial/command_line.hpp"

namespace {

struct parsed {
  rdma::device_options device;
  bool ok = false;
};

parsed parse(std::vector<const char*> args) {
  parsed p;
  args.insert(args.begin(), "prog");
  rdma::option_parser parser("prog", "test");
  parser.add_device_options(p.device);
  p.ok = parser.parse(static_cast<int>(args.size()), args.data());
  return p;
}

}  // namespace

TEST_CASE("device options should default to the first device, port 1 and a chosen GID") {
  const auto p = parse({});
  CHECK(p.ok);
  CHECK(p.device.device.empty());
  CHECK(p.device.port == 1);
  CHECK_FALSE(p.device.gid_index.has_value());
}

TEST_CASE("device options should accept short, attached, long and --name=value forms") {
  CHECK(parse({"-d", "rxe0"}).device.device == "rxe0");
  CHECK(parse({"-drxe1"}).device.device == "rxe1");
  CHECK(parse({"--ib-port", "2"}).device.port == 2);
  CHECK(parse({"--gid-index=3"}).device.gid_index == 3);
  CHECK(parse({"-g", "0"}).device.gid_index == 0);
}

TEST_CASE("port 0 should get through the parser so the device can reject it") {
  CHECK(parse({"-i", "0"}).device.port == 0);
}

TEST_CASE("the device port should be -i as in perftest, and -p should point there") {
  CHECK(parse({"-i", "2"}).device.port == 2);
  CHECK_THROWS_WITH_AS(parse({"-p", "1"}),
                       "unknown option '-p': prog has no TCP port; the device port is -i/--ib-port (as in perftest)",
                       rdma::usage_error);
  CHECK_THROWS_AS(parse({"--port=1"}), rdma::usage_error);
}

TEST_CASE("an empty device name should be refused rather than mean the first device") {
  CHECK_THROWS_WITH_AS(parse({"-d", ""}), "--ib-dev needs a device name (ibv_devices lists them)",
                       rdma::usage_error);
  CHECK_THROWS_AS(parse({"--ib-dev="}), rdma::usage_error);
}

TEST_CASE("--help with a value should be a usage error, not an unknown option") {
  CHECK_THROWS_WITH_AS(parse({"--help=yes"}), "--help takes no value", rdma::usage_error);
  CHECK_THROWS_WITH_AS(parse({"-hx"}), "-h takes no value", rdma::usage_error);
}

TEST_CASE("bad values and unknown options should be usage errors naming the option") {
  CHECK_THROWS_WITH_AS(parse({"-i", "x"}), "--ib-port expects a number, got 'x'", rdma::usage_error);
  CHECK_THROWS_WITH_AS(parse({"-i", "300"}), "--ib-port must be between 0 and 255, got 300", rdma::usage_error);
  CHECK_THROWS_WITH_AS(parse({"--bogus"}), "unknown option '--bogus'", rdma::usage_error);
  CHECK_THROWS_WITH_AS(parse({"-g"}), "-g needs a value (N)", rdma::usage_error);
  CHECK_THROWS_WITH_AS(parse({"stray"}), "unexpected argument 'stray'", rdma::usage_error);
}

TEST_CASE("--help should stop parsing and list every option") {
  CHECK_FALSE(parse({"--help"}).ok);
  rdma::device_options d;
  rdma::option_parser parser("prog", "summary line");
  parser.add_device_options(d);
  const auto help = parser.help_text();
  CHECK(help.find("usage: prog [options]") != std::string::npos);
  CHECK(help.find("-d, --ib-dev NAME") != std::string::npos);
  CHECK(help.find("-i, --ib-port N") != std::string::npos);
  CHECK(help.find("-g, --gid-index N") != std::string::npos);
}

TEST_CASE("flags and positional arguments should be collected") {
  bool verbose = false;
  rdma::option_parser parser("prog", "s");
  parser.add('v', "verbose", "", "more output", [&](std::string_view) { verbose = true; });
  parser.allow_positional("HOST", 1);
  std::vector<const char*> args{"prog", "-v", "192.0.2.1"};
  REQUIRE(parser.parse(3, args.data()));
  CHECK(verbose);
  CHECK(parser.given("verbose"));
  REQUIRE(parser.positional().size() == 1);
  CHECK(parser.positional()[0] == "192.0.2.1");
  std::vector<const char*> bad{"prog", "--verbose=1"};
  CHECK_THROWS_AS(parser.parse(2, bad.data()), rdma::usage_error);
}

TEST_CASE("parse_integer should reject trailing junk and out-of-range values") {
  CHECK(rdma::parse_integer("42", "--x", 0, 100) == 42);
  CHECK_THROWS_AS(rdma::parse_integer("42k", "--x", 0, 100), rdma::usage_error);
  CHECK_THROWS_AS(rdma::parse_integer("", "--x", 0, 100), rdma::usage_error);
  CHECK_THROWS_AS(rdma::parse_integer("-1", "--x", 0, 100), rdma::usage_error);
}

TEST_CASE("parse_u32 should take a value in range and refuse others with parse_integer's message") {
  CHECK(rdma::parse_u32("4096", "--size", 1, 1 << 24) == 4096u);
  CHECK(rdma::parse_u32("4294967295", "--x", 0, 4294967295L) == 4294967295u);
  CHECK_THROWS_WITH_AS(rdma::parse_u32("0", "--size", 1, 1 << 24), "--size must be between 1 and 16777216, got 0",
                       rdma::usage_error);
  CHECK_THROWS_WITH_AS(rdma::parse_u32("4k", "--window", 1, 64), "--window expects a number, got '4k'",
                       rdma::usage_error);
}
