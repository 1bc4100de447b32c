// event_channel's pure logic, no device: the command line, the run's wire
// format, which Sends are solicited, the hybrid's spin-then-sleep decision
// and the CPU-per-message arithmetic.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "bench.hpp"
#include "rdma_tutorial/command_line.hpp"

namespace {

stage08::options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "event_channel");
  stage08::options opts;
  REQUIRE(stage08::parse_options(static_cast<int>(args.size()), args.data(), opts));
  return opts;
}

std::string usage_error_of(std::vector<const char*> args) {
  args.insert(args.begin(), "event_channel");
  stage08::options opts;
  try {
    stage08::parse_options(static_cast<int>(args.size()), args.data(), opts);
  } catch (const rdma::usage_error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("defaults should be a server sleeping on events, and a run of 1000 rounds of one 8-byte Send") {
  const auto o = parse({});
  CHECK(o.peer.server.empty());
  CHECK(o.mode == stage08::wait_mode::event);
  CHECK(o.spin_us == 50);
  CHECK(o.run.rounds == 1000);
  CHECK(o.run.burst == 1);
  CHECK(o.run.size == 8);
  CHECK(o.run.solicited_every == 0);
  CHECK(o.rate == 0);
}

TEST_CASE("each way of waiting should be chosen by its flag, and only one of them") {
  CHECK(parse({"--poll"}).mode == stage08::wait_mode::poll);
  CHECK(parse({"--hybrid", "--spin-us", "0"}).mode == stage08::wait_mode::hybrid);
  CHECK(parse({"--hybrid", "--spin-us", "0"}).spin_us == 0);
  CHECK(usage_error_of({"--poll", "--event"}) == "choose one of --poll, --event and --hybrid");
  CHECK(usage_error_of({"--spin-us", "10"}) == "--spin-us is for --hybrid");
}

TEST_CASE("--solicited-every should set the burst unless given, and the burst must be its multiple") {
  const auto o = parse({"-s", "h", "--solicited-every", "4"});
  CHECK(o.run.solicited_every == 4);
  CHECK(o.run.burst == 4);
  CHECK(parse({"-s", "h", "--solicited-every", "4", "--burst", "8"}).run.burst == 8);
  CHECK(usage_error_of({"-s", "h", "--solicited-every", "4", "--burst", "6"}) ==
        "--burst must be a multiple of --solicited-every, or the last Sends of a burst wake nobody");
}

TEST_CASE("the run's options should be the client's, within their ranges") {
  CHECK(usage_error_of({"--iters", "5"}) == "--iters is for the client (with -s ADDR)");
  CHECK(usage_error_of({"--burst", "2"}) == "--burst is for the client (with -s ADDR)");
  CHECK(usage_error_of({"-s", "h", "--size", "7"}) == "--size must be between 8 and 1048576, got 7");
  CHECK(usage_error_of({"-s", "h", "--burst", "257"}) == "--burst must be between 1 and 256, got 257");
  CHECK(usage_error_of({"-s", "h", "--accept-ms", "5"}) == "--accept-ms is for the server (without -s)");
}

TEST_CASE("--rate should pace the client only, back to back by default, at most a million rounds a second") {
  CHECK(parse({"-s", "h"}).rate == 0);
  CHECK(parse({"-s", "h", "--rate", "500"}).rate == 500);
  CHECK(usage_error_of({"--rate", "500"}) == "--rate is for the client (with -s ADDR)");
  CHECK(usage_error_of({"-s", "h", "--rate", "1000001"}) == "--rate must be between 0 and 1000000, got 1000001");
  CHECK(usage_error_of({"-s", "h", "--rate", "fast"}).starts_with("--rate "));
}

TEST_CASE("the run should cross the wire as four big-endian words and read back the same") {
  const stage08::run_params p{1000, 8, 64, 4};
  const auto bytes = stage08::encode(p);
  CHECK(bytes[3] == std::byte{0xe8});  // 1000 = 0x000003e8, most significant byte first
  CHECK(bytes[2] == std::byte{0x03});
  const auto back = stage08::decode(bytes);
  CHECK(back.rounds == 1000);
  CHECK(back.burst == 8);
  CHECK(back.size == 64);
  CHECK(back.solicited_every == 4);
}

TEST_CASE("every Nth Send of a burst should be solicited, and none without --solicited-every") {
  const stage08::run_params every4{1, 8, 8, 4};
  std::vector<bool> marks;
  for (std::uint32_t i = 0; i < 8; ++i) marks.push_back(stage08::solicited(every4, i));
  CHECK(marks == std::vector<bool>{false, false, false, true, false, false, false, true});
  const stage08::run_params none{1, 8, 8, 0};
  for (std::uint32_t i = 0; i < 8; ++i) CHECK_FALSE(stage08::solicited(none, i));
}

TEST_CASE("a message header should carry its round and index") {
  char message[8];
  stage08::write_header(message, 0x01020304, 7);
  CHECK(message[0] == 1);
  const auto h = stage08::read_header(message);
  CHECK(h.round == 0x01020304u);
  CHECK(h.index == 7u);
}

TEST_CASE("the hybrid should spin until --spin-us has passed, reading the clock only every few looks") {
  stage08::spin_then_sleep policy(50, 4);
  int reads = 0;
  double now_us = 0;
  auto clock = [&] {
    ++reads;
    return now_us;
  };
  CHECK(policy.keep_spinning(1, clock));
  CHECK(policy.keep_spinning(3, clock));
  CHECK(reads == 0);
  now_us = 20;
  CHECK(policy.keep_spinning(4, clock));  // the clock is read: 20 us of 50
  CHECK(reads == 1);
  now_us = 50;
  CHECK(policy.keep_spinning(5, clock));  // not read again until look 8
  CHECK_FALSE(policy.keep_spinning(8, clock));
  CHECK(reads == 2);
  CHECK_FALSE(policy.keep_spinning(9, clock));  // spent: it stays spent
  CHECK(reads == 2);
}

TEST_CASE("a hybrid with --spin-us 0 should sleep at once, without reading the clock") {
  stage08::spin_then_sleep policy(0);
  bool read = false;
  CHECK_FALSE(policy.keep_spinning(1, [&] {
    read = true;
    return 0.0;
  }));
  CHECK_FALSE(read);
}

TEST_CASE("CPU per message should be user plus sys over the messages, and the report should say so") {
  const stage08::cpu_sample from{1.0, 0.5, 100.0};
  const stage08::cpu_sample to{1.4, 0.6, 100.5};
  CHECK(stage08::cpu_us_per_message(from, to, 1000) == doctest::Approx(500.0));
  CHECK(stage08::cpu_us_per_message(from, to, 0) == 0.0);
  CHECK(stage08::cpu_report(from, to, 1000) ==
        "CPU: 0.40 s user + 0.10 s sys in 0.50 s for 1000 messages: 500.00 us per message (1.00 s of CPU per second)\n");
}
