// srq_credits' command line: the device options every stage shares, the
// peer's address and TCP port, the server's sizes, the client's records.
#include <string>

#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage06 {

bool parse_options(int argc, const char* const* argv, options& out) {
  rdma::option_parser parser("srq_credits",
                             "Without -s: the server, one shared receive queue for --clients clients. With -s ADDR: a "
                             "client, streaming records inside the window the server grants.");
  parser.add_device_options(out.device);
  parser.add_peer_options(out.peer);
  parser.add_ack_timeout(out.ack_timeout);
  parser.add(0, "size", "BYTES", "bytes per record, the same on both sides (default 64, at least 16)",
             [&](std::string_view v) { out.size = rdma::parse_u32(v, "--size", min_record, 1 << 20); });
  parser.add(0, "clients", "N", "server: clients to serve, one QP each on the SRQ (default 4)",
             [&](std::string_view v) { out.clients = rdma::parse_u32(v, "--clients", 1, 64); });
  parser.add(0, "window", "N", "server: writes in flight per client, its credits (default 16)",
             [&](std::string_view v) { out.window = rdma::parse_u32(v, "--window", 1, max_window); });
  parser.add(0, "srq-depth", "N", "server: Recvs in the SRQ (default 2 x (clients x window + repost batch))",
             [&](std::string_view v) { out.srq_depth = rdma::parse_u32(v, "--srq-depth", 1, 65536); });
  parser.add(0, "srq-limit", "N", "server: the SRQ limit, an event when fewer are posted; 0: not armed (default depth / 4)",
             [&](std::string_view v) { out.srq_limit = rdma::parse_u32(v, "--srq-limit", 0, 65535); });
  parser.add(0, "repost-batch", "N", "server: consumed Recvs reposted together (default 16)",
             [&](std::string_view v) { out.repost_batch = rdma::parse_u32(v, "--repost-batch", 1, 65536); });
  parser.add(0, "credit-batch", "N", "server: records consumed per credit return (default window / 2)",
             [&](std::string_view v) { out.credit_batch = rdma::parse_u32(v, "--credit-batch", 1, 1024); });
  parser.add(0, "plan", "", "server: print the SRQ arithmetic for these options, and exit",
             [&](std::string_view) { out.plan = true; });
  parser.add(0, "progress-ms", "MS", "server: every MS from the first record, a line 'progress T ms: CLIENT:RECORDS ...' (default 0: none)",
             [&](std::string_view v) { out.progress_ms = rdma::parse_u32(v, "--progress-ms", 1, 3600000); });
  parser.add(0, "records", "N", "client: records to send before END (default 1000)",
             [&](std::string_view v) { out.records = rdma::parse_u32(v, "--records", 0, 16000000); });
  parser.add(0, "rnr-retry", "N", "client: retries after a 'receiver not ready' NAK, 0-7 (default 0: with credits "
                                  "an RNR NAK is a bug, so the first one fails)",
             [&](std::string_view v) { out.rnr_retry = static_cast<std::uint8_t>(rdma::parse_integer(v, "--rnr-retry", 0, 7)); });
  if (!parser.parse(argc, argv)) return false;

  parser.check_roles(out.peer, {"records", "rnr-retry"});
  if (out.peer.is_client()) {
    for (const char* server_only : {"clients", "window", "srq-depth", "srq-limit", "repost-batch", "credit-batch", "plan", "progress-ms"}) {
      if (parser.given(server_only)) throw rdma::usage_error(std::string("--") + server_only + " is for the server (without -s)");
    }
  }
  if (out.credit_batch && *out.credit_batch > out.window) {
    throw rdma::usage_error("--credit-batch must not exceed --window: a client with its whole window in flight would "
                            "wait for a return that never comes");
  }
  if (out.srq_depth && out.srq_limit && *out.srq_limit >= *out.srq_depth) {
    throw rdma::usage_error("--srq-limit must be below --srq-depth");
  }
  if (std::uint64_t{out.clients} * out.window * out.size > (1u << 30)) {
    throw rdma::usage_error("--clients x --window x --size must stay within 1 GiB");
  }
  return true;
}

}  // namespace stage06
