// event_channel's command line: the device and peer options every stage
// shares, how this side waits, and (client) the run both sides follow.
#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage08 {

const char* mode_name(wait_mode mode) {
  switch (mode) {
    case wait_mode::poll: return "--poll";
    case wait_mode::event: return "--event";
    case wait_mode::hybrid: return "--hybrid";
  }
  return "?";
}

bool parse_options(int argc, const char* const* argv, options& out) {
  rdma::option_parser parser("event_channel",
                             "A ping-pong of Sends, each side waiting its own way: polling the CQ, sleeping on a "
                             "completion channel, or both. Without -s: the server. With -s ADDR: the client, which "
                             "chooses the run.");
  parser.add_device_options(out.device);
  parser.add_peer_options(out.peer);
  parser.add_ack_timeout(out.ack_timeout);
  int modes = 0;
  parser.add(0, "poll", "", "wait by polling the CQ, never sleeping (the lowest latency, one busy CPU)",
             [&](std::string_view) { out.mode = wait_mode::poll; ++modes; });
  parser.add(0, "event", "", "wait asleep on the completion channel (the default)",
             [&](std::string_view) { out.mode = wait_mode::event; ++modes; });
  parser.add(0, "hybrid", "", "poll for --spin-us, then sleep on the channel",
             [&](std::string_view) { out.mode = wait_mode::hybrid; ++modes; });
  parser.add(0, "spin-us", "US", "--hybrid: how long to poll before sleeping (default 50)",
             [&](std::string_view v) { out.spin_us = rdma::parse_u32(v, "--spin-us", 0, 10000000); });
  parser.add(0, "iters", "N", "client: rounds to measure, after one warm-up round (default 1000)",
             [&](std::string_view v) { out.run.rounds = rdma::parse_u32(v, "--iters", 1, max_rounds); });
  parser.add(0, "rate", "N",
             "client: start a round N times a second, each on schedule (default 0: back to back)",
             [&](std::string_view v) { out.rate = rdma::parse_u32(v, "--rate", 0, max_rate); });
  parser.add(0, "burst", "N", "client: Sends per round in each direction (default 1, or --solicited-every)",
             [&](std::string_view v) { out.run.burst = rdma::parse_u32(v, "--burst", 1, max_burst); });
  parser.add(0, "size", "BYTES", "client: bytes per Send, at least 8 (default 8)",
             [&](std::string_view v) { out.run.size = rdma::parse_u32(v, "--size", min_size, max_size); });
  parser.add(0, "solicited-every", "N",
             "client: mark every Nth Send of a burst solicited; both sides then wake only for those",
             [&](std::string_view v) { out.run.solicited_every = rdma::parse_u32(v, "--solicited-every", 1, 256); });
  if (!parser.parse(argc, argv)) return false;

  parser.check_roles(out.peer, {"iters", "burst", "size", "rate", "solicited-every"});
  if (modes > 1) throw rdma::usage_error("choose one of --poll, --event and --hybrid");
  if (parser.given("spin-us") && out.mode != wait_mode::hybrid) throw rdma::usage_error("--spin-us is for --hybrid");
  if (out.run.solicited_every != 0) {
    if (!parser.given("burst")) out.run.burst = out.run.solicited_every;
    // A burst whose last Send is not solicited would leave the receiver
    // asleep with messages in its CQ.
    if (out.run.burst % out.run.solicited_every != 0) {
      throw rdma::usage_error("--burst must be a multiple of --solicited-every, or the last Sends of a burst wake nobody");
    }
  }
  return true;
}

}  // namespace stage08
