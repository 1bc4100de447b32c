#include "rdma_tutorial/completion.hpp"

#include <cstdio>

namespace rdma {

std::string wc_opcode_name(ibv_wc_opcode opcode) {
  switch (opcode) {
    case IBV_WC_SEND: return "IBV_WC_SEND";
    case IBV_WC_RDMA_WRITE: return "IBV_WC_RDMA_WRITE";
    case IBV_WC_RDMA_READ: return "IBV_WC_RDMA_READ";
    case IBV_WC_COMP_SWAP: return "IBV_WC_COMP_SWAP";
    case IBV_WC_FETCH_ADD: return "IBV_WC_FETCH_ADD";
    case IBV_WC_BIND_MW: return "IBV_WC_BIND_MW";
    case IBV_WC_LOCAL_INV: return "IBV_WC_LOCAL_INV";
    case IBV_WC_TSO: return "IBV_WC_TSO";
    case IBV_WC_RECV: return "IBV_WC_RECV";
    case IBV_WC_RECV_RDMA_WITH_IMM: return "IBV_WC_RECV_RDMA_WITH_IMM";
    default: return "opcode " + std::to_string(static_cast<int>(opcode));
  }
}

std::string wc_status_name(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS: return "IBV_WC_SUCCESS";
    case IBV_WC_LOC_LEN_ERR: return "IBV_WC_LOC_LEN_ERR";
    case IBV_WC_LOC_QP_OP_ERR: return "IBV_WC_LOC_QP_OP_ERR";
    case IBV_WC_LOC_EEC_OP_ERR: return "IBV_WC_LOC_EEC_OP_ERR";
    case IBV_WC_LOC_PROT_ERR: return "IBV_WC_LOC_PROT_ERR";
    case IBV_WC_WR_FLUSH_ERR: return "IBV_WC_WR_FLUSH_ERR";
    case IBV_WC_MW_BIND_ERR: return "IBV_WC_MW_BIND_ERR";
    case IBV_WC_BAD_RESP_ERR: return "IBV_WC_BAD_RESP_ERR";
    case IBV_WC_LOC_ACCESS_ERR: return "IBV_WC_LOC_ACCESS_ERR";
    case IBV_WC_REM_INV_REQ_ERR: return "IBV_WC_REM_INV_REQ_ERR";
    case IBV_WC_REM_ACCESS_ERR: return "IBV_WC_REM_ACCESS_ERR";
    case IBV_WC_REM_OP_ERR: return "IBV_WC_REM_OP_ERR";
    case IBV_WC_RETRY_EXC_ERR: return "IBV_WC_RETRY_EXC_ERR";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "IBV_WC_RNR_RETRY_EXC_ERR";
    case IBV_WC_LOC_RDD_VIOL_ERR: return "IBV_WC_LOC_RDD_VIOL_ERR";
    case IBV_WC_REM_INV_RD_REQ_ERR: return "IBV_WC_REM_INV_RD_REQ_ERR";
    case IBV_WC_REM_ABORT_ERR: return "IBV_WC_REM_ABORT_ERR";
    case IBV_WC_INV_EECN_ERR: return "IBV_WC_INV_EECN_ERR";
    case IBV_WC_INV_EEC_STATE_ERR: return "IBV_WC_INV_EEC_STATE_ERR";
    case IBV_WC_FATAL_ERR: return "IBV_WC_FATAL_ERR";
    case IBV_WC_RESP_TIMEOUT_ERR: return "IBV_WC_RESP_TIMEOUT_ERR";
    case IBV_WC_GENERAL_ERR: return "IBV_WC_GENERAL_ERR";
    case IBV_WC_TM_ERR: return "IBV_WC_TM_ERR";
    case IBV_WC_TM_RNDV_INCOMPLETE: return "IBV_WC_TM_RNDV_INCOMPLETE";
    default: return "status " + std::to_string(static_cast<int>(status));
  }
}

std::string wc_status_hint(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_REM_ACCESS_ERR:
      return "the target MR lacks the access this operation needs (REMOTE_WRITE for a Write, REMOTE_READ for a Read, REMOTE_ATOMIC for an atomic), or the rkey, address or length is wrong";
    case IBV_WC_LOC_PROT_ERR:
      return "an lkey does not cover the SGE's range, or the MR belongs to another PD than the QP";
    case IBV_WC_LOC_LEN_ERR:
      return "the receive buffer is smaller than the incoming message";
    case IBV_WC_RETRY_EXC_ERR:
      return "the peer never acknowledged: wrong dest QPN, GID, PSN or path MTU, or the peer is gone";
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return "the peer had no receive WQE posted (Receiver Not Ready) for longer than rnr_retry allows";
    case IBV_WC_WR_FLUSH_ERR:
      return "the QP was already in the error state; look at the first failed completion, here or at the peer "
             "(a remote access error breaks the connection at both ends); if none failed before this one, the "
             "connection ended under it (on iWARP, the peer's TCP connection closed: its process died or it "
             "disconnected) or the device named no cause (Soft-RoCE on Linux 6.12 completes a WR with another "
             "PD's lkey this way)";
    case IBV_WC_LOC_QP_OP_ERR:
      return "the WR is not valid for this QP or its state (posted before RTS? too many SGEs?); Soft-RoCE "
             "also reports an lkey whose MR is in another PD than the QP this way, and, on a Recv, a Send larger "
             "than the Recv's buffer";
    default:
      return {};
  }
}

std::string describe_wc(const ibv_wc& wc) {
  std::string line = "wr_id " + std::to_string(wc.wr_id) + ": ";
  if (wc.status == IBV_WC_SUCCESS) {
    line += wc_opcode_name(wc.opcode);
    // byte_len is what a receive took in. On the sending side devices differ
    // (Soft-RoCE fills it, NICs may not), so it is not shown there.
    // The same for the IBV_WC_WITH_IMM flag (Soft-RoCE sets it on the
    // sender's completion of a Write with Immediate too; the verbs define
    // it only for the receiver's).
    if ((wc.opcode & IBV_WC_RECV) != 0) {
      line += ", " + std::to_string(wc.byte_len) + " bytes";
      if ((wc.wc_flags & IBV_WC_WITH_IMM) != 0) line += ", with imm";
    }
    return line;
  }
  char vendor_err[16];
  std::snprintf(vendor_err, sizeof vendor_err, "0x%x", wc.vendor_err);
  return line + wc_status_name(wc.status) + " (" + std::to_string(static_cast<int>(wc.status)) + ", " +
         ibv_wc_status_str(wc.status) + "), vendor_err " + vendor_err;
}

void throw_poll_error(int rc) {
  throw tutorial_error("ibv_poll_cq failed (returned " + std::to_string(rc) + ")",
                       "the CQ overran (more completions than CQ entries) or the device hit a fatal error; "
                       "ibv_get_async_event says which");
}

std::size_t poll_cq_until(ibv_cq* cq, std::span<ibv_wc> wcs, coarse_clock::time_point deadline) {
  std::size_t got = 0;
  while (got < wcs.size()) {
    const int n = check_poll(ibv_poll_cq(cq, static_cast<int>(wcs.size() - got), wcs.data() + got));
    got += static_cast<std::size_t>(n);
    if (n == 0 && coarse_clock::now() >= deadline) break;
  }
  return got;
}

ibv_wc poll_one(ibv_cq* cq, int wait_ms, std::string_view waiting_for) {
  ibv_wc wc{};
  if (poll_cq_until(cq, {&wc, 1}, coarse_clock::now() + std::chrono::milliseconds(wait_ms)) == 0) {
    throw tutorial_error("no completion within " + std::to_string(wait_ms) + " ms (waiting for " +
                             std::string(waiting_for) + ")",
                         "the peer never answered and the sender has not given up: check both sides' GID, QPN "
                         "and PSN; with timeout 0, or retry_cnt 7 on Soft-RoCE, a sender never gives up");
  }
  return wc;
}

ibv_wc post_and_wait(ibv_qp* qp, ibv_cq* cq, ibv_send_wr& wr, int wait_ms, const std::string& what) {
  ibv_send_wr* bad = nullptr;
  check_rc(ibv_post_send(qp, &wr, &bad), "ibv_post_send(" + what + ")");
  return poll_one(cq, wait_ms, what);
}

completion_error::completion_error(const ibv_wc& wc)
    : tutorial_error("completion failed: " + describe_wc(wc), wc_status_hint(wc.status)), status_(wc.status) {}

}  // namespace rdma
