// The three steps of an RC queue pair, as attributes plus the exact mask.
//
// The mask is the contract: the device reads only the fields whose bit is
// set, and for each step the spec names the bits that must be there (masks.cpp
// has that table). A missing bit is not "use the default": ibv_modify_qp fails
// with EINVAL. A bit the step does not allow fails the same way.
#include <cstring>

#include "stage.hpp"

namespace stage03 {

// RESET -> INIT: which port the QP lives on, which P_Key it uses, and which
// remote operations it will accept from its peer.
transition init_transition(std::uint8_t port, unsigned qp_access_flags) {
  transition t;
  t.from = IBV_QPS_RESET;
  t.to = IBV_QPS_INIT;
  t.attr.qp_state = IBV_QPS_INIT;
  t.attr.pkey_index = 0;  // RoCE has one default P_Key, at index 0
  t.attr.port_num = port;  // numbered from 1 (stage 01)
  t.attr.qp_access_flags = qp_access_flags;  // Sends need none; REMOTE_WRITE from stage 04
  t.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  return t;
}

// INIT -> RTR (ready to receive): who the peer is and where its packets come
// from. After this the QP accepts packets; it still cannot send.
transition rtr_transition(const peer_info& peer, const path_params& path) {
  transition t;
  t.from = IBV_QPS_INIT;
  t.to = IBV_QPS_RTR;
  t.attr.qp_state = IBV_QPS_RTR;
  t.attr.path_mtu = path.path_mtu;     // both ends must agree
  t.attr.dest_qp_num = peer.qp_num;    // RC: exactly one peer QP
  t.attr.rq_psn = peer.psn;            // = the peer's sq_psn, or its packets look lost
  t.attr.max_dest_rd_atomic = 1;       // RDMA Reads/atomics the peer may have in flight here
  t.attr.min_rnr_timer = path.min_rnr_timer;
  // The address vector. On RoCE there are no LIDs: the packet is UDP/IP and
  // the GRH carries the GIDs, so is_global must be 1.
  t.attr.ah_attr.is_global = 1;
  t.attr.ah_attr.grh.dgid = peer.gid;
  t.attr.ah_attr.grh.sgid_index = path.gid_index;  // our entry, same RoCE version as the peer's
  t.attr.ah_attr.grh.hop_limit = 64;  // the IP TTL of RoCE v2 packets; 1 stays on the subnet
  t.attr.ah_attr.port_num = path.port;
  t.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  return t;
}

// RTR -> RTS (ready to send): how this QP behaves as a sender, how long it
// waits for an ACK and how often it retries before giving up.
transition rts_transition(std::uint32_t sq_psn, const path_params& path) {
  transition t;
  t.from = IBV_QPS_RTR;
  t.to = IBV_QPS_RTS;
  t.attr.qp_state = IBV_QPS_RTS;
  t.attr.timeout = path.timeout;
  t.attr.retry_cnt = path.retry_cnt;
  t.attr.rnr_retry = path.rnr_retry;
  t.attr.sq_psn = sq_psn;      // the peer put this into its rq_psn
  t.attr.max_rd_atomic = 1;    // our RDMA Reads/atomics in flight; <= the peer's max_dest_rd_atomic
  t.mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
           IBV_QP_MAX_QP_RD_ATOMIC;
  return t;
}

}  // namespace stage03
