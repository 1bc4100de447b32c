// Device test for stage 08: the real event_channel program as a server and
// a client on Soft-RoCE, every run bounded. Each way of waiting must finish
// every round at both ends and print the percentiles and the CPU line;
// sleeping sides must count their wake-ups, a solicited-only side exactly
// one per burst; a paced client must keep its schedule; a server whose
// client never sends must give up through the timer in its poll().
#include <arpa/inet.h>
#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <cstring>
#include <regex>
#include <span>
#include <string>
#include <thread>

#include "output.hpp"
#include "pair_checks.hpp"
#include "process.hpp"
#include "rdma_tutorial/tcp.hpp"
#include "rdma_tutorial/wire.hpp"

using namespace std::chrono_literals;
using rdma::testing::both;
using rdma::testing::client_command;
using rdma::testing::first_match;
using rdma::testing::has_line;
using rdma::testing::run_pair;
using rdma::testing::server_command;

namespace {

// perftest's header, and its numbers for `rounds` rounds of 8 bytes.
void check_latency_line(const std::string& out, int rounds, int bytes = 8) {
  CHECK(has_line(out, R"(^ #bytes #iterations +t_min\[usec\] +t_max\[usec\] +t_typical\[usec\] )"));
  CHECK(has_line(out, "^ " + std::to_string(bytes) + " +" + std::to_string(rounds) +
                          R"( +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ *$)"));
}

void check_cpu_line(const std::string& out, int messages) {
  CHECK(has_line(out, R"(^CPU: \d+\.\d\d s user \+ \d+\.\d\d s sys in \d+\.\d\d s for )" + std::to_string(messages) +
                          R"( messages: \d+\.\d\d us per message \(\d+\.\d\d s of CPU per second\)$)"));
}

// Both peers exited 0, shook hands, ran every round and printed the report.
void check_run(const rdma::testing::pair_result& r, int rounds, int burst) {
  REQUIRE(r.client.exit_code == 0);
  REQUIRE(r.server.exit_code == 0);
  CHECK(r.client.err.empty());
  CHECK(r.server.err.empty());
  rdma::testing::check_handshake(r);
  for (const std::string* out : {&r.client.out, &r.server.out}) {
    CHECK(has_line(*out, "^completion channel created \\(its fd non-blocking\\), a CQ of \\d+ entries bound to it$"));
    CHECK(has_line(*out, "^posted " + std::to_string(2 * burst) + " Recvs$"));
    CHECK(has_line(*out, "^rounds: " + std::to_string(rounds) + " after a warm-up, " + std::to_string(burst) +
                             " x 8 bytes each way"));
    check_latency_line(*out, rounds);
    check_cpu_line(*out, rounds * burst);
  }
  CHECK(has_line(r.server.out, "^the client closed the connection$"));
}

// "wake-ups: W for M messages received, E of them found the CQ empty" -> W
long wake_ups(const std::string& out, int messages) {
  return std::stol(first_match(out, "^wake-ups: (\\d+) for " + std::to_string(messages) +
                                        " messages received, \\d+ of them found the CQ empty$"));
}

}  // namespace

TEST_CASE("event mode should finish every round at both ends, asleep on the channel, counting its wake-ups") {
  const auto r = run_pair(server_command(), client_command({"--iters", "300"}), 120s);
  INFO(both(r));
  check_run(r, 300, 1);
  for (const std::string* out : {&r.client.out, &r.server.out}) {
    CHECK(has_line(*out, "^waiting: --event, asleep on the completion channel, armed for every completion$"));
    // At least one wake-up per message (the peer's message raises the
    // event); a few more for the signaled sends, one in 64.
    const long w = wake_ups(*out, 300);
    CHECK(w >= 300);
    CHECK(w <= 320);
  }
}

TEST_CASE("poll mode should finish every round without an event, and the two sides may wait differently") {
  const auto r = run_pair(server_command({"--poll"}), client_command({"--iters", "300", "--event"}), 120s);
  INFO(both(r));
  check_run(r, 300, 1);
  CHECK(has_line(r.server.out, "^waiting: --poll, ibv_poll_cq in a loop, never asleep$"));
  CHECK_FALSE(has_line(r.server.out, "^wake-ups:"));
  CHECK(has_line(r.client.out, "^waiting: --event, "));
  CHECK(wake_ups(r.client.out, 300) >= 300);
}

TEST_CASE("hybrid mode should account for every round: found spinning, just after arming, or after sleeping") {
  const auto r = run_pair(server_command({"--hybrid", "--spin-us", "100"}),
                          client_command({"--iters", "300", "--hybrid", "--spin-us", "100"}), 120s);
  INFO(both(r));
  check_run(r, 300, 1);
  for (const std::string* out : {&r.client.out, &r.server.out}) {
    CHECK(has_line(*out, "^waiting: --hybrid, polling for 100 us, then asleep on the channel, armed for every completion$"));
    std::smatch m;
    REQUIRE(std::regex_search(*out, m, std::regex(R"(hybrid: (\d+) rounds found while spinning, (\d+) just after arming, (\d+) after sleeping)")));
    CHECK(std::stol(m[1]) + std::stol(m[2]) + std::stol(m[3]) == 300);
    wake_ups(*out, 300);
  }
}

TEST_CASE("solicited only: bursts of 8 with the 8th Send solicited should wake each side exactly once a burst") {
  const auto r = run_pair(server_command(), client_command({"--iters", "200", "--solicited-every", "8"}), 120s);
  INFO(both(r));
  check_run(r, 200, 8);
  for (const std::string* out : {&r.client.out, &r.server.out}) {
    CHECK(has_line(*out, "^rounds: 200 after a warm-up, 8 x 8 bytes each way, 1 Send in 8 solicited$"));
    CHECK(has_line(*out, "^waiting: --event, asleep on the completion channel, armed for solicited completions only$"));
    // Never woken by the 7 unsolicited Sends before the 8th, nor by our
    // own signaled sends.
    CHECK(has_line(*out, "^wake-ups: 200 for 1600 messages received, 0 of them found the CQ empty$"));
  }
}

TEST_CASE("a burst of 8 armed for every completion should be taken whole, however many wake-ups it costs") {
  const auto r = run_pair(server_command(), client_command({"--iters", "200", "--burst", "8"}), 120s);
  INFO(both(r));
  check_run(r, 200, 8);
  for (const std::string* out : {&r.client.out, &r.server.out}) {
    const long w = wake_ups(*out, 1600);
    CHECK(w >= 200);
    CHECK(w <= 1600 + 50);
  }
}

TEST_CASE("a paced client should start each round on schedule, count the late ones, and sample only its rounds") {
  // 100 rounds at 200 a second: half a second at least, however fast each
  // round trip is; the server, which knows no rate, sleeps in between.
  const auto r = run_pair(server_command(), client_command({"--iters", "100", "--rate", "200"}), 120s);
  INFO(both(r));
  check_run(r, 100, 1);
  CHECK(has_line(r.client.out, "^rounds: 100 after a warm-up, 1 x 8 bytes each way, paced at 200 a second: a sample is "
                               "half the time from our post to the answer's last message$"));
  CHECK_FALSE(has_line(r.server.out, "paced"));
  CHECK(has_line(r.client.out, R"(^paced: 200 rounds a second, \d+ of 100 rounds started late$)"));
  // The schedule: round 100 is due half a second after the warm-up.
  const double wall = std::stod(first_match(r.client.out, R"(^CPU: .* in (\d+\.\d\d) s for 100 messages)"));
  CHECK(wall >= 0.49);
  // A sample leaves out the wait for the round's turn: were it the time
  // from one round's end to the next's, none would be under half the
  // 5 ms period.
  const double t_min = std::stod(first_match(r.client.out, R"(^ 8 +100 +(\d+\.\d+) )"));
  CHECK(t_min < 2000);
}

TEST_CASE("a server whose client never sends should give up at --wait-ms, woken by the timer in its poll()") {
  // A client that shakes hands over TCP and then sends nothing: its
  // endpoint names a QP that does not exist on our own GID.
  auto server = rdma::testing::start(server_command({"--wait-ms", rdma::testing::silent_peer_wait_ms(2s)}));
  rdma::wire::endpoint fake;
  fake.qp_num = 0xabcde;
  fake.psn = 0x123;
  REQUIRE(inet_pton(AF_INET6, "::ffff:192.0.2.1", fake.gid.raw) == 1);
  const auto until = rdma::tcp::after_ms(static_cast<int>(rdma::testing::scaled(30s).count()));
  const rdma::tcp::socket s = rdma::tcp::connect_to("127.0.0.1", 18515, until);
  rdma::tcp::send_endpoint(s, fake, until);
  const std::array<std::uint32_t, 4> run{htonl(100), htonl(1), htonl(8), 0};
  rdma::tcp::send_all(s, std::as_bytes(std::span(run)), until, "the run");
  const rdma::wire::endpoint theirs = rdma::tcp::receive_endpoint(s, until);
  CHECK(theirs.qp_num != 0);
  const auto r = server->wait(rdma::testing::scaled(60s));
  INFO(rdma::testing::describe(r));
  CHECK(r.exit_code == 1);
  CHECK(has_line(r.out, "^waiting: --event, asleep on the completion channel, armed for every completion$"));
  CHECK(has_line(r.err, R"(^event_channel: no CQ event within \d+ ms while we waited for round 0's messages$)"));
  CHECK_FALSE(has_line(r.all(), "teardown has not finished"));
}

TEST_CASE("across two hosts: every round should cross the wire, each side asleep on its own channel") {
  const auto r = run_pair(server_command(), client_command({"--iters", "200"}, "192.0.2.2"), 120s,
                          rdma::testing::on_peer_prefix());
  INFO(both(r));
  check_run(r, 200, 1);
  // pair_checks.hpp's check_two_hosts, for an endpoint without a region
  // (its server line ends at the GID here).
  CHECK(has_line(r.server.out, R"(^rxe0 port 1, GID \[\d+\] ::ffff:192\.0\.2\.2 \(RoCE v2\))"));
  CHECK(has_line(r.client.out, R"(^rxe0 port 1, GID \[\d+\] ::ffff:192\.0\.2\.1 \(RoCE v2\))"));
  CHECK(has_line(r.client.out, R"(^server 192\.0\.2\.2:\d+: qp_num 0x[0-9a-f]+, psn 0x[0-9a-f]+, gid ::ffff:192\.0\.2\.2$)"));
  CHECK(has_line(r.server.out, R"(^client 192\.0\.2\.1:\d+: qp_num 0x[0-9a-f]+, psn 0x[0-9a-f]+, gid ::ffff:192\.0\.2\.1$)"));
  CHECK(wake_ups(r.client.out, 200) >= 200);
  CHECK(wake_ups(r.server.out, 200) >= 200);
}
