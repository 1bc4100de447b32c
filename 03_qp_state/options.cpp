// qp_state's command line: the device options every stage shares (-d, -i, -g),
// plus the knobs of the connection (docs/03-qp-state.md, sections "PSNs",
// "Path MTU" and "RTR → RTS: how to send, how long to wait").
#include <string>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/gid.hpp"
#include "rdma_tutorial/port.hpp"
#include "stage.hpp"

namespace stage03 {

std::optional<ibv_mtu> mtu_from_bytes(long bytes) {
  for (ibv_mtu mtu : {IBV_MTU_256, IBV_MTU_512, IBV_MTU_1024, IBV_MTU_2048, IBV_MTU_4096}) {
    if (rdma::mtu_bytes(mtu) == bytes) return mtu;
  }
  return std::nullopt;
}

bool parse_options(int argc, const char* const* argv, options& out) {
  rdma::option_parser parser("qp_state", "Connects two RC QPs to each other and sends one message each way.");
  parser.add_device_options(out.device);
  parser.add(0, "mtu", "BYTES", "path_mtu: 256, 512, 1024, 2048 or 4096 (default: the port's active_mtu)",
             [&](std::string_view v) {
               out.mtu = mtu_from_bytes(rdma::parse_integer(v, "--mtu", 256, 4096));
               if (!out.mtu) throw rdma::usage_error("--mtu must be 256, 512, 1024, 2048 or 4096, got " + std::string(v));
             });
  auto number = [](std::string_view v, const char* name, long max) {
    return static_cast<std::uint32_t>(rdma::parse_integer(v, name, 0, max));
  };
  parser.add(0, "psn-a", "N", "first PSN QP A sends (default 4000)",
             [&](std::string_view v) { out.psn_a = number(v, "--psn-a", 0xffffff); });
  parser.add(0, "psn-b", "N", "first PSN QP B sends (default 2000)",
             [&](std::string_view v) { out.psn_b = number(v, "--psn-b", 0xffffff); });
  parser.add(0, "timeout", "N", "ack timeout 4.096 us * 2^N, 0 = never (default 14: 67 ms)",
             [&](std::string_view v) { out.params.timeout = static_cast<std::uint8_t>(number(v, "--timeout", 31)); });
  parser.add(0, "retry-cnt", "N", "retries without an ACK, 0-7; Soft-RoCE: 7 = forever (default 3)",
             [&](std::string_view v) { out.params.retry_cnt = static_cast<std::uint8_t>(number(v, "--retry-cnt", 7)); });
  parser.add(0, "rnr-retry", "N", "retries after an RNR NAK, 0-7, 7 = forever (default 3)",
             [&](std::string_view v) { out.params.rnr_retry = static_cast<std::uint8_t>(number(v, "--rnr-retry", 7)); });
  parser.add(0, "min-rnr-timer", "N", "RNR delay code the peer waits, 0-31 (default 12: 0.64 ms; 0 is the longest, 655 ms)",
             [&](std::string_view v) {
               out.params.min_rnr_timer = static_cast<std::uint8_t>(number(v, "--min-rnr-timer", 31));
             });
  parser.add(0, "size", "BYTES", "bytes per message, 15-4096: the text, then zeros (default 15)",
             [&](std::string_view v) { out.size = static_cast<std::size_t>(rdma::parse_integer(v, "--size", 15, 4096)); });
  parser.add(0, "wait-ms", "MS", "give up waiting for a completion after MS (default 2000)",
             [&](std::string_view v) { out.wait_ms = static_cast<int>(number(v, "--wait-ms", 600000)); });
  return parser.parse(argc, argv);
}

rdma::qp_params params_from_options(const options& opts, ibv_mtu active_mtu, int gid_index) {
  rdma::qp_params params = opts.params;
  params.port = opts.device.port;
  params.path_mtu = opts.mtu.value_or(active_mtu);
  if (params.path_mtu > active_mtu) {
    throw rdma::tutorial_error("--mtu " + std::to_string(rdma::mtu_bytes(params.path_mtu)) +
                                   " is larger than the port's active_mtu " + std::to_string(rdma::mtu_bytes(active_mtu)),
                               "use --mtu " + std::to_string(rdma::mtu_bytes(active_mtu)) +
                                   " or less; both ends of a connection must use the same path_mtu");
  }
  params.gid_index = rdma::sgid_index(gid_index);  // 8 bits wide: a RoCE table may be longer
  return params;
}

}  // namespace stage03
