// Stage 03 — the queue pair state machine.
//
// Creates one CQ and two RC queue pairs in this process, connects them to
// each other (RESET -> INIT -> RTR -> RTS, printing what the device holds
// after every step), and proves the connection with one Send each way:
//
//   QP A  --- Send "hello from QP A" (15 bytes) -->  QP B   (Recv posted first)
//   QP A  <-- Send "hello from QP B" (15 bytes) ---  QP B   (Recv posted first)
//
// (--size pads both messages with zeros to that many bytes, up to 4096.)
//
// Both QPs use the same port and GID, so the packets go through Soft-RoCE's
// loopback; stage 04 puts the peer in another process and exchanges QPN, PSN
// and GID over TCP.
//
//   qp_state [-d NAME] [-i PORT] [-g INDEX] [--mtu BYTES] [--psn-a N] [--psn-b N]
//            [--timeout N] [--retry-cnt N] [--rnr-retry N] [--min-rnr-timer N] [--size BYTES] [--wait-ms MS]
//
// Read it beside docs/03-qp-state.md; stage.hpp lists the files in reading order.
#include <infiniband/verbs.h>

#include <cstdio>
#include <string>

#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/device.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/gid.hpp"
#include "rdma_tutorial/main.hpp"
#include "rdma_tutorial/port.hpp"
#include "rdma_tutorial/qp.hpp"
#include "rdma_tutorial/limits.hpp"
#include "rdma_tutorial/transport.hpp"
#include "stage.hpp"

namespace {

void print_caps(const char* row, const ibv_qp_cap& cap) {
  std::printf("  %-14s %11u %12u %13u %13u %16u\n", row, cap.max_send_wr, cap.max_recv_wr, cap.max_send_sge,
              cap.max_recv_sge, cap.max_inline_data);
}

// An RC QP on `cq`, and its queue sizes two more ways (main printed what was
// asked): what ibv_create_qp wrote back, and what ibv_query_qp reads from the
// device afterwards. Soft-RoCE rounds the queues up to 2^n - 1 inside; on
// Linux 6.1 creation echoes the request (6.12 writes back the rounded size);
// the queried size is the one a full queue hits (ENOMEM on the next post).
rdma::qp_ptr create_qp(ibv_pd* pd, ibv_cq* cq, const char* label, const ibv_qp_cap& asked, ibv_qp_cap& granted) {
  granted = asked;
  rdma::qp_ptr qp = rdma::create_rc_qp(pd, cq, cq, granted, label);  // one CQ for both directions and both QPs
  ibv_qp_init_attr init{};
  rdma::query_qp(qp.get(), IBV_QP_CAP, label, &init);
  std::printf("%s: qp_num 0x%x\n", label, qp->qp_num);
  print_caps("ibv_create_qp", granted);
  print_caps("ibv_query_qp", init.cap);
  return qp;
}

}  // namespace

int main(int argc, char** argv) {
  return rdma::run_main("qp_state", [&] {
    stage03::options opts;
    if (!stage03::parse_options(argc, argv, opts)) return 0;

    // What stage 01 taught: the device, its port, the RoCE v2 IPv4 GID.
    rdma::context_ptr ctx = rdma::open_device(opts.device.device);
    // An iWARP device (transport.hpp) has no state machine to walk by hand:
    // said in one line, before anything is created.
    rdma::refuse_qp_by_hand_on_iwarp(ctx.get(), "this stage walks QP A and QP B through INIT, RTR and RTS");
    const rdma::gid_entry gid = rdma::choose_gid(ctx.get(), opts.device.port, opts.device.gid_index);
    ibv_port_attr port_attr{};
    rdma::check_rc(ibv_query_port(ctx.get(), opts.device.port, &port_attr), "ibv_query_port");
    const rdma::qp_params params = stage03::params_from_options(opts, port_attr.active_mtu, gid.index);
    std::printf("%s port %u, GID [%d] %s (%s), active_mtu %d, path_mtu %d\n", ibv_get_device_name(ctx->device),
                opts.device.port, gid.index, rdma::gid_to_string(gid.gid).c_str(), rdma::gid_type_name(gid.type),
                rdma::mtu_bytes(port_attr.active_mtu), rdma::mtu_bytes(params.path_mtu));

    // A PD and one registered buffer for both QPs' messages (stage 02).
    // LOCAL_WRITE because the receives write into it.
    rdma::pd_ptr pd(rdma::check_ptr(ibv_alloc_pd(ctx.get()), "ibv_alloc_pd"));
    constexpr std::size_t slot = 4096;  // one page per message buffer: 2 QPs x (send, recv)
    const rdma::registered_buffer buf(pd.get(), 4 * slot, IBV_ACCESS_LOCAL_WRITE, "messages");

    // The CQ: big enough for every completion that can be outstanding at once.
    // It, and the queues below, are checked against what the device takes
    // first (ibv_query_device; 01_devices lists the limits).
    constexpr int cq_entries = 64;
    const rdma::device_limits limits(ctx.get());
    limits.cq_entries(cq_entries);
    limits.queue_depth(16, "WRs in each queue");
    limits.qps(2);
    rdma::cq_ptr cq(rdma::check_ptr(ibv_create_cq(ctx.get(), cq_entries, nullptr, nullptr, 0), "ibv_create_cq"));
    std::printf("CQ: %d entries asked, %d granted\n", cq_entries, cq->cqe);

    ibv_qp_cap asked{};
    asked.max_send_wr = 16;      // outstanding sends; <= max_qp_wr
    asked.max_recv_wr = 16;      // posted receives
    asked.max_send_sge = 1;
    asked.max_recv_sge = 1;
    asked.max_inline_data = 64;  // bytes a send may carry inside its WQE
    std::printf("%-16s %11s %12s %13s %13s %16s\n", "queue sizes", "max_send_wr", "max_recv_wr", "max_send_sge",
                "max_recv_sge", "max_inline_data");
    print_caps("asked", asked);
    ibv_qp_cap cap_a{};
    ibv_qp_cap cap_b{};
    const rdma::qp_ptr qp_a = create_qp(pd.get(), cq.get(), "QP A", asked, cap_a);
    const rdma::qp_ptr qp_b = create_qp(pd.get(), cq.get(), "QP B", asked, cap_b);

    std::printf("\n");
    stage03::connect_pair({"QP A", qp_a.get(), opts.psn_a}, {"QP B", qp_b.get(), opts.psn_b}, gid.gid, params);

    std::printf("\n");
    const auto slots = buf.bytes();
    const stage03::qp_buffers a{"QP A", qp_a.get(), slots.subspan(0, slot), slots.subspan(slot, slot), buf.lkey(),
                                cap_a.max_inline_data};
    const stage03::qp_buffers b{"QP B", qp_b.get(), slots.subspan(2 * slot, slot), slots.subspan(3 * slot, slot),
                                buf.lkey(), cap_b.max_inline_data};
    stage03::send_message(cq.get(), a, b, "hello from QP A", opts.size, 1, opts.wait_ms);
    stage03::send_message(cq.get(), b, a, "hello from QP B", opts.size, 3, opts.wait_ms);
    std::printf("\nboth QPs are in RTS and a message went each way\n");
    // Teardown, by the handles, in reverse declaration order: QPs, CQ, buffer
    // (its MR, then its memory), PD, context; each keeps the ones before it busy.
    return 0;
  });
}
