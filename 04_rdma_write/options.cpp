// rdma_write's command line: the device options every stage shares, the
// peer's address and TCP port, and the sizes of the writes.
#include <string>

#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage04 {

bool parse_options(int argc, const char* const* argv, options& out) {
  rdma::option_parser parser("rdma_write",
                             "Without -s: the server, exposing a landing region. With -s ADDR: the client, writing "
                             "into it with RDMA Write.");
  parser.add_device_options(out.device);
  parser.add_peer_options(out.peer);
  parser.add(0, "size", "BYTES", "server: the payload capacity, rounded up to 8; client: bytes per write (default 4096)",
             [&](std::string_view v) {
               out.size = static_cast<std::uint32_t>(rdma::parse_integer(v, "--size", 1, 1 << 26));
             });
  parser.add(0, "notify", "send|flag", "how the client tells the server it wrote: a Send, or a flag word (default send)",
             [&](std::string_view v) {
               if (v == "send") {
                 out.notify = notify_by::send;
               } else if (v == "flag") {
                 out.notify = notify_by::flag;
               } else {
                 throw rdma::usage_error("--notify takes 'send' or 'flag', got '" + std::string(v) + "'");
               }
             });
  parser.add(0, "iters", "N", "client: throughput mode, N writes, and a perftest-style result line",
             [&](std::string_view v) {
               out.iters = static_cast<std::uint32_t>(rdma::parse_integer(v, "--iters", 1, 100000000));
             });
  parser.add(0, "tx-depth", "N", "client: writes in flight at most (default 128)", [&](std::string_view v) {
    out.tx_depth = static_cast<std::uint32_t>(rdma::parse_integer(v, "--tx-depth", 1, 4096));
  });
  parser.add(0, "cq-mod", "N", "client: signal one write in N (default 100, at most --tx-depth)",
             [&](std::string_view v) {
               out.cq_mod = static_cast<std::uint32_t>(rdma::parse_integer(v, "--cq-mod", 1, 4096));
             });
  parser.add(0, "hostile", "KIND",
             "client: lie in the handshake on purpose: psn-behind (send from a PSN behind the one we tell) or "
             "other-qpn (tell a QPN not ours)",
             [&](std::string_view v) { out.hostile = parse_hostile(v); });
  parser.add(0, "ack-timeout", "N",
             "client: wait 4.096 us x 2^N for an ACK before resending, 0-31; 0 waits forever (default 14: 67 ms)",
             [&](std::string_view v) {
               out.ack_timeout = static_cast<std::uint8_t>(rdma::parse_integer(v, "--ack-timeout", 0, 31));
             });
  parser.add(0, "retry-cnt", "N", "client: resends of an unacknowledged write, 0-7, before it fails (default 3)",
             [&](std::string_view v) {
               out.retry_cnt = static_cast<std::uint8_t>(rdma::parse_integer(v, "--retry-cnt", 0, 7));
             });
  parser.add(0, "tos", "N",
             "the IP header's type of service for our packets, 0-255: DSCP x 4 + ECN, the address vector's "
             "traffic_class (default 0)",
             [&](std::string_view v) { out.tos = static_cast<std::uint8_t>(rdma::parse_integer(v, "--tos", 0, 255)); });
  if (!parser.parse(argc, argv)) return false;

  parser.check_roles(out.peer, {"iters", "tx-depth", "cq-mod", "hostile", "ack-timeout", "retry-cnt"});
  // perftest's rule: never more signaled writes apart than fit in flight.
  if (out.cq_mod > out.tx_depth) {
    if (parser.given("cq-mod")) throw rdma::usage_error("--cq-mod must not exceed --tx-depth");
    out.cq_mod = out.tx_depth;
  }
  return true;
}

}  // namespace stage04
