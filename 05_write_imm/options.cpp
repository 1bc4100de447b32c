// write_imm's command line: the device options every stage shares, the
// peer's address and TCP port, the slots, and the modes.
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

}  // namespace

bool parse_options(int argc, const char* const* argv, options& out) {
  rdma::option_parser parser("write_imm",
                             "Without -s: the server, exposing slots and taking Writes with Immediate. With -s ADDR: "
                             "the client, writing them.");
  parser.add_device_options(out.device);
  parser.add_peer_options(out.peer);
  parser.add(0, "size", "BYTES", "bytes per slot, the same on both sides; the client writes whole slots (default 4096)",
             [&](std::string_view v) { out.size = rdma::parse_u32(v, "--size", 1, 1 << 24); });
  parser.add(0, "slots", "N", "slots in the server's region, the same on both sides (default 4)",
             [&](std::string_view v) { out.slots = rdma::parse_u32(v, "--slots", 1, 4096); });
  parser.add(0, "iters", "N", "client: throughput mode, N DATA writes, and perftest's result line",
             [&](std::string_view v) { out.iters = rdma::parse_u32(v, "--iters", 1, 100000000); });
  parser.add(0, "latency", "", "client: ping-pong mode (default 1000 round trips), perftest's latency line",
             [&](std::string_view) { out.latency = true; });
  parser.add(0, "tx-depth", "N", "writes in flight at most: the client's stream and pings, the server's answers (default 128)",
             [&](std::string_view v) { out.tx_depth = rdma::parse_u32(v, "--tx-depth", 1, 4096); });
  parser.add(0, "cq-mod", "N", "client: signal one write in N (default 100, at most --tx-depth)",
             [&](std::string_view v) { out.cq_mod = rdma::parse_u32(v, "--cq-mod", 1, 4096); });
  parser.add(0, "rx-depth", "N", "Recvs kept posted (default 512)",
             [&](std::string_view v) { out.rx_depth = rdma::parse_u32(v, "--rx-depth", 1, 16384); });
  parser.add(0, "rnr-retry", "N", "retries after a 'receiver not ready' NAK, 0-7, 7 = forever (default 3; 7 with --iters)",
             [&](std::string_view v) { out.rnr_retry = static_cast<std::uint8_t>(rdma::parse_integer(v, "--rnr-retry", 0, 7)); });
  parser.add(0, "retry-cnt", "N", "retries without an ACK, 0-7; Soft-RoCE: 7 = forever (default 3)",
             [&](std::string_view v) { out.retry_cnt = static_cast<std::uint8_t>(rdma::parse_integer(v, "--retry-cnt", 0, 7)); });
  parser.add(0, "send-imm", "VALUE", "client: one more Write with Immediate carrying this raw value, before END",
             [&](std::string_view v) { out.send_imm = parse_imm(v); });
  if (!parser.parse(argc, argv)) return false;

  parser.check_roles(out.peer, {"iters", "latency", "cq-mod", "send-imm"});
  if (out.latency && !out.iters) out.iters = 1000;  // ib_write_lat's default
  if (out.cq_mod > out.tx_depth) {
    if (parser.given("cq-mod")) throw rdma::usage_error("--cq-mod must not exceed --tx-depth");
    out.cq_mod = out.tx_depth;
  }
  if (std::uint64_t{out.slots} * out.size > (1u << 30)) {
    throw rdma::usage_error("--slots times --size must stay within 1 GiB");
  }
  return true;
}

}  // namespace stage05
