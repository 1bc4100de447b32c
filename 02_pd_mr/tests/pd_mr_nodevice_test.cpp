// Stage 02 without a device: pd_mr must stop before anything else with the
// same clear message as stage 01 (rdma::open_device), not crash or print a
// half report. Where a device exists this test has nothing to check: it skips.
#include <doctest/doctest.h>
#include <infiniband/verbs.h>

#include <cstdlib>

#include "process.hpp"

using namespace std::chrono_literals;

TEST_CASE("pd_mr with no RDMA device should exit 1 naming the cause and the fix, printing nothing else") {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list != nullptr) ibv_free_device_list(list);
  if (count > 0) {
    MESSAGE("SKIP: a device exists here; the no-device path is tested where there is none");
    std::exit(77);
  }
  const auto r = rdma::testing::run({rdma::testing::program_from_env("PD_MR")}, 30s);
  INFO(rdma::testing::describe(r));
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK(r.err.starts_with("pd_mr: no RDMA device"));
  CHECK(r.err.find("likely fix: ") != std::string::npos);
}
