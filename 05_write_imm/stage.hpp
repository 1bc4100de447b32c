// Stage 05 — RDMA Write with Immediate (docs/05-write-imm.md).
//
// Reading order, as the chapter tells it:
//   protocol.hpp                  who sends what to whom, in order; the immediate's types
//   write_imm.cpp                 main: the device, a PD and a CQ, then either story
//   server.cpp                    expose the slots, post the Recvs, hand out the rkey
//   target.cpp                    what a Write with Immediate looks like at the target:
//                                 the Recvs it consumes, the completion, the immediate
//   common/src/imm.cpp            8 bits of type, 24 of index, checked on arrival
//   client.cpp                    the self-test, one write per slot, END
//   latency.cpp                   ping-pong of Writes with Immediate
//   common/src/latency_report.cpp percentiles, perftest's way of printing them
//   options.cpp                   the command line
// Stage 04's handshake and send window come from common/ (peer.hpp,
// send_window.hpp), stage 03's QP walk through them: common/src/peer.cpp's
// connect_and_describe walks the QP to RTS and gives the line the server
// and the client print (with the retry counts, this stage's lesson), and
// wait_for_room (common/include/rdma_tutorial/peer.hpp) holds latency.cpp's
// posts until the send queue has room.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol.hpp"
#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/latency_report.hpp"
#include "rdma_tutorial/command_line.hpp"
#include "rdma_tutorial/peer.hpp"
#include "rdma_tutorial/send_window.hpp"

namespace stage05 {

// options.cpp
struct options {
  rdma::device_options device;
  rdma::peer_options peer;             // -s, --bind, -p, --wait-ms, --accept-ms
  std::uint32_t size = 4096;           // bytes per slot, and per write
  std::uint32_t slots = 4;             // slots in the landing region
  std::optional<std::uint32_t> iters;  // client: throughput (or with --latency, ping-pong) mode
  bool latency = false;                // client: ping-pong instead of a stream
  std::uint32_t tx_depth = 128;        // writes in flight at most
  std::uint32_t cq_mod = 100;          // signal one write in cq_mod
  std::uint32_t rx_depth = 512;        // Recvs the server keeps posted
  std::optional<std::uint8_t> rnr_retry;   // default: 3 for one pass, 7 for streams
  std::optional<std::uint8_t> retry_cnt;   // default: 3 (qp_params)
  std::optional<std::uint32_t> send_imm;   // client: one extra raw immediate, to try the server's checks
};
bool parse_options(int argc, const char* const* argv, options& out);

// write_imm.cpp: an RC QP with room for tx_depth sends and rx_depth Recvs,
// created after the buffers it uses (destroyed before them).
rdma::qp_ptr create_qp(const rdma::rdma_device& dev, const options& opts);
int run_server(const options& opts, const rdma::rdma_device& dev);
int run_client(const options& opts, const rdma::rdma_device& dev);

// target.cpp ----------------------------------------------------------------

// The wr_id of ping-pong's writes (pings and answers): this top bit and the
// write's number in the send queue. Recvs have wr_id 0, so a completion says
// whose it is even when it failed (a failed completion's opcode is
// undefined), and the first answer is not taken for a Recv.
inline constexpr std::uint64_t pong_tag = 1ull << 63;

// Posts `count` Recvs with no buffer at all (num_sge 0): a Write with
// Immediate consumes a Recv but puts nothing in it, its payload went where
// the writer said. A buffer is needed only where the peer may also Send;
// in this protocol nobody does, and a Send arriving here fails.
void post_receives(ibv_qp* qp, std::uint32_t count);
// One such Recv, in place of one consumed: once per message, so its work
// request lives on the stack (a list in a std::vector cost a heap
// allocation per round trip in --latency; scripts/icount.sh counts it).
void repost_receive(ibv_qp* qp);

// The immediate a completion carries, in host byte order, or nothing when
// the completion is not a Write with Immediate's.
std::optional<std::uint32_t> immediate_of(const ibv_wc& wc);

// Everything the server's receive loop needs.
struct target {
  const rdma::rdma_device& dev;
  ibv_qp* qp;
  const rdma::tcp::socket& client;
  const rdma::registered_buffer& landing;
  const rdma::wire::endpoint& peer;  // with a region: ping-pong, answer each DATA there
  const options& opts;
  rdma::send_queue_room* answers;    // ping-pong: our send queue, which the answers fill
};
// The self-test, then DATA until END; returns how many DATA writes came.
std::uint32_t serve(const target& t);

// client.cpp ----------------------------------------------------------------

// One Write with Immediate of `sge` (nullptr: 0 bytes) to remote_addr,
// carrying `imm` (host order), signaled.
void post_write_imm(ibv_qp* qp, std::uint64_t wr_id, const ibv_sge* sge, const rdma::wire::endpoint& peer,
                    std::uint64_t remote_addr, std::uint32_t imm);

// latency.cpp ------------------------------------------------------------------

// perftest's latency line (common/, shared with stage 08).
using rdma::latency_report;
// The client's ping-pong: --iters round trips, then the report.
void ping_pong(const rdma::rdma_device& dev, ibv_qp* qp, const rdma::registered_buffer& source,
               const rdma::tcp::socket& server, const rdma::wire::endpoint& peer, const options& opts);
// The server's answer to one DATA write in ping-pong mode: the same bytes
// back into the client's region, imm DATA|0, once t.answers has room.
void answer(const target& t, std::uint32_t slot, std::uint32_t bytes);

}  // namespace stage05
