// Stage 03: the pieces of the QP state machine, in the order the chapter tells
// them (docs/03-qp-state.md). qp_state.cpp creates the objects and calls them.
//
// transitions.cpp and masks.cpp are pure (no device): what each transition
// sends to the device. modify.cpp is the one raw ibv_modify_qp; connect.cpp
// walks a QP through RESET -> INIT -> RTR -> RTS; exchange.cpp proves the pair
// works by sending one message each way.
//
// connect_qp_rts and the transition builders are what stage 04 needs with a
// real peer; they move to common/ when stage 04 uses them.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace stage03 {

// One ibv_modify_qp call: the attributes and the mask saying which of them
// the device should read. Fields outside the mask are ignored.
struct transition {
  ibv_qp_state from = IBV_QPS_RESET;
  ibv_qp_state to = IBV_QPS_RESET;
  ibv_qp_attr attr{};
  int mask = 0;
};

// What a QP must know about the other end. In this stage both ends live in
// one process; from stage 04 on this arrives from the peer over TCP.
struct peer_info {
  std::uint32_t qp_num = 0;
  std::uint32_t psn = 0;  // the first PSN the peer sends (its sq_psn) = our rq_psn
  ibv_gid gid{};
};

// The knobs of the path and of reliability; see the chapter's table.
struct path_params {
  std::uint8_t port = 1;
  std::uint8_t gid_index = 0;      // our GID entry (rdma::choose_gid)
  ibv_mtu path_mtu = IBV_MTU_1024;  // must be equal at both ends, <= active_mtu
  // The retry knobs (RTR -> RTS). 7 is special: rnr_retry 7 retries forever
  // by the spec; retry_cnt 7 is seven retries by the spec, but Soft-RoCE
  // retries forever (see the psn_mismatch exercise). Defaults of 3 make a
  // broken connection fail in well under a second instead of hanging.
  std::uint8_t timeout = 14;        // ack timeout 4.096 us * 2^14 = 67 ms; 0 waits forever
  std::uint8_t retry_cnt = 3;       // resends of unacknowledged packets
  std::uint8_t rnr_retry = 3;       // retries after "receiver not ready" NAKs
  std::uint8_t min_rnr_timer = 12;  // how long our peer waits after our RNR NAK (12: 0.64 ms)
};

// transitions.cpp: the attributes and exact mask of each step (RC QP).
transition init_transition(std::uint8_t port, unsigned qp_access_flags);
transition rtr_transition(const peer_info& peer, const path_params& path);
transition rts_transition(std::uint32_t sq_psn, const path_params& path);

// masks.cpp: names and the spec's required masks.
std::string state_name(ibv_qp_state state);  // "RESET", "INIT", "RTR", ...
std::string mask_names(int mask);            // "STATE|PKEY_INDEX|PORT|ACCESS_FLAGS"
int required_mask(ibv_qp_state from, ibv_qp_state to);  // RC; 0 if not a step this stage takes
std::string describe_values(const transition& t);  // the masked fields and their values
// Why ibv_modify_qp may have failed with `err`: the missing mask bits first,
// else the values that are usually wrong for this step.
std::string modify_hint(const transition& t, int err);

// modify.cpp
ibv_qp_state query_state(ibv_qp* qp, std::string_view label);
void modify_qp(ibv_qp* qp, std::string_view label, const transition& t);

// connect.cpp
void connect_qp_rts(ibv_qp* qp, std::string_view label, std::uint32_t sq_psn, const peer_info& peer,
                    const path_params& path);
struct qp_end {
  std::string_view label;  // "QP A"
  ibv_qp* qp;
  std::uint32_t sq_psn;
};
void connect_pair(const qp_end& a, const qp_end& b, const ibv_gid& gid, const path_params& path);

// exchange.cpp
struct qp_buffers {
  std::string_view label;
  ibv_qp* qp;
  std::span<char> send_buf;
  std::span<char> recv_buf;
  std::uint32_t lkey;
  std::uint32_t max_inline_data;
};
// Sends `size` bytes (`text`, then zeros; size >= text.size()).
void send_message(ibv_cq* cq, const qp_buffers& from, const qp_buffers& to, std::string_view text,
                  std::size_t size, std::uint64_t first_wr_id, int wait_ms);

}  // namespace stage03
