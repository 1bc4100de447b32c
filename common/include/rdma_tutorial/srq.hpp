// The shared receive queue (stage 06, docs/06-srq-credits.md): one queue of
// Recvs that every QP created with it takes from, and the async events that
// tell how it is doing. What stage 06 taught, for the stages after it.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <functional>
#include <string>

#include "rdma_tutorial/handles.hpp"

namespace rdma {

// ibv_create_srq with room for `depth` Recvs of no SGE: a Write with
// Immediate consumes a Recv but puts nothing in its buffer, so a Recv here
// needs none (a Send arriving would fail with a length error).
srq_ptr create_srq(ibv_pd* pd, std::uint32_t depth);

// `count` Recvs in one ibv_post_srq_recv: a linked list, one doorbell.
void post_srq_receives(ibv_srq* srq, std::uint32_t count);

// ibv_modify_srq(IBV_SRQ_LIMIT): one IBV_EVENT_SRQ_LIMIT_REACHED when fewer
// than `limit` Recvs are posted, then the limit is off until armed again.
void arm_srq_limit(ibv_srq* srq, std::uint32_t limit);

// The device's async event queue (ibv_get_async_event), made non-blocking
// so the server's loop can look at it between completions.
class async_events {
 public:
  explicit async_events(ibv_context* ctx);
  int fd() const { return ctx_->async_fd; }
  // Every event waiting now, each acked after `handle` saw it.
  void drain(const std::function<void(const ibv_async_event&)>& handle);

 private:
  ibv_context* ctx_;
};

// "IBV_EVENT_SRQ_LIMIT_REACHED", ...
std::string async_event_name(ibv_event_type type);

}  // namespace rdma
