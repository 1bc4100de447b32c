// Throughput mode (--iters N): the same RDMA Write N times, the way
// ib_write_bw does it, through the send window of
// common/src/send_window.cpp: up to --tx-depth writes in flight, one in
// --cq-mod signaled, the free part of the window posted as one list.
// What each write does is this stage's lesson, so it is filled in here.
#include <cstdio>

#include "rdma_tutorial/send_window.hpp"
#include "stage.hpp"

namespace stage04 {

void write_stream(ibv_qp* qp, ibv_cq* cq, const ibv_sge& sge, const rdma::wire::endpoint& peer, const options& opts) {
  const rdma::window_params window{*opts.iters, opts.tx_depth, opts.cq_mod, opts.peer.wait_ms};
  ibv_sge source = sge;  // every write sends the same bytes
  const double seconds = rdma::post_window(qp, cq, window, [&](ibv_send_wr& wr, std::uint32_t) {
    wr.sg_list = &source;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = peer.addr;  // the same place each time, as ib_write_bw does
    wr.wr.rdma.rkey = peer.rkey;
  });
  std::printf("%s", rdma::bw_report(opts.size, *opts.iters, seconds).c_str());
}

}  // namespace stage04
