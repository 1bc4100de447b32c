// EXERCISE: after the first refill, the clients find no Recv posted
//
// This is common/src/srq_refill.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh limit_not_rearmed
//
// TODO: this server reposts only when the SRQ limit event tells it the
// queue runs low (--repost-batch 256 never fills). The first refill works;
// a little later the clients find no Recv posted. Read what the device does
// to the limit when it fires. (Hint: docs/06-srq-credits.md, section "The
// limit event".)
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
  // TODO: the limit event, once handled, is over
}

std::uint32_t srq_refill::armed_limit() const {
  ibv_srq_attr attr{};
  check_rc(ibv_query_srq(srq_, &attr), "ibv_query_srq");
  return attr.srq_limit;
}

}  // namespace rdma
