// EXERCISE: the write that should go through ends in an error completion
//
// This is pd_boundary.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh wrong_pd
// As shipped the first RDMA Write, the one that should go through, fails in
// its completion (Soft-RoCE on Linux 6.1 reports IBV_WC_LOC_QP_OP_ERR, on
// 6.12 IBV_WC_WR_FLUSH_ERR, a NIC typically IBV_WC_LOC_PROT_ERR):
//   pd_mr: completion failed: wr_id 1: IBV_WC_LOC_QP_OP_ERR (2, local QP operation error), vendor_err 0x0
// Everything before it succeeded: the registration, ibv_post_send. Nothing
// checks the PD until the device processes the work request.
//
// TODO: find the buffer whose registration does not match the QP it is used
// on, and register it where the QP lives. The second write must still fail:
// it is the demonstration. (Hint: docs/02-pd-mr.md, section "The PD
// boundary".)
#include <cstdio>
#include <cstring>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage02 {

void show_pd_boundary(ibv_context* ctx, ibv_pd* pd, const rdma::device_options& opts) {
  std::printf("\nthe PD boundary: a QP in this PD RDMA-writes to itself (loopback)\n");
  ibv_pd* raw_other = rdma::check_ptr(ibv_alloc_pd(ctx), "ibv_alloc_pd(other)");
  rdma::pd_ptr other(raw_other);
  rdma::cq_ptr cq(rdma::check_ptr(ibv_create_cq(ctx, 4, nullptr, nullptr, 0), "ibv_create_cq"));
  const rdma::gid_entry gid = rdma::choose_gid(ctx, opts.port, opts.gid_index);
  const rdma::qp_ptr qp = create_loopback_qp(pd, cq.get(), opts.port, gid);

  const rdma::registered_buffer target(pd, page_size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, "target");

  // 1. The source in the QP's PD: the write goes through.
  const rdma::registered_buffer source(other.get(), page_size, 0, "source");  // TODO
  std::memcpy(source.data(), write_message, sizeof write_message);
  const ibv_wc good = rdma_write(qp.get(), cq.get(), 1, source, target);
  rdma::check_wc(good);
  std::printf("  source MR in the QP's PD:  %s; target holds \"%s\"\n", rdma::describe_wc(good).c_str(), target.data());

  // 2. The same write from a buffer registered in `other`.
  const rdma::registered_buffer stray(other.get(), page_size, 0, "stray");
  std::memcpy(stray.data(), write_message, sizeof write_message);
  const ibv_wc bad = rdma_write(qp.get(), cq.get(), 2, stray, target);
  if (bad.status == IBV_WC_SUCCESS) {
    throw rdma::tutorial_error("the device accepted an lkey from another PD than the QP's");
  }
  std::printf("  source MR in another PD:   %s   <- expected\n", rdma::describe_wc(bad).c_str());
}

}  // namespace stage02
