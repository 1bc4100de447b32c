// The transport under a device, as stage 01 shows it (docs/01-devices.md,
// "RoCE, InfiniBand, iWARP"), and what the stages need of it.
//
// ibv_device's transport_type is IBV_TRANSPORT_IB for InfiniBand and RoCE
// alike (RoCE is InfiniBand's transport over Ethernet; the port's
// link_layer tells them apart) and IBV_TRANSPORT_IWARP for iWARP, which
// carries RDMA over TCP (RDMAP over DDP over MPA, RFC 5040, 5041, 5044).
// The verbs are the same; three things the stages lean on are not:
//  - An iWARP QP reaches RTS only through the connection manager, which
//    hands it the TCP connection it will run on (rdma_cm, stage 07). There
//    is no moving it there by hand: siw refuses RTS without a socket with
//    EINVAL (siw_qp.c, siw_qp_nextstate_from_idle), and a QP number and a
//    GID are not how an iWARP peer is found.
//  - RDMAP has no RDMA Write with Immediate. RFC 7306 adds one as an
//    extension; irdma's iWARP QPs take it (irdma's verbs.c gives them
//    IRDMA_WRITE_WITH_IMM), siw does not (libsiw maps the opcode to
//    "unsupported" and ibv_post_send fails with EINVAL). No device
//    attribute says which; the provider does.
//  - The sink of an RDMA Read is written by the responder as tagged DDP
//    segments under the sink's key, so the kernel's own RDMA R/W API
//    registers an iWARP Read sink with REMOTE_WRITE (core/rw.c); stage 07
//    does the same.
// The refusals below are for a stage that cannot run on such a device: one
// line naming what iWARP lacks or requires and where to look instead,
// before anything is created (exit 1: the device cannot run the program,
// whatever its options).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string_view>

namespace rdma {

// "InfiniBand" (RoCE too), "iWARP", ...: ibv_devinfo's words.
const char* transport_name(ibv_transport_type type);

bool is_iwarp(const ibv_context* ctx);

// Whether the device posts RDMA Write with Immediate as far as we know:
// every RoCE and InfiniBand device; on iWARP not Soft-iWARP (siw, vendor_id
// 0x626d74, siw.h's SIW_VENDOR_ID). Another iWARP provider that lacks it
// fails at ibv_post_send, named there.
bool posts_write_with_imm(const ibv_context* ctx, const ibv_device_attr& attr);

// The ACK timeout for the stages whose peers may sit across the two-guest
// wire, where no --ack-timeout says otherwise: waiting.hpp's 18 on a
// Soft-RoCE device (vendor_id 0xffffff, rxe_param.h's RXE_VENDOR_ID), 14 on
// any other (waiting.hpp says why each).
std::uint8_t default_ack_timeout(const ibv_device_attr& attr);

// Throws a one-line tutorial_error on an iWARP device: "<dev> is an iWARP
// device: its QPs reach RTS only through rdma_cm, over a TCP connection,
// never by hand as <by_hand>; stage 07 connects that way ...".
void refuse_qp_by_hand_on_iwarp(const ibv_context* ctx, std::string_view by_hand);

// Throws a one-line tutorial_error where posts_write_with_imm is false:
// "<dev> is an iWARP device whose provider (siw) posts no RDMA Write with
// Immediate, and <uses_it> ...".
void refuse_without_write_with_imm(const ibv_context* ctx, const ibv_device_attr& attr, std::string_view uses_it);

}  // namespace rdma
