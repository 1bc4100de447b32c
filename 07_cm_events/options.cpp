// cm_events' command line: the peer options every two-peer stage shares
// (now naming an rdma_cm address and port instead of a TCP one), the size,
// and the knobs rdma_cm hands to the connection.
#include <string>

#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage07 {

namespace {

std::uint8_t parse_small(std::string_view v, const char* option, long max) {
  return static_cast<std::uint8_t>(rdma::parse_integer(v, option, 0, max));
}

}  // namespace

bool parse_options(int argc, const char* const* argv, options& out) {
  rdma::option_parser parser("cm_events",
                             "Without -s: the server, listening with rdma_cm. With -s ADDR: the client, connecting "
                             "by rdma_cm events, then writing, reading back and telling.");
  parser.add_peer_options(out.peer, rdma::option_parser::peer_channel::rdma_cm);
  parser.add(0, "size", "BYTES", "server: the region's size; client: bytes to write and read back (default 4096)",
             [&](std::string_view v) {
               out.size = static_cast<std::uint32_t>(rdma::parse_integer(v, "--size", 1, 1 << 26));
             });
  parser.add(0, "resolve-ms", "MS", "client: timeout of address and route resolution (default 2000)",
             [&](std::string_view v) {
               out.resolve_ms = static_cast<int>(rdma::parse_integer(v, "--resolve-ms", 1, 600000));
             });
  // 7 would hide a dead peer: rnr_retry_count 7 retries forever by the
  // spec, and Soft-RoCE retries forever for a retry_count of 7 as well.
  parser.add(0, "retry-count", "N", "client: resends of an unanswered packet (both ends use it), 0-6 (default 3)",
             [&](std::string_view v) { out.retry_count = parse_small(v, "--retry-count", 6); });
  parser.add(0, "rnr-retry-count", "N", "how often the peer resends a Send that finds no Recv here, 0-6 (default 3)",
             [&](std::string_view v) { out.rnr_retry_count = parse_small(v, "--rnr-retry-count", 6); });
  parser.add(0, "initiator-depth", "N", "client: RDMA Reads in flight at once, 0-16 (default 1)",
             [&](std::string_view v) { out.initiator_depth = parse_small(v, "--initiator-depth", 16); });
  parser.add(0, "responder-resources", "N", "server: the client's RDMA Reads it serves at once, 0-16 (default 1)",
             [&](std::string_view v) { out.responder_resources = parse_small(v, "--responder-resources", 16); });
  parser.add(0, "ack-timeout", "N", "client: the QP's ACK timeout, 4.096 us x 2^N, 1-31 (default: rdma_cm's)",
             [&](std::string_view v) {
               out.ack_timeout = static_cast<std::uint8_t>(rdma::parse_integer(v, "--ack-timeout", 1, 31));  // 0: forever
             });
  parser.add(0, "tos", "N",
             "client: the IP header's type of service for the connection's packets, 0-255: DSCP x 4 + ECN "
             "(default: the port's, 0)",
             [&](std::string_view v) {
               out.tos = static_cast<std::uint8_t>(rdma::parse_integer(v, "--tos", 0, 255));
             });
  parser.add(0, "iters", "N", "client: rounds of write, read back, compare (default 1)", [&](std::string_view v) {
    out.iters = static_cast<std::uint32_t>(rdma::parse_integer(v, "--iters", 1, 100000000));
  });
  if (!parser.parse(argc, argv)) return false;

  parser.check_roles(out.peer, {"resolve-ms", "retry-count", "initiator-depth", "ack-timeout", "tos", "iters"});
  if (out.peer.is_client() && parser.given("responder-resources")) {
    throw rdma::usage_error("--responder-resources is the server's (it answers the client's reads)");
  }
  return true;
}

}  // namespace stage07
