// ibv_query_port: is the link usable, and how big may packets be?
//
// state must be PORT_ACTIVE before any QP on this port can reach RTR (stage
// 03); on Ethernet it follows the netdev's carrier. active_mtu is what the
// link carries now (Soft-RoCE derives it from the netdev's MTU: 1500 bytes of
// Ethernet leave room for 1024 bytes of RDMA payload); both peers of a QP must
// agree on path_mtu, and it may not exceed active_mtu.
#include <cstdio>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/port.hpp"
#include "stage.hpp"

namespace stage01 {

ibv_port_attr print_port(ibv_context* ctx, std::uint8_t port) {
  ibv_port_attr attr{};
  rdma::check_rc(ibv_query_port(ctx, port, &attr), "ibv_query_port(port " + std::to_string(port) + ")");
  std::printf("\n  port %u\n", port);
  std::printf("    %-12s %s (%d)\n", "state", rdma::port_state_name(attr.state).c_str(), attr.state);
  std::printf("    %-12s %s (%u)\n", "phys_state", rdma::phys_state_name(attr.phys_state).c_str(), attr.phys_state);
  std::printf("    %-12s %d (%d)\n", "active_mtu", rdma::mtu_bytes(attr.active_mtu), attr.active_mtu);
  std::printf("    %-12s %d (%d)\n", "max_mtu", rdma::mtu_bytes(attr.max_mtu), attr.max_mtu);
  std::printf("    %-12s %s\n", "link_layer", rdma::link_layer_name(attr.link_layer).c_str());
  std::printf("    %-12s %d\n", "gid_tbl_len", attr.gid_tbl_len);
  return attr;
}

}  // namespace stage01
