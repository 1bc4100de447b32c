// Stage 01 — finding the hardware (docs/01-devices.md).
//
// Reading order, as the chapter tells it:
//   devices.cpp            main: the device list, opening each device
//   device_attributes.cpp  ibv_query_device: the limits every later stage meets
//   ports.cpp              the ports, numbered from 1
//   port.cpp               ibv_query_port: state, MTU, link layer
//   gid_table.cpp          the GID table and the entry later stages use
//   common/src/gid.cpp     each entry as ibv_query_gid_ex reads it (GID, type,
//                          netdev) and the rule that picks the one later
//                          stages use (pick_default_gid: RoCE v2 over IPv4
//                          first); kept in common/ because they all use it
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>

namespace stage01 {

// ibv_query_device: what this device can do (limits every later stage meets).
ibv_device_attr print_device_attributes(ibv_context* ctx);

// ibv_query_port for every port the device has (or only `only_port`), each
// followed by its GID table. Ports are numbered from 1.
void print_ports(ibv_context* ctx, const ibv_device_attr& attr, std::optional<std::uint8_t> only_port,
                 std::optional<int> gid_index);

// One port's state, MTUs and link layer.
ibv_port_attr print_port(ibv_context* ctx, std::uint8_t port);

// The port's GID table, marking the entry later stages use by default (or
// the one -g names; an -g that names no filled entry is an error, after the
// table is printed).
void print_gid_table(ibv_context* ctx, std::uint8_t port, const ibv_port_attr& port_attr,
                     std::optional<int> gid_index);

}  // namespace stage01
