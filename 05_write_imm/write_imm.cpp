// Stage 05 — RDMA Write with Immediate.
//
// The payload lands in the server's memory as in stage 04, and 32 bits of
// immediate data arrive in a completion at the server, consuming one of
// its posted Recvs: the write and its notice in one operation. The client
// first sends two raw immediates to prove the byte order, then one write
// per slot tagged DATA|slot, then END. protocol.hpp has every message.
//
//   server:  write_imm [--bind ADDR] [-p PORT] [--size BYTES] [--slots N] [--rx-depth N]
//   client:  write_imm -s ADDR [-p PORT] [--size BYTES] [--slots N]
//                      [--iters N [--latency] [--tx-depth N] [--cq-mod N]] [--send-imm VALUE]
//   both:    [-d NAME] [-i PORT] [-g INDEX] [--rnr-retry N] [--wait-ms MS]
//
// Read it beside docs/05-write-imm.md; stage.hpp lists the files in reading order.
#include <infiniband/verbs.h>

#include <cstdio>

#include "rdma_tutorial/main.hpp"
#include "stage.hpp"

namespace stage05 {

rdma::qp_ptr create_qp(const rdma::rdma_device& dev, const options& opts) {
  ibv_qp_cap cap{};
  cap.max_send_wr = opts.tx_depth;
  cap.max_recv_wr = opts.rx_depth;  // Recvs a Write with Immediate consumes
  cap.max_send_sge = 1;
  cap.max_recv_sge = 1;
  cap.max_inline_data = 64;  // small writes travel inside the WQE (latency mode)
  return rdma::create_rc_qp(dev.pd.get(), dev.cq.get(), dev.cq.get(), cap, "our QP");
}

}  // namespace stage05

int main(int argc, char** argv) {
  return rdma::run_main("write_imm", [&] {
    stage05::options opts;
    if (!stage05::parse_options(argc, argv, opts)) return 0;

    // Stages 01-04 (common/src/peer.cpp). The server's QP accepts writes;
    // so does the client's in ping-pong mode, where the server answers.
    const bool server = opts.peer.server.empty();
    const unsigned qp_access = server || opts.latency ? IBV_ACCESS_REMOTE_WRITE : 0;
    // One CQ for both directions: Recv completions and the signaled sends.
    const int cq_entries = static_cast<int>(opts.rx_depth + opts.tx_depth) + 2;
    rdma::rdma_device dev = rdma::open_rdma_device(opts.device, cq_entries, qp_access, "--rx-depth and --tx-depth",
                                                   "this stage is about it");
    // What the QP and the slots will ask for, against what the device takes.
    dev.limits.queue_depth(opts.tx_depth, "writes in flight", "--tx-depth");
    dev.limits.queue_depth(opts.rx_depth, "Recvs kept posted", "--rx-depth");
    dev.limits.registration(std::uint64_t{opts.slots} * opts.size, "bytes in the slots", "--slots and --size");
    // rnr_retry: how often our sends are retried when the peer answers
    // "receiver not ready" (no Recv posted). 3 fails fast in one pass; a
    // stream uses 7 (retry forever): without credits (stage 06) that NAK is
    // the receiver's only way to slow a sender down.
    dev.params.rnr_retry = opts.rnr_retry.value_or(opts.iters ? 7 : 3);
    if (opts.retry_cnt) dev.params.retry_cnt = *opts.retry_cnt;
    std::printf("%s\n", rdma::describe(dev).c_str());

    return server ? stage05::run_server(opts, dev) : stage05::run_client(opts, dev);
  });
}
