// Stage 04 — one-sided RDMA Write with an out-of-band handshake.
//
// Two processes, on one host or on two: the server exposes a landing region
// and tells the client, over TCP, where it is (address, rkey, length); the
// client writes into it with RDMA Write, which the server's CPU never sees,
// then tells the server it is done (a Send, or a flag word the server
// watches). protocol.hpp has every message in order.
//
//   server:  rdma_write [--bind ADDR] [-p PORT] [--size BYTES] [--notify send|flag]
//   client:  rdma_write -s ADDR [-p PORT] [--size BYTES] [--notify send|flag]
//                       [--iters N [--tx-depth N] [--cq-mod N]]
//   both:    [-d NAME] [-i PORT] [-g INDEX] [--wait-ms MS]
//
// Read it beside docs/04-rdma-write.md; stage.hpp lists the files in reading order.
#include <infiniband/verbs.h>

#include <cstdio>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/main.hpp"
#include "stage.hpp"

namespace stage04 {

rdma::qp_ptr create_qp(const rdma::rdma_device& dev, std::uint32_t tx_depth) {
  ibv_qp_cap cap{};
  cap.max_send_wr = tx_depth;  // the writes in flight; the notice goes after they complete
  cap.max_recv_wr = 1;         // the server's one Recv for the notice
  cap.max_send_sge = 1;
  cap.max_recv_sge = 1;
  cap.max_inline_data = notice_size;
  return rdma::create_rc_qp(dev.pd.get(), dev.cq.get(), dev.cq.get(), cap, "our QP");
}

}  // namespace stage04

int main(int argc, char** argv) {
  return rdma::run_main("rdma_write", [&] {
    stage04::options opts;
    if (!stage04::parse_options(argc, argv, opts)) return 0;

    // Stages 01-03 (common/src/peer.cpp): the device, its RoCE v2 GID, the
    // port's MTU, a PD, and a CQ big enough for the window (selective
    // signaling keeps at most tx_depth / cq_mod + 1 completions due). Only
    // the server's QP accepts RDMA Writes; the client's accepts nothing.
    const unsigned qp_access = opts.peer.server.empty() ? IBV_ACCESS_REMOTE_WRITE : 0;
    rdma::rdma_device dev =
        rdma::open_rdma_device(opts.device, static_cast<int>(opts.tx_depth) + 2, qp_access, "--tx-depth");
    // How long the client's QP waits for an ACK, and how often it resends
    // (docs/10-lossy-wire.md); the server sends no request to wait on.
    if (opts.ack_timeout) dev.params.timeout = *opts.ack_timeout;
    if (opts.retry_cnt) dev.params.retry_cnt = *opts.retry_cnt;
    dev.params.traffic_class = opts.tos;
    // What the QP and the region will ask for, against what the device takes.
    dev.limits.queue_depth(opts.tx_depth, "writes in flight", "--tx-depth");
    dev.limits.registration(opts.size, "bytes in the region", "--size");
    std::printf("%s\n", rdma::describe(dev).c_str());

    return opts.peer.server.empty() ? stage04::run_server(opts, dev) : stage04::run_client(opts, dev);
  });
}
