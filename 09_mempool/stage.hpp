// Stage 09 — a memory pool and the whole pipeline (docs/09-mempool.md).
//
// Reading order, as the chapter tells it: stage 06's pieces (the SRQ, the
// server's books, the credit stream), plus the pool, the memory windows and
// the grants:
//   pool.hpp/.cpp     memory registered at start-up, carved into chunks
//   pool_cost.cpp     what that saves: stage 02's cost table, the pool beside it
//   protocol.hpp/.cpp who sends what to whom; the hello and the grant
//   grants.hpp/.cpp   the server's rules: slots, grants, what a completion may
//                     claim, the credit edge, the sequence numbers (pure)
//   mempool.cpp       main: --pool-cost, or either role
//   common/include/rdma_tutorial/srq_server.hpp
//                     stage 06's books: a client on the SRQ (srq_client), its
//                     departure (srq_clients), the refill, the events sorted
//   server.hpp        the server's state: the pool, the SRQ, the CQ on its
//                     channel, this stage's client
//   server.cpp        the loop: sleep on the channel, take each completion,
//                     check it before reading the slot, credits, the report
//   clients.cpp       a client's life in order: a grant and a memory window
//                     when it joins, the bind that opens its credits, the
//                     events about it, its departure and its chunk returned
//   common/include/rdma_tutorial/credit_stream.hpp
//                     stage 06's client side of a credit word
//   client.cpp        connect, stream records inside the credit edge, END,
//                     disconnect
//   common/src/cm_qp.cpp, common/src/cm_connect.cpp  stage 07's PD, CQ and
//                     QP on the device rdma_cm chose, and its connect,
//                     retried while the server starts
// Not the lesson:
//   options.cpp       the command line
//   hostile.cpp       the tests' client that breaks one of the server's
//                     rules on purpose (--hostile)
// What stages 06-08 taught comes from common/: the SRQ (srq.hpp), its
// server's books (srq_server.hpp), the credit stream (credit_stream.hpp),
// the events of rdma_cm (cm_events.hpp), the record (record.hpp).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "grants.hpp"
#include "pool.hpp"
#include "protocol.hpp"
#include "rdma_tutorial/command_line.hpp"
#include "rdma_tutorial/transport.hpp"  // default_ack_timeout

namespace stage09 {

// hostile.cpp: the rule a --hostile client breaks (the tests' harness).
enum class hostile_kind { none, slot_out_of_range, slot_not_granted, oversized, outside_grant, past_window, ignore_credits, silent };
const char* hostile_name(hostile_kind kind);
hostile_kind parse_hostile(std::string_view name);  // a usage_error names the kinds
std::string hostile_kinds_text();                   // "slot-out-of-range, ..., silent"
// Record 0's work request, changed as `kind` says, and a line saying how;
// nothing for the kinds that break no rule of one record.
void break_a_rule(hostile_kind kind, const grant_msg& g, ibv_send_wr& wr, ibv_sge& sge);

struct options {
  rdma::peer_options peer;                  // -s, --bind, -p, --wait-ms, --accept-ms
  std::optional<std::uint8_t> ack_timeout;  // --ack-timeout; unset: rdma::default_ack_timeout
  std::uint32_t record_size = 64;           // both sides
  // server
  std::uint32_t clients = 4;                // connections to serve, then exit
  std::uint32_t window = 16;                // slots per grant: each client's credits
  std::optional<std::uint32_t> chunk_size;  // default: window x record size, in whole pages
  std::optional<std::uint32_t> pool_chunks; // default: --clients
  std::optional<std::uint32_t> credit_batch;  // default: window / 2
  std::uint32_t spin_us = 0;                // > 0: spin this long on an empty CQ before sleeping
  bool pool_cost = false;                   // print the cost table and exit
  int cost_runs = 5;
  // client
  std::uint64_t records = 1000;
  bool latency = false;                     // one record at a time, each timed to its credit
  hostile_kind hostile = hostile_kind::none;
  int resolve_ms = 2000;

  std::uint32_t chunk_bytes() const;        // chunk_size or its default
  std::uint32_t chunk_count() const { return pool_chunks.value_or(clients); }
};
bool parse_options(int argc, const char* const* argv, options& out);

// server.cpp, client.cpp: each side's story; the exit code.
int run_server(const options& opts, rdma_event_channel* channel);
int run_client(const options& opts, rdma_event_channel* channel);

}  // namespace stage09
