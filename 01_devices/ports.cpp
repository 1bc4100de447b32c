// The ports of one device. Port numbers start at 1: ibv_device_attr's
// phys_port_cnt says how many there are, and they are 1..phys_port_cnt.
// Port 0 does not exist on an HCA; the kernel answers EINVAL. The counter
// is an int: an 8-bit one would wrap at 255 and never pass a device's 255.
// (Exercise: exercises/port_zero.cpp is this file with that bug.)
#include "stage.hpp"

namespace stage01 {

void print_ports(ibv_context* ctx, const ibv_device_attr& attr, std::optional<std::uint8_t> only_port,
                 std::optional<int> gid_index) {
  if (only_port) {
    const ibv_port_attr port_attr = print_port(ctx, *only_port);
    print_gid_table(ctx, *only_port, port_attr, gid_index);
    return;
  }
  for (int port = 1; port <= attr.phys_port_cnt; ++port) {
    const auto number = static_cast<std::uint8_t>(port);
    const ibv_port_attr port_attr = print_port(ctx, number);
    print_gid_table(ctx, number, port_attr, gid_index);
  }
}

}  // namespace stage01
