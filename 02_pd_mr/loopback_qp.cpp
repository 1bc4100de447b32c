// A preview of stage 03, used here only to get one work request processed:
// an RC queue pair connected to itself (its own QPN and GID as the
// destination), taken RESET -> INIT -> RTR -> RTS. docs/03-qp-state.md
// explains every attribute; this stage needs nothing but a QP in a given PD
// that executes an RDMA Write, and the write itself.
#include <chrono>
#include <string>

#include "pd_mr.hpp"
#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"

namespace stage02 {

rdma::qp_ptr create_loopback_qp(ibv_pd* pd, ibv_cq* cq, std::uint8_t port, const rdma::gid_entry& gid) {
  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 4;
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  rdma::qp_ptr qp(rdma::check_ptr(ibv_create_qp(pd, &init), "ibv_create_qp"));

  ibv_port_attr port_attr{};
  rdma::check_rc(ibv_query_port(pd->context, port, &port_attr), "ibv_query_port(port " + std::to_string(port) + ")");

  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = port;
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;  // it is its own peer: incoming writes must be allowed
  rdma::check_rc(ibv_modify_qp(qp.get(), &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
                 "ibv_modify_qp(RESET->INIT)");

  attr = {};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = port_attr.active_mtu;
  attr.dest_qp_num = qp->qp_num;  // itself
  attr.rq_psn = 0;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.grh.dgid = gid.gid;  // itself
  attr.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(gid.index);
  attr.ah_attr.grh.hop_limit = 1;
  attr.ah_attr.port_num = port;
  rdma::check_rc(ibv_modify_qp(qp.get(), &attr,
                               IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
                 "ibv_modify_qp(INIT->RTR)");

  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = 0;  // equals rq_psn above: the QP is its own peer
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = 1;
  rdma::check_rc(ibv_modify_qp(qp.get(), &attr,
                               IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                   IBV_QP_MAX_QP_RD_ATOMIC),
                 "ibv_modify_qp(RTR->RTS)");
  return qp;
}

rdma::mr_ptr register_in(ibv_pd* pd, const aligned_buffer& buf, int access, const std::string& name) {
  return rdma::mr_ptr(rdma::check_ptr(ibv_reg_mr(pd, buf.data(), buf.size(), static_cast<unsigned>(access)),
                                      "ibv_reg_mr(" + name + ")"));
}

// One signaled RDMA Write of the message from `source` into `target`, and
// its completion (waited for at most 5 s).
ibv_wc rdma_write(ibv_qp* qp, ibv_cq* cq, std::uint64_t wr_id, const aligned_buffer& source, const ibv_mr& source_mr,
                  const aligned_buffer& target, const ibv_mr& target_mr) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<std::uintptr_t>(source.data());
  sge.length = sizeof write_message;
  sge.lkey = source_mr.lkey;  // names the source's MR: checked against the QP's PD
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(target.data());
  wr.wr.rdma.rkey = target_mr.rkey;
  ibv_send_wr* bad = nullptr;
  rdma::check_rc(ibv_post_send(qp, &wr, &bad), "ibv_post_send");  // accepted: nothing is checked yet

  ibv_wc wc{};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (rdma::check_poll(ibv_poll_cq(cq, 1, &wc)) == 0) {
    if (std::chrono::steady_clock::now() > deadline) throw rdma::tutorial_error("no completion within 5 s");
  }
  return wc;
}

}  // namespace stage02
