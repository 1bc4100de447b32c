// The books of a server with many clients on one SRQ (srq_server.hpp),
// as stage 06 teaches them: the credit write, the async events sorted,
// and the first step of a client's departure.
#include "rdma_tutorial/srq_server.hpp"

#include <endian.h>

#include <cstdio>
#include <string>

#include "rdma_tutorial/error.hpp"

namespace rdma {

const char* parting_name(parting how) {
  switch (how) {
    case parting::done: return "done";
    case parting::lost: return "lost";
    case parting::dropped: return "dropped";
  }
  return "?";
}

void srq_client::post_credit(std::uint64_t value) {
  const std::uint64_t value_be = htobe64(value);
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(&value_be), sizeof value_be, 0};
  ibv_send_wr wr{};
  wr.wr_id = credit_tag | (credit_writes + 1);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_INLINE;
  if ((credit_writes + 1) % credit_signal_every == 0 || finished) wr.send_flags |= IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = credit_addr;
  wr.wr.rdma.rkey = credit_rkey;
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(qp, &wr, &bad); rc != 0) {
    throw verbs_error(rc, "ibv_post_send(credit write to client " + std::to_string(number) + ")");
  }
  ++credit_writes;
}

srq_server_event sort_server_event(ibv_event_type type) {
  switch (type) {
    case IBV_EVENT_SRQ_LIMIT_REACHED: return srq_server_event::limit_reached;
    case IBV_EVENT_QP_LAST_WQE_REACHED: return srq_server_event::last_wqe;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR: return srq_server_event::client_broke;
    case IBV_EVENT_CQ_ERR:
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_DEVICE_FATAL: return srq_server_event::shared_failed;
    case IBV_EVENT_COMM_EST: return srq_server_event::ignored;
    default: return srq_server_event::said;
  }
}

void throw_shared_failure(ibv_event_type type) {
  const char* what = type == IBV_EVENT_CQ_ERR ? "CQ" : type == IBV_EVENT_SRQ_ERR ? "SRQ" : "device";
  throw tutorial_error(async_event_name(type) + ": the server's shared " + what + " failed",
                       "a CQ overrun means more completions than its entries: see the sizes printed at start-up");
}

// The QP is in ERR: it flushes its sends and takes no more writes. A marker
// WR posted now comes back flushed behind everything its send queue held.
void begin_srq_departure(srq_client& c, parting how, const std::string& why, std::chrono::milliseconds last_wqe_wait) {
  c.leaving = true;
  c.how = how;
  if (how != parting::done) {
    std::printf("client %u (QP 0x%x): %s; letting it go after %llu records\n", c.number, c.qp_num, why.c_str(),
                static_cast<unsigned long long>(c.records));
  }
  ibv_send_wr marker{};
  marker.wr_id = drain_tag | c.number;
  marker.opcode = IBV_WR_RDMA_WRITE;  // never executed: flushed
  marker.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  // A full send queue refuses it (ENOMEM): then the event alone decides.
  const int rc = ibv_post_send(c.qp, &marker, &bad);
  if (rc != 0) {
    std::printf("client %u: %s; its QP's last WQE event decides when it may go\n", c.number,
                verbs_error(rc, "ibv_post_send(drain marker)").what());
  }
  std::fflush(stdout);
  c.departure.emplace(coarse_clock::now(), last_wqe_wait, rc == 0);
  c.last_wqe.pass_to(*c.departure);
}

}  // namespace rdma
