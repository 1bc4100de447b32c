// Stage 04 — one-sided RDMA Write, with an out-of-band handshake
// (docs/04-rdma-write.md).
//
// Reading order, as the chapter tells it:
//   protocol.hpp                  who sends what to whom, in order; the notice
//   rdma_write.cpp                main: the device, a PD and a CQ, then either story
//   common/src/wire.cpp           the handshake message, byte by byte
//   common/src/tcp.cpp            the sockets that carry it, every wait bounded
//   common/src/peer.cpp           the device as stages 01-03 open it, the TCP meeting,
//                                 our endpoint, the walk to RTS and the line that says so
//   server.cpp                    expose a landing region, hand out its rkey, get told
//   client.cpp                    one RDMA Write, then the notice
//   common/src/completion.cpp     post_and_wait: one request posted, its completion
//                                 waited for
//   throughput.cpp                many writes, filled in for the window of
//   common/src/send_window.cpp    a window, selective signaling, batched posts and polls
//   options.cpp                   the command line
//   hostile.cpp                   not the lesson: a client that lies in the handshake,
//                                 for "What the handshake is trusted for" and the tests
// What stages 01-03 taught comes from common/: the device and GID, the QP
// and its walk to RTS (through peer.hpp), buffers (buffer.hpp), the bounded
// completion wait (completion.hpp).
#pragma once

#include <infiniband/verbs.h>

#include <string_view>

#include <cstdint>
#include <optional>
#include <string>

#include "protocol.hpp"
#include "rdma_tutorial/command_line.hpp"
#include "rdma_tutorial/peer.hpp"

namespace stage04 {

enum class notify_by { send, flag };

// hostile.cpp (not the lesson): --hostile, the client lies in its half of
// the handshake, to show what the server has to take on trust
// (docs/04-rdma-write.md, "What the handshake is trusted for").
enum class hostile_kind {
  none,
  psn_behind,  // tells a first PSN 256 past the one it sends from
  other_qpn,   // tells a QPN 256 past its own
};
hostile_kind parse_hostile(std::string_view name);  // a usage_error otherwise
// The endpoint to tell the server instead of `ours` (which psn-behind moves
// to the upper half of the PSN space first), with a line saying the lie.
rdma::wire::endpoint lie(rdma::wire::endpoint& ours, hostile_kind kind);

// options.cpp
struct options {
  rdma::device_options device;
  rdma::peer_options peer;          // -s, --bind, -p, --wait-ms, --accept-ms
  std::uint32_t size = 4096;        // server: the payload capacity; client: bytes per write
  std::optional<std::uint32_t> iters;  // client: throughput mode, this many writes
  std::uint32_t tx_depth = 128;     // writes in flight at most (perftest's default)
  std::uint32_t cq_mod = 100;       // signal one write in cq_mod (perftest's default)
  notify_by notify = notify_by::send;
  hostile_kind hostile = hostile_kind::none;  // client: a lie in the handshake, on purpose
  // The sender's retry knobs (chapter 03's RTR -> RTS; chapter 10 turns them
  // on a wire that loses packets). Empty: common's qp_params defaults.
  std::optional<std::uint8_t> ack_timeout;  // 4.096 us x 2^N a try; 0 waits forever
  std::optional<std::uint8_t> retry_cnt;    // resends before IBV_WC_RETRY_EXC_ERR
  std::uint8_t tos = 0;                     // each side's packets' IP type of service (traffic_class)
};

// Returns false after --help. Throws rdma::usage_error on a bad command line.
bool parse_options(int argc, const char* const* argv, options& out);

// rdma_write.cpp. An RC QP on dev's PD and CQ with room for tx_depth sends
// and one receive. Create it after the buffers it will use: handles are
// destroyed in reverse, so the QP goes first and no packet can reach memory
// already released.
rdma::qp_ptr create_qp(const rdma::rdma_device& dev, std::uint32_t tx_depth);

// server.cpp, client.cpp: each side's story; the exit code.
int run_server(const options& opts, const rdma::rdma_device& dev);
int run_client(const options& opts, const rdma::rdma_device& dev);

// throughput.cpp: `iters` writes of the same source (sge) to the start of
// the peer's region, at most tx_depth in flight, one in cq_mod signaled;
// prints perftest's result line.
void write_stream(ibv_qp* qp, ibv_cq* cq, const ibv_sge& sge, const rdma::wire::endpoint& peer, const options& opts);

}  // namespace stage04
