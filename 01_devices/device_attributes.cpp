// ibv_query_device: the limits every later stage runs into. A QP cannot have
// more than max_qp_wr outstanding work requests, a CQ more than max_cqe
// entries, an SRQ more than max_srq_wr; asking for more fails with EINVAL.
// First, from the device itself (no call), its transport: InfiniBand for
// InfiniBand and RoCE alike (RoCE is InfiniBand's transport carried over
// Ethernet; the port's link layer tells them apart), iWARP for RDMA over
// TCP (common/include/rdma_tutorial/transport.hpp says what differs).
#include <cinttypes>
#include <cstdio>
#include <iostream>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/transport.hpp"
#include "stage.hpp"

namespace stage01 {

namespace {

// GUIDs are 64-bit big-endian values; ibv_devinfo prints them as four
// groups of 16 bits, and so do we.
std::string guid_text(__be64 guid) {
  const std::uint64_t host = be64toh(guid);
  char text[24];
  std::snprintf(text, sizeof text, "%04x:%04x:%04x:%04x", static_cast<unsigned>(host >> 48),
                static_cast<unsigned>((host >> 32) & 0xffff), static_cast<unsigned>((host >> 16) & 0xffff),
                static_cast<unsigned>(host & 0xffff));
  return text;
}

template <typename T>
void row(const char* name, const T& value) {
  std::printf("  %-14s %s\n", name, std::to_string(value).c_str());
}

}  // namespace

ibv_device_attr print_device_attributes(ibv_context* ctx) {
  const ibv_transport_type transport = ctx->device->transport_type;
  std::printf("  %-14s %s (%d)\n", "transport", rdma::transport_name(transport), transport);
  ibv_device_attr attr{};
  rdma::check_rc(ibv_query_device(ctx, &attr), "ibv_query_device");
  std::printf("  %-14s %s\n", "fw_ver", attr.fw_ver[0] != '\0' ? attr.fw_ver : "(none)");
  std::printf("  %-14s %s\n", "node_guid", guid_text(attr.node_guid).c_str());
  row("max_qp", attr.max_qp);
  row("max_qp_wr", attr.max_qp_wr);
  row("max_cqe", attr.max_cqe);
  std::printf("  %-14s 0x%" PRIx64 "\n", "max_mr_size", attr.max_mr_size);
  row("max_srq", attr.max_srq);
  row("max_srq_wr", attr.max_srq_wr);
  row("max_sge", attr.max_sge);
  row("phys_port_cnt", attr.phys_port_cnt);
  return attr;
}

}  // namespace stage01
