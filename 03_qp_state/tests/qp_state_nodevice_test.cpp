// Stage 03 without a device: qp_state must fail the way stage 01 taught,
// naming the cause and the fix, before touching any QP. Where a device
// exists this test has nothing to check: it skips.
#include <doctest/doctest.h>
#include <infiniband/verbs.h>

#include <cstdlib>

#include "process.hpp"

using namespace std::chrono_literals;

TEST_CASE("qp_state with no RDMA device should exit 1 naming the cause and the fix") {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list != nullptr) ibv_free_device_list(list);
  if (count > 0) {
    MESSAGE("SKIP: a device exists here; the no-device path is tested where there is none");
    std::exit(77);
  }
  const auto r = rdma::testing::run({rdma::testing::program_from_env("QP_STATE")}, 30s);
  INFO(rdma::testing::describe(r));
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK(r.err.starts_with("qp_state: no RDMA device"));
  CHECK(r.err.find("likely fix: ") != std::string::npos);
}
