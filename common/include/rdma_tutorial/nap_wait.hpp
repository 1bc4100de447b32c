// Waiting for something the device will do (a credit written into our
// memory, a completion), as stage 06's clients learned to: look flat out
// for a few looks, so what is on its way is seen at once, then nap between
// looks (the numbers: waiting.hpp). Spinning flat out takes the CPU that the peer, the other
// clients and the kernel's own RDMA work need (Soft-RoCE's packets are
// processed by the kernel on these same CPUs; across the two-guest wire a
// spinning client delayed its ACKs past the server's ACK timeout).
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

#include "rdma_tutorial/coarse_clock.hpp"
#include "rdma_tutorial/waiting.hpp"

namespace rdma {

// Until ready(): look(), then ready() again. Every flat_out_looks-th look, check(looks,
// elapsed) is called: it throws to give up (a deadline passed, the peer
// left). It is the caller's to bound the wait; this only paces it. The
// time is the coarse clock's: a bound of milliseconds (coarse_clock.hpp).
template <typename Ready, typename Look, typename Check>
void nap_until(Ready ready, Look look, Check check) {
  if (ready()) return;
  const auto start = coarse_clock::now();
  for (std::uint32_t looks = 1; !ready(); ++looks) {
    look();
    if (looks < waiting_policy::flat_out_looks) continue;
    if (looks % waiting_policy::flat_out_looks == 0) check(looks, coarse_clock::now() - start);
    const timespec nap{0, waiting_policy::nap.count()};
    nanosleep(&nap, nullptr);
  }
}

}  // namespace rdma
