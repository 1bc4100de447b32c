// Stage 09 — a memory pool and the whole pipeline.
//
// The capstone: a log server and its clients with everything the stages
// before taught, plus the one thing they lacked. Registering memory costs
// a system call and a page walk (stage 02); a server that registered a
// buffer per client or per message would spend its time there. This one
// registers one pool at start-up and hands out chunks of it in O(1), with
// no verbs call; each client's chunk is opened to it alone by a memory
// window. The clients write records with Write with Immediate (stage 05)
// into their slots; one SRQ takes every client's Recvs, refilled in
// batches and behind its limit event (06); credits bound each client's
// writes (06); connections come and go by rdma_cm (07); the server sleeps
// on a completion channel when there is nothing to do (08).
// protocol.hpp has every message.
//
//   server:  mempool [--clients N] [--window N] [--record-size BYTES] [--chunk-size BYTES]
//                    [--pool-chunks N] [--credit-batch N] [--spin-us US] [--bind ADDR] [-p PORT]
//   client:  mempool -s ADDR [--records N] [--record-size BYTES] [--latency] [--hostile KIND] [-p PORT]
//   cost:    mempool --pool-cost [--cost-runs N]
//   both:    [--wait-ms MS]; server: [--accept-ms MS]
//
// Read it beside docs/09-mempool.md; stage.hpp lists the files in reading order.
#include <fcntl.h>

#include <cstdio>

#include "rdma_tutorial/device.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/handles.hpp"
#include "rdma_tutorial/main.hpp"
#include "stage.hpp"

int main(int argc, char** argv) {
  return rdma::run_main("mempool", [&] {
    stage09::options opts;
    if (!stage09::parse_options(argc, argv, opts)) return 0;

    // rdma_cm finds the device itself, from an address; with no device at
    // all it would only say "No such device". Stage 01's check says why.
    rdma::get_device_list();
    if (opts.pool_cost) {
      // Stage 02's table, with the pool beside it: on the first device.
      const rdma::context_ptr ctx = rdma::open_device("");
      const rdma::pd_ptr pd(rdma::check_ptr(ibv_alloc_pd(ctx.get()), "ibv_alloc_pd"));
      stage09::print_pool_cost(pd.get(), opts.cost_runs);
      return 0;
    }

    // One channel for every event of every id (stage 07), non-blocking:
    // each wait is a poll() with a deadline.
    const rdma::event_channel_ptr channel(rdma::check_ptr(rdma_create_event_channel(), "rdma_create_event_channel"));
    const int flags = rdma::check_errno(fcntl(channel->fd, F_GETFL), "fcntl(F_GETFL)");
    rdma::check_errno(fcntl(channel->fd, F_SETFL, flags | O_NONBLOCK), "fcntl(F_SETFL, O_NONBLOCK)");
    return opts.peer.is_client() ? stage09::run_client(opts, channel.get()) : stage09::run_server(opts, channel.get());
  });
}
