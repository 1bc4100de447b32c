// Stage 01 without a device: where there is none (a kernel without RDMA, or
// no Soft-RoCE link), `devices` must say which of the two it is and point at
// the fix. Where a device exists this test has nothing to check: it skips.
#include <doctest/doctest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdlib>

#include "process.hpp"

using namespace std::chrono_literals;

TEST_CASE("devices with no RDMA device should exit 1 naming the cause and the fix") {
  int count = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&count);
  const bool no_kernel_support = list == nullptr && errno == ENOSYS;
  if (list != nullptr) ibv_free_device_list(list);
  if (count > 0) {
    MESSAGE("SKIP: a device exists here; the no-device path is tested where there is none");
    std::exit(77);
  }
  const auto r = rdma::testing::run({rdma::testing::program_from_env("DEVICES")}, 30s);
  INFO(rdma::testing::describe(r));
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  if (no_kernel_support) {
    CHECK(r.err.find("devices: no RDMA device: this kernel has no RDMA support") != std::string::npos);
    CHECK(r.err.find("likely fix: run it inside the Soft-RoCE guest: scripts/rxe_vm.sh") != std::string::npos);
  } else {
    CHECK(r.err.find("devices: no RDMA device found: no driver is loaded and no Soft-RoCE link exists") !=
          std::string::npos);
    CHECK(r.err.find("scripts/setup_rxe.sh") != std::string::npos);
  }
}
