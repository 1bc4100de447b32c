// Stage 06 — a shared receive queue and credits (docs/06-srq-credits.md).
//
// Reading order, as the chapter tells it:
//   protocol.hpp       who sends what to whom; the record and its checks
//   credits.hpp/.cpp   the arithmetic: SRQ depth against the windows, the
//                      two credit ledgers
//   srq_credits.cpp    main: the device, a PD and a CQ, then either role
//   common/include/rdma_tutorial/srq.hpp, common/src/srq.cpp
//                      the SRQ: create, post Recvs in batches, arm the
//                      limit, the async events; the order a QP leaves it
//                      in (srq_qp_departure, last_wqe_notice)
//   common/include/rdma_tutorial/srq_server.hpp, common/src/srq_refill.cpp,
//   common/src/srq_server.cpp
//                      a server's books for many clients on one SRQ: the
//                      refill, a client's credit writes, the async events
//                      sorted, a client let go (stage 09 reuses them)
//   server.hpp         this server's state: its client, the SRQ, the refill
//   server.cpp         N clients on one SRQ and one CQ: take every
//                      completion, check it, repost, return credits
//   clients.cpp        clients joining (a QP on the SRQ, a window registered
//                      for it alone) and going: ERR, drain, destroy
//   common/include/rdma_tutorial/credit_stream.hpp, common/src/credit_stream.cpp,
//   common/include/rdma_tutorial/nap_wait.hpp
//                      the client's side of a credit word: reap, read the
//                      word, how many may go, wait without spinning flat out
//   client.cpp         stream records inside the window the server granted
// Not the lesson:
//   options.cpp        the command line
//   progress.cpp       --progress-ms, the measurements' timeline
//   common/include/rdma_tutorial/waiting.hpp  the numbers the waits use, and
//                      why they suit Soft-RoCE
// Stage 04's handshake comes from common/ (peer.hpp); stage 05's immediate
// encoding too (imm.hpp).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "credits.hpp"
#include "protocol.hpp"
#include "rdma_tutorial/handles.hpp"
#include "rdma_tutorial/command_line.hpp"
#include "rdma_tutorial/peer.hpp"
#include "rdma_tutorial/srq.hpp"

namespace stage06 {

// options.cpp
struct options {
  rdma::device_options device;
  rdma::peer_options peer;              // -s, --bind, -p, --wait-ms, --accept-ms
  std::optional<std::uint8_t> ack_timeout;  // --ack-timeout; unset: rdma::default_ack_timeout
  std::uint32_t size = 64;              // bytes per record, the same on both sides
  // server
  std::uint32_t clients = 4;
  std::uint32_t window = 16;            // writes in flight per client
  std::optional<std::uint32_t> srq_depth;  // default: default_depth()
  std::optional<std::uint32_t> srq_limit;  // default: depth / 4; 0 = not armed
  std::uint32_t repost_batch = 16;
  std::optional<std::uint32_t> credit_batch;  // default: window / 2
  bool plan = false;                    // print the SRQ arithmetic and exit
  std::uint32_t progress_ms = 0;        // a 'progress' line this often; 0 = none
  // client
  std::uint32_t records = 1000;
  std::uint8_t rnr_retry = 0;           // with credits an RNR NAK is a bug: fail at the first
};
bool parse_options(int argc, const char* const* argv, options& out);

int run_server(const options& opts, const rdma::rdma_device& dev);
int run_client(const options& opts, const rdma::rdma_device& dev);

// The SRQ's verbs and the async event queue (common/include/rdma_tutorial/srq.hpp),
// and what the server does with them between completions
// (common/include/rdma_tutorial/srq_server.hpp): taught here, reused by stage 09.
using rdma::arm_srq_limit;
using rdma::async_event_name;
using rdma::async_events;
using rdma::create_srq;
using rdma::post_srq_receives;

}  // namespace stage06
