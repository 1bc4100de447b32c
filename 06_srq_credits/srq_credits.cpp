// Stage 06 — a shared receive queue and credits.
//
// One server, many clients, one receive queue: every client's QP takes its
// Recvs from the server's SRQ, so the server sizes and refills one queue
// for all of them. Credits keep each client inside the window the server
// granted, so the SRQ never runs dry and no client that keeps to its
// credits can crowd out the others. protocol.hpp has every message.
//
//   server:  srq_credits [--clients N] [--window N] [--srq-depth N] [--srq-limit N]
//                        [--repost-batch N] [--credit-batch N] [--bind ADDR] [-p PORT]
//   client:  srq_credits -s ADDR [--records N] [--rnr-retry N] [-p PORT]
//   both:    [--size BYTES] [-d NAME] [-i PORT] [-g INDEX] [--wait-ms MS]
//
// Read it beside docs/06-srq-credits.md; stage.hpp lists the files in reading order.
#include <infiniband/verbs.h>

#include <cstdio>

#include "rdma_tutorial/main.hpp"
#include "rdma_tutorial/transport.hpp"
#include "stage.hpp"

int main(int argc, char** argv) {
  return rdma::run_main("srq_credits", [&] {
    stage06::options opts;
    if (!stage06::parse_options(argc, argv, opts)) return 0;

    // Stages 01-04 (common/src/peer.cpp). Both sides' QPs accept RDMA
    // Writes: the server's into the windows, the client's into its credit
    // word. One CQ each: the server's takes every client's completions.
    const bool server = !opts.peer.is_client();
    std::uint32_t cq_entries = 128 + 2;
    if (server) {
      const std::uint32_t depth = opts.srq_depth.value_or(stage06::default_depth(opts.clients, opts.window, opts.repost_batch));
      cq_entries = depth + opts.clients * 32 + 2;  // every Recv, every client's credit writes
    }
    rdma::rdma_device dev = rdma::open_rdma_device(opts.device, static_cast<int>(cq_entries), IBV_ACCESS_REMOTE_WRITE,
                                                   server ? "--clients and --window" : "",
                                                   "every record of this stage is one");
    dev.params.rnr_retry = opts.rnr_retry;
    // The ACK timeout: 18 (1.07 s a try) on Soft-RoCE, where many processes
    // share each host's CPUs with its own work and the server's credit
    // writes across the two-guest wire failed at 67 ms; 14 on a NIC
    // (waiting.hpp); --ack-timeout says otherwise.
    dev.params.timeout = opts.ack_timeout.value_or(rdma::default_ack_timeout(dev.limits.attr()));
    std::printf("%s\n", rdma::describe(dev).c_str());

    return server ? stage06::run_server(opts, dev) : stage06::run_client(opts, dev);
  });
}
