// main() for device test executables (meson suite "rxe"): with no RDMA device
// the whole executable reports "skipped" (exit 77) and says why, instead of
// failing on a machine that simply has no Soft-RoCE, or passing vacuously.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  int count = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&count);
  const int err = errno;
  if (list != nullptr) ibv_free_device_list(list);
  if (list == nullptr || count == 0) {
    std::printf("SKIP: no RDMA device (%s); run the device suites in the Soft-RoCE guest: "
                "scripts/rxe_vm.sh -- meson test -C build --suite rxe\n",
                list == nullptr && err == ENOSYS ? "this kernel has no RDMA support" : "no driver or Soft-RoCE link");
    return 77;
  }
  // The pair suite's cases need the second guest of scripts/rxe_vm.sh --pair.
  if (std::getenv("RDMA_TUTORIAL_PAIR") != nullptr && std::getenv("RXE_VM_PEER_DIR") == nullptr) {
    std::printf("SKIP: no peer host; run the pair suite in two guests: "
                "scripts/rxe_vm.sh --pair -- meson test -C build --suite pair\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
