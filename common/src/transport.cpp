// The transport under a device, and the stages' refusals (transport.hpp).
#include "rdma_tutorial/transport.hpp"

#include <string>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/waiting.hpp"

namespace rdma {

namespace {

// Soft-iWARP's vendor_id, "bmt" in ASCII (siw.h, SIW_VENDOR_ID; Linux 6.1
// and 6.12), which ibv_query_device reports as it is.
constexpr std::uint32_t siw_vendor_id = 0x626d74;
// Soft-RoCE's (rxe_param.h, RXE_VENDOR_ID; Linux 6.1 and 6.12).
constexpr std::uint32_t rxe_vendor_id = 0xffffff;

std::string device_name(const ibv_context* ctx) { return ibv_get_device_name(ctx->device); }

}  // namespace

const char* transport_name(ibv_transport_type type) {
  switch (type) {
    case IBV_TRANSPORT_IB: return "InfiniBand";
    case IBV_TRANSPORT_IWARP: return "iWARP";
    case IBV_TRANSPORT_USNIC: return "usNIC";
    case IBV_TRANSPORT_USNIC_UDP: return "usNIC UDP";
    case IBV_TRANSPORT_UNSPECIFIED: return "unspecified";
    case IBV_TRANSPORT_UNKNOWN: break;
  }
  return "unknown";
}

bool is_iwarp(const ibv_context* ctx) { return ctx->device->transport_type == IBV_TRANSPORT_IWARP; }

bool posts_write_with_imm(const ibv_context* ctx, const ibv_device_attr& attr) {
  return !(is_iwarp(ctx) && attr.vendor_id == siw_vendor_id);
}

std::uint8_t default_ack_timeout(const ibv_device_attr& attr) {
  return attr.vendor_id == rxe_vendor_id ? waiting_policy::soft_roce_ack_timeout : waiting_policy::nic_ack_timeout;
}

void refuse_qp_by_hand_on_iwarp(const ibv_context* ctx, std::string_view by_hand) {
  if (!is_iwarp(ctx)) return;
  throw tutorial_error(device_name(ctx) +
                       " is an iWARP device: its QPs reach RTS only through rdma_cm, over a TCP connection, never by "
                       "hand as " +
                       std::string(by_hand) + "; stage 07 connects that way and runs on iWARP");
}

void refuse_without_write_with_imm(const ibv_context* ctx, const ibv_device_attr& attr, std::string_view uses_it) {
  if (posts_write_with_imm(ctx, attr)) return;
  throw tutorial_error(device_name(ctx) +
                       " is an iWARP device whose provider (siw) posts no RDMA Write with Immediate, and " +
                       std::string(uses_it) +
                       " (RFC 7306 adds one to iWARP; siw does not implement it); stage 07 runs on iWARP");
}

}  // namespace rdma
