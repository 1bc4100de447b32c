#include <doctest/doctest.h>

#include "rdma_tutorial/port.hpp"

TEST_CASE("MTU enums should map to bytes") {
  CHECK(rdma::mtu_bytes(IBV_MTU_256) == 256);
  CHECK(rdma::mtu_bytes(IBV_MTU_1024) == 1024);
  CHECK(rdma::mtu_bytes(IBV_MTU_4096) == 4096);
  CHECK(rdma::mtu_bytes(static_cast<ibv_mtu>(7)) == 0);
}

TEST_CASE("physical states and link layers should have their names") {
  CHECK(rdma::phys_state_name(5) == "LINK_UP");
  CHECK(rdma::phys_state_name(3) == "DISABLED");
  CHECK(rdma::phys_state_name(42) == "unknown (42)");
  CHECK(rdma::link_layer_name(IBV_LINK_LAYER_ETHERNET) == "Ethernet");
  CHECK(rdma::link_layer_name(IBV_LINK_LAYER_INFINIBAND) == "InfiniBand");
  CHECK(rdma::link_layer_name(IBV_LINK_LAYER_UNSPECIFIED) == "unspecified");
}

TEST_CASE("port states should carry the verbs enum names ibv_devinfo prints") {
  CHECK(rdma::port_state_name(IBV_PORT_ACTIVE) == "PORT_ACTIVE");
  CHECK(rdma::port_state_name(IBV_PORT_DOWN) == "PORT_DOWN");
}
