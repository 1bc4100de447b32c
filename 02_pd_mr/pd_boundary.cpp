// The PD boundary, checked by the device at run time. A work request may only
// use memory registered in the same PD as the QP it is posted on; the compiler
// cannot tell an ibv_mr of one PD from another's, and ibv_post_send does not
// look either. The device does, when it processes the request, and reports
// the violation as an error completion.
//
// `other` stands in for a second client's PD in a server that keeps clients
// apart. The QP lives in `pd`; so must every buffer its work requests name.
// (Exercise: exercises/wrong_pd.cpp is this file with one buffer in `other`.)
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
  const rdma::registered_buffer source(pd, page_size, 0, "source");
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
