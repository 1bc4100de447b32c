// The window loop (see send_window.hpp for the three habits).
#include "rdma_tutorial/send_window.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"

namespace rdma {

double post_window(ibv_qp* qp, ibv_cq* cq, const window_params& params, const wr_filler& fill) {
  std::vector<ibv_send_wr> wrs(params.depth);
  std::uint32_t posted = 0;
  std::uint32_t completed = 0;  // every WR before the last signaled completion
  const auto start = std::chrono::steady_clock::now();
  while (completed < params.count) {
    // Fill the free part of the window with one linked list of WRs.
    const std::uint32_t batch = std::min(params.count - posted, params.depth - (posted - completed));
    for (std::uint32_t i = 0; i < batch; ++i) {
      const std::uint32_t n = posted + i;
      ibv_send_wr& wr = wrs[i];
      wr = ibv_send_wr{};
      fill(wr, n);
      wr.wr_id = n;
      // Every signal_every-th WR, and the last, which must complete visibly.
      const bool signaled = (n + 1) % params.signal_every == 0 || n + 1 == params.count;
      wr.send_flags = (wr.send_flags & ~unsigned{IBV_SEND_SIGNALED}) | (signaled ? unsigned{IBV_SEND_SIGNALED} : 0u);
      wr.next = i + 1 < batch ? &wrs[i + 1] : nullptr;
    }
    if (batch > 0) {
      ibv_send_wr* bad = nullptr;
      if (const int rc = ibv_post_send(qp, wrs.data(), &bad); rc != 0) {  // no string built on the hot path
        throw verbs_error(rc, "ibv_post_send(WR " + std::to_string(posted) + ")");
      }
      posted += batch;
    }
    // A full window always holds a signaled WR (signal_every <= depth), so
    // there is always a completion to wait for.
    ibv_wc wcs[16];
    const std::size_t got = poll_cq_until(
        cq, {wcs, 1}, coarse_clock::now() + std::chrono::milliseconds(params.wait_ms));
    if (got == 0) {
      throw tutorial_error("no completion within " + std::to_string(params.wait_ms) + " ms (" +
                               std::to_string(completed) + " of " + std::to_string(params.count) + " WRs done)",
                           "the peer stopped answering: its own output says why");
    }
    const int more = check_poll(ibv_poll_cq(cq, 15, wcs + 1));
    for (std::size_t i = 0; i < got + static_cast<std::size_t>(more); ++i) {
      check_wc(wcs[i]);
      completed = static_cast<std::uint32_t>(wcs[i].wr_id) + 1;
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

send_queue_room::send_queue_room(std::uint32_t depth, std::uint32_t signal_every)
    : depth_(depth), signal_every_(signal_every) {
  if (signal_every == 0 || signal_every > depth) {
    throw tutorial_error("signal one WR in " + std::to_string(signal_every) + " of a send queue of " + std::to_string(depth),
                         "a full queue must hold a signaled WR: signal at least one in every depth");
  }
}

std::uint32_t signal_interval(std::uint32_t depth) { return std::max(1u, std::min(64u, depth / 2)); }

std::string bw_report(std::uint32_t bytes, std::uint32_t iterations, double seconds) {
  char line[160];
  std::snprintf(line, sizeof line, " #bytes     #iterations    BW average[MB/sec]   MsgRate[Mpps]\n %-10u %-14u %-20.2f %.6f\n",
                bytes, iterations, static_cast<double>(bytes) * iterations / seconds / (1 << 20),
                iterations / seconds / 1e6);
  return line;
}

}  // namespace rdma
