// One error idiom for the whole tutorial: a failed verbs call throws
// rdma::verbs_error, which carries three things and loses none of them on the
// way to main(): the call (with context: "ibv_modify_qp(QP A, INIT -> RTR)"),
// the errno (code()), and the likely fix (hint()). main() catches it (see
// rdma::run_main) and prints one line plus the likely fix.
//
// Code that knows more than the errno (which transition failed, which bits
// the mask lacks, which state the QP is in) passes that knowledge as the
// hint; it never catches a verbs_error to rethrow something with less in it.
// Without such a hint, the table in error.cpp supplies the usual cause of
// that (call, errno) pair, if there is one.
//
// The libraries report failure in four different ways, and reading errno after
// the wrong kind of call gives a stale, misleading value. Pick the checker that
// matches the man page's RETURN VALUE section:
//
//   check_ptr(p, call)    NULL, errno set         ibv_open_device, ibv_alloc_pd,
//                                                 ibv_reg_mr, ibv_create_cq/qp
//   check_rc(rc, call)    0, or the errno value   ibv_query_port, ibv_modify_qp,
//                         itself is returned      ibv_post_send, ibv_query_gid_ex
//   check_errno(rc, call) 0 (or >= 0), -1 and     ibv_query_gid, system calls,
//                         errno set               (later) rdma_* calls
//   check_neg(rc, call)   count >= 0, or a        ibv_query_gid_table
//                         negative errno value
//
// ibv_poll_cq is a fifth case: negative on failure, not necessarily an errno; use
// check_poll from completion.hpp.
#pragma once

#include <cerrno>
#include <exception>
#include <string>
#include <string_view>
#include <system_error>

namespace rdma {

class verbs_error : public std::system_error {
 public:
  // `call` names what failed, with context if useful: "ibv_query_port(port 0)".
  // `hint` is the likely fix as the caller knows it; empty: the table's.
  verbs_error(int err, std::string call, std::string hint = {});

  const std::string& call() const noexcept { return call_; }
  // The likely cause and fix for this call and errno, or "" if none is known.
  const std::string& hint() const noexcept { return hint_; }

 private:
  std::string call_;
  std::string hint_;
};

// A failure that is not an errno from a call: a completion with an error
// status, a malformed message from the peer, a missing device. The message is
// complete as given.
class tutorial_error : public std::runtime_error {
 public:
  explicit tutorial_error(const std::string& message, std::string hint = {})
      : std::runtime_error(message), hint_(std::move(hint)) {}
  const std::string& hint() const noexcept { return hint_; }

 private:
  std::string hint_;
};

// The likely fix an error carries (verbs_error, tutorial_error), else "": for
// a failure reported on the way instead of ending the program.
std::string hint_of(const std::exception& e);

// The end of a server's run that dropped clients for breaking the protocol
// (stages 06, 09): exit 1 with this line, each client named in the log.
tutorial_error clients_dropped(unsigned dropped, unsigned joined);

// "EINVAL", "ENOMEM", ... for a message a reader can search for.
std::string errno_name(int err);

// Known causes, keyed by the call's name (the part before any '(') and errno.
std::string likely_fix(std::string_view call, int err);

// check_ptr and check_errno read errno after the call. rdma-core's verbs set
// it when they fail; a provider that returned NULL without setting it would
// leave whatever an earlier failure put there, so a surprising errno from
// them is worth a second look.

// errno right after a call that failed, or EIO when it set none (a few
// providers return NULL without setting errno; do not report "Success").
inline int failure_errno() noexcept { return errno != 0 ? errno : EIO; }

template <typename T>
T* check_ptr(T* p, std::string_view call) {
  if (p == nullptr) throw verbs_error(failure_errno(), std::string(call));
  return p;
}

inline void check_rc(int rc, std::string_view call, std::string_view hint = {}) {
  if (rc != 0) throw verbs_error(rc, std::string(call), std::string(hint));
}

inline int check_errno(int rc, std::string_view call) {
  if (rc < 0) throw verbs_error(failure_errno(), std::string(call));
  return rc;
}

template <typename Int>
Int check_neg(Int rc, std::string_view call) {
  if (rc < 0) throw verbs_error(static_cast<int>(-rc), std::string(call));
  return rc;
}

}  // namespace rdma
