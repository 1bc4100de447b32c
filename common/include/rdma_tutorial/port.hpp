// Names and sizes for the port attributes stage 01 prints and stage 03 uses.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace rdma {

// IBV_MTU_256 .. IBV_MTU_4096 -> 256 .. 4096; 0 for anything else.
int mtu_bytes(ibv_mtu mtu);
// 256 .. 4096 -> IBV_MTU_256 .. IBV_MTU_4096; the largest path MTU not above
// `bytes` (IBV_MTU_256 below 512).
ibv_mtu mtu_enum(std::uint32_t bytes);

// Logical port state with the verbs enum's name: "PORT_ACTIVE", "PORT_DOWN"...
// (ibv_port_state_str gives lower-case prose instead: "active").
std::string port_state_name(ibv_port_state state);

// Physical port state as IB defines it (1 SLEEP .. 7 PHY_TEST); "LINK_UP" is 5.
std::string phys_state_name(std::uint8_t phys_state);

// "Ethernet" (RoCE), "InfiniBand", or "unspecified" (old drivers report 0).
std::string link_layer_name(std::uint8_t link_layer);

}  // namespace rdma
