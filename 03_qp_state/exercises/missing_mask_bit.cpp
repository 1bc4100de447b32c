// EXERCISE: INIT -> RTR fails with EINVAL although every attribute is set
//
// This is common/src/transitions.cpp, the file stage 03 teaches and every
// later stage uses, with one bug. Build and check it with
//   scripts/check_exercise.sh missing_mask_bit
//
// TODO: the builders set every attribute INIT -> RTR needs, yet the device
// refuses the step: the table of required bits, where every builder takes its
// mask from, lacks one. The kernel says only EINVAL; the program's likely fix
// prints the mask it passed. Compare it with the list ibv_modify_qp(3) gives
// for INIT to RTR (man 3 ibv_modify_qp) and add what is missing. (Hint:
// docs/03-qp-state.md, section "The mask — common/src/transitions.cpp".)
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>

#include "rdma_tutorial/gid.hpp"
#include "rdma_tutorial/port.hpp"
#include "rdma_tutorial/qp.hpp"

namespace rdma {

namespace {

struct step_mask {
  ibv_qp_state from;
  ibv_qp_state to;
  int mask;
};

// The attributes an RC QP must pass for each forward step: the table of the
// InfiniBand specification's "QP/EE Attributes", which ibv_modify_qp(3) also
// prints and the kernel enforces in ib_modify_qp_is_ok.
constexpr std::array required_masks{
    step_mask{IBV_QPS_RESET, IBV_QPS_INIT,
              IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    step_mask{IBV_QPS_INIT, IBV_QPS_RTR,
              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                  IBV_QP_MAX_DEST_RD_ATOMIC},  // TODO
    step_mask{IBV_QPS_RTR, IBV_QPS_RTS,
              IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                  IBV_QP_MAX_QP_RD_ATOMIC},
};

// A step with its required mask and target state; the builders fill the rest.
transition step(ibv_qp_state from, ibv_qp_state to) {
  transition t;
  t.from = from;
  t.to = to;
  t.attr.qp_state = to;
  t.mask = required_mask(from, to);
  return t;
}

struct mask_bit {
  int bit;
  const char* name;
};

// In the order ibv_qp_attr_mask declares them.
constexpr std::array mask_bits{
    mask_bit{IBV_QP_STATE, "STATE"},
    mask_bit{IBV_QP_CUR_STATE, "CUR_STATE"},
    mask_bit{IBV_QP_EN_SQD_ASYNC_NOTIFY, "EN_SQD_ASYNC_NOTIFY"},
    mask_bit{IBV_QP_ACCESS_FLAGS, "ACCESS_FLAGS"},
    mask_bit{IBV_QP_PKEY_INDEX, "PKEY_INDEX"},
    mask_bit{IBV_QP_PORT, "PORT"},
    mask_bit{IBV_QP_QKEY, "QKEY"},
    mask_bit{IBV_QP_AV, "AV"},
    mask_bit{IBV_QP_PATH_MTU, "PATH_MTU"},
    mask_bit{IBV_QP_TIMEOUT, "TIMEOUT"},
    mask_bit{IBV_QP_RETRY_CNT, "RETRY_CNT"},
    mask_bit{IBV_QP_RNR_RETRY, "RNR_RETRY"},
    mask_bit{IBV_QP_RQ_PSN, "RQ_PSN"},
    mask_bit{IBV_QP_MAX_QP_RD_ATOMIC, "MAX_QP_RD_ATOMIC"},
    mask_bit{IBV_QP_ALT_PATH, "ALT_PATH"},
    mask_bit{IBV_QP_MIN_RNR_TIMER, "MIN_RNR_TIMER"},
    mask_bit{IBV_QP_SQ_PSN, "SQ_PSN"},
    mask_bit{IBV_QP_MAX_DEST_RD_ATOMIC, "MAX_DEST_RD_ATOMIC"},
    mask_bit{IBV_QP_PATH_MIG_STATE, "PATH_MIG_STATE"},
    mask_bit{IBV_QP_CAP, "CAP"},
    mask_bit{IBV_QP_DEST_QPN, "DEST_QPN"},
};

std::string access_names(unsigned flags) {
  if (flags == 0) return "none";
  std::string out;
  auto add = [&](unsigned bit, const char* name) {
    if ((flags & bit) != 0) out += (out.empty() ? "" : "|") + std::string(name);
  };
  add(IBV_ACCESS_LOCAL_WRITE, "LOCAL_WRITE");
  add(IBV_ACCESS_REMOTE_WRITE, "REMOTE_WRITE");
  add(IBV_ACCESS_REMOTE_READ, "REMOTE_READ");
  add(IBV_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC");
  return out;
}

std::string hex(std::uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", v);
  return text;
}

}  // namespace

int required_mask(ibv_qp_state from, ibv_qp_state to) {
  const auto it = std::find_if(required_masks.begin(), required_masks.end(),
                               [&](const step_mask& s) { return s.from == from && s.to == to; });
  return it == required_masks.end() ? 0 : it->mask;
}

// RESET -> INIT: which port the QP lives on, which P_Key it uses, and which
// remote operations it will accept from its peer.
transition init_transition(const qp_params& params) {
  transition t = step(IBV_QPS_RESET, IBV_QPS_INIT);
  t.attr.pkey_index = 0;                             // RoCE has one default P_Key, at index 0
  t.attr.port_num = params.port;                     // numbered from 1 (stage 01)
  t.attr.qp_access_flags = params.qp_access_flags;   // Sends need none; REMOTE_WRITE from stage 04
  return t;
}

// INIT -> RTR (ready to receive): who the peer is and where its packets come
// from. After this the QP accepts packets; it still cannot send.
transition rtr_transition(const peer_info& peer, const qp_params& params) {
  transition t = step(IBV_QPS_INIT, IBV_QPS_RTR);
  t.attr.path_mtu = params.path_mtu;   // both ends must agree
  t.attr.dest_qp_num = peer.qp_num;    // RC: exactly one peer QP
  t.attr.rq_psn = peer.psn;            // = the peer's sq_psn, or its packets look lost
  t.attr.max_dest_rd_atomic = 1;       // RDMA Reads/atomics the peer may have in flight here
  t.attr.min_rnr_timer = params.min_rnr_timer;
  // The address vector. On RoCE there are no LIDs: packets are addressed by
  // GID, so is_global must be 1 (on RoCE v2 the GIDs become the IP addresses
  // and hop_limit the TTL of the UDP/IP packet).
  t.attr.ah_attr.is_global = 1;
  t.attr.ah_attr.grh.dgid = peer.gid;
  t.attr.ah_attr.grh.sgid_index = params.gid_index;  // our entry, same RoCE version as the peer's
  t.attr.ah_attr.grh.hop_limit = 64;  // the IP TTL of RoCE v2 packets; 1 stays on the subnet
  t.attr.ah_attr.grh.traffic_class = params.traffic_class;  // RoCE v2: the IP header's TOS byte
  t.attr.ah_attr.port_num = params.port;
  return t;
}

// RTR -> RTS (ready to send): how this QP behaves as a sender, how long it
// waits for an ACK and how often it retries before giving up.
transition rts_transition(std::uint32_t sq_psn, const qp_params& params) {
  transition t = step(IBV_QPS_RTR, IBV_QPS_RTS);
  t.attr.timeout = params.timeout;
  t.attr.retry_cnt = params.retry_cnt;
  t.attr.rnr_retry = params.rnr_retry;
  t.attr.sq_psn = sq_psn;     // the peer put this into its rq_psn
  t.attr.max_rd_atomic = 1;   // our RDMA Reads/atomics in flight; <= the peer's max_dest_rd_atomic
  return t;
}

std::string qp_state_name(ibv_qp_state state) {
  switch (state) {
    case IBV_QPS_RESET: return "RESET";
    case IBV_QPS_INIT: return "INIT";
    case IBV_QPS_RTR: return "RTR";
    case IBV_QPS_RTS: return "RTS";
    case IBV_QPS_SQD: return "SQD";
    case IBV_QPS_SQE: return "SQE";
    case IBV_QPS_ERR: return "ERR";
    default: return "state " + std::to_string(static_cast<int>(state));
  }
}

std::string mask_names(int mask) {
  std::string out;
  for (const auto& b : mask_bits) {
    if ((mask & b.bit) != 0) out += (out.empty() ? "" : "|") + std::string(b.name);
  }
  return out.empty() ? "none" : out;
}

std::string describe_values(const ibv_qp_attr& a, int mask) {
  std::string out;
  auto add = [&](int bit, const std::string& text) {
    if ((mask & bit) != 0) out += (out.empty() ? "" : ", ") + text;
  };
  add(IBV_QP_PORT, "port_num " + std::to_string(a.port_num));
  add(IBV_QP_PKEY_INDEX, "pkey_index " + std::to_string(a.pkey_index));
  add(IBV_QP_ACCESS_FLAGS, "qp_access_flags " + access_names(a.qp_access_flags));
  add(IBV_QP_PATH_MTU, "path_mtu " + std::to_string(mtu_bytes(a.path_mtu)));
  add(IBV_QP_DEST_QPN, "dest_qp_num " + hex(a.dest_qp_num));
  add(IBV_QP_RQ_PSN, "rq_psn " + std::to_string(a.rq_psn));
  add(IBV_QP_MAX_DEST_RD_ATOMIC, "max_dest_rd_atomic " + std::to_string(a.max_dest_rd_atomic));
  add(IBV_QP_MIN_RNR_TIMER, "min_rnr_timer " + std::to_string(a.min_rnr_timer));
  add(IBV_QP_AV, "dgid " + gid_to_string(a.ah_attr.grh.dgid) + " sgid_index " +
                     std::to_string(a.ah_attr.grh.sgid_index) + " hop_limit " +
                     std::to_string(a.ah_attr.grh.hop_limit));
  add(IBV_QP_TIMEOUT, "timeout " + std::to_string(a.timeout));
  add(IBV_QP_RETRY_CNT, "retry_cnt " + std::to_string(a.retry_cnt));
  add(IBV_QP_RNR_RETRY, "rnr_retry " + std::to_string(a.rnr_retry));
  add(IBV_QP_SQ_PSN, "sq_psn " + std::to_string(a.sq_psn));
  add(IBV_QP_MAX_QP_RD_ATOMIC, "max_rd_atomic " + std::to_string(a.max_rd_atomic));
  return out;
}

std::string modify_hint(const transition& t, int err) {
  const std::string step_name = qp_state_name(t.from) + " -> " + qp_state_name(t.to);
  const int required = required_mask(t.from, t.to);
  if (const int missing = required & ~t.mask; missing != 0) {
    return "the mask lacks " + mask_names(missing) + "; " + step_name + " needs " + mask_names(required);
  }
  if (err != EINVAL) return {};
  const std::string mask_was = "the mask was " + mask_names(t.mask) + " (ibv_modify_qp(3) lists what " +
                               step_name + " needs); ";
  switch (t.to) {
    case IBV_QPS_INIT:
      return mask_was + "port_num must be a port of the device (from 1) and pkey_index inside its P_Key table";
    case IBV_QPS_RTR:
      return mask_was + "sgid_index must be a filled GID entry (-g; 01_devices/devices lists them) of the "
                        "address family of the peer's GID (an fe80:: one against a ::ffff: IPv4 one fails here), "
                        "path_mtu no larger than the port supports, and the QP must be in INIT";
    case IBV_QPS_RTS:
      return mask_was + "retry_cnt and rnr_retry must be 0-7, timeout 0-31, and the QP must be in RTR";
    default: return {};
  }
}

}  // namespace rdma
