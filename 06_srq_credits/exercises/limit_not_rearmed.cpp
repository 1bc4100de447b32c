// EXERCISE: after the first refill, the clients find no Recv posted
//
// This is srq.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh limit_not_rearmed
//
// TODO: this server reposts only when the SRQ limit event tells it the
// queue runs low (--repost-batch 256 never fills). The first refill works;
// a little later the clients find no Recv posted. Read what the device does
// to the limit when it fires. (Hint: docs/06-srq-credits.md, section "The
// limit event".)
// The shared receive queue. Without one, every QP has its own receive
// queue, sized for that peer's worst burst: N clients, N worst bursts of
// Recvs posted and mostly idle. With one SRQ, every QP created with it
// takes its Recvs from the same queue, so the server sizes one queue for
// what all clients can have in flight together (credits bound that), and
// refills one queue. The SRQ's own verbs (create, post, arm the limit, the
// async events) are in common/src/srq.cpp; what the server does with them
// between completions is here.
#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage06 {

srq_refill::srq_refill(ibv_srq* srq, const srq_sizing& sizing) : srq_(srq), sizing_(sizing) {
  post_srq_receives(srq_, sizing_.depth);
  if (sizing_.limit != 0) arm_srq_limit(srq_, sizing_.limit);
}

std::uint32_t srq_refill::repost_if_due() {
  if (waiting_ < sizing_.batch) return 0;
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
  rdma::check_rc(ibv_query_srq(srq_, &attr), "ibv_query_srq");
  return attr.srq_limit;
}

}  // namespace stage06
