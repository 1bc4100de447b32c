#include "rdma_tutorial/error.hpp"

#include <array>
#include <cstring>

namespace rdma {

std::string errno_name(int err) {
  const char* name = ::strerrorname_np(err);
  return name != nullptr ? name : "errno " + std::to_string(err);
}

std::string hint_of(const std::exception& e) {
  if (const auto* v = dynamic_cast<const verbs_error*>(&e)) return v->hint();
  if (const auto* t = dynamic_cast<const tutorial_error*>(&e)) return t->hint();
  return {};
}

tutorial_error clients_dropped(unsigned dropped, unsigned joined) {
  return tutorial_error(std::to_string(dropped) + " of " + std::to_string(joined) + " client" + (joined == 1 ? "" : "s") +
                            " broke the protocol and " + (dropped == 1 ? "was" : "were") + " dropped",
                        "the client's own output says what it did; the server's log above names each one "
                        "('letting it go') with the rule it broke");
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
                "pinned memory is capped by RLIMIT_MEMLOCK (ulimit -l), and a registration stays pinned until "
                "ibv_dereg_mr: deregister what is no longer used (VmPin in /proc/PID/status counts what is "
                "pinned); if the program needs more, raise it with 'ulimit -l unlimited', '* - memlock unlimited' in "
                "/etc/security/limits.conf, or a container's --ulimit memlock=-1"},
    // RLIMIT_MEMLOCK of 0 without CAP_IPC_LOCK: the kernel refuses to pin at
    // all (EPERM) instead of counting pages (measured on Soft-RoCE, 6.1).
    known_cause{"ibv_reg_mr", EPERM,
                "the locked-memory limit is 0 (ulimit -l) and the process lacks CAP_IPC_LOCK, so the kernel pins "
                "nothing; raise RLIMIT_MEMLOCK with 'ulimit -l unlimited', '* - memlock unlimited' in "
                "/etc/security/limits.conf, or a container's --ulimit memlock=-1"},
    known_cause{"ibv_reg_mr", EINVAL,
                "REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE too; check the access "
                "flags"},
    known_cause{"ibv_modify_qp", EINVAL,
                "an attribute this transition needs is missing from the mask, or a "
                "value (GID index, MTU, port) is out of range"},
    known_cause{"ibv_modify_qp", ENETUNREACH,
                "INIT -> RTR looks up the peer's MAC through the route and neighbour tables of "
                "the netdev under the port; that netdev is down or has no route to the peer's "
                "GID (ip -br link; ip route get <peer address>)"},
    known_cause{"ibv_post_send", EACCES,
                "the process's credentials changed (setuid, setgid, capset) after it opened the device, and the "
                "kernel refuses that file's commands from other credentials; change them before ibv_open_device"},
    known_cause{"ibv_post_send", ENOMEM,
                "the send queue is full: more WRs outstanding than it holds (ibv_query_qp's max_send_wr, "
                "which may exceed what was asked); poll completions before posting more"},
    known_cause{"ibv_post_recv", ENOMEM,
                "the receive queue is full: more receives posted than it holds (ibv_query_qp's max_recv_wr)"},
    known_cause{"bind", EADDRINUSE,
                "another program holds this TCP port (an earlier server still running?); pick another "
                "with -p on both sides, or find it with 'ss -ltnp'"},
    known_cause{"bind", EADDRNOTAVAIL,
                "--bind names an address this machine does not have (ip -br addr lists them)"},
    known_cause{"connect", ENETUNREACH,
                "no route from here to that address: check -s, and that an interface of this machine is on its "
                "subnet ('ip route get ADDR')"},
    known_cause{"connect", EHOSTUNREACH,
                "nobody on that subnet answers for the address (no ARP reply): the host is down or -s is wrong "
                "('ip neigh' shows it FAILED)"},
    // rdma_cm (stage 07): its calls fail as system calls do, -1 and errno.
    known_cause{"rdma_create_event_channel", ENODEV,
                "the rdma_ucm module is not loaded (modprobe rdma_ucm), or there is no RDMA device"},
    known_cause{"rdma_resolve_addr", ENETUNREACH,
                "no route to that address from here: it must be reachable through an interface with an RDMA "
                "device on it ('ip route get ADDR', 'rdma link show')"},
    known_cause{"rdma_resolve_addr", ENODEV,
                "the interface that reaches that address has no RDMA device ('rdma link show')"},
    known_cause{"rdma_resolve_route", ENODEV,
                "the address is on an interface without an RDMA device (127.0.0.1 among them): use the address of "
                "the interface 'rdma link show' names"},
    known_cause{"rdma_bind_addr", EADDRINUSE,
                "another rdma_cm program listens on this port (an earlier server still running?); pick another "
                "with -p on both sides"},
    // rdma_cm reports a port another listener holds as EADDRNOTAVAIL, not
    // EADDRINUSE (measured: a second server on the same port, Soft-RoCE 6.1).
    known_cause{"rdma_bind_addr", EADDRNOTAVAIL,
                "another rdma_cm program already listens on this port (an earlier server still running?): pick "
                "another with -p on both sides; or --bind names an address this machine does not have "
                "(ip -br addr lists them)"},
    known_cause{"rdma_bind_addr", ENODEV,
                "--bind names an address of an interface without an RDMA device ('rdma link show')"},
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

verbs_error::verbs_error(int err, std::string call, std::string hint)
    : std::system_error(err, std::generic_category(), call + " failed (" + errno_name(err) + ")"),
      call_(std::move(call)),
      hint_(hint.empty() ? likely_fix(call_, err) : std::move(hint)) {}

}  // namespace rdma
