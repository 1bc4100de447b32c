// Stage 03 — the queue pair state machine.
//
// Creates one CQ and two RC queue pairs in this process, connects them to
// each other (RESET -> INIT -> RTR -> RTS, printing what ibv_query_qp says
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
//   qp_state [-d NAME] [-p PORT] [-g INDEX] [--mtu BYTES] [--psn-a N] [--psn-b N]
//            [--timeout N] [--retry-cnt N] [--rnr-retry N] [--min-rnr-timer N] [--size BYTES] [--wait-ms MS]
//
// Read it beside docs/03-qp-state.md.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "options.hpp"
#include "rdma_tutorial/device.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/gid.hpp"
#include "rdma_tutorial/main.hpp"
#include "rdma_tutorial/port.hpp"
#include "stage.hpp"

namespace {

// Creation returns the caps the device really granted (it may round up).
rdma::qp_ptr create_rc_qp(ibv_pd* pd, ibv_cq* cq, const char* label, ibv_qp_cap& granted) {
  ibv_qp_init_attr init{};
  init.send_cq = cq;  // one CQ for both directions and both QPs
  init.recv_cq = cq;
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 0;              // only WRs with IBV_SEND_SIGNALED complete visibly
  init.cap.max_send_wr = 16;        // outstanding sends; <= max_qp_wr
  init.cap.max_recv_wr = 16;        // posted receives
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = 64;    // bytes a send may carry inside its WQE
  rdma::qp_ptr qp(rdma::check_ptr(ibv_create_qp(pd, &init), std::string("ibv_create_qp(") + label + ")"));
  std::printf("%s: qp_num 0x%x, max_send_wr %u, max_recv_wr %u, max_send_sge %u, max_recv_sge %u, "
              "max_inline_data %u\n",
              label, qp->qp_num, init.cap.max_send_wr, init.cap.max_recv_wr, init.cap.max_send_sge,
              init.cap.max_recv_sge, init.cap.max_inline_data);
  granted = init.cap;
  return qp;
}

}  // namespace

int main(int argc, char** argv) {
  return rdma::run_main("qp_state", [&] {
    stage03::options opts;
    if (!stage03::parse_options(argc, argv, opts)) return 0;

    // What stage 01 taught: the device, its port, the RoCE v2 IPv4 GID.
    rdma::context_ptr ctx = rdma::open_device(opts.device.device);
    const rdma::gid_entry gid = rdma::choose_gid(ctx.get(), opts.device.port, opts.device.gid_index);
    ibv_port_attr port_attr{};
    rdma::check_rc(ibv_query_port(ctx.get(), opts.device.port, &port_attr), "ibv_query_port");
    stage03::path_params path = stage03::path_from_options(opts, port_attr.active_mtu);
    // The address vector's sgid_index is 8 bits wide: a RoCE table may be longer.
    if (gid.index > 255) throw rdma::tutorial_error("GID index " + std::to_string(gid.index) + " does not fit sgid_index");
    path.gid_index = static_cast<std::uint8_t>(gid.index);
    std::printf("%s port %u, GID [%d] %s (%s), active_mtu %d, path_mtu %d\n", ibv_get_device_name(ctx->device),
                opts.device.port, gid.index, rdma::gid_to_string(gid.gid).c_str(), rdma::gid_type_name(gid.type),
                rdma::mtu_bytes(port_attr.active_mtu), rdma::mtu_bytes(path.path_mtu));

    // A PD and one registered buffer for both QPs' messages (stage 02 explains
    // both). LOCAL_WRITE because the receives write into it.
    rdma::pd_ptr pd(rdma::check_ptr(ibv_alloc_pd(ctx.get()), "ibv_alloc_pd"));
    constexpr std::size_t slot = 4096;  // one page per message buffer: 2 QPs x (send, recv)
    std::unique_ptr<char, decltype(&std::free)> buf(static_cast<char*>(std::aligned_alloc(4096, 4 * slot)), &std::free);
    if (!buf) throw rdma::verbs_error(ENOMEM, "aligned_alloc");
    rdma::mr_ptr mr(rdma::check_ptr(ibv_reg_mr(pd.get(), buf.get(), 4 * slot, IBV_ACCESS_LOCAL_WRITE), "ibv_reg_mr"));

    // The CQ: big enough for every completion that can be outstanding at once.
    rdma::cq_ptr cq(rdma::check_ptr(ibv_create_cq(ctx.get(), 64, nullptr, nullptr, 0), "ibv_create_cq"));
    std::printf("CQ: %d entries\n", cq->cqe);
    ibv_qp_cap cap_a{};
    ibv_qp_cap cap_b{};
    rdma::qp_ptr qp_a = create_rc_qp(pd.get(), cq.get(), "QP A", cap_a);
    rdma::qp_ptr qp_b = create_rc_qp(pd.get(), cq.get(), "QP B", cap_b);

    std::printf("\n");
    stage03::connect_pair({"QP A", qp_a.get(), opts.psn_a}, {"QP B", qp_b.get(), opts.psn_b}, gid.gid, path);

    std::printf("\n");
    const stage03::qp_buffers a{"QP A", qp_a.get(), {buf.get(), slot}, {buf.get() + slot, slot},
                                mr->lkey, cap_a.max_inline_data};
    const stage03::qp_buffers b{"QP B", qp_b.get(), {buf.get() + 2 * slot, slot}, {buf.get() + 3 * slot, slot},
                                mr->lkey, cap_b.max_inline_data};
    stage03::send_message(cq.get(), a, b, "hello from QP A", opts.size, 1, opts.wait_ms);
    stage03::send_message(cq.get(), b, a, "hello from QP B", opts.size, 3, opts.wait_ms);
    std::printf("\nboth QPs are in RTS and a message went each way\n");
    // Teardown, by the handles, in reverse declaration order: QPs, CQ, MR,
    // buffer, PD, context (each object keeps the ones before it busy).
    return 0;
  });
}
