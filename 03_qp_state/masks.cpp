// Names for states and mask bits, the spec's required mask per step, and the
// hint printed when ibv_modify_qp refuses a step. All pure: unit-tested.
#include <array>
#include <cerrno>
#include <string>

#include "rdma_tutorial/gid.hpp"
#include "rdma_tutorial/port.hpp"
#include "stage.hpp"

namespace stage03 {

namespace {

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

std::string state_name(ibv_qp_state state) {
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

// The bits an RC QP must pass for each forward step (IB spec, "QP/EE
// Attributes"; the kernel enforces the same table in ib_modify_qp_is_ok).
int required_mask(ibv_qp_state from, ibv_qp_state to) {
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
    return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  }
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
    return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  }
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
    return IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
           IBV_QP_MAX_QP_RD_ATOMIC;
  }
  return 0;
}

std::string describe_values(const transition& t) {
  const ibv_qp_attr& a = t.attr;
  std::string out;
  auto add = [&](int bit, const std::string& text) {
    if ((t.mask & bit) != 0) out += (out.empty() ? "" : ", ") + text;
  };
  add(IBV_QP_PORT, "port_num " + std::to_string(a.port_num));
  add(IBV_QP_PKEY_INDEX, "pkey_index " + std::to_string(a.pkey_index));
  add(IBV_QP_ACCESS_FLAGS, "qp_access_flags " + access_names(a.qp_access_flags));
  add(IBV_QP_PATH_MTU, "path_mtu " + std::to_string(rdma::mtu_bytes(a.path_mtu)));
  add(IBV_QP_DEST_QPN, "dest_qp_num " + hex(a.dest_qp_num));
  add(IBV_QP_RQ_PSN, "rq_psn " + std::to_string(a.rq_psn));
  add(IBV_QP_MAX_DEST_RD_ATOMIC, "max_dest_rd_atomic " + std::to_string(a.max_dest_rd_atomic));
  add(IBV_QP_MIN_RNR_TIMER, "min_rnr_timer " + std::to_string(a.min_rnr_timer));
  add(IBV_QP_AV, "dgid " + rdma::gid_to_string(a.ah_attr.grh.dgid) + " sgid_index " +
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
  const std::string step = state_name(t.from) + " -> " + state_name(t.to);
  const int required = required_mask(t.from, t.to);
  if (const int missing = required & ~t.mask; missing != 0) {
    return "the mask lacks " + mask_names(missing) + "; " + step + " needs " + mask_names(required);
  }
  if (err != EINVAL) return {};
  switch (t.to) {
    case IBV_QPS_INIT: return "port_num must be a port of the device (from 1) and pkey_index inside its P_Key table";
    case IBV_QPS_RTR:
      return "check the values: sgid_index must be a filled GID entry (-g; 01_devices/devices lists them), "
             "path_mtu no larger than the port supports, and the QP must be in INIT";
    case IBV_QPS_RTS: return "check the values (retry_cnt and rnr_retry 0-7, timeout 0-31), and the QP must be in RTR";
    default: return {};
  }
}

}  // namespace stage03
