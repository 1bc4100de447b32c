// Every stage's program without a device (meson suite "nodevice"): it must
// stop before anything else with the message stage 01 taught, naming which of
// the no-device cases this is and the fix, and print nothing else. Where
// a device exists there is nothing to check: the test skips (77).
//
// The program comes in $PROGRAM (set by common/stage_rules.build).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "process.hpp"

using namespace std::chrono_literals;

TEST_CASE("a stage's program with no RDMA device should exit 1 naming the cause and the fix") {
  int count = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&count);
  const bool no_kernel_support = list == nullptr && errno == ENOSYS;
  if (list != nullptr) ibv_free_device_list(list);
  if (count > 0) {
    MESSAGE("SKIP: a device exists here; the no-device path is tested where there is none");
    std::exit(77);
  }
  const std::string program = rdma::testing::program_from_env("PROGRAM");
  const std::string name = std::filesystem::path(program).filename();
  const auto r = rdma::testing::run({program}, 30s);
  INFO(rdma::testing::describe(r));
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  if (no_kernel_support) {
    CHECK(r.err.starts_with(name + ": no RDMA device: this kernel has no RDMA support"));
    CHECK(r.err.find("likely fix: run it inside the Soft-RoCE guest: scripts/rxe_vm.sh") != std::string::npos);
  } else if (std::filesystem::is_empty("/sys/class/infiniband")) {
    CHECK(r.err.starts_with(name + ": no RDMA device found: no driver is loaded and no Soft-RoCE link exists"));
    CHECK(r.err.find("scripts/setup_rxe.sh") != std::string::npos);
  } else {
    // The kernel has a device that libibverbs cannot drive.
    CHECK(r.err.starts_with(name + ": no RDMA device found: the kernel has "));
    CHECK(r.err.find("no user-space provider") != std::string::npos);
  }
}
