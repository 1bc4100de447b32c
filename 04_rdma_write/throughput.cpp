// Throughput mode (--iters N): the same RDMA Write N times, the way
// ib_write_bw does it. Three habits make the difference to one write at a
// time:
//   a window   up to tx_depth writes in flight: the wire never waits for us;
//   selective  only one write in cq_mod asks for a completion; since a QP's
//   signaling  sends complete in order, that one completing means every
//              write before it completed too;
//   batching   the free part of the window is posted as one linked list of
//              WRs (one ibv_post_send), and ibv_poll_cq takes up to 16
//              completions a call.
// Unsignaled WRs still occupy the send queue until a later signaled one
// completes, so the window counts every posted write, signaled or not.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage04 {

double write_stream(ibv_qp* qp, ibv_cq* cq, const ibv_sge& sge, std::uint64_t remote_addr, std::uint32_t rkey,
                    const options& opts) {
  const std::uint32_t iters = *opts.iters;
  std::vector<ibv_send_wr> wrs(opts.tx_depth);
  std::vector<ibv_sge> sges(opts.tx_depth, sge);
  std::uint32_t posted = 0;
  std::uint32_t completed = 0;  // every write before the last signaled completion
  const auto start = std::chrono::steady_clock::now();
  while (completed < iters) {
    // Fill the free part of the window with one linked list of WRs.
    const std::uint32_t batch = std::min(iters - posted, opts.tx_depth - (posted - completed));
    for (std::uint32_t i = 0; i < batch; ++i) {
      const std::uint32_t n = posted + i;  // the write's number, 0-based: its wr_id
      ibv_send_wr& wr = wrs[i];
      wr = ibv_send_wr{};
      wr.wr_id = n;
      wr.sg_list = &sges[i];
      wr.num_sge = 1;
      wr.opcode = IBV_WR_RDMA_WRITE;
      // Signal every cq_mod-th write and the last one, which must complete visibly.
      wr.send_flags = ((n + 1) % opts.cq_mod == 0 || n + 1 == iters) ? unsigned{IBV_SEND_SIGNALED} : 0u;
      wr.wr.rdma.remote_addr = remote_addr;
      wr.wr.rdma.rkey = rkey;
      wr.next = i + 1 < batch ? &wrs[i + 1] : nullptr;
    }
    if (batch > 0) {
      ibv_send_wr* bad = nullptr;
      rdma::check_rc(ibv_post_send(qp, wrs.data(), &bad), "ibv_post_send(write " + std::to_string(posted) + ")");
      posted += batch;
    }
    // Whatever completed; a window with nothing signaled in it cannot happen
    // (cq_mod <= tx_depth), so waiting here always has something to wait for.
    ibv_wc wcs[16];
    const std::size_t got = rdma::poll_cq_until(
        cq, {wcs, 1}, std::chrono::steady_clock::now() + std::chrono::milliseconds(opts.wait_ms));
    if (got == 0) {
      throw rdma::tutorial_error("no write completed within " + std::to_string(opts.wait_ms) + " ms (" +
                                 std::to_string(completed) + " of " + std::to_string(iters) + " done)",
                                 "the server stopped answering: its own output says why");
    }
    const int more = rdma::check_poll(ibv_poll_cq(cq, 15, wcs + 1));
    for (std::size_t i = 0; i < got + static_cast<std::size_t>(more); ++i) {
      rdma::check_wc(wcs[i]);
      completed = static_cast<std::uint32_t>(wcs[i].wr_id) + 1;
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace stage04
