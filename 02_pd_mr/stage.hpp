// Stage 02 — protection and registration (docs/02-pd-mr.md).
//
// Reading order, as the chapter tells it:
//   pd_mr.cpp               main: the protection domain, then each piece in turn
//   common/src/buffer.cpp   page-aligned memory (rdma::aligned_buffer), kept in
//                           common/ because every later stage uses it
//   registration.cpp        ibv_reg_mr, lkey and rkey, deregister before free
//   access_flags.cpp        the access flags each buffer's job needs
//   pd_boundary.cpp         the device enforcing the PD at run time
//   loopback.cpp            (a preview of stage 03) a QP connected to itself, and the
//                           helper that posts an RDMA Write and waits for it (used twice)
//   memlock.cpp             RLIMIT_MEMLOCK and CAP_IPC_LOCK (applied in main before
//                           the device is opened), and the ENOMEM demo at the end
//   cost_table.cpp          what a registration costs, by size
//   logic.cpp               the parts with no device: flag and size text, table sizes, median
#pragma once

#include <infiniband/verbs.h>
#include <sys/resource.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/gid.hpp"
#include "rdma_tutorial/handles.hpp"
#include "rdma_tutorial/command_line.hpp"

namespace stage02 {

using rdma::page_size;

// memlock.cpp ----------------------------------------------------------------

// RLIMIT_MEMLOCK as getrlimit reports it, printed in KiB like `ulimit -l`,
// after lowering the soft limit to `soft_kib` if given (--memlock). As root,
// first drops CAP_IPC_LOCK, so the limit applies to every registration this
// program makes, as it does for any user's program.
rlimit apply_memlock_limit(std::optional<rlim_t> soft_kib);

// What this process has pinned right now: VmPin in /proc/self/status, in bytes.
std::size_t pinned_bytes();

// Lowers the soft limit in-process and registers past it: ENOMEM, explained,
// then the limit is restored.
void memlock_demo(ibv_pd* pd, const rlimit& memlock);

// registration.cpp, access_flags.cpp -----------------------------------------

// One buffer of the demo: its name, what it is for, and the access flags
// that purpose needs (access_flags.cpp).
struct buffer_plan {
  const char* name;
  const char* purpose;
  int access;
};
std::vector<buffer_plan> buffer_plans();

// Allocates, registers and prints one buffer per plan (lkey, rkey, who each
// is for), shows what is pinned, then deregisters and frees.
void register_buffers(ibv_pd* pd, const std::vector<buffer_plan>& plans, std::size_t size);

// pd_boundary.cpp, loopback.cpp ----------------------------------------------

// An RDMA Write from a loopback QP in `pd`: first with the source buffer
// registered in the same PD (must succeed), then with one registered in
// another PD (must fail, with an error completion).
void show_pd_boundary(ibv_context* ctx, ibv_pd* pd, const rdma::device_options& opts);

// A preview of stage 03: an RC QP in `pd` connected to itself, in RTS, that
// accepts RDMA Writes (its own).
rdma::qp_ptr create_loopback_qp(ibv_pd* pd, ibv_cq* cq, std::uint8_t port, const rdma::gid_entry& gid);

// What the loopback RDMA Writes carry.
inline constexpr char write_message[] = "hello, RDMA";

// One signaled RDMA Write of write_message from `source` into `target` on
// `qp`, and its completion (waited for at most 5 s; not checked, the caller
// decides what the status means).
ibv_wc rdma_write(ibv_qp* qp, ibv_cq* cq, std::uint64_t wr_id, const rdma::registered_buffer& source,
                  const rdma::registered_buffer& target);

// cost_table.cpp -------------------------------------------------------------

// ibv_reg_mr + ibv_dereg_mr time per size, median of `iters` runs, sizes
// bounded by the soft memlock limit.
void print_cost_table(ibv_pd* pd, const rlimit& memlock, int iters);

// logic.cpp: no device, unit-tested in tests/logic_test.cpp ------------------

// "LOCAL_WRITE | REMOTE_WRITE"; "none (local read only)" for 0; unknown bits
// as hex so nothing is hidden.
std::string access_text(int access);

// 4096 -> "4 KiB", 1048576 -> "1 MiB", 1536 -> "1536 bytes".
std::string size_text(std::size_t bytes);

// The cost table's sizes: 4 KiB doubling up to the largest power of two that
// leaves half of `memlock_bytes` free (other registrations, the library's own
// pinned memory), and never above `cap`. Empty when not even 4 KiB fits.
std::vector<std::size_t> table_sizes(std::size_t memlock_bytes, std::size_t cap);

// The median (mean of the middle two for an even count); 0 for no samples.
double median(std::vector<double> samples);

}  // namespace stage02
