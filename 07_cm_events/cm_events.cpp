// Stage 07 — connections the rdma_cm way.
//
// Stage 04's story again (the server exposes a region, the client writes
// into it, then says so), with the TCP side channel gone: rdma_cm finds
// the device for an IP address, carries our few bytes of setup in its own
// messages (private data), and walks the QPs to RTS itself. Every step it
// takes ends with an event on a channel; reading those events, and acting
// on every one of them, is the lesson. protocol.hpp has the messages.
//
//   server:  cm_events [--bind ADDR] [-p PORT] [--size BYTES] [--responder-resources N]
//   client:  cm_events -s ADDR [-p PORT] [--size BYTES] [--resolve-ms MS]
//                      [--retry-count N] [--initiator-depth N] [--ack-timeout N] [--iters N]
//   both:    [--wait-ms MS] [--rnr-retry-count N]; server: [--accept-ms MS]
//
// Read it beside docs/07-cm-events.md; stage.hpp lists the files in reading order.
#include <fcntl.h>

#include <cstdio>

#include "rdma_tutorial/cm_qp.hpp"
#include "rdma_tutorial/device.hpp"
#include "rdma_tutorial/main.hpp"
#include "rdma_tutorial/qp.hpp"
#include "rdma_tutorial/limits.hpp"
#include "rdma_tutorial/transport.hpp"
#include "stage.hpp"

namespace stage07 {


on_device open_on(rdma_cm_id* id, int cq_entries, const options& opts) {
  // id->verbs is the device rdma_cm picked for the address: the one whose
  // interface holds it (server) or routes to it (client). Ours to use,
  // librdmacm's to close.
  // What either side asks of it (a CQ, a QP of two send WRs at most),
  // against what it takes (ibv_query_device).
  const rdma::device_limits limits(id->verbs);
  limits.cq_entries(static_cast<std::uint64_t>(cq_entries));
  limits.queue_depth(2, "send WRs (the write and the notice, or the Read)");
  if (opts.peer.is_client()) {
    limits.reads_initiated(opts.initiator_depth, "--initiator-depth");
  } else {
    limits.reads_served(opts.responder_resources, "--responder-resources");
  }
  // Its PD and CQ (common/src/cm_qp.cpp).
  return rdma::cm::open_on(id, cq_entries);
}

rdma::cm_qp_ptr create_qp(rdma_cm_id* id, const on_device& dev, std::uint32_t send_wr) {
  ibv_qp_cap cap{};
  cap.max_send_wr = send_wr;
  cap.max_recv_wr = 1;  // the server's one Recv for the notice
  cap.max_send_sge = 1;
  cap.max_recv_sge = 1;
  cap.max_inline_data = notice_size;
  // rdma_create_qp on the id, on dev's PD and CQ (common/src/cm_qp.cpp).
  return rdma::cm::create_qp(id, dev, cap);
}

std::string describe_qp(ibv_qp* qp) {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  rdma::check_rc(ibv_query_qp(qp, &attr,
                              IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                  IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC,
                              &init),
                 "ibv_query_qp");
  char text[200];
  if (rdma::is_iwarp(qp->context)) {
    // iWARP's QP keeps no ACK timeout or retry counts: its TCP connection
    // retransmits. What siw's ibv_query_qp reports differs by kernel (the
    // chapter, "On iWARP"), so this line says what it reports, no more.
    std::snprintf(text, sizeof text,
                  "QP 0x%x as rdma_cm left it: %s, max_rd_atomic %u, max_dest_rd_atomic %u (ibv_query_qp; on iWARP "
                  "TCP does the retrying)",
                  qp->qp_num, rdma::qp_state_name(attr.qp_state).c_str(), attr.max_rd_atomic, attr.max_dest_rd_atomic);
    return text;
  }
  const double timeout_ms = 4.096e-3 * static_cast<double>(1ULL << attr.timeout);
  std::snprintf(text, sizeof text,
                "QP 0x%x as rdma_cm left it: %s, timeout %u (%.0f ms), retry_cnt %u, rnr_retry %u, max_rd_atomic %u, "
                "max_dest_rd_atomic %u",
                qp->qp_num, rdma::qp_state_name(attr.qp_state).c_str(), attr.timeout, timeout_ms, attr.retry_cnt,
                attr.rnr_retry, attr.max_rd_atomic, attr.max_dest_rd_atomic);
  return text;
}

}  // namespace stage07

int main(int argc, char** argv) {
  return rdma::run_main("cm_events", [&] {
    stage07::options opts;
    if (!stage07::parse_options(argc, argv, opts)) return 0;

    // rdma_cm finds the device itself, from an address; but with no device
    // at all it would only say "No such device". Stage 01's check says why.
    rdma::get_device_list();

    // One channel for every event of every id we make (the server's
    // connection ids inherit it from the listening id).
    const rdma::event_channel_ptr channel(
        rdma::check_ptr(rdma_create_event_channel(), "rdma_create_event_channel"));
    // Non-blocking: every wait is a poll() on this fd with a deadline
    // (common/src/cm_events.cpp), never a rdma_get_cm_event that could block for good.
    const int flags = rdma::check_errno(fcntl(channel->fd, F_GETFL), "fcntl(F_GETFL)");
    rdma::check_errno(fcntl(channel->fd, F_SETFL, flags | O_NONBLOCK), "fcntl(F_SETFL, O_NONBLOCK)");
    return opts.peer.is_client() ? stage07::run_client(opts, channel.get())
                                 : stage07::run_server(opts, channel.get());
  });
}
