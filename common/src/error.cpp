#include "rdma_tutorial/error.hpp"

#include <array>
#include <cstring>

namespace rdma {

std::string errno_name(int err) {
  const char* name = ::strerrorname_np(err);
  return name != nullptr ? name : "errno " + std::to_string(err);
}

namespace {

struct known_cause {
  std::string_view call;  // "" matches every call
  int err;
  std::string_view fix;
};

// The causes a newcomer hits most often, most specific first.
constexpr std::array known_causes{
    known_cause{"ibv_get_device_list", ENOSYS,
                "this kernel has no RDMA support (no /sys/class/infiniband); run the "
                "program inside the Soft-RoCE guest: scripts/rxe_vm.sh -- <command>"},
    known_cause{"ibv_query_port", EINVAL,
                "port numbers start at 1; ports run from 1 to phys_port_cnt "
                "(ibv_devinfo lists them)"},
    known_cause{"ibv_query_gid", EINVAL,
                "the GID index is past the port's gid_tbl_len; list the table with "
                "01_devices/devices"},
    known_cause{"ibv_query_gid_ex", ENODATA,
                "that GID index is empty; pick a filled entry (01_devices/devices "
                "lists them)"},
    known_cause{"ibv_reg_mr", ENOMEM,
                "pinned memory is capped by RLIMIT_MEMLOCK (ulimit -l); raise it with "
                "'ulimit -l unlimited', '* - memlock unlimited' in "
                "/etc/security/limits.conf, or a container's --ulimit memlock=-1"},
    known_cause{"ibv_reg_mr", EINVAL,
                "REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE too; check the access "
                "flags"},
    known_cause{"ibv_modify_qp", EINVAL,
                "an attribute this transition needs is missing from the mask, or a "
                "value (GID index, MTU, port) is out of range"},
    known_cause{"ibv_post_send", ENOMEM,
                "the send queue is full (more WRs outstanding than max_send_wr); poll "
                "completions before posting more"},
    known_cause{"ibv_post_recv", ENOMEM,
                "the receive queue is full (more WRs posted than max_recv_wr)"},
    known_cause{"rdma_resolve_route", ENODEV,
                "no RDMA device owns the address; attach Soft-RoCE to that interface "
                "(scripts/setup_rxe.sh) and use an address that is not 127.x"},
    known_cause{"", EPERM,
                "this needs privileges; check that /dev/infiniband/* is accessible"},
};

}  // namespace

std::string likely_fix(std::string_view call, int err) {
  const std::string_view base = call.substr(0, call.find('('));
  for (const auto& cause : known_causes) {
    if (cause.err == err && (cause.call.empty() || cause.call == base)) {
      return std::string(cause.fix);
    }
  }
  return {};
}

verbs_error::verbs_error(int err, std::string call)
    : std::system_error(err, std::generic_category(), call + " failed (" + errno_name(err) + ")"),
      call_(std::move(call)) {}

std::string verbs_error::hint() const { return likely_fix(call_, code().value()); }

}  // namespace rdma
