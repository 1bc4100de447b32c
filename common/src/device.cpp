#include "rdma_tutorial/device.hpp"

#include <sys/utsname.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/command_line.hpp"

namespace rdma {

namespace {

// Whether the running kernel ships the RDMA modules (ib_uverbs) at all.
bool kernel_has_rdma_modules() {
  utsname u{};
  if (::uname(&u) != 0) return false;
  std::error_code ignored;
  const std::filesystem::path core =
      std::filesystem::path("/lib/modules") / u.release / "kernel/drivers/infiniband/core";
  for (const auto& entry : std::filesystem::directory_iterator(core, ignored)) {
    if (entry.path().filename().string().starts_with("ib_uverbs.ko")) return true;
  }
  return false;
}

}  // namespace

void throw_no_device(int err) {
  // libibverbs (rdma-core 44, init.c) asks the kernel over RDMA netlink
  // first, and opening that socket makes the kernel load ib_core itself
  // where it can (modprobe). ENOSYS comes only when that fails and
  // /sys/class/infiniband_verbs is missing too: no RDMA in the kernel, or
  // modules the kernel could not load on demand (no modprobe, module
  // loading disabled). Modules that could be loaded give an empty list.
  if (err == ENOSYS && kernel_has_rdma_modules()) {
    throw tutorial_error(
        "no RDMA device: the kernel has RDMA modules, but ib_core is not loaded and the kernel could not load "
        "it on demand (ibv_get_device_list failed with ENOSYS)",
        "sudo modprobe ib_uverbs, then sudo scripts/setup_rxe.sh for Soft-RoCE or your NIC's driver");
  }
  if (err == ENOSYS) {
    throw tutorial_error(
        "no RDMA device: this kernel has no RDMA support (ibv_get_device_list failed with ENOSYS)",
        "run it inside the Soft-RoCE guest: scripts/rxe_vm.sh -- <command>");
  }
  if (err != 0) throw verbs_error(err, "ibv_get_device_list");
  // libibverbs lists only the kernel's devices it has a user-space provider
  // for (rdma-core's librxe, libmlx5, ...). Devices in sysfs and none listed:
  // the provider is what is missing, not the device.
  std::string in_kernel;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/class/infiniband", ignored)) {
    in_kernel += (in_kernel.empty() ? "" : ", ") + entry.path().filename().string();
  }
  if (!in_kernel.empty()) {
    throw tutorial_error("no RDMA device found: the kernel has " + in_kernel +
                             ", but libibverbs has no user-space provider for it",
                         "install rdma-core's providers (Debian: ibverbs-providers, which libibverbs1 recommends "
                         "and libibverbs-dev and perftest depend on); libibverbs's stderr says "
                         "'couldn't open config directory' with none installed, 'couldn't load driver' for "
                         "one it could not open; IBV_SHOW_WARNINGS=1 names the device left without one");
  }
  throw tutorial_error("no RDMA device found: no driver is loaded and no Soft-RoCE link exists",
                       "create one with: sudo scripts/setup_rxe.sh (or run in the guest: "
                       "scripts/rxe_vm.sh -- <command>); scripts/check_env.sh says what is missing");
}

device_list get_device_list() {
  device_list result;
  errno = 0;
  result.list.reset(ibv_get_device_list(&result.count));
  if (!result.list) throw_no_device(failure_errno());
  if (result.count == 0) throw_no_device(0);
  return result;
}

context_ptr open_device(std::string_view name) {
  const device_list list = get_device_list();
  std::string known;
  for (ibv_device* dev : list.devices()) {
    const std::string_view dev_name = ibv_get_device_name(dev);
    if (name.empty() || dev_name == name) {
      return context_ptr(check_ptr(ibv_open_device(dev), "ibv_open_device(" + std::string(dev_name) + ")"));
    }
    known += (known.empty() ? "" : ", ") + std::string(dev_name);
  }
  // A name on the command line that matches nothing is a usage error (exit 2).
  throw usage_error("no RDMA device named '" + std::string(name) + "' (devices present: " + known + ")");
}

}  // namespace rdma
