#include "rdma_tutorial/port.hpp"

namespace rdma {

int mtu_bytes(ibv_mtu mtu) {
  switch (mtu) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
  }
  return 0;
}

ibv_mtu mtu_enum(std::uint32_t bytes) {
  if (bytes >= 4096) return IBV_MTU_4096;
  if (bytes >= 2048) return IBV_MTU_2048;
  if (bytes >= 1024) return IBV_MTU_1024;
  if (bytes >= 512) return IBV_MTU_512;
  return IBV_MTU_256;
}

std::string port_state_name(ibv_port_state state) {
  switch (state) {
    case IBV_PORT_NOP: return "PORT_NOP";
    case IBV_PORT_DOWN: return "PORT_DOWN";
    case IBV_PORT_INIT: return "PORT_INIT";
    case IBV_PORT_ARMED: return "PORT_ARMED";
    case IBV_PORT_ACTIVE: return "PORT_ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "PORT_ACTIVE_DEFER";
  }
  return "unknown (" + std::to_string(static_cast<int>(state)) + ")";
}

std::string phys_state_name(std::uint8_t phys_state) {
  switch (phys_state) {
    case 1: return "SLEEP";
    case 2: return "POLLING";
    case 3: return "DISABLED";
    case 4: return "PORT_CONFIGURATION_TRAINING";
    case 5: return "LINK_UP";
    case 6: return "LINK_ERROR_RECOVERY";
    case 7: return "PHY_TEST";
    default: return "unknown (" + std::to_string(phys_state) + ")";
  }
}

std::string link_layer_name(std::uint8_t link_layer) {
  switch (link_layer) {
    case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
    case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
    default: return "unspecified";
  }
}

}  // namespace rdma
