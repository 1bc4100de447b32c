// Device test for stage 04: the real rdma_write program, a server and a
// client as two processes on Soft-RoCE, every run bounded in time. What both
// print is checked against each other: the QPNs and PSNs the handshake
// carried, the payload's checksum on both sides, the completions each side
// saw (and did not see). A test socket plays the hostile peers.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>

#include "output.hpp"
#include "pair_checks.hpp"
#include "process.hpp"
#include "rdma_tutorial/tcp.hpp"

using namespace std::chrono_literals;
using rdma::testing::both;
using rdma::testing::client_command;
using rdma::testing::describe;
using rdma::testing::first_match;
using rdma::testing::has_line;
using rdma::testing::hostile_client;
using rdma::testing::peer_program;
using rdma::testing::run;
using rdma::testing::run_pair;
using rdma::testing::server_command;

namespace {


// Every successful exchange: the handshake crossed (common/testing/
// pair_checks.hpp), and the bytes the server read are the bytes the client
// wrote.
void check_exchange(const rdma::testing::pair_result& r) {
  rdma::testing::check_handshake(r);
  const std::string wrote = first_match(r.client.out, R"(^wrote "hello from the client", fnv1a (0x[0-9a-f]{8})$)");
  CHECK(has_line(r.server.out, R"(^the client wrote \d+ bytes, \d+ time\(s\): "hello from the client", fnv1a )" +
                                   wrote + "$"));
  CHECK(has_line(r.server.out, "^the client closed the connection; releasing the region$"));
}

// One of the port's hardware counters (scripts/hw_counters.sh reads the same
// files), or nothing where the device has no such counter. Both peers share
// the one device here, so it counts what both sides did.
std::optional<long> hw_counter(const std::string& name) {
  const std::filesystem::path root = "/sys/class/infiniband";
  std::error_code ec;
  for (const auto& dev : std::filesystem::directory_iterator(root, ec)) {
    std::ifstream in(dev.path() / "ports/1/hw_counters" / name);
    long value = 0;
    if (in >> value) return value;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("one RDMA Write should land in the server's region, with a completion only at the client") {
  const auto r = run_pair(server_command(), client_command(), 60s);
  INFO(both(r));
  REQUIRE(r.client.exit_code == 0);
  REQUIRE(r.server.exit_code == 0);
  CHECK(r.client.err.empty());
  CHECK(r.server.err.empty());
  check_exchange(r);
  CHECK(has_line(r.server.out, R"(^landing region: 4104 bytes at 0x[0-9a-f]+, rkey 0x[0-9a-f]+ \(4096 for the payload, 8 for the flag word\)$)"));
  CHECK(has_line(r.client.out, R"(^RDMA Write: 4096 bytes to 0x[0-9a-f]+, rkey 0x[0-9a-f]+$)"));
  CHECK(has_line(r.client.out, "^RDMA Write: .*\n  completion: wr_id 1: IBV_WC_RDMA_WRITE$"));
  CHECK(has_line(r.client.out, "^notice by Send: 4096 bytes, 1 write\\(s\\)\n  completion: wr_id 2: IBV_WC_SEND$"));
  // The server's one completion is the notice's Recv: the write made none.
  CHECK(has_line(r.server.out, "^waiting for the notice: a Send \\(polling the CQ\\)\n"
                               "  completion: wr_id 1: IBV_WC_RECV, 8 bytes\n"
                               "  the only completion here: the RDMA Write itself left none$"));
  // The address and rkey the client used are the ones the server advertised.
  const std::string addr = first_match(r.server.out, R"(^landing region: \d+ bytes at (0x[0-9a-f]+),)");
  const std::string rkey = first_match(r.server.out, R"(^landing region: .*, rkey (0x[0-9a-f]+) )");
  CHECK(has_line(r.client.out, "^RDMA Write: 4096 bytes to " + addr + ", rkey " + rkey + "$"));
}

TEST_CASE("with --notify flag the server should see the flag word change while its CQ stays empty") {
  const auto r = run_pair(server_command({"--notify", "flag"}), client_command({"--notify", "flag", "--size", "1000"}), 60s);
  INFO(both(r));
  REQUIRE(r.client.exit_code == 0);
  REQUIRE(r.server.exit_code == 0);
  check_exchange(r);
  CHECK(has_line(r.client.out, "^notice by RDMA Write to the flag word: 1000 bytes, 1 write\\(s\\)\n"
                               "  completion: wr_id 2: IBV_WC_RDMA_WRITE$"));
  CHECK(has_line(r.server.out, "^  flag word: 1000 bytes, 1 write\\(s\\)\n"
                               "  ibv_poll_cq: 0 completions: no RDMA Write leaves one at its target$"));
  CHECK(has_line(r.server.out, R"(^the client wrote 1000 bytes, 1 time\(s\))"));
}

// The flag word sits after the payload, rounded up to 8 bytes: aligned
// whatever --size is (61: the word would otherwise straddle a cache line).
TEST_CASE("with --notify flag and a --size that is not a multiple of 8 the flag word should still be aligned and seen") {
  for (const char* size : {"100", "61"}) {
    CAPTURE(size);
    const auto r = run_pair(server_command({"--notify", "flag", "--size", size}),
                            client_command({"--notify", "flag", "--size", size}), 60s);
    INFO(both(r));
    REQUIRE(r.client.exit_code == 0);
    REQUIRE(r.server.exit_code == 0);
    check_exchange(r);
    const long capacity = (std::stol(size) + 7) / 8 * 8;
    CHECK(has_line(r.server.out, "^landing region: " + std::to_string(capacity + 8) + " bytes at 0x[0-9a-f]+, rkey "
                                 "0x[0-9a-f]+ \\(" + std::to_string(capacity) + " for the payload, 8 for the flag word\\)$"));
    CHECK(has_line(r.server.out, std::string("^  flag word: ") + size + " bytes, 1 write\\(s\\)$"));
    CHECK(has_line(r.server.out, std::string("^the client wrote ") + size + " bytes, 1 time\\(s\\)"));
  }
}

// What the handshake is trusted for (docs/04-rdma-write.md): RC checks
// neither value against the peer. Measured on Soft-RoCE (Linux 6.1).
TEST_CASE("a client that sends from a PSN behind the one it told should see its writes complete while nothing arrives") {
  const std::optional<long> duplicates_before = hw_counter("duplicate_request");
  const auto r = run_pair(server_command(), client_command({"--hostile", "psn-behind"}), 60s);
  INFO(both(r));
  CHECK(has_line(r.client.out, R"(^hostile: we send from PSN (0x[0-9a-f]+) as QP 0x[0-9a-f]+, and tell the server PSN 0x[0-9a-f]+, QP 0x[0-9a-f]+$)"));
  // The responder takes every packet for a duplicate, drops it and ACKs:
  // the client's completions all succeed.
  CHECK(r.client.exit_code == 0);
  CHECK(has_line(r.client.out, "^  completion: wr_id 1: IBV_WC_RDMA_WRITE$"));
  CHECK(has_line(r.client.out, "^  completion: wr_id 2: IBV_WC_SEND$"));
  // The server never saw the notice, nor any byte.
  CHECK(r.server.exit_code == 1);
  CHECK(has_line(r.server.err, "^rdma_write: the client closed the connection while we waited for its notice$"));
  CHECK(r.server.out.find("the client wrote") == std::string::npos);
  if (duplicates_before) CHECK(*hw_counter("duplicate_request") - *duplicates_before >= 5);  // 4 write packets, the Send
}

TEST_CASE("a client that tells a QPN not its own should get its write in but never its ACK") {
  const std::optional<long> duplicates_before = hw_counter("duplicate_request");
  const auto r = run_pair(server_command(), client_command({"--hostile", "other-qpn"}), 60s);
  INFO(both(r));
  CHECK(r.client.exit_code == 1);
  CHECK(has_line(r.client.err, R"(^rdma_write: completion failed: wr_id 1: IBV_WC_RETRY_EXC_ERR \(12, )"));
  CHECK(r.server.exit_code == 1);
  CHECK(has_line(r.server.err, "^rdma_write: the client closed the connection while we waited for its notice$"));
  // The server's QP executed the write (its resends arrive as duplicates of
  // packets already taken); its ACKs went to a QP that does not exist.
  if (duplicates_before) CHECK(*hw_counter("duplicate_request") - *duplicates_before >= 3);
}

TEST_CASE("throughput mode should print a perftest-style line, and the notice should count every write") {
  const auto r = run_pair(server_command(), client_command({"--iters", "3000", "--size", "64", "--tx-depth", "32", "--cq-mod", "8"}), 120s);
  INFO(both(r));
  REQUIRE(r.client.exit_code == 0);
  REQUIRE(r.server.exit_code == 0);
  check_exchange(r);
  CHECK(has_line(r.client.out, R"(^ #bytes     #iterations    BW average\[MB/sec\]   MsgRate\[Mpps\]$)"));
  CHECK(has_line(r.client.out, R"(^ 64 +3000 +\d+\.\d\d +\d\.\d{6}$)"));
  CHECK(has_line(r.server.out, R"(^the client wrote 64 bytes, 3000 time\(s\))"));
}

TEST_CASE("a write larger than the server's region should be refused by the client, and the server should not wait it out") {
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_pair(server_command({"--size", "100"}), client_command({"--size", "200"}), 60s);
  INFO(both(r));
  CHECK(r.client.exit_code == 1);
  CHECK(has_line(r.client.err, R"(^rdma_write: --size 200 does not fit the server's region \(112 bytes, 8 of them the flag word\)$)"));
  CHECK(has_line(r.client.err, "^  likely fix: write at most 104 bytes"));
  CHECK(r.server.exit_code == 1);
  CHECK(has_line(r.server.err, "^rdma_write: (the client closed the connection while we waited for its notice|"
                               "127.0.0.1:\\d+ closed the connection after 0 of 52 bytes)"));
  // Well before --accept-ms (30 s): the close ended the server's wait.
  CHECK(std::chrono::steady_clock::now() - start < rdma::testing::scaled(20s));
}

TEST_CASE("a silent client should be rejected within --wait-ms, naming how much of the handshake came") {
  auto s = rdma::testing::start({peer_program(), "--wait-ms", rdma::testing::silent_peer_wait_ms(2s)});
  const rdma::tcp::socket sock = hostile_client(*s);
  const auto r = s->wait(rdma::testing::scaled(30s));
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(has_line(r.err, R"(^rdma_write: 127\.0\.0\.1:\d+ sent 0 of 8 bytes of the peer's endpoint within \d+\.\d s$)"));
}

// A client that shakes hands and then writes nothing: the server's one sign
// of it is the notice that does not come, within --wait-ms.
TEST_CASE("a client silent after the handshake should be given up on within --wait-ms") {
  auto s = rdma::testing::start({peer_program(), "--wait-ms", rdma::testing::silent_peer_wait_ms(2s)});
  const rdma::tcp::socket sock = hostile_client(*s);
  rdma::tcp::send_all(sock, rdma::testing::phantom_endpoint(), rdma::tcp::after_ms(2000), "the endpoint");
  const auto started = std::chrono::steady_clock::now();
  const auto r = s->wait(rdma::testing::scaled(30s));
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(has_line(r.out, "^sent our endpoint: the client may write now$"));
  CHECK(has_line(r.err, R"(^rdma_write: nothing within \d+ ms while we waited for its notice$)"));
  CHECK(has_line(r.err, "^  likely fix: an RDMA Write leaves no trace at its target"));
  CHECK(std::chrono::steady_clock::now() - started < rdma::testing::scaled(2s) + 3s);
}

TEST_CASE("garbage, a truncated handshake and another version should each be refused with what was wrong") {
  const auto valid = [] {
    rdma::wire::endpoint e;
    e.qp_num = 0x99;
    e.psn = 1;
    e.gid.raw[15] = 1;
    return rdma::wire::encode_endpoint(e);
  }();
  struct hostile {
    std::string name;
    std::vector<std::byte> bytes;
    std::string error;
  };
  std::vector<hostile> cases;
  const std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n0123456789abcdefghij";
  cases.push_back({"garbage", {reinterpret_cast<const std::byte*>(junk.data()),
                               reinterpret_cast<const std::byte*>(junk.data()) + 52},
                   R"(^rdma_write: handshake: bad magic 0x47455420 \(expected 0x52444d54, "RDMT"\)$)"});
  cases.push_back({"truncated", {valid.begin(), valid.begin() + 20},
                   R"(^rdma_write: 127\.0\.0\.1:\d+ closed the connection after 12 of 44 bytes of the peer's endpoint$)"});
  auto v1 = std::vector<std::byte>(valid.begin(), valid.end());
  v1[5] = std::byte{1};
  cases.push_back({"version 1", v1, R"(^rdma_write: handshake: protocol version 1, this program speaks version 2$)"});
  auto qpn = std::vector<std::byte>(valid.begin(), valid.end());
  qpn[8] = std::byte{0xff};
  cases.push_back({"a 32-bit QPN", qpn, R"(^rdma_write: handshake: qp_num 0xff000099 is not an RC QPN)"});
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const auto started = std::chrono::steady_clock::now();
    auto s = rdma::testing::start(server_command());
    {
      const rdma::tcp::socket sock = hostile_client(*s);
      rdma::tcp::send_all(sock, c.bytes, rdma::tcp::after_ms(2000), c.name);
    }  // closed here: a truncated message then ends in EOF
    const auto r = s->wait(rdma::testing::scaled(30s));
    INFO(describe(r));
    CHECK(r.exit_code == 1);
    CHECK(has_line(r.err, c.error));
    CHECK(r.out.find("RESET -> INIT") == std::string::npos);  // refused before any QP moved
    CHECK(std::chrono::steady_clock::now() - started < rdma::testing::scaled(10s));
  }
}

TEST_CASE("a client with no server should give up within --wait-ms and say where it looked") {
  const auto r = run({peer_program(), "-s", "127.0.0.1", "-p", "1", "--wait-ms", "1000"}, 30s);
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(has_line(r.err, R"(^rdma_write: no server answered at 127\.0\.0\.1:1 within \d\.\d s \(ECONNREFUSED: nobody listens there\)$)"));
  CHECK(has_line(r.err, "^  likely fix: start the server first"));
}

TEST_CASE("a bad command line should be a usage error, exit 2") {
  const auto r = run({peer_program(), "-s", "127.0.0.1", "--bind", "192.0.2.1"}, 30s);
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK(has_line(r.err, "^rdma_write: --bind is for the server \\(without -s\\)$"));
}

TEST_CASE("across two hosts: the handshake should carry two different GIDs and the write should land") {
  const auto r = run_pair(server_command(), client_command({"--iters", "200"}, "192.0.2.2"), 120s, rdma::testing::on_peer_prefix());
  INFO(both(r));
  REQUIRE(r.client.exit_code == 0);
  REQUIRE(r.server.exit_code == 0);
  check_exchange(r);
  rdma::testing::check_two_hosts(r);
}
