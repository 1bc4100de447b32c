// The client's side of a credit word (credit_stream.hpp; stage 06 teaches it).
#include "rdma_tutorial/credit_stream.hpp"

#include <endian.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <string>
#include <utility>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/nap_wait.hpp"

namespace rdma {

credit_stream::credit_stream(ibv_qp* qp, ibv_cq* cq, std::uint64_t* credit_word, std::uint32_t slots,
                             std::uint32_t send_queue, int wait_ms, hooks h)
    : qp_(qp), cq_(cq), word_(credit_word), slots_(slots), send_queue_(send_queue), wait_ms_(wait_ms), hooks_(std::move(h)) {}

std::uint64_t credit_stream::read_word() const {
  return be64toh(std::atomic_ref<std::uint64_t>(*word_).load(std::memory_order_acquire));
}

void credit_stream::reap() {
  std::array<ibv_wc, 16> wcs{};
  const int n = check_poll(ibv_poll_cq(cq_, static_cast<int>(wcs.size()), wcs.data()));
  for (int i = 0; i < n; ++i) {
    const ibv_wc& wc = wcs[static_cast<std::size_t>(i)];
    if (wc.status != IBV_WC_SUCCESS) {
      // An RNR here means the server's SRQ ran dry: its sizing is wrong.
      throw tutorial_error("write " + std::to_string(wc.wr_id) + " failed: " + describe_wc(wc), wc_status_hint(wc.status));
    }
    completed_ = wc.wr_id + 1;
  }
}

std::uint64_t credit_stream::room(std::uint64_t credits) const {
  return std::min({credits, queue_room(), completed_ + slots_ - posted_});
}

void credit_stream::wait_until(const char* what, const std::function<bool()>& ready) {
  nap_until(
      ready,
      [&] {
        reap();
        hooks_.on_word(read_word());
      },
      [&](std::uint32_t looks, coarse_clock::duration waited) {
        if (waited > std::chrono::milliseconds(wait_ms_)) {
          throw tutorial_error(hooks_.stalled(what), "the server stopped consuming: its output says why");
        }
        if (looks % waiting_policy::looks_per_peer_check == 0) hooks_.check_peer(what);
      });
}

void credit_stream::post(ibv_send_wr* first, std::size_t k) {
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(qp_, first, &bad); rc != 0) {
    const std::string which = k == 1 ? "write " + std::to_string(posted_)
                                     : "writes " + std::to_string(posted_) + "-" + std::to_string(posted_ + k - 1);
    throw verbs_error(rc, "ibv_post_send(" + which + ")");
  }
  posted_ += k;
}

}  // namespace rdma
