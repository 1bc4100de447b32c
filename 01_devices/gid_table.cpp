// The GID table: the port's addresses. On RoCE each IP address of the netdev
// appears once per RoCE version the device speaks. Which entry a QP uses
// decides the packet format on the wire (RoCE v1: raw Ethernet frames; RoCE
// v2: UDP/IP to port 4791), so both peers must pick the same version.
// The tutorial's default is the RoCE v2 entry of the IPv4 address,
// ::ffff:a.b.c.d, found by looking, never by hard-coding its index.
// An iWARP device has a table too (siw: one entry, made from the netdev's
// MAC), but no packet carries a GID there: an iWARP peer is an IP address
// and a TCP port, which rdma_cm connects to (stage 07).
#include <cstdio>

#include "rdma_tutorial/gid.hpp"
#include "rdma_tutorial/transport.hpp"
#include "stage.hpp"

namespace stage01 {

void print_gid_table(ibv_context* ctx, std::uint8_t port, const ibv_port_attr& port_attr,
                     std::optional<int> gid_index) {
  const std::vector<rdma::gid_entry> table = rdma::query_gid_table(ctx, port, port_attr);
  const bool ethernet = port_attr.link_layer == IBV_LINK_LAYER_ETHERNET;
  const bool iwarp = rdma::is_iwarp(ctx);
  const std::optional<int> picked = gid_index || iwarp ? gid_index : rdma::pick_default_gid(table, ethernet);

  std::printf("    GID table (%zu of %d entries filled)\n", table.size(), port_attr.gid_tbl_len);
  for (const rdma::gid_entry& entry : table) {
    std::printf("      [%d] %-7s %-8s %s", entry.index, iwarp ? "iWARP" : rdma::gid_type_name(entry.type),
                entry.netdev.empty() ? "-" : entry.netdev.c_str(), rdma::gid_to_string(entry.gid).c_str());
    if (picked == entry.index) std::printf("   <- %s", gid_index ? "chosen with -g" : "default");
    std::printf("\n");
  }
  if (iwarp) {
    std::printf("    iWARP: no entry is used; a peer is reached by its IP address and a TCP port, through rdma_cm "
                "(stage 07)\n");
  } else if (!picked) {
    std::printf("    no RoCE v2 entry: give %s an IP address, or choose an entry with -g\n",
                table.empty() || table.front().netdev.empty() ? "the netdev" : table.front().netdev.c_str());
  }
  if (gid_index) {
    // The same rule as every other program: -g must name a filled entry.
    rdma::find_gid(table, *gid_index, port);
  }
}

}  // namespace stage01
