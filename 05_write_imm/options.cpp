// write_imm's command line: the device options every stage shares, the
// peer's address and TCP port, the slots, and the modes.
#include <arpa/inet.h>

#include <charconv>
#include <string>

#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage05 {

namespace {

// "0x01000009" or "16777225": any 32-bit value, on purpose unchecked.
std::uint32_t parse_imm(std::string_view v) {
  const bool hex = v.starts_with("0x") || v.starts_with("0X");
  const std::string_view digits = hex ? v.substr(2) : v;
  std::uint32_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, hex ? 16 : 10);
  if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size()) {
    throw rdma::usage_error("--send-imm expects a 32-bit number (0x... or decimal), got '" + std::string(v) + "'");
  }
  return value;
}

std::uint32_t number(std::string_view v, const char* name, long min, long max) {
  return static_cast<std::uint32_t>(rdma::parse_integer(v, name, min, max));
}

}  // namespace

bool parse_options(int argc, const char* const* argv, options& out) {
  rdma::option_parser parser("write_imm",
                             "Without -s: the server, exposing slots and taking Writes with Immediate. With -s ADDR: "
                             "the client, writing them.");
  parser.add_device_options(out.device);
  parser.add('s', "server", "ADDR", "be the client of the server at ADDR (default: be the server)",
             [&](std::string_view v) {
               if (v.empty()) throw rdma::usage_error("--server needs an address");
               out.server = v;
             });
  parser.add(0, "bind", "ADDR", "server: listen on this IPv4 address only (default: all)", [&](std::string_view v) {
    in_addr ignored{};
    if (::inet_pton(AF_INET, std::string(v).c_str(), &ignored) != 1) {
      throw rdma::usage_error("--bind expects an IPv4 address, got '" + std::string(v) + "'");
    }
    out.bind = v;
  });
  parser.add('p', "port", "N", "TCP port of the handshake (default 18515)",
             [&](std::string_view v) { out.port = static_cast<std::uint16_t>(number(v, "--port", 1, 65535)); });
  parser.add(0, "size", "BYTES", "bytes per slot and per write, the same on both sides (default 4096)",
             [&](std::string_view v) { out.size = number(v, "--size", 1, 1 << 24); });
  parser.add(0, "slots", "N", "slots in the server's region, the same on both sides (default 4)",
             [&](std::string_view v) { out.slots = number(v, "--slots", 1, 4096); });
  parser.add(0, "iters", "N", "client: throughput mode, N DATA writes, and perftest's result line",
             [&](std::string_view v) { out.iters = number(v, "--iters", 1, 100000000); });
  parser.add(0, "latency", "", "client: ping-pong mode (default 1000 round trips), perftest's latency line",
             [&](std::string_view) { out.latency = true; });
  parser.add(0, "tx-depth", "N", "client: writes in flight at most (default 128)",
             [&](std::string_view v) { out.tx_depth = number(v, "--tx-depth", 1, 4096); });
  parser.add(0, "cq-mod", "N", "client: signal one write in N (default 100, at most --tx-depth)",
             [&](std::string_view v) { out.cq_mod = number(v, "--cq-mod", 1, 4096); });
  parser.add(0, "rx-depth", "N", "Recvs kept posted (default 512)",
             [&](std::string_view v) { out.rx_depth = number(v, "--rx-depth", 1, 16384); });
  parser.add(0, "rnr-retry", "N", "retries after a 'receiver not ready' NAK, 0-7, 7 = forever (default 3; 7 with --iters)",
             [&](std::string_view v) { out.rnr_retry = static_cast<std::uint8_t>(number(v, "--rnr-retry", 0, 7)); });
  parser.add(0, "retry-cnt", "N", "retries without an ACK, 0-7; Soft-RoCE: 7 = forever (default 3)",
             [&](std::string_view v) { out.retry_cnt = static_cast<std::uint8_t>(number(v, "--retry-cnt", 0, 7)); });
  parser.add(0, "send-imm", "VALUE", "client: one more Write with Immediate carrying this raw value, before END",
             [&](std::string_view v) { out.send_imm = parse_imm(v); });
  parser.add(0, "wait-ms", "MS", "give up on a silent peer after MS: each handshake message, each completion "
             "(default 5000)",
             [&](std::string_view v) { out.wait_ms = static_cast<int>(number(v, "--wait-ms", 1, 3600000)); });
  parser.add(0, "accept-ms", "MS", "server: give up when no client came, or finished, within MS (default 60000)",
             [&](std::string_view v) { out.accept_ms = static_cast<int>(number(v, "--accept-ms", 1, 86400000)); });
  if (!parser.parse(argc, argv)) return false;

  const bool client = !out.server.empty();
  for (const char* only_client : {"iters", "latency", "tx-depth", "cq-mod", "send-imm"}) {
    if (!client && parser.given(only_client)) {
      throw rdma::usage_error(std::string("--") + only_client + " is for the client (with -s ADDR)");
    }
  }
  for (const char* only_server : {"bind", "accept-ms"}) {
    if (client && parser.given(only_server)) {
      throw rdma::usage_error(std::string("--") + only_server + " is for the server (without -s)");
    }
  }
  if (out.latency && !out.iters) out.iters = 1000;  // ib_write_lat's default
  if (out.cq_mod > out.tx_depth) {
    if (parser.given("cq-mod")) throw rdma::usage_error("--cq-mod must not exceed --tx-depth");
    out.cq_mod = out.tx_depth;
  }
  // Ping-pong signals one send in 64 and keeps up to 64 unsignaled in the queue.
  if (out.latency && out.tx_depth < 65) throw rdma::usage_error("--latency needs --tx-depth of 65 or more");
  if (std::uint64_t{out.slots} * out.size > (1u << 30)) {
    throw rdma::usage_error("--slots times --size must stay within 1 GiB");
  }
  return true;
}

}  // namespace stage05
