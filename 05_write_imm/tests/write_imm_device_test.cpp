// Device test for stage 05: the real write_imm program as a server and a
// client on Soft-RoCE, every run bounded. The immediates each side printed
// are checked against each other (the self-test values exactly, DATA|slot,
// END|count), the completions' opcodes at both ends, the payload checksums
// per slot, and the server's refusals of immediates it never offered.
#include <doctest/doctest.h>

#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "output.hpp"
#include "pair_checks.hpp"
#include "process.hpp"

using namespace std::chrono_literals;
using rdma::testing::both;
using rdma::testing::client_command;
using rdma::testing::describe;
using rdma::testing::first_match;
using rdma::testing::has_line;
using rdma::testing::peer_program;
using rdma::testing::run_pair;
using rdma::testing::server_command;

namespace {


// The default run: both self-test values, one DATA write per slot (each
// slot's checksum the same on both sides), END with the right count.
void check_one_pass(const rdma::testing::pair_result& r, int slots) {
  rdma::testing::check_handshake(r);
  for (const char* value : {"0x12345678", "0xdeadbeef"}) {
    CHECK(has_line(r.client.out, std::string("^Write with Immediate: 0 bytes, imm ") + value + " \\(self-test\\)$"));
    CHECK(has_line(r.server.out, "^  completion: wr_id \\d+: IBV_WC_RECV_RDMA_WITH_IMM, 0 bytes, with imm\n"
                                 "self-test: imm " + std::string(value) + " arrived as sent$"));
  }
  for (int s = 0; s < slots; ++s) {
    const std::string n = std::to_string(s);
    const std::string sum = first_match(r.client.out, "^wrote slot " + n + " \"slot " + n + " from the client\", fnv1a (0x[0-9a-f]{8})$");
    CHECK(has_line(r.server.out, "^imm 0x0100000" + n + ": DATA, slot " + n + ": \\d+ bytes \"slot " + n +
                                     " from the client\", fnv1a " + sum + "$"));
  }
  CHECK(has_line(r.server.out, "^imm 0x0200000" + std::to_string(slots) + ": END after " + std::to_string(slots) +
                                   " DATA write\\(s\\)$"));
  CHECK(has_line(r.server.out, "^the client closed the connection; releasing the region$"));
}

}  // namespace

TEST_CASE("each slot should arrive with its immediate, and the self-test values exactly as sent") {
  const auto r = run_pair(server_command(), client_command(), 60s);
  INFO(both(r));
  REQUIRE(r.client.exit_code == 0);
  REQUIRE(r.server.exit_code == 0);
  CHECK(r.client.err.empty());
  CHECK(r.server.err.empty());
  check_one_pass(r, 4);
  // The sender's completions are plain IBV_WC_RDMA_WRITE; the immediate
  // shows only at the target.
  CHECK(has_line(r.client.out, "^Write with Immediate: 4096 bytes into slot 2, imm 0x01000002 \\(DATA 2\\)\n"
                               "  completion: wr_id 5: IBV_WC_RDMA_WRITE$"));
  CHECK_FALSE(has_line(r.client.out, "IBV_WC_RECV"));
  CHECK(has_line(r.server.out, "^posted 512 Recvs$"));
}

TEST_CASE("other slot counts and sizes should work when both sides agree") {
  const auto r = run_pair(server_command({"--slots", "7", "--size", "100"}), client_command({"--slots", "7", "--size", "100"}), 60s);
  INFO(both(r));
  REQUIRE(r.client.exit_code == 0);
  REQUIRE(r.server.exit_code == 0);
  check_one_pass(r, 7);
  CHECK(has_line(r.server.out, "^imm 0x01000006: DATA, slot 6: 100 bytes "));
}

TEST_CASE("throughput mode should count every write at the target, reposting Recvs as they are consumed") {
  // 3000 writes against 16 Recvs: without reposting the 17th would find none.
  const auto r = run_pair(server_command({"--size", "64", "--rx-depth", "16"}),
                          client_command({"--size", "64", "--iters", "3000", "--tx-depth", "16", "--cq-mod", "8"}), 120s);
  INFO(both(r));
  REQUIRE(r.client.exit_code == 0);
  REQUIRE(r.server.exit_code == 0);
  rdma::testing::check_handshake(r);
  CHECK(has_line(r.client.out, R"(^ 64 +3000 +\d+\.\d\d +\d\.\d{6}$)"));
  CHECK(has_line(r.client.out, R"(^QP 0x[0-9a-f]+: .*, rnr_retry 7\)$)"));
  CHECK(has_line(r.server.out, "^imm 0x02000bb8: END after 3000 DATA write\\(s\\)$"));
  CHECK(has_line(r.server.out, "^received 3000 DATA write\\(s\\) and END$"));
}

TEST_CASE("latency mode should answer every ping and print perftest's percentiles") {
  const auto r = run_pair(server_command({"--size", "8"}), client_command({"--size", "8", "--latency", "--iters", "300"}), 120s);
  INFO(both(r));
  REQUIRE(r.client.exit_code == 0);
  REQUIRE(r.server.exit_code == 0);
  rdma::testing::check_handshake(r);
  CHECK(has_line(r.client.out, R"(^ #bytes #iterations +t_min\[usec\] +t_max\[usec\] +t_typical\[usec\] )"));
  CHECK(has_line(r.client.out, R"(^ 8 +300 +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ *$)"));
  CHECK(has_line(r.server.out, "^client [0-9.:]+: .*, 8 bytes at 0x[0-9a-f]+, rkey 0x[0-9a-f]+$"));
  CHECK(has_line(r.server.out, "^received 300 DATA write\\(s\\) and END$"));
}

TEST_CASE("a long ping-pong with one write in flight should post only into a send queue with room, on both sides") {
  // A send queue of one: each ping (and each answer) must wait for the
  // previous one's completion; posting on the hope that the ACK came back
  // would fail with ENOMEM at the second.
  const auto r = run_pair(server_command({"--size", "8", "--tx-depth", "1"}),
                          client_command({"--size", "8", "--tx-depth", "1", "--latency", "--iters", "5000"}), 180s);
  INFO(both(r));
  REQUIRE(r.client.exit_code == 0);
  REQUIRE(r.server.exit_code == 0);
  CHECK(has_line(r.client.out, R"(^ 8 +5000 +[\d.]+ )"));
  CHECK(has_line(r.server.out, "^received 5000 DATA write\\(s\\) and END$"));
}

TEST_CASE("a DATA index outside the slots should be refused before the server touches memory") {
  const auto r = run_pair(server_command(), client_command({"--send-imm", "0x01000009"}), 60s);
  INFO(both(r));
  CHECK(r.server.exit_code == 1);
  CHECK(has_line(r.server.err, R"(^write_imm: imm 0x01000009: DATA index 9 is outside 0\.\.3$)"));
  CHECK_FALSE(has_line(r.server.out, "slot 9"));
  CHECK_FALSE(has_line(r.server.out, "END after"));
}

TEST_CASE("an unknown type and a wrong END count should each be refused, naming the value and a likely fix") {
  struct refusal {
    const char* value;
    const char* line;
    const char* fix;
  };
  const refusal cases[] = {
      {"0x7f000001", R"(^write_imm: imm 0x7f000001: type 0x7f is none of DATA, END$)",
       R"(^  likely fix: the sender speaks another protocol, or its byte order is wrong )"},
      {"0x02000001", R"(^write_imm: imm 0x02000001: END counts 1 DATA writes, 4 arrived$)",
       R"(^  likely fix: END carries how many DATA writes the sender made before it, mod 2\^24, )"},
  };
  for (const auto& [value, line, fix] : cases) {
    const auto r = run_pair(server_command(), client_command({"--send-imm", value}), 60s);
    INFO(both(r));
    CHECK(r.server.exit_code == 1);
    CHECK(has_line(r.server.err, line));
    CHECK(has_line(r.server.err, fix));
  }
}

TEST_CASE("a client whose --slots or --size differ from the server's should stop before writing") {
  const auto r = run_pair(server_command({"--slots", "2"}), client_command(), 60s);
  INFO(both(r));
  CHECK(r.client.exit_code == 1);
  CHECK(has_line(r.client.err, R"(^write_imm: the server's region is 8192 bytes; --slots 4 of --size 4096 make 16384$)"));
  CHECK_FALSE(has_line(r.client.out, "Write with Immediate"));
  CHECK(r.server.exit_code == 1);
  CHECK(has_line(r.server.err, "^write_imm: the client closed the connection while we waited for the self-test$"));
}

// A silent peer is given up on within --wait-ms: one that shakes hands and
// never writes, and one that stops in the middle of a stream (stopped with
// SIGSTOP: its process, its TCP connection and its QP all stay).
TEST_CASE("a client silent after the handshake should be given up on within --wait-ms") {
  auto s = rdma::testing::start({peer_program(), "--wait-ms", rdma::testing::silent_peer_wait_ms(2s)});
  const rdma::tcp::socket sock = rdma::testing::hostile_client(*s);
  rdma::tcp::send_all(sock, rdma::testing::phantom_endpoint(), rdma::tcp::after_ms(2000), "the endpoint");
  const auto started = std::chrono::steady_clock::now();
  const auto r = s->wait(rdma::testing::scaled(30s));
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(has_line(r.out, "^posted 512 Recvs$"));
  CHECK(has_line(r.err, R"(^write_imm: nothing within \d+ ms while we waited for the self-test$)"));
  CHECK(std::chrono::steady_clock::now() - started < rdma::testing::scaled(2s) + 3s);
}

TEST_CASE("a client that stops in the middle of a stream should be given up on within --wait-ms of its last write") {
  auto server = rdma::testing::start(server_command({"--size", "64", "--wait-ms", "2000"}));
  auto client = rdma::testing::start(client_command({"--size", "64", "--iters", "100000000"}));
  REQUIRE(server->wait_for_output("(further DATA writes are counted, not printed)", rdma::testing::scaled(30s)));
  std::this_thread::sleep_for(200ms);  // well into the stream
  REQUIRE(::kill(client->pid(), SIGSTOP) == 0);
  const auto stopped = std::chrono::steady_clock::now();
  const auto r = server->wait(rdma::testing::scaled(30s));
  const auto waited = std::chrono::steady_clock::now() - stopped;
  ::kill(client->pid(), SIGKILL);
  client->wait(10s);
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(has_line(r.err, R"(^write_imm: nothing within 2000 ms while we waited for the next write$)"));
  // Well short of the 5 s default an ignored --wait-ms would take. The
  // slack is for the QP's teardown and ASan's leak scan at exit: 3.01 s in
  // all once, under ASan on a host losing a quarter of its CPU to steal.
  CHECK(waited < rdma::testing::scaled(2s) + 2500ms);
}

TEST_CASE("across two hosts: the self-test, every slot and END should cross the wire") {
  const auto r = run_pair(server_command(), client_command({}, "192.0.2.2"), 120s, rdma::testing::on_peer_prefix());
  INFO(both(r));
  REQUIRE(r.client.exit_code == 0);
  REQUIRE(r.server.exit_code == 0);
  check_one_pass(r, 4);
  rdma::testing::check_two_hosts(r);
}
