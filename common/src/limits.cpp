// The device's limits against what a program asks for (limits.hpp).
#include "rdma_tutorial/limits.hpp"

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/command_line.hpp"

namespace rdma {

device_limits::device_limits(ibv_context* ctx) : device_(ibv_get_device_name(ctx->device)) {
  check_rc(ibv_query_device(ctx, &attr_), "ibv_query_device");
}

void device_limits::check(std::uint64_t asked, std::uint64_t limit, std::string_view limit_name, std::string_view what,
                          std::string_view option) const {
  if (asked <= limit) return;
  const std::string line = std::string(option.empty() ? "this program" : option) + " asks for " + std::to_string(asked) +
                           " " + std::string(what) + "; " + device_ + " takes " + std::to_string(limit) + " (" +
                           std::string(limit_name) + ", ibv_query_device)";
  if (!option.empty()) throw usage_error(line);
  throw tutorial_error(line, "this program cannot run on this device as it is; 01_devices/devices lists its limits");
}

void device_limits::queue_depth(std::uint64_t asked, std::string_view what, std::string_view option) const {
  check(asked, static_cast<std::uint64_t>(attr_.max_qp_wr), "max_qp_wr", what, option);
}

void device_limits::sges(std::uint64_t asked, std::string_view what, std::string_view option) const {
  check(asked, static_cast<std::uint64_t>(attr_.max_sge), "max_sge", what, option);
}

void device_limits::cq_entries(std::uint64_t asked, std::string_view option) const {
  check(asked, static_cast<std::uint64_t>(attr_.max_cqe), "max_cqe", "CQ entries", option);
}

void device_limits::srq_depth(std::uint64_t asked, std::string_view option) const {
  if (attr_.max_srq == 0) check(1, 0, "max_srq", "shared receive queue", option);
  check(asked, static_cast<std::uint64_t>(attr_.max_srq_wr), "max_srq_wr", "Recvs in the SRQ", option);
}

void device_limits::qps(std::uint64_t asked, std::string_view option) const {
  check(asked, static_cast<std::uint64_t>(attr_.max_qp), "max_qp", "QPs", option);
}

void device_limits::memory_windows(std::uint64_t asked, std::string_view option) const {
  check(asked, static_cast<std::uint64_t>(attr_.max_mw), "max_mw", "memory windows", option);
}

void device_limits::reads_initiated(std::uint64_t asked, std::string_view option) const {
  check(asked, static_cast<std::uint64_t>(attr_.max_qp_init_rd_atom), "max_qp_init_rd_atom", "RDMA Reads in flight",
        option);
}

void device_limits::reads_served(std::uint64_t asked, std::string_view option) const {
  check(asked, static_cast<std::uint64_t>(attr_.max_qp_rd_atom), "max_qp_rd_atom", "RDMA Reads served at once", option);
}

void device_limits::memory_window_type_2() const {
  if ((attr_.device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B)) != 0) return;
  throw tutorial_error("this program binds type 2 memory windows; " + device_ + " has none (device_cap_flags lacks "
                           "MEM_WINDOW_TYPE_2A and 2B, ibv_query_device)",
                       "this program cannot run on this device as it is; 01_devices/devices lists its limits");
}

void device_limits::registration(std::uint64_t bytes, std::string_view what, std::string_view option) const {
  check(bytes, attr_.max_mr_size, "max_mr_size", what, option);
}

}  // namespace rdma
