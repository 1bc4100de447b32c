// How the stages wait: every pace and bound that is a number, in one place.
//
// Each number below was picked for where this tutorial runs, Soft-RoCE in
// an emulated (qemu TCG) guest of one or two CPUs, which the same CPUs'
// kernel work (rxe's packet processing) and the peer share. There a
// program that spins flat out takes the CPU its own packets need, and a
// clock read can be a system call (the guest's clock source is an
// emulated HPET). On a NIC the device does that work and a clock read is a
// few nanoseconds: each comment says what a deployment there would pick.
// None of them changes what is correct, only how fast or how politely a
// program notices.
#pragma once

#include <chrono>
#include <cstdint>

namespace rdma::waiting_policy {

using namespace std::chrono_literals;

// nap_wait.hpp (the credit waits of 06 and 09): look flat out this many
// times, so what is already on its way is seen at once, then nap between
// looks. On a NIC: spin longer (thousands of looks, or a few microseconds)
// and nap only when the wait is long; or sleep on a completion channel
// (stage 08).
inline constexpr std::uint32_t flat_out_looks = 64;
inline constexpr std::chrono::nanoseconds nap = 20us;

// peer.hpp's wait_while_connected (stages 04, 05, 08's --poll): the clock is
// read once every `looks_per_clock` looks (a system call in this guest);
// after `spin_before_napping` it naps `nap_on_socket` at a time in poll()
// on the peer's TCP socket, unless the caller spins (a latency
// measurement), which still looks at the socket every `looks_per_socket`
// looks. On a NIC: read the clock every look (vDSO), spin a few
// microseconds, and nap far less often.
inline constexpr std::uint32_t looks_per_clock = 256;
inline constexpr std::chrono::microseconds spin_before_napping = 100us;
inline constexpr int nap_on_socket_ms = 1;
inline constexpr std::uint32_t looks_per_socket = 4096;
// A peer that closed once its last request completed may be a moment ahead
// of that request's effect here: the wait gives it this long.
inline constexpr std::chrono::milliseconds grace_after_close = 100ms;

// Stage 06's server loop: the async events and the TCP side are looked at
// every `server_look_every` rounds (and whenever the CQ was empty); with
// nothing to do for `server_idle` it sleeps `server_nap_ms` in poll(), and
// on an empty CQ it yields its CPU (the clients may share it). On a NIC,
// with the server on its own cores: no yield, a longer idle before the
// nap, or a completion channel as in 09.
inline constexpr std::uint64_t server_look_every = 64;
inline constexpr std::chrono::milliseconds server_idle = 50ms;
inline constexpr int server_nap_ms = 10;
// Stage 09's server sleeps on its completion channel; this bounds each
// sleep so that its deadlines (--accept-ms, a client silent for
// --wait-ms, a leaving QP's wait) are looked at. Any value well below the
// shortest deadline will do, on any device.
inline constexpr int channel_sleep_ms = 100;

// A leaving QP of an SRQ on Soft-RoCE: how long to wait for
// IBV_EVENT_QP_LAST_WQE_REACHED before going on its marker alone (srq.hpp;
// 6.12's came 35 us to 5 ms after the move to ERR, 6.1's never). A NIC
// sends the event: there the wait is --wait-ms.
inline constexpr std::chrono::milliseconds soft_roce_last_wqe = 500ms;

}  // namespace rdma::waiting_policy
