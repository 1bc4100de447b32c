#include "rdma_tutorial/handles.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace rdma {

namespace {
std::atomic<int> failed_releases{0};
}  // namespace

int release_failures() noexcept { return failed_releases.load(); }

}  // namespace rdma

namespace rdma::detail {

void warn_destroy_failed(const char* call, int rc) noexcept {
  const int err = rc < 0 ? errno : rc;
  ++failed_releases;
  std::fflush(stdout);  // what the program printed so far comes first in a log
  // Reached from destructors: no allocation that could throw, no exception.
  const char* name = ::strerrorname_np(err);
  std::fprintf(stderr, "warning: %s failed (%s): %s%s\n", call, name != nullptr ? name : "?", std::strerror(err),
               err == EBUSY ? " (something created from it still exists; destroy that first)" : "");
}

}  // namespace rdma::detail

namespace rdma {

int dealloc_mw(ibv_mw* mw) noexcept { return ibv_dealloc_mw(mw); }

}  // namespace rdma
