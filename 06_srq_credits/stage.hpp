// Stage 06 — a shared receive queue and credits (docs/06-srq-credits.md).
//
// Reading order, as the chapter tells it:
//   protocol.hpp       who sends what to whom; the record and its checks
//   credits.hpp/.cpp   the arithmetic: SRQ depth against the windows, the
//                      two credit ledgers
//   srq_credits.cpp    main: the device, a PD and a CQ, then either role
//   srq.cpp            the SRQ: create, post Recvs in batches, arm the limit,
//                      the async events (SRQ_LIMIT_REACHED, LAST_WQE_REACHED)
//   server.hpp         the server's state: its clients, the SRQ, the refill
//   server.cpp         N clients on one SRQ and one CQ: take every
//                      completion, check it, repost, return credits
//   clients.cpp        clients joining (a QP on the SRQ, a window registered
//                      for it alone) and going: ERR, drain, destroy
//   client.cpp         stream records inside the window the server granted
//   options.cpp        the command line
// Stage 04's handshake comes from common/ (peer.hpp); stage 05's immediate
// encoding too (imm.hpp).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "credits.hpp"
#include "protocol.hpp"
#include "rdma_tutorial/handles.hpp"
#include "rdma_tutorial/options.hpp"
#include "rdma_tutorial/peer.hpp"

namespace stage06 {

// options.cpp
struct options {
  rdma::device_options device;
  rdma::peer_options peer;              // -s, --bind, -p, --wait-ms, --accept-ms
  std::uint32_t size = 64;              // bytes per record, the same on both sides
  // server
  std::uint32_t clients = 4;
  std::uint32_t window = 16;            // writes in flight per client
  std::optional<std::uint32_t> srq_depth;  // default: default_depth()
  std::optional<std::uint32_t> srq_limit;  // default: depth / 4; 0 = not armed
  std::uint32_t repost_batch = 16;
  std::optional<std::uint32_t> credit_batch;  // default: window / 2
  bool plan = false;                    // print the SRQ arithmetic and exit
  // client
  std::uint32_t records = 1000;
  std::uint8_t rnr_retry = 0;           // with credits an RNR NAK is a bug: fail at the first
};
bool parse_options(int argc, const char* const* argv, options& out);

int run_server(const options& opts, const rdma::rdma_device& dev);
int run_client(const options& opts, const rdma::rdma_device& dev);

// srq.cpp --------------------------------------------------------------------

// ibv_create_srq with room for `depth` Recvs of no SGE: a Write with
// Immediate consumes a Recv but puts nothing in its buffer, so a Recv here
// needs none (a Send arriving would fail with a length error).
rdma::srq_ptr create_srq(ibv_pd* pd, std::uint32_t depth);

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

// What the server does with the SRQ between completions: counts consumed
// Recvs, reposts them in batches, and reposts everything at once when the
// limit event says the queue runs low (then re-arms it).
class srq_refill {
 public:
  srq_refill(ibv_srq* srq, const srq_sizing& sizing);
  void consumed() { ++waiting_; }
  // Reposts when a batch is complete; returns how many were posted.
  std::uint32_t repost_if_due();
  // IBV_EVENT_SRQ_LIMIT_REACHED: repost what waits, arm again.
  void on_limit_event();
  std::uint32_t limit_events() const { return limit_events_; }
  std::uint32_t waiting() const { return waiting_; }
  // ibv_query_srq: the limit the device holds now (0: not armed).
  std::uint32_t armed_limit() const;

 private:
  ibv_srq* srq_;
  srq_sizing sizing_;
  std::uint32_t waiting_ = 0;
  std::uint32_t limit_events_ = 0;
};

}  // namespace stage06
