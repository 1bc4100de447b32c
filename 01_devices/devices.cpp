// Stage 01 — finding the hardware.
//
// Lists every RDMA device this machine has, and for each one: what it can do
// (ibv_query_device), the state of each port (ibv_query_port) and the port's
// GID table, marking the entry the rest of the tutorial uses by default.
// Nothing is sent anywhere; this is the first thing to run on a new machine.
//
//   devices [-d NAME] [-i PORT] [-g INDEX]
//
// Read it beside docs/01-devices.md; stage.hpp lists the files in reading order.
#include <infiniband/verbs.h>

#include <cerrno>
#include <iostream>
#include <string>

#include "rdma_tutorial/device.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/main.hpp"
#include "rdma_tutorial/command_line.hpp"
#include "stage.hpp"

int main(int argc, char** argv) {
  return rdma::run_main("devices", [&] {
    rdma::device_options opts;
    rdma::option_parser parser("devices", "Lists RDMA devices, their ports and GID tables.");
    parser.add_device_options(opts);
    if (!parser.parse(argc, argv)) return 0;

    // 1. The device list. NULL means the kernel has no RDMA core it could
    //    load (ENOSYS), or another failure, its errno (EIO when none was
    //    set); an empty list means no driver and no Soft-RoCE link.
    int num_devices = 0;
    errno = 0;
    ibv_device** raw_list = ibv_get_device_list(&num_devices);
    if (raw_list == nullptr) rdma::throw_no_device(rdma::failure_errno());
    rdma::device_list_ptr list(raw_list);  // ibv_free_device_list on every path from here
    if (num_devices == 0) rdma::throw_no_device(0);
    std::cout << num_devices << (num_devices == 1 ? " RDMA device\n" : " RDMA devices\n");

    // Every port, unless -i names one.
    const auto only_port = parser.given("ib-port") ? std::optional<std::uint8_t>(opts.port) : std::nullopt;
    bool found = false;
    for (int i = 0; i < num_devices; ++i) {
      ibv_device* dev = raw_list[i];
      const std::string name = ibv_get_device_name(dev);
      if (!opts.device.empty() && name != opts.device) continue;
      found = true;

      // 2. Open it. The context is what every later verbs call hangs off.
      ibv_context* raw_ctx = rdma::check_ptr(ibv_open_device(dev), "ibv_open_device(" + name + ")");
      rdma::context_ptr ctx(raw_ctx);  // ibv_close_device when this iteration ends

      std::cout << "\n" << name << "\n";
      const ibv_device_attr attr = stage01::print_device_attributes(ctx.get());
      stage01::print_ports(ctx.get(), attr, only_port, opts.gid_index);
    }
    if (!found) {
      throw rdma::usage_error("no RDMA device named '" + opts.device + "' (run devices without -d to list them)");
    }
    return 0;
  });
}
