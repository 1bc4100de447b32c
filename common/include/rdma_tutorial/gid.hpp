// The GID table and which entry to use, as taught in stage 01.
//
// On RoCE every IP address of the netdev appears in the GID table, once per
// RoCE version the device supports. Both peers must use the same RoCE version,
// and the GID a program sends to its peer must be the one the QP's address
// vector uses. The entry for IPv4 over RoCE v2 (routable, UDP port 4791) is
// the IPv4-mapped address ::ffff:a.b.c.d. Its index differs between machines
// and changes when addresses change, so it is looked up, never hard-coded.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rdma {

enum class gid_type { ib, roce_v1, roce_v2 };

struct gid_entry {
  int index = 0;
  ibv_gid gid{};
  gid_type type = gid_type::ib;
  std::string netdev;  // "" when no net device is attached (InfiniBand)
};

// "::ffff:192.0.2.1", "fe80::...": the IPv6 text form of the 16 bytes.
std::string gid_to_string(const ibv_gid& gid);
const char* gid_type_name(gid_type type);  // "IB", "RoCE v1", "RoCE v2"
bool is_ipv4_mapped(const ibv_gid& gid);   // ::ffff:a.b.c.d

// Every filled entry of the port's table, which has port_attr.gid_tbl_len
// slots (ibv_query_gid_ex per index; empty slots, ENODATA, are skipped).
std::vector<gid_entry> query_gid_table(ibv_context* ctx, std::uint8_t port, const ibv_port_attr& port_attr);

// The entry this tutorial uses when -g is not given: on Ethernet the first
// RoCE v2 IPv4-mapped entry, else the first RoCE v2 entry; on InfiniBand the
// first IB entry. Empty when no entry fits.
std::optional<int> pick_default_gid(std::span<const gid_entry> table, bool ethernet);

// The entry with this index; throws "GID index N is empty or past the table
// of port P" when the table has none.
const gid_entry& find_gid(std::span<const gid_entry> table, int index, std::uint8_t port);

// -g when given (checked against the table), else pick_default_gid; throws
// with an explanation when the port has no usable entry, or when -g names
// an entry that is not RoCE v2 on an Ethernet port.
gid_entry choose_gid(ibv_context* ctx, std::uint8_t port, std::optional<int> requested);

// The index as an address vector's sgid_index, which is 8 bits wide (a RoCE
// table may be longer); throws naming the limit for an index past 255.
std::uint8_t sgid_index(int index);

}  // namespace rdma
