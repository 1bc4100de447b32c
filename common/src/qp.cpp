// Creating an RC queue pair and connecting it: the one ibv_modify_qp call of
// the tutorial and the walk RESET -> INIT -> RTR -> RTS that uses it. None of
// these steps sends a packet to the peer; INIT -> RTR may resolve the peer's
// MAC address (ARP or neighbour discovery) through the netdev under the port.
#include <string>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/qp.hpp"

namespace rdma {

qp_ptr create_rc_qp(ibv_pd* pd, ibv_cq* send_cq, ibv_cq* recv_cq, ibv_qp_cap& cap, std::string_view label) {
  ibv_qp_init_attr init{};
  init.send_cq = send_cq;
  init.recv_cq = recv_cq;
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 0;  // only WRs with IBV_SEND_SIGNALED complete visibly
  init.cap = cap;
  qp_ptr qp(check_ptr(ibv_create_qp(pd, &init), "ibv_create_qp(" + std::string(label) + ")"));
  cap = init.cap;
  return qp;
}

ibv_qp_attr query_qp(ibv_qp* qp, int mask, std::string_view label, ibv_qp_init_attr* init_attr) {
  ibv_qp_attr attr{};
  ibv_qp_init_attr ignored{};
  check_rc(ibv_query_qp(qp, &attr, mask, init_attr != nullptr ? init_attr : &ignored),
           "ibv_query_qp(" + std::string(label) + ")");
  return attr;
}

ibv_qp_state query_qp_state(ibv_qp* qp, std::string_view label) {
  return query_qp(qp, IBV_QP_STATE, label).qp_state;
}

// ibv_modify_qp returns the errno value itself (check_rc's convention). The
// kernel's answer is almost always a bare EINVAL, so the hint says which
// transition it was and what to look at.
void modify_qp(ibv_qp* qp, const transition& t, std::string_view label) {
  ibv_qp_attr attr = t.attr;  // ibv_modify_qp takes a non-const pointer
  const int rc = ibv_modify_qp(qp, &attr, t.mask);
  if (rc != 0) {
    throw verbs_error(rc,
                      "ibv_modify_qp(" + std::string(label) + ", " + qp_state_name(t.from) + " -> " +
                          qp_state_name(t.to) + ")",
                      modify_hint(t, rc));
  }
}

void connect_qp_rts(ibv_qp* qp, std::string_view label, std::uint32_t sq_psn, const peer_info& peer,
                    const qp_params& params, const step_observer& after_step) {
  for (const transition& t : {init_transition(params), rtr_transition(peer, params), rts_transition(sq_psn, params)}) {
    modify_qp(qp, t, label);
    if (after_step) after_step(t);
  }
}

}  // namespace rdma
