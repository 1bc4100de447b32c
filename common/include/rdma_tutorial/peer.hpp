// What every two-peer stage does before its own lesson, as stage 04 teaches
// it (docs/04-rdma-write.md): open the device the way stages 01-03 did,
// meet the peer over TCP, exchange endpoints, walk the QP to RTS.
//
// Nothing here prints; each stage shows what it wants of these steps.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rdma_tutorial/coarse_clock.hpp"
#include "rdma_tutorial/gid.hpp"
#include "rdma_tutorial/handles.hpp"
#include "rdma_tutorial/limits.hpp"
#include "rdma_tutorial/command_line.hpp"
#include "rdma_tutorial/qp.hpp"
#include "rdma_tutorial/send_window.hpp"
#include "rdma_tutorial/tcp.hpp"
#include "rdma_tutorial/waiting.hpp"
#include "rdma_tutorial/wire.hpp"

namespace rdma {

// Stages 01-03 in one place: the device, its RoCE v2 GID, the QP parameters
// (path_mtu = the port's active_mtu, the same at both ends on any link of
// one Ethernet MTU), a PD and one CQ. Members in teardown order.
struct rdma_device {
  context_ptr ctx;
  device_limits limits;      // its limits (ibv_query_device): what a stage may ask for
  ibv_port_attr port_attr{}; // the port's (ibv_query_port): state, MTU, link layer
  gid_entry gid;
  qp_params params;
  pd_ptr pd;
  cq_ptr cq;
};

// `qp_access`: what the peer may do to our memory (qp_access_flags), e.g.
// IBV_ACCESS_REMOTE_WRITE; 0 for nothing. `cq_entries` 0: no CQ (dev.cq
// stays empty; stage 08 creates its own, bound to a completion channel);
// checked against the device's max_cqe first, `cq_option` naming the
// option that sized it (limits.hpp). A port whose link layer is not
// Ethernet (InfiniBand) is refused: these stages reach the peer by its GID
// over RoCE, and the handshake carries no LID. An iWARP device is refused
// too, in one line (transport.hpp): its QPs are connected by rdma_cm only;
// a stage built on RDMA Write with Immediate names that use in
// `uses_write_with_imm` ("every record of this stage is one"), and a device
// whose provider posts none (siw) is refused for that first.
rdma_device open_rdma_device(const device_options& opts, int cq_entries, unsigned qp_access,
                             std::string_view cq_option = {}, std::string_view uses_write_with_imm = {});

// "rxe0 port 1, GID [1] ::ffff:192.0.2.1 (RoCE v2), path_mtu 1024"
std::string describe(const rdma_device& dev);

// Our half of the handshake: the QP's number, a fresh random first PSN (so
// packets of an earlier connection on a reused QPN cannot pass for this
// one's), our GID, our port's path MTU. The caller adds the memory it exposes, if any.
wire::endpoint local_endpoint(const rdma_device& dev, const ibv_qp* qp);

// The path MTU both ends can use: the smaller of ours and the peer's (its
// endpoint's mtu, in bytes).
ibv_mtu agree_path_mtu(ibv_mtu ours, std::uint32_t peer_bytes);

// RESET -> INIT -> RTR -> RTS toward `peer` (stage 03's connect_qp_rts),
// with the device's params or a stage's variation of them, at the path MTU
// agree_path_mtu gives.
void connect_to_peer(ibv_qp* qp, const wire::endpoint& ours, const wire::endpoint& peer, const qp_params& params);

// connect_to_peer, then the line a stage prints to say so:
//   QP 0x11: RESET -> INIT -> RTR -> RTS (sq_psn 0x1a2b3c, rq_psn 0x4d5e6f)
// `with_retries` adds the retry counts our sends got (", retry_cnt 3,
// rnr_retry 7" before the bracket closes): stage 05, whose RNR lesson
// turns them, shows them.
std::string connect_and_describe(ibv_qp* qp, const wire::endpoint& ours, const wire::endpoint& peer,
                                 const qp_params& params, bool with_retries = false);

// The TCP meeting. The server takes the first client within accept_ms and
// reads its endpoint; the client connects (retrying while nobody listens
// yet), sends its endpoint and reads the server's. Every message is bounded
// by wait_ms and checked on arrival (wire.hpp).
struct peer_link {
  tcp::socket socket;
  wire::endpoint peer;
};
peer_link accept_peer(const tcp::socket& listener, int accept_ms, int wait_ms);

// Looks at `arrived` until it returns true: flat out for the first 100 us
// (what comes at once is seen at once), then once a millisecond, sleeping in
// between on the peer's TCP connection. A program spinning flat out for a
// long run would take a CPU the peer on the same host needs (stage 08
// sleeps properly, on a completion channel). Gives up at wait_ms, or soon
// after the peer closes the connection: a peer that closes once its last
// work request completed at its end may still be a moment ahead of that
// request's effect here, so `arrived` gets 100 ms of grace before
//   "<who> closed the connection while we waited for <what>"
// is thrown; a deadline passing throws "nothing within N ms while we
// waited for <what>", with `silent_hint` as its likely fix when given (what
// a silent peer means in this protocol).
// With `spins` the loop never sleeps (it still looks at the connection,
// without waiting, once a tick of the coarse clock): a latency measurement cannot afford
// a millisecond's nap, and pays with a busy CPU.
//
// A template, so that each look is a direct call the compiler can inline:
// the latency modes (05's --latency, 08's --poll) look a few dozen times
// per round trip, and a std::function here cost a heap allocation per wait
// and an indirect call per look (callgrind: scripts/icount.sh). Only the
// look and its counter are here; the clock, the deadline and the socket,
// once every waiting_policy::looks_per_clock looks, are in wait_bound.
enum class waiting { backs_off, spins };

// The slow half of a wait (peer.cpp): where it started, whether its
// deadline has passed (throws), whether to nap, whether the peer closed.
class wait_bound {
 public:
  wait_bound(const tcp::socket& peer, std::string_view who, std::string_view what, int wait_ms, waiting how,
             std::string_view silent_hint)
      : peer_(peer), who_(who), what_(what), wait_ms_(wait_ms), how_(how), silent_hint_(silent_hint) {}
  // Every looks_per_clock looks: throws once wait_ms have passed; naps or looks
  // at the socket as the policy says; true when the peer has closed (the
  // grace period then starts).
  bool peer_closed();
  bool in_grace() const;  // the grace period after a close has not run out
  bool napping() const { return napping_; }  // past the flat-out start: one look a nap
  [[noreturn]] void throw_closed() const;

 private:
  const tcp::socket& peer_;
  std::string_view who_, what_;
  int wait_ms_;
  waiting how_;
  std::string_view silent_hint_;
  std::optional<coarse_clock::time_point> start_;  // the deadline's clock
  std::optional<std::chrono::steady_clock::time_point> fine_start_;  // backs_off: when to nap
  bool napping_ = false;
  coarse_clock::time_point last_socket_look_{};  // a spinning wait looks at the socket once a tick, from its start
  coarse_clock::time_point grace_end_{};
};

template <class Arrived>
void wait_while_connected(const tcp::socket& peer, std::string_view who, std::string_view what, int wait_ms,
                          Arrived&& arrived, waiting how = waiting::backs_off, std::string_view silent_hint = {}) {
  wait_bound bound(peer, who, what, wait_ms, how, silent_hint);
  for (std::uint32_t looks = 1; !arrived(); ++looks) {
    if (looks % waiting_policy::looks_per_clock != 0) continue;
    if (!bound.peer_closed()) {
      if (bound.napping()) --looks;  // one look a nap from now on: the next one comes back here
      continue;
    }
    while (bound.in_grace()) {
      if (arrived()) return;
    }
    bound.throw_closed();
  }
}
peer_link connect_peer(const std::string& host, std::uint16_t port, const wire::endpoint& ours, int wait_ms);

// Before posting `count` more sends: wait_while_connected until `room`
// (send_window.hpp) fits them, calling reap() at each look. reap polls
// the CQ and hands each signaled send's completion to room.completed;
// what else a completion polled meanwhile means (an answer, a stray
// ping) is the stage's, so the polling is too. Returns at once when the
// queue has room, as it nearly always has: ACKs free it long before (so
// `who` is a plain string, measured only when the wait begins).
template <class Reap>
void wait_for_room(const send_queue_room& room, std::uint32_t count, const tcp::socket& peer, const char* who,
                   int wait_ms, Reap&& reap) {
  if (room.fits(count)) return;
  wait_while_connected(peer, who, "room in our send queue", wait_ms, [&] {
    reap();
    return room.fits(count);
  });
}

}  // namespace rdma
