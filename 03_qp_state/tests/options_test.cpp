// qp_state's command line, without a device.
#include <doctest/doctest.h>

#include <vector>

#include "../stage.hpp"
#include "rdma_tutorial/error.hpp"

using namespace stage03;

namespace {

options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "qp_state");
  options opts;
  parse_options(static_cast<int>(args.size()), args.data(), opts);
  return opts;
}

}  // namespace

TEST_CASE("MTUs should be accepted in bytes, and only the five the verbs know") {
  CHECK(mtu_from_bytes(256) == IBV_MTU_256);
  CHECK(mtu_from_bytes(4096) == IBV_MTU_4096);
  CHECK_FALSE(mtu_from_bytes(1500).has_value());
  CHECK(parse({"--mtu", "512"}).mtu == IBV_MTU_512);
  CHECK_THROWS_AS(parse({"--mtu", "1500"}), rdma::usage_error);
}

TEST_CASE("the retry counts should be limited to their 3 bits") {
  CHECK(parse({"--retry-cnt", "7", "--rnr-retry", "0"}).params.retry_cnt == 7);
  CHECK_THROWS_AS(parse({"--retry-cnt", "8"}), rdma::usage_error);
  CHECK_THROWS_AS(parse({"--rnr-retry", "8"}), rdma::usage_error);
}

TEST_CASE("PSNs should be 24-bit, and the defaults differ so a mix-up shows") {
  const options defaults = parse({});
  CHECK(defaults.psn_a != defaults.psn_b);
  CHECK(parse({"--psn-a", "16777215"}).psn_a == 0xffffff);
  CHECK_THROWS_AS(parse({"--psn-b", "16777216"}), rdma::usage_error);
}

TEST_CASE("path_mtu should default to the port's active_mtu and never exceed it") {
  options opts = parse({"-i", "2"});
  CHECK(params_from_options(opts, IBV_MTU_1024, 1).path_mtu == IBV_MTU_1024);
  CHECK(params_from_options(opts, IBV_MTU_1024, 1).port == 2);
  CHECK(params_from_options(opts, IBV_MTU_1024, 1).gid_index == 1);
  opts.mtu = IBV_MTU_512;
  CHECK(params_from_options(opts, IBV_MTU_1024, 1).path_mtu == IBV_MTU_512);
  opts.mtu = IBV_MTU_4096;
  CHECK_THROWS_AS(params_from_options(opts, IBV_MTU_1024, 1), rdma::tutorial_error);
}

TEST_CASE("a GID index that does not fit the address vector's 8 bits should be refused") {
  CHECK_THROWS_AS(params_from_options(parse({}), IBV_MTU_1024, 256), rdma::tutorial_error);
  CHECK(params_from_options(parse({}), IBV_MTU_1024, 255).gid_index == 255);
}

TEST_CASE("the knobs should land in the QP parameters, and min_rnr_timer 0 stays allowed") {
  const options opts = parse({"--timeout", "10", "--rnr-retry", "7", "--min-rnr-timer", "0"});
  const rdma::qp_params params = params_from_options(opts, IBV_MTU_1024, 1);
  CHECK(params.timeout == 10);
  CHECK(params.rnr_retry == 7);
  CHECK(params.min_rnr_timer == 0);
}
