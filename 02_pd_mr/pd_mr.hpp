// Stage 02: the pieces of pd_mr, in the order the chapter tells them
// (docs/02-pd-mr.md). pd_mr.cpp allocates the protection domain and calls them.
#pragma once

#include <infiniband/verbs.h>
#include <sys/resource.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rdma_tutorial/gid.hpp"
#include "rdma_tutorial/handles.hpp"
#include "rdma_tutorial/options.hpp"

namespace stage02 {

// Page-aligned memory from posix_memalign, released with free(). A buffer
// must outlive its registration: declare it *before* the rdma::mr_ptr that
// registers it, and C++ deregisters first, frees second.
class aligned_buffer {
 public:
  explicit aligned_buffer(std::size_t size);
  ~aligned_buffer();
  aligned_buffer(aligned_buffer&& other) noexcept;
  aligned_buffer(const aligned_buffer&) = delete;
  aligned_buffer& operator=(const aligned_buffer&) = delete;
  aligned_buffer& operator=(aligned_buffer&&) = delete;

  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// One buffer of the demo: its name, what it is for, and the access flags
// that purpose needs (access_flags.cpp).
struct buffer_plan {
  const char* name;
  const char* purpose;
  int access;
};
std::vector<buffer_plan> buffer_plans();

// Allocates, registers and prints one buffer per plan (lkey, rkey, who each
// is for), shows what is pinned, then deregisters and frees (registration.cpp).
void register_buffers(ibv_pd* pd, const std::vector<buffer_plan>& plans, std::size_t size);

// What this process has pinned right now: VmPin in /proc/self/status, in bytes.
std::size_t pinned_bytes();

// RLIMIT_MEMLOCK as getrlimit reports it, printed in KiB like `ulimit -l`;
// as root, CAP_IPC_LOCK is dropped so the limit applies (memlock.cpp).
rlimit print_memlock_limit();

// ibv_reg_mr + ibv_dereg_mr time per size, median of `iters` runs, sizes
// bounded by the soft memlock limit (cost_table.cpp).
void print_cost_table(ibv_pd* pd, const rlimit& memlock, int iters);

// Lowers the soft limit in-process and registers past it: ENOMEM, explained,
// then the limit is restored (memlock.cpp).
void memlock_demo(ibv_pd* pd, const rlimit& memlock);

// An RDMA Write from a loopback QP in `pd`: first with the source buffer
// registered in the same PD (must succeed), then with one registered in
// another PD (must fail, with an error completion) (pd_boundary.cpp).
void show_pd_boundary(ibv_context* ctx, ibv_pd* pd, const rdma::device_options& opts);

// A preview of stage 03: an RC QP in `pd` connected to itself, in RTS
// (loopback_qp.cpp).
rdma::qp_ptr create_loopback_qp(ibv_pd* pd, ibv_cq* cq, std::uint8_t port, const rdma::gid_entry& gid);

// What the loopback RDMA Writes carry (loopback_qp.cpp).
inline constexpr char write_message[] = "hello, RDMA";

// ibv_reg_mr of `buf` in `pd`, owned; `name` goes into the error message.
rdma::mr_ptr register_in(ibv_pd* pd, const aligned_buffer& buf, int access, const std::string& name);

// One signaled RDMA Write of write_message from `source` into `target` on
// `qp`, and its completion (waited for at most 5 s; not checked, the caller
// decides what the status means).
ibv_wc rdma_write(ibv_qp* qp, ibv_cq* cq, std::uint64_t wr_id, const aligned_buffer& source, const ibv_mr& source_mr,
                  const aligned_buffer& target, const ibv_mr& target_mr);

}  // namespace stage02
