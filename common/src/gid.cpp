#include "rdma_tutorial/gid.hpp"

#include <arpa/inet.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>

#include "rdma_tutorial/error.hpp"

namespace rdma {

std::string gid_to_string(const ibv_gid& gid) {
  char text[INET6_ADDRSTRLEN];
  if (inet_ntop(AF_INET6, gid.raw, text, sizeof text) == nullptr) return "?";
  return text;
}

const char* gid_type_name(gid_type type) {
  switch (type) {
    case gid_type::ib: return "IB";
    case gid_type::roce_v1: return "RoCE v1";
    case gid_type::roce_v2: return "RoCE v2";
  }
  return "?";
}

bool is_ipv4_mapped(const ibv_gid& gid) {
  // 80 zero bits, 16 one bits, then the IPv4 address (RFC 4291, 2.5.5.2).
  return std::all_of(gid.raw, gid.raw + 10, [](std::uint8_t b) { return b == 0; }) && gid.raw[10] == 0xff &&
         gid.raw[11] == 0xff;
}

std::vector<gid_entry> query_gid_table(ibv_context* ctx, std::uint8_t port, const ibv_port_attr& port_attr) {
  std::vector<gid_entry> table;
  for (int index = 0; index < port_attr.gid_tbl_len; ++index) {
    ibv_gid_entry raw{};
    const int rc = ibv_query_gid_ex(ctx, port, static_cast<std::uint32_t>(index), &raw, 0);
    if (rc == ENODATA) continue;  // an empty slot: RoCE tables are sparse
    check_rc(rc, "ibv_query_gid_ex(port " + std::to_string(port) + ", index " + std::to_string(index) + ")");
    gid_entry entry;
    entry.index = index;
    entry.gid = raw.gid;
    entry.type = raw.gid_type == IBV_GID_TYPE_ROCE_V2   ? gid_type::roce_v2
                 : raw.gid_type == IBV_GID_TYPE_ROCE_V1 ? gid_type::roce_v1
                                                        : gid_type::ib;
    char name[IF_NAMESIZE] = {};
    if (raw.ndev_ifindex != 0 && if_indextoname(raw.ndev_ifindex, name) != nullptr) entry.netdev = name;
    table.push_back(std::move(entry));
  }
  return table;
}

std::optional<int> pick_default_gid(std::span<const gid_entry> table, bool ethernet) {
  const auto first = [&](auto&& wanted) -> std::optional<int> {
    const auto it = std::find_if(table.begin(), table.end(), wanted);
    if (it == table.end()) return std::nullopt;
    return it->index;
  };
  if (!ethernet) return first([](const gid_entry& e) { return e.type == gid_type::ib; });
  if (auto v2_ipv4 = first([](const gid_entry& e) { return e.type == gid_type::roce_v2 && is_ipv4_mapped(e.gid); })) {
    return v2_ipv4;
  }
  return first([](const gid_entry& e) { return e.type == gid_type::roce_v2; });
}

gid_entry choose_gid(ibv_context* ctx, std::uint8_t port, std::optional<int> requested) {
  ibv_port_attr port_attr{};
  check_rc(ibv_query_port(ctx, port, &port_attr), "ibv_query_port(port " + std::to_string(port) + ")");
  const std::vector<gid_entry> table = query_gid_table(ctx, port, port_attr);
  const bool ethernet = port_attr.link_layer == IBV_LINK_LAYER_ETHERNET;
  const std::optional<int> index = requested ? requested : pick_default_gid(table, ethernet);
  if (!index) {
    throw tutorial_error("port " + std::to_string(port) + " has no RoCE v2 GID",
                         "give the netdev an IP address (RoCE GIDs are made from them), or pick an entry "
                         "with -g; 01_devices/devices lists the table");
  }
  const gid_entry& entry = find_gid(table, *index, port);
  // Every packet of a QP carries the entry's RoCE version: -g naming a RoCE
  // v1 entry (a NIC lists one beside each v2 entry) sends raw Ethernet
  // frames a peer on v2 never takes, and the handshake carries no type to
  // tell it. Said here, not found later as a silent connection.
  if (ethernet && entry.type != gid_type::roce_v2) {
    throw tutorial_error("GID index " + std::to_string(*index) + " of port " + std::to_string(port) + " is a " +
                             gid_type_name(entry.type) + " entry; these programs speak RoCE v2 (UDP port 4791), and "
                             "their handshake carries no GID type for a peer to match",
                         "choose a RoCE v2 entry with -g (both peers the same version); 01_devices/devices lists "
                         "the table with each entry's type");
  }
  return entry;
}

const gid_entry& find_gid(std::span<const gid_entry> table, int index, std::uint8_t port) {
  for (const gid_entry& entry : table) {
    if (entry.index == index) return entry;
  }
  throw tutorial_error("GID index " + std::to_string(index) + " is empty or past the table of port " +
                           std::to_string(port),
                       "01_devices/devices lists the filled entries");
}

std::uint8_t sgid_index(int index) {
  if (index < 0 || index > 255) {
    throw tutorial_error("GID index " + std::to_string(index) + " does not fit sgid_index (0-255)",
                         "pick an entry below 256 with -g; 01_devices/devices lists them");
  }
  return static_cast<std::uint8_t>(index);
}

}  // namespace rdma
