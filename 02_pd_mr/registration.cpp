// Registering memory: ibv_reg_mr pins the buffer's pages (they can no longer
// be swapped out or moved) and gives the device a translation from the
// buffer's virtual addresses to those pages. It returns two keys:
//
//   lkey  for this process: goes into the ibv_sge of our own work requests;
//   rkey  for the peer: it puts it (with the address) into its RDMA Write or
//         Read work requests. Only meaningful with a REMOTE_* access flag.
//
// The buffers are rdma::aligned_buffer (common/src/buffer.cpp): page-aligned
// with posix_memalign, every page touched before it is registered.
//
// The order at the end matters: ibv_dereg_mr first, free() second. Memory
// freed while still registered stays pinned, and the device may still write
// into pages the allocator has already handed to someone else.
#include <cstdio>
#include <string>
#include <vector>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/handles.hpp"
#include "stage.hpp"

namespace stage02 {

namespace {

constexpr int remote_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

void print_keys(const buffer_plan& plan, const ibv_mr& mr) {
  std::printf("  %-7s %s (%s)\n", plan.name, access_text(plan.access).c_str(), plan.purpose);
  std::printf("          lkey 0x%x  for this process: the sge of our own work requests\n", mr.lkey);
  if ((plan.access & remote_flags) != 0) {
    std::printf("          rkey 0x%x  for the peer: send it with the address; it goes into the peer's work requests\n",
                mr.rkey);
  } else {
    std::printf("          rkey 0x%x  for nobody: no REMOTE_* flag, so no peer may use this memory\n", mr.rkey);
  }
}

}  // namespace

void register_buffers(ibv_pd* pd, const std::vector<buffer_plan>& plans, std::size_t size) {
  std::printf("\nregistering %zu buffers of %s (posix_memalign, %zu-byte aligned) on this PD\n", plans.size(),
              size_text(size).c_str(), page_size);
  // Buffers first, MRs second: the vectors are destroyed in reverse order of
  // declaration, so every MR is deregistered before its memory is freed.
  std::vector<rdma::aligned_buffer> buffers;
  std::vector<rdma::mr_ptr> mrs;
  buffers.reserve(plans.size());
  for (const auto& plan : plans) {
    rdma::aligned_buffer& buf = buffers.emplace_back(size);
    // ibv_reg_mr is a macro over __ibv_reg_mr, which takes the flags unsigned.
    ibv_mr* raw_mr = ibv_reg_mr(pd, buf.data(), buf.size(), static_cast<unsigned>(plan.access));
    rdma::check_ptr(raw_mr, std::string("ibv_reg_mr(") + plan.name + ", " + access_text(plan.access) + ")");
    mrs.emplace_back(raw_mr);
    print_keys(plan, *raw_mr);
  }
  std::printf("pinned by this process (VmPin): %zu KiB\n", pinned_bytes() / 1024);

  // What the destructors would do anyway, spelled out once: deregister, then
  // free. Ownership is given up only after ibv_dereg_mr succeeded: if it fails,
  // the MR is still registered and its mr_ptr must still deregister it.
  for (auto& mr : mrs) {
    rdma::check_rc(ibv_dereg_mr(mr.get()), "ibv_dereg_mr");
    mr.release();
  }
  std::printf("after ibv_dereg_mr, before free: VmPin %zu KiB\n", pinned_bytes() / 1024);
}

}  // namespace stage02
