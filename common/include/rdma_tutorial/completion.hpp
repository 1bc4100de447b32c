// Turning a work completion into one readable line.
//
// For a completion with an error status only wr_id, status, vendor_err and
// qp_num are valid (ibv_poll_cq(3)); opcode, byte_len and imm_data hold
// garbage then, so describe_wc leaves them out.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "rdma_tutorial/coarse_clock.hpp"
#include "rdma_tutorial/error.hpp"

namespace rdma {

// "IBV_WC_RDMA_WRITE", "IBV_WC_RECV_RDMA_WITH_IMM", ...
std::string wc_opcode_name(ibv_wc_opcode opcode);

// "IBV_WC_REM_ACCESS_ERR", ...; ibv_wc_status_str gives the prose.
std::string wc_status_name(ibv_wc_status status);

// Success: "wr_id 7: IBV_WC_RDMA_WRITE", "wr_id 8: IBV_WC_RECV, 64 bytes"
//          (the length only for receives: the one side where it is defined)
// Error:   "wr_id 7: IBV_WC_REM_ACCESS_ERR (10, remote access error), vendor_err 0x0"
std::string describe_wc(const ibv_wc& wc);

// The usual cause of an error status, or "" if none is known.
std::string wc_status_hint(ibv_wc_status status);

// Thrown by check_wc for a completion that did not succeed.
class completion_error : public tutorial_error {
 public:
  explicit completion_error(const ibv_wc& wc);
  ibv_wc_status status() const noexcept { return status_; }

 private:
  ibv_wc_status status_;
};

// ibv_poll_cq returns how many completions it wrote, or a negative value on
// failure that is not necessarily an errno (ibv_poll_cq(3) promises only
// "negative"; in rdma-core 44 mlx4 and mlx5 return -2, their CQ_POLL_ERR,
// efa, irdma and cxgb4 a negated errno, ibv_cmd_poll_cq -1, and rxe and siw
// never fail), so neither check_neg nor errno would name the cause reliably.
// Inline, since a polling loop calls it on every look; the throw is not.
[[noreturn]] void throw_poll_error(int rc);
inline int check_poll(int rc) {
  if (rc < 0) throw_poll_error(rc);
  return rc;
}

inline void check_wc(const ibv_wc& wc) {
  if (wc.status != IBV_WC_SUCCESS) throw completion_error(wc);
}

// The bounded completion wait: busy-polls `cq` until `wcs` is full or
// `deadline` has passed, and returns how many completions it wrote (fewer
// than wcs.size() means the deadline passed). Each ibv_poll_cq asks for all
// the completions still missing, so a burst is taken in one call. Statuses
// are not checked: what an error completion means is the caller's to say.
//
// Why a deadline: a packet the peer drops (wrong PSN, wrong GID) produces no
// completion until the sender's retries run out, and with retry_cnt 7 on
// Soft-RoCE, or timeout 0, they never do. A program that polls without one
// just hangs, and there is nothing to read.
// The deadline is on the coarse clock (coarse_clock.hpp): it is looked at
// after every empty poll, and there the precise clock can be a system call.
std::size_t poll_cq_until(ibv_cq* cq, std::span<ibv_wc> wcs, coarse_clock::time_point deadline);

// One completion within wait_ms, status unchecked; otherwise throws a
// tutorial_error saying what it waited for ("the RDMA Write") and why it
// may never come.
ibv_wc poll_one(ibv_cq* cq, int wait_ms, std::string_view waiting_for);

// One work request at a time (stage 04): posts `wr` on `qp` (a failed post
// throws, naming ibv_post_send and `what`: "ibv_post_send(the RDMA Write)")
// and returns the next completion on `cq` within wait_ms (poll_one), its
// status unchecked: whether it is shown first, timed or judged is the
// stage's to say. `cq` must carry nothing else meanwhile, or the completion
// returned may be another request's.
ibv_wc post_and_wait(ibv_qp* qp, ibv_cq* cq, ibv_send_wr& wr, int wait_ms, const std::string& what);

}  // namespace rdma
