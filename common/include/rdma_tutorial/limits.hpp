// What the device allows, checked before asking (stage 01 lists the limits,
// docs/01-devices.md; every later stage checks what it asks for here).
//
// ibv_query_device reports the most a device takes of each thing a program
// creates: work requests per queue (max_qp_wr), scatter/gather entries
// (max_sge), CQ entries (max_cqe), Recvs in an SRQ (max_srq_wr), QPs
// (max_qp), memory windows (max_mw), bytes per registration (max_mr_size).
// Soft-RoCE's are generous (max_qp_wr 1048576); a NIC's are not, and differ
// between models (EFA's queues hold hundreds, not millions). A request
// beyond them fails at the create call with EINVAL or ENOMEM, which names
// neither the limit nor the option; checked first, it is one line that
// names both. The request may still fail where a limit depends on more
// than one number (mlx5 computes max_qp_wr for one SGE and no inline data),
// and the inline size has no attribute at all: ibv_create_qp tells.
//
// A request an option set is a usage error (exit 2) that names the option;
// one the program needs whatever its options (a constant of its protocol)
// is a failure (exit 1): this device cannot run it.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace rdma {

class device_limits {
 public:
  device_limits() = default;
  // ibv_query_device on `ctx`.
  explicit device_limits(ibv_context* ctx);
  device_limits(std::string device, const ibv_device_attr& attr) : device_(std::move(device)), attr_(attr) {}

  const ibv_device_attr& attr() const noexcept { return attr_; }

  // Each: `asked` of `what` ("Recvs in the receive queue") against the
  // device's limit; `option` names the option that set it ("--rx-depth"),
  // empty when the program itself needs that many.
  void queue_depth(std::uint64_t asked, std::string_view what, std::string_view option = {}) const;
  void sges(std::uint64_t asked, std::string_view what, std::string_view option = {}) const;
  void cq_entries(std::uint64_t asked, std::string_view option = {}) const;
  void srq_depth(std::uint64_t asked, std::string_view option = {}) const;
  void qps(std::uint64_t asked, std::string_view option = {}) const;
  void memory_windows(std::uint64_t asked, std::string_view option = {}) const;
  // RDMA Reads (and atomics) a QP keeps in flight as their initiator
  // (max_rd_atomic, rdma_cm's initiator_depth) and serves at once as their
  // responder (max_dest_rd_atomic, responder_resources). Past the device's
  // limit rdma_connect or rdma_accept fails with a bare EINVAL (siw: ENOMEM).
  void reads_initiated(std::uint64_t asked, std::string_view option = {}) const;
  void reads_served(std::uint64_t asked, std::string_view option = {}) const;
  // A type 2 memory window (ibv_alloc_mw(IBV_MW_TYPE_2), bound by a work
  // request on a QP): device_cap_flags names 2A or 2B. A device with type
  // 1 windows only fails at the bind, per client, where this says it once.
  void memory_window_type_2() const;
  void registration(std::uint64_t bytes, std::string_view what, std::string_view option = {}) const;

 private:
  void check(std::uint64_t asked, std::uint64_t limit, std::string_view limit_name, std::string_view what,
             std::string_view option) const;
  std::string device_;
  ibv_device_attr attr_{};
};

}  // namespace rdma
