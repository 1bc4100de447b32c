// Test support for the two-peer stages: the checks every device test makes
// of a server's and a client's output (doctest assertions).
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "output.hpp"
#include "process.hpp"
#include "rdma_tutorial/tcp.hpp"
#include "rdma_tutorial/wire.hpp"

namespace rdma::testing {

// The stage's program, from $PROGRAM (set by common/stage_rules.build).
inline std::string peer_program() { return program_from_env("PROGRAM"); }

// --wait-ms for a peer, stretched like every timeout under memcheck.
inline std::string peer_wait_ms(std::chrono::milliseconds ms) { return std::to_string(scaled(ms).count()); }

// --wait-ms when the peer that stays silent is this test itself (native
// code, never wrapped): stretched to 5 s at most, not 20-fold. The program
// still sits out the whole wait before it fails, and under memcheck a
// 2 s wait stretched to 40 s was most of the test's run.
inline std::string silent_peer_wait_ms(std::chrono::milliseconds ms) {
  return std::to_string(std::min(scaled(ms), std::max(ms, std::chrono::milliseconds(5000))).count());
}

// The server's and the client's command lines: the program with bounded
// waits (5 s a message, 30 s for the server's client), then `args`.
inline std::vector<std::string> server_command(const std::vector<std::string>& args = {}) {
  using namespace std::chrono_literals;
  std::vector<std::string> argv{peer_program(), "--wait-ms", peer_wait_ms(5s), "--accept-ms", peer_wait_ms(30s)};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}
inline std::vector<std::string> client_command(const std::vector<std::string>& args = {},
                                               const std::string& address = "127.0.0.1") {
  using namespace std::chrono_literals;
  // Across two guests the server starts through on_peer.sh's agent, after
  // the client: on a loaded machine 5 s was too little there, for the plain
  // build and the ASan twin alike (ECONNREFUSED to the end). Only a failing
  // run waits the 20 s out.
  const bool server_on_peer = std::getenv("RDMA_TUTORIAL_PAIR") != nullptr;
  std::vector<std::string> argv{peer_program(), "-s", address, "--wait-ms", peer_wait_ms(server_on_peer ? 20s : 5s)};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// As run_pair, but the client starts only once the server printed `ready`
// (its listening line): for a client whose --wait-ms is short on purpose, so
// a server slow to start (a loaded machine) cannot use that wait up. A server
// that never says it is ready fails the test.
inline pair_result run_pair_once_listening(const std::vector<std::string>& server,
                                           const std::vector<std::string>& client, std::chrono::milliseconds timeout,
                                           const std::string& ready) {
  using namespace std::chrono_literals;
  auto started = start(server);
  pair_result r;
  const bool listening = started->wait_for_output(ready, scaled(30s));
  if (listening) r.client = run(client, timeout);
  r.server = started->wait(listening ? scaled(timeout) : 1000ms);
  REQUIRE_MESSAGE(listening, "the server never printed '" << ready << "':\n" << describe(r.server));
  return r;
}

// The address rdma_cm needs for this host: an interface with an RDMA device.
// The guest's comes from RXE_VM_IPV4 (scripts/rxe_vm.sh); on a machine of
// your own, set RDMA_TUTORIAL_IPV4.
inline std::string rdma_cm_address() {
  for (const char* name : {"RDMA_TUTORIAL_IPV4", "RXE_VM_IPV4"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return v;
  }
  FAIL("no address for rdma_cm: run inside scripts/rxe_vm.sh, or set RDMA_TUTORIAL_IPV4 to the address of an "
       "interface with an RDMA device");
  return {};
}

// A test socket that connects to a server on this host's default port as a
// client would, retrying while the server starts: it plays the hostile
// peers of the TCP handshake. If it never gets in, the server's own output
// says why (it is ended and collected for the message).
inline tcp::socket hostile_client(process& server) {
  try {
    return tcp::connect_to("127.0.0.1", 18515, tcp::after_ms(static_cast<int>(scaled(std::chrono::seconds(10)).count())));
  } catch (const std::exception& e) {
    const auto r = server.wait(std::chrono::seconds(1));
    FAIL("the test's client could not connect: " << e.what() << "\nthe server: " << describe(r));
    throw;
  }
}

// A valid endpoint of a peer that does not exist: QPN 0x99, PSN 1, the
// RoCE v2 GID of this host's RDMA address (::ffff:a.b.c.d), so the server's
// QP can reach RTR. What a peer that shakes hands and then goes silent sends.
inline std::vector<std::byte> phantom_endpoint() {
  wire::endpoint e;
  e.qp_num = 0x99;
  e.psn = 1;
  e.gid.raw[10] = 0xff;
  e.gid.raw[11] = 0xff;
  REQUIRE(::inet_pton(AF_INET, rdma_cm_address().c_str(), &e.gid.raw[12]) == 1);
  const auto bytes = wire::encode_endpoint(e);
  return {bytes.begin(), bytes.end()};
}

// The first capture group of `pattern` in `text`; fails the test if absent.
inline std::string first_match(const std::string& text, const std::string& pattern) {
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(text, m, std::regex(pattern, std::regex::multiline)),
                  "no /" << pattern << "/ in:\n" << text);
  return m[1];
}

// Both peers' exit codes and output, for an assertion's message.
inline std::string both(const pair_result& r) {
  return "--- server ---\n" + describe(r.server) + "\n--- client ---\n" + describe(r.client);
}

// The handshake worked both ways: each side's QPN reached the other, and
// each side's sq_psn is the other's rq_psn. Both programs print
//   QP 0x11: RESET -> INIT -> RTR -> RTS (sq_psn 0x.., rq_psn 0x..
//   server ADDR: qp_num 0x.., ...       client ADDR: qp_num 0x.., ...
inline void check_handshake(const pair_result& r) {
  const std::string server_qpn = first_match(r.server.out, R"(^QP (0x[0-9a-f]+): RESET -> INIT -> RTR -> RTS)");
  const std::string client_qpn = first_match(r.client.out, R"(^QP (0x[0-9a-f]+): RESET -> INIT -> RTR -> RTS)");
  CHECK(has_line(r.client.out, "^server [0-9.:]+: qp_num " + server_qpn + ", "));
  CHECK(has_line(r.server.out, "^client [0-9.:]+: qp_num " + client_qpn + ", "));
  const std::string server_sq = first_match(r.server.out, R"(RTS \(sq_psn (0x[0-9a-f]+),)");
  const std::string client_sq = first_match(r.client.out, R"(RTS \(sq_psn (0x[0-9a-f]+),)");
  CHECK(has_line(r.client.out, "rq_psn " + server_sq + R"([,)])"));
  CHECK(has_line(r.server.out, "rq_psn " + client_sq + R"([,)])"));
}

// Across two guests (scripts/rxe_vm.sh --pair): the server ran on
// 192.0.2.2, the client on 192.0.2.1, and each used its own GID.
inline void check_two_hosts(const pair_result& r) {
  CHECK(has_line(r.server.out, R"(^rxe0 port 1, GID \[\d+\] ::ffff:192\.0\.2\.2 \(RoCE v2\))"));
  CHECK(has_line(r.client.out, R"(^rxe0 port 1, GID \[\d+\] ::ffff:192\.0\.2\.1 \(RoCE v2\))"));
  CHECK(has_line(r.client.out, R"(^server 192\.0\.2\.2:\d+: qp_num 0x[0-9a-f]+, psn 0x[0-9a-f]+, gid ::ffff:192\.0\.2\.2, )"));
  CHECK(has_line(r.server.out, R"(^client 192\.0\.2\.1:\d+: qp_num 0x[0-9a-f]+, psn 0x[0-9a-f]+, gid ::ffff:192\.0\.2\.1)"));
}

// scripts/on_peer.sh from the environment (set by the pair suite), in front
// of the server's command; the test fails if the pair is missing.
inline std::vector<std::string> on_peer_prefix() {
  const char* peer_dir = std::getenv("RXE_VM_PEER_DIR");
  const char* on_peer = std::getenv("ON_PEER");
  REQUIRE_MESSAGE(peer_dir != nullptr, "no peer guest: run the pair suite inside scripts/rxe_vm.sh --pair");
  REQUIRE_MESSAGE(on_peer != nullptr, "ON_PEER (scripts/on_peer.sh) is not set; see common/stage_rules.build");
  using namespace std::chrono_literals;
  const auto peer_timeout = std::chrono::duration_cast<std::chrono::seconds>(scaled(100s));
  std::vector<std::string> prefix{on_peer, "--timeout", std::to_string(peer_timeout.count()), "--"};
  // The peer's agent has an environment of its own: a sanitizer's options
  // (the pair suite's ASan+UBSan run) must travel with the command.
  std::vector<std::string> carried;
  for (const char* name : {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"}) {
    if (const char* value = std::getenv(name)) carried.push_back(std::string(name) + "=" + value);
  }
  if (!carried.empty()) {
    prefix.push_back("env");
    prefix.insert(prefix.end(), carried.begin(), carried.end());
  }
  return prefix;
}

}  // namespace rdma::testing
