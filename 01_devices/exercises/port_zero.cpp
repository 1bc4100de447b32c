// EXERCISE: the port report stops with EINVAL before it shows any port
//
// This is ports.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh port_zero
// As shipped the report stops after the device attributes with
//   devices: ibv_query_port(port 0) failed (EINVAL): Invalid argument
//
// TODO: the loop below asks the device about a port that does not exist.
// Make it visit exactly the ports the device has. (Hint: docs/01-devices.md,
// section "Ports".)
#include "stage.hpp"

namespace stage01 {

void print_ports(ibv_context* ctx, const ibv_device_attr& attr, std::optional<std::uint8_t> only_port,
                 std::optional<int> gid_index) {
  if (only_port) {
    const ibv_port_attr port_attr = print_port(ctx, *only_port);
    print_gid_table(ctx, *only_port, port_attr, gid_index);
    return;
  }
  for (int port = 0; port < attr.phys_port_cnt; ++port) {  // TODO
    const auto number = static_cast<std::uint8_t>(port);
    const ibv_port_attr port_attr = print_port(ctx, number);
    print_gid_table(ctx, number, port_attr, gid_index);
  }
}

}  // namespace stage01
