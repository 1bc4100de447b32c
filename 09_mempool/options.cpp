// mempool's command line: the peer options every two-peer stage shares
// (rdma_cm's address and port, as in stage 07), the record size, the
// server's pool and grants, the client's records, and --pool-cost.
#include <string>

#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/imm.hpp"
#include "rdma_tutorial/record.hpp"
#include "stage.hpp"

namespace stage09 {

std::uint32_t options::chunk_bytes() const {
  const std::uint64_t need = std::uint64_t{window} * record_size;
  return chunk_size.value_or(static_cast<std::uint32_t>((need + rdma::page_size - 1) / rdma::page_size * rdma::page_size));
}

bool parse_options(int argc, const char* const* argv, options& out) {
  rdma::option_parser parser("mempool",
                             "Without -s: the log server, --clients clients streaming records into slots of one "
                             "pre-registered pool. With -s ADDR: a client. --pool-cost: the pool against ibv_reg_mr, "
                             "then exit.");
  parser.add_peer_options(out.peer, rdma::option_parser::peer_channel::rdma_cm);
  parser.add_ack_timeout(out.ack_timeout);
  parser.add(0, "record-size", "BYTES", "bytes per record, the same on both sides (default 64, at least 16)",
             [&](std::string_view v) { out.record_size = rdma::parse_u32(v, "--record-size", rdma::min_record, max_record); });
  parser.add(0, "clients", "N", "server: clients to serve before it exits (default 4)",
             [&](std::string_view v) { out.clients = rdma::parse_u32(v, "--clients", 1, 256); });
  parser.add(0, "window", "N", "server: slots granted to each client, its credits (default 16)",
             [&](std::string_view v) { out.window = rdma::parse_u32(v, "--window", 1, max_window); });
  parser.add(0, "chunk-size", "BYTES", "server: bytes per pool chunk, a multiple of the page size (default: window x "
                                       "record size, in whole pages)",
             [&](std::string_view v) {
               out.chunk_size = rdma::parse_u32(v, "--chunk-size", static_cast<long>(rdma::page_size), max_chunk);
               if (*out.chunk_size % rdma::page_size != 0) {
                 throw rdma::usage_error("--chunk-size must be a multiple of the page size, " +
                                         std::to_string(rdma::page_size) + " bytes, got " + std::string(v));
               }
             });
  parser.add(0, "pool-chunks", "N", "server: chunks in the pool, clients served at once (default: --clients)",
             [&](std::string_view v) { out.pool_chunks = rdma::parse_u32(v, "--pool-chunks", 1, 4096); });
  parser.add(0, "credit-batch", "N", "server: records consumed per credit return (default window / 2)",
             [&](std::string_view v) { out.credit_batch = rdma::parse_u32(v, "--credit-batch", 1, 1024); });
  parser.add(0, "spin-us", "US", "server: spin this long on an empty CQ before sleeping on the channel (default 0: "
                                 "sleep at once)",
             [&](std::string_view v) { out.spin_us = rdma::parse_u32(v, "--spin-us", 0, 1000000); });
  parser.add(0, "pool-cost", "", "print ibv_reg_mr + ibv_dereg_mr against the pool, 4 KiB to 4 MiB, and exit",
             [&](std::string_view) { out.pool_cost = true; });
  parser.add(0, "cost-runs", "N", "--pool-cost: runs per size, the median is printed (default 5)",
             [&](std::string_view v) { out.cost_runs = static_cast<int>(rdma::parse_integer(v, "--cost-runs", 1, 1000)); });
  parser.add(0, "records", "N", "client: records to send before END (default 1000)",
             [&](std::string_view v) { out.records = rdma::parse_u32(v, "--records", 0, 16000000); });
  parser.add(0, "latency", "", "client: one record at a time, each timed until its credit returns",
             [&](std::string_view) { out.latency = true; });
  parser.add(0, "resolve-ms", "MS", "client: timeout of address and route resolution (default 2000)",
             [&](std::string_view v) { out.resolve_ms = static_cast<int>(rdma::parse_integer(v, "--resolve-ms", 1, 600000)); });
  parser.add(0, "hostile", "KIND", "client: break one of the server's rules on purpose: on record 0 "
                                   "slot-out-of-range, slot-not-granted, oversized, outside-grant or past-window; "
                                   "or ignore-credits (write past the credit edge), or silent (write nothing after "
                                   "the handshake)",
             [&](std::string_view v) { out.hostile = parse_hostile(v); });
  if (!parser.parse(argc, argv)) return false;

  parser.check_roles(out.peer, {"records", "latency", "resolve-ms", "hostile"});
  if (out.peer.is_client()) {
    for (const char* server_only : {"clients", "window", "chunk-size", "pool-chunks", "credit-batch", "spin-us", "pool-cost"}) {
      if (parser.given(server_only)) throw rdma::usage_error(std::string("--") + server_only + " is for the server (without -s)");
    }
  }
  if (out.chunk_size && *out.chunk_size % rdma::page_size != 0) {
    throw rdma::usage_error("--chunk-size must be a multiple of " + std::to_string(rdma::page_size) + ": chunks are page-aligned");
  }
  if (std::uint64_t{out.window} * out.record_size > out.chunk_bytes()) {
    throw rdma::usage_error("--window x --record-size (" + std::to_string(std::uint64_t{out.window} * out.record_size) +
                            ") does not fit in a chunk of " + std::to_string(out.chunk_bytes()) + " bytes");
  }
  if (std::uint64_t{out.chunk_count()} * out.chunk_bytes() > (1u << 30)) {
    throw rdma::usage_error("--pool-chunks x --chunk-size must stay within 1 GiB");
  }
  if (std::uint64_t{out.chunk_count()} * out.window >= rdma::imm::index_limit) {
    throw rdma::usage_error("--pool-chunks x --window must stay below 2^24: a slot number travels in 24 bits");
  }
  if (out.credit_batch && *out.credit_batch > out.window) {
    throw rdma::usage_error("--credit-batch must not exceed --window: a client with its whole window in flight would "
                            "wait for a return that never comes");
  }
  return true;
}

}  // namespace stage09
