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

// peer.hpp's wait_while_connected (stages 04, 05, 08's --poll): the
// deadline is looked at once every `looks_per_clock` looks, on the coarse
// clock (coarse_clock.hpp: a read from memory through the vDSO, never a
// system call); after `spin_before_napping` it naps `nap_on_socket` at a
// time in poll() on the peer's TCP socket, with one look between naps,
// unless the caller spins (a latency measurement), which still looks at
// the socket, without waiting, once `socket_look_every` has passed on the
// coarse clock since the wait began or last looked (in practice once a
// tick, 4 ms: poll() is a system call, and on Linux 6.12 a round trip
// spins thousands of looks). On a NIC:
// spin a few microseconds, and nap far less often.
inline constexpr std::uint32_t looks_per_clock = 256;
inline constexpr std::chrono::microseconds spin_before_napping = 100us;
inline constexpr int nap_on_socket_ms = 1;
inline constexpr std::chrono::milliseconds socket_look_every = 1ms;
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

// A client that finds nobody listening tries again after a nap: a server
// started beside it (run.sh, a test) may still be on its way. TCP's connect
// (tcp.cpp, stages 04-06 and 08) naps `tcp_connect_retry`; rdma_cm's
// (cm_connect.cpp, 07 and 09), which resolves a new id for each try,
// `cm_connect_retry`, and gives up when less than `cm_connect_least` is
// left of its --wait-ms. Any value that is short beside --wait-ms will do,
// on any device.
inline constexpr std::chrono::milliseconds tcp_connect_retry = 50ms;
inline constexpr std::chrono::milliseconds cm_connect_retry = 100ms;
inline constexpr std::chrono::milliseconds cm_connect_least = 200ms;

// The clients of 06 and 09 look at their peer (06: the TCP socket; 09: the
// CM event channel) once every `looks_per_peer_check` looks of their credit
// wait (nap_wait.hpp): often enough to notice a server that is gone within
// milliseconds, seldom enough to cost nothing beside the credit word's read.
inline constexpr std::uint32_t looks_per_peer_check = 1024;
// 07's server waits for the client's notice by polling the CQ, with a
// poll() of `notice_nap_ms` on the CM channel in between (a wait that only
// one message ends; stage 08 sleeps on a completion channel instead).
inline constexpr int notice_nap_ms = 1;
// 06's server gives a joining client's handshake at most this long (or
// --wait-ms, if shorter), so one slow client cannot hold up the others'.
inline constexpr std::chrono::milliseconds join_handshake_limit = 1000ms;

// The ACK timeout of the stages whose peers may sit across the two-guest
// wire (06, 08, 09) on Soft-RoCE, in place of qp_params' 14: 18 is 1.07 s
// a try (4.096 us x 2^18). At 67 ms a try, 06's credit writes across the
// wire (23 ms each way) and 08's Sends with both guests starved (memcheck,
// CPU hogs beside) failed with IBV_WC_RETRY_EXC_ERR; at 268 ms (16), so
// did 09's four clients in one CI run, against a live server on a loaded
// host. Soft-RoCE on Linux 6.1 retries early on its own: its retransmit
// timer, armed by one packet, is not put off by the ACKs that come after,
// so it fires while a later packet is still on its way (the "spurious
// timeouts" its rxe_comp.c comments on; measured, 09 across the pair,
// idle: the server's credit writes were resent about 40 times a run,
// completer_retry_err, each a duplicate_request at the client), and every
// early retry spends one of retry_cnt's until an ACK comes. A dead peer is
// found within about four seconds (retry_cnt 3: four tries). On a NIC,
// whose ACKs do not wait for an emulated CPU: 14, 67 ms a try, perftest's
// default, so a dead peer is found in about a quarter of a second; on
// iWARP the value is not used (TCP retransmits). Each of those stages
// takes --ack-timeout N; rdma::default_ack_timeout (transport.hpp) picks
// between these two by the device.
inline constexpr std::uint8_t soft_roce_ack_timeout = 18;
inline constexpr std::uint8_t nic_ack_timeout = 14;

// A leaving QP of an SRQ on Soft-RoCE: how long to wait for
// IBV_EVENT_QP_LAST_WQE_REACHED before going on its marker alone (srq.hpp;
// 6.12's came 35 us to 5 ms after the move to ERR, 6.1's never). A NIC
// sends the event: there the wait is --wait-ms.
inline constexpr std::chrono::milliseconds soft_roce_last_wqe = 500ms;

}  // namespace rdma::waiting_policy
