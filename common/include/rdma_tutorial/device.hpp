// Finding and opening an RDMA device, as taught in stage 01 (docs/01-devices.md).
#pragma once

#include <infiniband/verbs.h>

#include <span>
#include <string>
#include <string_view>

#include "rdma_tutorial/handles.hpp"

namespace rdma {

// The ways of having no device, each with its fix:
//  - ibv_get_device_list returned NULL with ENOSYS: the kernel has no RDMA
//    support at all (no /sys/class/infiniband): use the Soft-RoCE guest; or
//    it ships the modules and they are not loaded: scripts/setup_rxe.sh.
//  - it returned an empty list: RDMA is there, but no driver is bound and no
//    Soft-RoCE link exists (create one with scripts/setup_rxe.sh); or the
//    kernel has a device (/sys/class/infiniband lists it) and libibverbs has
//    no user-space provider for it (install rdma-core's providers).
// `err` is errno after a NULL return, or 0 for an empty list.
[[noreturn]] void throw_no_device(int err);

// ibv_get_device_list, owned; throws (via throw_no_device) when there is
// nothing to open.
struct device_list {
  device_list_ptr list;
  int count = 0;
  std::span<ibv_device*> devices() const { return {list.get(), static_cast<std::size_t>(count)}; }
};
device_list get_device_list();

// Opens the named device, or the first one when `name` is empty. An unknown
// name is an error listing the names that exist.
context_ptr open_device(std::string_view name);

}  // namespace rdma
