// A preview of stage 03, used here only to get one work request processed:
// an RC queue pair connected to itself (its own QPN and GID as the
// destination), walked RESET -> INIT -> RTR -> RTS by the helpers stage 03
// teaches (common/src/qp.cpp). This stage needs nothing but a QP in a given
// PD that executes an RDMA Write, and the write itself.
#include <chrono>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/gid.hpp"
#include "rdma_tutorial/qp.hpp"
#include "stage.hpp"

namespace stage02 {

rdma::qp_ptr create_loopback_qp(ibv_pd* pd, ibv_cq* cq, std::uint8_t port, const rdma::gid_entry& gid) {
  ibv_qp_cap cap{};
  cap.max_send_wr = 4;
  cap.max_recv_wr = 1;
  cap.max_send_sge = 1;
  cap.max_recv_sge = 1;
  rdma::qp_ptr qp = rdma::create_rc_qp(pd, cq, cq, cap, "loopback QP");
  ibv_port_attr port_attr{};
  rdma::check_rc(ibv_query_port(pd->context, port, &port_attr), "ibv_query_port(port " + std::to_string(port) + ")");
  rdma::qp_params params;  // the tutorial's defaults: a broken write fails, it does not retry forever
  params.port = port;
  params.gid_index = rdma::sgid_index(gid.index);
  params.path_mtu = port_attr.active_mtu;
  params.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;  // it is its own peer: incoming writes must be allowed
  constexpr std::uint32_t psn = 0;                   // its own sq_psn is its own rq_psn
  rdma::connect_qp_rts(qp.get(), "loopback QP", psn, rdma::peer_info{qp->qp_num, psn, gid.gid}, params);
  return qp;
}

ibv_wc rdma_write(ibv_qp* qp, ibv_cq* cq, std::uint64_t wr_id, const rdma::registered_buffer& source,
                  const rdma::registered_buffer& target) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<std::uintptr_t>(source.data());
  sge.length = sizeof write_message;
  sge.lkey = source.lkey();  // names the source's MR: checked against the QP's PD
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(target.data());
  wr.wr.rdma.rkey = target.rkey();
  ibv_send_wr* bad = nullptr;
  rdma::check_rc(ibv_post_send(qp, &wr, &bad), "ibv_post_send");  // accepted: nothing is checked yet

  ibv_wc wc{};
  if (rdma::poll_cq_until(cq, {&wc, 1}, rdma::coarse_clock::now() + std::chrono::seconds(5)) == 0) {
    throw rdma::tutorial_error("no completion for the RDMA Write within 5 s");
  }
  return wc;
}

}  // namespace stage02
