#include <doctest/doctest.h>

#include <arpa/inet.h>

#include <vector>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/gid.hpp"

namespace {

rdma::gid_entry entry(int index, const char* text, rdma::gid_type type) {
  rdma::gid_entry e;
  e.index = index;
  REQUIRE(inet_pton(AF_INET6, text, e.gid.raw) == 1);
  e.type = type;
  e.netdev = "eth0";
  return e;
}

using rdma::gid_type;

}  // namespace

TEST_CASE("a GID should print in IPv6 text form, IPv4-mapped ones as ::ffff:a.b.c.d") {
  CHECK(rdma::gid_to_string(entry(0, "::ffff:192.0.2.1", gid_type::roce_v2).gid) == "::ffff:192.0.2.1");
  CHECK(rdma::gid_to_string(entry(0, "fe80::1", gid_type::roce_v2).gid) == "fe80::1");
}

TEST_CASE("is_ipv4_mapped should recognise only ::ffff:a.b.c.d") {
  CHECK(rdma::is_ipv4_mapped(entry(0, "::ffff:10.1.2.3", gid_type::roce_v2).gid));
  CHECK_FALSE(rdma::is_ipv4_mapped(entry(0, "fe80::ffff:a01:203", gid_type::roce_v2).gid));
  CHECK_FALSE(rdma::is_ipv4_mapped(entry(0, "::1", gid_type::roce_v2).gid));
}

TEST_CASE("on Ethernet the RoCE v2 IPv4 entry should win wherever it sits") {
  // A typical NIC: v1 and v2 for the link-local address, then v1 and v2 for IPv4.
  const std::vector table{
      entry(0, "fe80::1", gid_type::roce_v1), entry(1, "fe80::1", gid_type::roce_v2),
      entry(2, "::ffff:192.0.2.7", gid_type::roce_v1), entry(3, "::ffff:192.0.2.7", gid_type::roce_v2)};
  CHECK(rdma::pick_default_gid(table, true) == 3);
}

TEST_CASE("Soft-RoCE's table (v2 only) should give index 1 for its IPv4 entry") {
  const std::vector table{entry(0, "fe80::1", gid_type::roce_v2), entry(1, "::ffff:192.0.2.1", gid_type::roce_v2)};
  CHECK(rdma::pick_default_gid(table, true) == 1);
}

TEST_CASE("without an IPv4 entry the first RoCE v2 entry should be used; v1 alone gives nothing") {
  const std::vector v2_only{entry(0, "fe80::1", gid_type::roce_v1), entry(4, "2001:db8::5", gid_type::roce_v2)};
  CHECK(rdma::pick_default_gid(v2_only, true) == 4);
  const std::vector v1_only{entry(0, "fe80::1", gid_type::roce_v1), entry(1, "::ffff:192.0.2.7", gid_type::roce_v1)};
  CHECK_FALSE(rdma::pick_default_gid(v1_only, true).has_value());
  CHECK_FALSE(rdma::pick_default_gid({}, true).has_value());
}

TEST_CASE("on InfiniBand the first IB entry should be used") {
  const std::vector table{entry(0, "fe80::2", gid_type::ib), entry(1, "fe80::3", gid_type::ib)};
  CHECK(rdma::pick_default_gid(table, false) == 0);
}

TEST_CASE("GID types should have the names ibv_devinfo and sysfs use") {
  CHECK(std::string(rdma::gid_type_name(gid_type::ib)) == "IB");
  CHECK(std::string(rdma::gid_type_name(gid_type::roce_v1)) == "RoCE v1");
  CHECK(std::string(rdma::gid_type_name(gid_type::roce_v2)) == "RoCE v2");
}

TEST_CASE("a GID index should become an 8-bit sgid_index, or be refused naming the limit") {
  CHECK(rdma::sgid_index(0) == 0);
  CHECK(rdma::sgid_index(255) == 255);
  CHECK_THROWS_WITH_AS(rdma::sgid_index(256), "GID index 256 does not fit sgid_index (0-255)", rdma::tutorial_error);
  CHECK_THROWS_AS(rdma::sgid_index(-1), rdma::tutorial_error);
}
