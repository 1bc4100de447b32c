// What every two-peer stage does before its own lesson, as stage 04 teaches
// it (docs/04-rdma-write.md): open the device the way stages 01-03 did,
// meet the peer over TCP, exchange endpoints, walk the QP to RTS.
//
// Nothing here prints; each stage shows what it wants of these steps.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "rdma_tutorial/gid.hpp"
#include "rdma_tutorial/handles.hpp"
#include "rdma_tutorial/limits.hpp"
#include "rdma_tutorial/options.hpp"
#include "rdma_tutorial/qp.hpp"
#include "rdma_tutorial/tcp.hpp"
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
// over RoCE, and the handshake carries no LID.
rdma_device open_rdma_device(const device_options& opts, int cq_entries, unsigned qp_access,
                             std::string_view cq_option = {});

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
// without waiting, every 4096 looks): a latency measurement cannot afford
// a millisecond's nap, and pays with a busy CPU.
enum class waiting { backs_off, spins };
void wait_while_connected(const tcp::socket& peer, std::string_view who, std::string_view what, int wait_ms,
                          const std::function<bool()>& arrived, waiting how = waiting::backs_off,
                          std::string_view silent_hint = {});
peer_link connect_peer(const std::string& host, std::uint16_t port, const wire::endpoint& ours, int wait_ms);

}  // namespace rdma
