// The SRQ's refill (docs/06-srq-credits.md, "The limit event"): consumed
// Recvs go back in batches, one doorbell each, and all at once when the
// limit event says the queue runs low. Stages 06 and 09 use it.
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/srq_server.hpp"

namespace rdma {

srq_refill::srq_refill(ibv_srq* srq, std::uint32_t depth, std::uint32_t batch, std::uint32_t limit)
    : srq_(srq), batch_(batch), limit_(limit) {
  post_srq_receives(srq_, depth);
  if (limit_ != 0) arm_srq_limit(srq_, limit_);
}

std::uint32_t srq_refill::repost_if_due() {
  if (waiting_ < batch_) return 0;
  const std::uint32_t n = waiting_;
  post_srq_receives(srq_, n);
  waiting_ = 0;
  return n;
}

void srq_refill::on_limit_event() {
  ++limit_events_;
  post_srq_receives(srq_, waiting_);
  waiting_ = 0;
  // The limit is one-shot: the device disarmed it when it fired. Armed
  // again only after the refill, or it would fire again at once.
  arm_srq_limit(srq_, limit_);
}

std::uint32_t srq_refill::armed_limit() const {
  ibv_srq_attr attr{};
  check_rc(ibv_query_srq(srq_, &attr), "ibv_query_srq");
  return attr.srq_limit;
}

}  // namespace rdma
