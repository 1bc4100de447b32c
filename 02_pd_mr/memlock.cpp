// RLIMIT_MEMLOCK (`ulimit -l`) caps how much memory one process may pin, and
// every registered page counts. Past it ibv_reg_mr fails with ENOMEM, however
// much RAM is free. The kernel checks the limit only for processes without
// CAP_IPC_LOCK, which root has; so as root this program drops that capability
// (from the effective set only) before its first registration, and from then
// on behaves as an ordinary user's program does.
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/handles.hpp"
#include "stage.hpp"

namespace stage02 {

namespace {

std::string limit_text(rlim_t value) {
  return value == RLIM_INFINITY ? "unlimited" : std::to_string(value / 1024) + " KiB";
}

// Returns whether CAP_IPC_LOCK was in the effective set (and is not anymore).
// glibc has no wrapper for capget/capset; both return -1 and set errno.
bool drop_ipc_lock() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
  rdma::check_errno(static_cast<int>(syscall(SYS_capget, &header, data)), "capget");
  constexpr unsigned bit = 1U << CAP_IPC_LOCK;  // CAP_IPC_LOCK is 14: word 0
  if ((data[0].effective & bit) == 0) return false;
  data[0].effective &= ~bit;
  rdma::check_errno(static_cast<int>(syscall(SYS_capset, &header, data)), "capset");
  return true;
}

void set_soft_limit(rlim_t soft, rlim_t hard) {
  const rlimit limit{soft, hard};
  rdma::check_errno(setrlimit(RLIMIT_MEMLOCK, &limit), "setrlimit(RLIMIT_MEMLOCK)");
}

}  // namespace

std::size_t pinned_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmPin:")) return std::stoul(line.substr(6)) * 1024;  // "VmPin:   24 kB"
  }
  return 0;
}

rlimit apply_memlock_limit(std::optional<rlim_t> soft_kib) {
  const bool dropped = drop_ipc_lock();
  rlimit limit{};
  rdma::check_errno(getrlimit(RLIMIT_MEMLOCK, &limit), "getrlimit(RLIMIT_MEMLOCK)");
  if (soft_kib) {
    // --memlock: what `ulimit -S -l N` does in a shell, for this process only.
    if (limit.rlim_max != RLIM_INFINITY && *soft_kib * 1024 > limit.rlim_max) {
      throw rdma::tutorial_error("--memlock " + std::to_string(*soft_kib) + " is above the hard limit " +
                                     limit_text(limit.rlim_max),
                                 "only root may raise the hard limit; pick a value up to it");
    }
    limit.rlim_cur = *soft_kib * 1024;
    set_soft_limit(limit.rlim_cur, limit.rlim_max);
  }
  std::printf("RLIMIT_MEMLOCK (ulimit -l): soft %s, hard %s\n", limit_text(limit.rlim_cur).c_str(),
              limit_text(limit.rlim_max).c_str());
  if (dropped) {
    std::printf("CAP_IPC_LOCK dropped: as root it lifts the limit; here the limit holds for every "
                "registration, as for any user\n");
  } else {
    std::printf("CAP_IPC_LOCK not held: the limit holds for every registration\n");
  }
  return limit;
}

void memlock_demo(ibv_pd* pd, const rlimit& memlock) {
  // Lowering the soft limit is always allowed, and raising it back up to the
  // hard limit too, so this works as root and as an ordinary user.
  const rlim_t lowered = std::min<rlim_t>(memlock.rlim_cur, 64 * 1024);
  const std::size_t size = 128 * 1024;
  std::printf("\nmemlock demo: soft limit lowered to %s with setrlimit, then ibv_reg_mr of %s\n",
              limit_text(lowered).c_str(), size_text(size).c_str());
  set_soft_limit(lowered, memlock.rlim_max);
  rdma::aligned_buffer buf(size);
  errno = 0;  // a provider that fails without setting errno leaves 0: EIO below
  ibv_mr* raw_mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
  const int err = rdma::failure_errno();
  rdma::mr_ptr mr(raw_mr);  // deregisters (before buf is freed) if it did succeed
  set_soft_limit(memlock.rlim_cur, memlock.rlim_max);
  if (raw_mr != nullptr) {
    throw rdma::tutorial_error("the registration past the lowered limit succeeded",
                               "is CAP_IPC_LOCK still in effect? (see getpcaps $$)");
  }
  if (err != ENOMEM) throw rdma::verbs_error(err, "ibv_reg_mr(" + size_text(size) + ")");
  const rdma::verbs_error expected(err, "ibv_reg_mr(" + size_text(size) + ")");
  std::printf("  %s   <- expected\n", expected.what());
  std::printf("  the RAM is there; this process may just not pin more than its limit\n");
  std::printf("  fix: %s\n", expected.hint().c_str());
  std::printf("soft limit restored to %s\n", limit_text(memlock.rlim_cur).c_str());
}

}  // namespace stage02
