// The shared receive queue's verbs, as stage 06 teaches them
// (docs/06-srq-credits.md, "One receive queue for every QP"): create it,
// post Recvs in batches, arm its limit; and the device's async event queue,
// where the limit event arrives. Stages 06 and 09 use them.
#include "rdma_tutorial/srq.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "rdma_tutorial/error.hpp"

namespace rdma {

srq_ptr create_srq(ibv_pd* pd, std::uint32_t depth) {
  ibv_srq_init_attr attr{};
  attr.attr.max_wr = depth;
  attr.attr.max_sge = 1;    // our Recvs use none (Soft-RoCE would take 0, and make it 1)
  attr.attr.srq_limit = 0;  // armed later, with ibv_modify_srq
  return srq_ptr(check_ptr(ibv_create_srq(pd, &attr), "ibv_create_srq(max_wr " + std::to_string(depth) + ")"));
}

void post_srq_receives(ibv_srq* srq, std::uint32_t count) {
  if (count == 0) return;
  std::vector<ibv_recv_wr> wrs(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    wrs[i].wr_id = i;
    wrs[i].num_sge = 0;
    wrs[i].next = i + 1 < count ? &wrs[i + 1] : nullptr;
  }
  ibv_recv_wr* bad = nullptr;
  const int rc = ibv_post_srq_recv(srq, wrs.data(), &bad);
  if (rc != 0) {
    throw verbs_error(rc, "ibv_post_srq_recv(" + std::to_string(count) + " Recvs)",
                            rc == ENOMEM ? "more Recvs than the SRQ holds: its max_wr is the most ever posted at once"
                                         : "");
  }
}

void arm_srq_limit(ibv_srq* srq, std::uint32_t limit) {
  ibv_srq_attr attr{};
  attr.srq_limit = limit;
  check_rc(ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT), "ibv_modify_srq(IBV_SRQ_LIMIT " + std::to_string(limit) + ")",
                 "the limit must be below the SRQ's max_wr");
}

async_events::async_events(ibv_context* ctx) : ctx_(ctx) {
  const int flags = check_errno(fcntl(ctx->async_fd, F_GETFL), "fcntl(async_fd, F_GETFL)");
  check_errno(fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK), "fcntl(async_fd, F_SETFL, O_NONBLOCK)");
}

void async_events::drain(const std::function<void(const ibv_async_event&)>& handle) {
  for (;;) {
    ibv_async_event event{};
    if (ibv_get_async_event(ctx_, &event) != 0) {
      if (errno == EAGAIN) return;  // nothing waiting (EWOULDBLOCK is the same value on Linux)
      throw verbs_error(errno, "ibv_get_async_event");
    }
    // Ack every event, whatever handle does: ibv_destroy_qp, _srq and _cq
    // wait for the events about their object to be acked.
    struct acker {
      ibv_async_event* e;
      ~acker() { ibv_ack_async_event(e); }
    } ack{&event};
    handle(event);
  }
}

srq_qp_departure::srq_qp_departure(clock::time_point left_at, clock::duration event_wait, bool marker_posted)
    : left_at_(left_at), event_wait_(event_wait), marker_back_(!marker_posted) {}

void srq_qp_departure::last_wqe_reached(std::uint64_t cq_empties) {
  // Soft-RoCE on 6.12 raises it each time its responder looks at the QP in
  // ERR: the first one counts.
  if (event_seen_) return;
  event_seen_ = true;
  empties_at_event_ = cq_empties;
}

srq_qp_departure::outcome srq_qp_departure::check(clock::time_point now, std::uint64_t cq_empties) const {
  // A poll that found the CQ empty after the event: every completion the
  // QP's Recvs made before the event has been taken.
  if (event_seen_ && cq_empties > empties_at_event_ && marker_back_) return outcome::last_wqe;
  if (now - left_at_ < event_wait_) return outcome::waiting;
  return marker_back_ ? outcome::no_event : outcome::gave_up;
}

std::string srq_qp_departure::describe(outcome o) const {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(event_wait_).count();
  switch (o) {
    case outcome::waiting: return "waiting for its last WQE";
    case outcome::last_wqe: return "IBV_EVENT_QP_LAST_WQE_REACHED, then the CQ polled empty";
    case outcome::no_event:
      return "no IBV_EVENT_QP_LAST_WQE_REACHED within " + std::to_string(ms) + " ms: after its marker WR came back flushed";
    case outcome::gave_up:
      return std::string(event_seen_ ? "its last WQE reached" : "no IBV_EVENT_QP_LAST_WQE_REACHED") + " and no marker back within " +
             std::to_string(ms) + " ms: a Recv it held may be lost to the SRQ";
  }
  return "";
}

std::chrono::milliseconds last_wqe_wait(const ibv_device_attr& attr, std::chrono::milliseconds wait) {
  return attr.vendor_id == soft_roce_vendor_id ? std::min(wait, soft_roce_last_wqe_wait) : wait;
}

std::string async_event_name(ibv_event_type type) {
  switch (type) {
    case IBV_EVENT_CQ_ERR: return "IBV_EVENT_CQ_ERR";
    case IBV_EVENT_QP_FATAL: return "IBV_EVENT_QP_FATAL";
    case IBV_EVENT_QP_REQ_ERR: return "IBV_EVENT_QP_REQ_ERR";
    case IBV_EVENT_QP_ACCESS_ERR: return "IBV_EVENT_QP_ACCESS_ERR";
    case IBV_EVENT_COMM_EST: return "IBV_EVENT_COMM_EST";
    case IBV_EVENT_SQ_DRAINED: return "IBV_EVENT_SQ_DRAINED";
    case IBV_EVENT_PATH_MIG: return "IBV_EVENT_PATH_MIG";
    case IBV_EVENT_PATH_MIG_ERR: return "IBV_EVENT_PATH_MIG_ERR";
    case IBV_EVENT_DEVICE_FATAL: return "IBV_EVENT_DEVICE_FATAL";
    case IBV_EVENT_PORT_ACTIVE: return "IBV_EVENT_PORT_ACTIVE";
    case IBV_EVENT_PORT_ERR: return "IBV_EVENT_PORT_ERR";
    case IBV_EVENT_LID_CHANGE: return "IBV_EVENT_LID_CHANGE";
    case IBV_EVENT_PKEY_CHANGE: return "IBV_EVENT_PKEY_CHANGE";
    case IBV_EVENT_SM_CHANGE: return "IBV_EVENT_SM_CHANGE";
    case IBV_EVENT_SRQ_ERR: return "IBV_EVENT_SRQ_ERR";
    case IBV_EVENT_SRQ_LIMIT_REACHED: return "IBV_EVENT_SRQ_LIMIT_REACHED";
    case IBV_EVENT_QP_LAST_WQE_REACHED: return "IBV_EVENT_QP_LAST_WQE_REACHED";
    case IBV_EVENT_CLIENT_REREGISTER: return "IBV_EVENT_CLIENT_REREGISTER";
    case IBV_EVENT_GID_CHANGE: return "IBV_EVENT_GID_CHANGE";
    case IBV_EVENT_WQ_FATAL: return "IBV_EVENT_WQ_FATAL";
    default: return "async event " + std::to_string(static_cast<int>(type));
  }
}

}  // namespace rdma
