// Device test for stage 07: the real cm_events program as a server and a
// client on Soft-RoCE, every run bounded. A connection must show every
// event at both ends, the region must reach the client through the
// accept's private data, the RDMA Read must come back equal; and each way a
// step fails (nobody listening, a rejection, an address nobody owns, no
// responder resources, a dead peer, a killed client) must end the program
// with that step and its cause named.
//
// rdma_cm needs the address of an interface with an RDMA device: the
// guest's, from RXE_VM_IPV4 (scripts/rxe_vm.sh), or RDMA_TUTORIAL_IPV4 on a
// machine of your own.
#include <signal.h>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "output.hpp"
#include "pair_checks.hpp"
#include "process.hpp"

using namespace std::chrono_literals;
using rdma::testing::both;
using rdma::testing::client_command;
using rdma::testing::first_match;
using rdma::testing::has_line;
using rdma::testing::rdma_cm_address;
using rdma::testing::run_pair;
using rdma::testing::run_pair_once_listening;
using rdma::testing::server_command;

namespace {

// "." in an address, for a regex.
std::string quoted(const std::string& address) {
  std::string out;
  for (char c : address) out += c == '.' ? std::string("\\.") : std::string(1, c);
  return out;
}

// Everything one good connection prints at both ends, the server at
// `server_ip`, the client at `client_ip`; the private data and the
// checksum must be the same on both sides.
struct rnr_retries {
  int client_qp = 3;  // from the server's rdma_accept
  int server_qp = 3;  // from the client's rdma_connect
};
void check_connection(const rdma::testing::pair_result& r, const std::string& server_ip, const std::string& client_ip,
                      std::uint32_t size, std::uint32_t iters, rnr_retries rnr = {}) {
  REQUIRE(r.server.exit_code == 0);
  REQUIRE(r.client.exit_code == 0);
  CHECK(r.server.err.empty());
  CHECK(r.client.err.empty());
  const std::string s = quoted(server_ip);
  const std::string c = quoted(client_ip);
  // The client's source port, as both ends name it (from the id that
  // connected: a client that came before the server retried on new ids).
  CHECK(has_line(r.client.out, "^ADDR_RESOLVED: rxe0 port 1, " + c + ":\\d+ -> " + s + ":18515$"));
  const std::string port = first_match(r.client.out, "^ESTABLISHED: rxe0 port 1, " + c + ":(\\d+) -> " + s + ":18515;");
  CHECK(has_line(r.client.out, "^ROUTE_RESOLVED$"));
  CHECK(has_line(r.client.out, "^QP 0x[0-9a-f]+: made by rdma_create_qp, already in INIT"));
  CHECK(has_line(r.server.out, "^listening on 0\\.0\\.0\\.0:18515 \\(rdma_listen\\)$"));
  CHECK(has_line(r.server.out, "^CONNECT_REQUEST: rxe0 port 1, " + s + ":18515 -> " + c + ":" + port +
                                   "; it reads 1 at once, 56 bytes of private data$"));
  // The region: what the server put in rdma_accept is what the client got.
  const std::string addr = first_match(r.server.out, "^rdma_accept: region " + std::to_string(size) +
                                                         " bytes at (0x[0-9a-f]+), rkey 0x[0-9a-f]+; responder_resources 1$");
  const std::string rkey = first_match(r.server.out, "^rdma_accept: region \\d+ bytes at 0x[0-9a-f]+, rkey (0x[0-9a-f]+)");
  CHECK(has_line(r.client.out, "^ESTABLISHED: rxe0 port 1, " + c + ":" + port + " -> " + s +
                                   ":18515; the server's region: " + std::to_string(size) + " bytes at " + addr +
                                   ", rkey " + rkey + "$"));
  CHECK(has_line(r.server.out, "^ESTABLISHED: rxe0 port 1, " + s + ":18515 -> " + c + ":" + port + "$"));
  // What rdma_cm set: our retry counts, and one read slot at each end.
  // rnr_retry_count is for the other end's Sends: each QP shows the peer's.
  CHECK(has_line(r.client.out, "^QP 0x[0-9a-f]+ as rdma_cm left it: RTS, timeout \\d+ \\(\\d+ ms\\), retry_cnt 3, "
                               "rnr_retry " + std::to_string(rnr.client_qp) + ", max_rd_atomic 1, max_dest_rd_atomic 0$"));
  CHECK(has_line(r.server.out, "^QP 0x[0-9a-f]+ as rdma_cm left it: RTS, timeout \\d+ \\(\\d+ ms\\), retry_cnt 3, "
                               "rnr_retry " + std::to_string(rnr.server_qp) + ", .*, max_dest_rd_atomic 1$"));
  CHECK(has_line(r.client.out, "^  completion: wr_id 1: IBV_WC_RDMA_WRITE$"));
  CHECK(has_line(r.client.out, "^  completion: wr_id 2: IBV_WC_RDMA_READ$"));
  CHECK(has_line(r.client.out, "^  completion: wr_id 3: IBV_WC_SEND$"));
  const std::string sum =
      first_match(r.client.out, "^read back " + std::to_string(size) + " bytes " + std::to_string(iters) +
                                    " time\\(s\\), each the same as written: \"hello over rdma_cm\", fnv1a (0x[0-9a-f]{8})$");
  CHECK(has_line(r.server.out, "^  completion: wr_id 1: IBV_WC_RECV, 8 bytes$"));
  CHECK(has_line(r.server.out, "^the client wrote " + std::to_string(size) + " bytes: \"hello over rdma_cm\", fnv1a " +
                                   sum + " \\(as in its notice\\)$"));
  CHECK(has_line(r.client.out, "^DISCONNECTED$"));
  CHECK(has_line(r.server.out, "^DISCONNECTED: releasing the region$"));
}

// Runs the client alone and returns its result and how long it took.
// The bound that says a step never hangs: 30 s, 90 s under memcheck
// (RDMA_TUTORIAL_TIME_SCALE): there, on a slow day, the pair run's ADDR_ERROR
// case took 31.3 s, most of it the program's start under valgrind.
double hang_bound_s() { return rdma::testing::scaled(30s) > 30s ? 90.0 : 30.0; }

std::pair<rdma::testing::run_result, double> run_timed(const std::vector<std::string>& argv) {
  const auto start = std::chrono::steady_clock::now();
  auto r = rdma::testing::run(argv, 60s);
  return {r, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

}  // namespace

TEST_CASE("a connection made by rdma_cm should show every event, carry the region in private data, and read back") {
  const std::string ip = rdma_cm_address();
  const auto r = run_pair(server_command(), client_command({}, ip), 60s);
  INFO(both(r));
  check_connection(r, ip, ip, 4096, 1);
}

TEST_CASE("many rounds of a larger write should read back the same every time; each end's rnr_retry_count its peer's") {
  const std::string ip = rdma_cm_address();
  const auto r = run_pair(server_command({"--size", "65536", "--rnr-retry-count", "2"}),
                          client_command({"--size", "65536", "--iters", "200", "--rnr-retry-count", "5"}, ip), 120s);
  INFO(both(r));
  check_connection(r, ip, ip, 65536, 200, {2, 5});
}

TEST_CASE("a client asking for no RDMA Reads should be granted none, and its Read should wait, named") {
  const std::string ip = rdma_cm_address();
  // The client's 2 s is for the Read; it starts once the server listens.
  const auto r = run_pair_once_listening(
      server_command(), client_command({"--initiator-depth", "0", "--wait-ms", rdma::testing::peer_wait_ms(2s)}, ip),
      60s, "(rdma_listen)");
  INFO(both(r));
  CHECK(has_line(r.server.out, "^CONNECT_REQUEST: .*; it reads 0 at once, 56 bytes of private data$"));
  CHECK(has_line(r.server.out, "^rdma_accept: region .*; responder_resources 0$"));
  CHECK(has_line(r.client.out, "^QP 0x[0-9a-f]+ as rdma_cm left it: RTS, .*, max_rd_atomic 0, max_dest_rd_atomic 0$"));
  CHECK(r.client.exit_code == 1);
  CHECK(has_line(r.client.err, "^cm_events: no completion within \\d+ ms \\(waiting for the RDMA Read\\)$"));
  CHECK(r.server.exit_code == 1);
  CHECK(has_line(r.server.err, "^cm_events: the client disconnected before its notice \\(our Recv came back flushed\\)$"));
}

TEST_CASE("a second client while one is served should be turned away busy, and the first served to the end") {
  const std::string ip = rdma_cm_address();
  // The first client is held stopped for as long as the second one takes,
  // and the server's wait for its notice runs meanwhile: the default 5 s ran
  // out once under ASan on a host losing a quarter of its CPU to steal, and
  // the server left before the first client's Writes.
  auto server = rdma::testing::start(server_command({"--wait-ms", rdma::testing::peer_wait_ms(60s)}));
  REQUIRE(server->wait_for_output("(rdma_listen)", rdma::testing::scaled(30s)));
  auto first = rdma::testing::start(client_command({"--iters", "300"}, ip));
  REQUIRE(first->wait_for_output("RDMA Read:", rdma::testing::scaled(30s)));
  // Held still while the second one knocks, however fast or loaded this
  // machine is: the server is certainly still serving the first.
  REQUIRE(::kill(-first->pid(), SIGSTOP) == 0);
  const auto second = rdma::testing::run(client_command({}, ip), 60s);
  REQUIRE(::kill(-first->pid(), SIGCONT) == 0);
  INFO(rdma::testing::describe(second));
  CHECK(second.exit_code == 1);
  CHECK(has_line(second.err, "RDMA_CM_EVENT_REJECTED \\(the server's own reason \\(reason 28, consumer reject\\)\\): the "
                             "peer rejected the connection: \"busy: this server serves one client at a time\"$"));
  const auto f = first->wait(rdma::testing::scaled(120s));
  INFO(rdma::testing::describe(f));
  CHECK(f.exit_code == 0);
  CHECK(has_line(f.out, "^read back 4096 bytes 300 time\\(s\\), each the same as written"));
  const auto s = server->wait(rdma::testing::scaled(30s));
  INFO(rdma::testing::describe(s));
  CHECK(s.exit_code == 0);
  CHECK(has_line(s.out, "^rejected: busy: this server serves one client at a time$"));
  CHECK(has_line(s.out, "^DISCONNECTED: releasing the region$"));
}

TEST_CASE("a server granting no responder resources should leave the client's RDMA Read waiting, named") {
  const std::string ip = rdma_cm_address();
  const auto r = run_pair_once_listening(server_command({"--responder-resources", "0"}),
                                         client_command({"--wait-ms", rdma::testing::peer_wait_ms(2s)}, ip), 60s,
                                         "(rdma_listen)");
  INFO(both(r));
  CHECK(r.client.exit_code == 1);
  CHECK(has_line(r.client.out, "^QP 0x[0-9a-f]+ as rdma_cm left it: RTS, .*, max_rd_atomic 0, max_dest_rd_atomic 0$"));
  CHECK(has_line(r.client.out, "^  completion: wr_id 1: IBV_WC_RDMA_WRITE$"));
  CHECK(has_line(r.client.err, "^cm_events: no completion within \\d+ ms \\(waiting for the RDMA Read\\)$"));
  CHECK(has_line(r.client.err, "likely fix: is max_rd_atomic 0 in the QP line above\\?"));
  // The server learns it from the disconnect the client's exit made.
  CHECK(r.server.exit_code == 1);
  CHECK(has_line(r.server.err, "^cm_events: the client disconnected before its notice \\(our Recv came back flushed\\)$"));
}

namespace {

// A server whose region is 100 bytes: a client asking for 4096 is
// rejected with the server's reason, in the words `reason` gives for the
// transport's status; the next client, asking for 64, is served.
void check_rejected_then_served(const std::string& ip, const std::string& reason) {
  auto server = rdma::testing::start(server_command({"--size", "100"}));
  REQUIRE(server->wait_for_output("(rdma_listen)", rdma::testing::scaled(30s)));
  const auto greedy = rdma::testing::run(client_command({"--size", "4096"}, ip), 60s);
  INFO(rdma::testing::describe(greedy));
  CHECK(greedy.exit_code == 1);
  CHECK(has_line(greedy.err, "^cm_events: rdma_connect\\(" + quoted(ip) + ":18515\\): RDMA_CM_EVENT_REJECTED \\(" + reason +
                                 "\\): the peer rejected the connection: \"asks for 4096 bytes; the region holds 100\"$"));
  const auto modest = rdma::testing::run(client_command({"--size", "64"}, ip), 60s);
  INFO(rdma::testing::describe(modest));
  CHECK(modest.exit_code == 0);
  const auto s = server->wait(rdma::testing::scaled(30s));
  INFO(rdma::testing::describe(s));
  CHECK(s.exit_code == 0);
  CHECK(has_line(s.out, "^rejected: asks for 4096 bytes; the region holds 100$"));
  CHECK(has_line(s.out, "^the client wrote 64 bytes: \"hello over rdma_cm\", fnv1a 0x[0-9a-f]{8} \\(as in its notice\\)$"));
}

}  // namespace

TEST_CASE("a client asking for more than the region should be rejected with the server's reason, and the next served") {
  check_rejected_then_served(rdma_cm_address(), "the server's own reason \\(reason 28, consumer reject\\)");
}

TEST_CASE("a client with nobody listening should retry until --wait-ms, then name the rejection") {
  const std::string ip = rdma_cm_address();
  const auto [r, seconds] = run_timed(client_command({"--wait-ms", "1500"}, ip));
  INFO(rdma::testing::describe(r));
  CHECK(r.exit_code == 1);
  CHECK(has_line(r.err, "^cm_events: rdma_connect\\(" + quoted(ip) +
                            ":18515\\): RDMA_CM_EVENT_REJECTED \\(nobody listens on that address and port \\(reason 8, "
                            "invalid service ID\\)\\): the peer rejected the connection$"));
  CHECK(has_line(r.err, "likely fix: start the server first, or check -p$"));
  CHECK(seconds >= 1.3);
}

TEST_CASE("an address nobody owns, off the subnet and on it, should end the client within 30 s, naming the step") {
  // Off every subnet: no route, so rdma_resolve_addr fails at once.
  const auto [off, off_s] = run_timed(client_command({}, "198.51.100.7"));
  INFO(rdma::testing::describe(off));
  CHECK(off.exit_code == 1);
  CHECK(has_line(off.err, "^cm_events: rdma_resolve_addr\\(198\\.51\\.100\\.7:18515\\) failed \\(ENETUNREACH\\): "));
  CHECK(has_line(off.err, "likely fix: no route to that address from here"));
  CHECK(off_s < hang_bound_s());
  // On the subnet of rxe0's dummy0, which has no ARP: address and route
  // "resolve", the connect request goes unanswered, and our deadline ends it.
  const auto [silent, silent_s] = run_timed(client_command({"--wait-ms", "5000"}, "192.0.2.99"));
  INFO(rdma::testing::describe(silent));
  CHECK(silent.exit_code == 1);
  CHECK(has_line(silent.out, "^ROUTE_RESOLVED$"));
  CHECK(has_line(silent.err, "^cm_events: no answer to rdma_connect\\(192\\.0\\.2\\.99:18515\\) \\(ESTABLISHED\\) within "
                             "--wait-ms \\d+$"));
  CHECK(silent_s < hang_bound_s());
  MESSAGE("off-subnet: " << off_s << " s; on dummy0's subnet: " << silent_s << " s");
  // On a subnet where ARP is asked and nobody answers (the guest's dummy1).
  if (!std::filesystem::exists("/sys/class/net/dummy1")) {
    MESSAGE("no dummy1 here (scripts/rxe_vm.sh makes it): the ARP case is tested in the guest");
    return;
  }
  const auto [arp, arp_s] = run_timed(client_command({}, "203.0.113.99"));
  INFO(rdma::testing::describe(arp));
  CHECK(arp.exit_code == 1);
  CHECK(has_line(arp.err, "^cm_events: rdma_resolve_addr\\(203\\.0\\.113\\.99:18515\\): RDMA_CM_EVENT_ADDR_ERROR "
                          "\\(status -110, ETIMEDOUT\\): no local RDMA device reaches that address$"));
  CHECK(arp_s < hang_bound_s());
  MESSAGE("on a subnet nobody answers ARP on: " << arp_s << " s");
}

TEST_CASE("a server killed mid-stream should be found dead by the client's retries, and named") {
  const std::string ip = rdma_cm_address();
  auto server = rdma::testing::start(server_command());
  REQUIRE(server->wait_for_output("(rdma_listen)", rdma::testing::scaled(30s)));
  // ACK timeout 14 (67 ms) and retry_count 3: about 4 x 67 ms to give up.
  auto client = rdma::testing::start(client_command({"--iters", "100000000", "--ack-timeout", "14"}, ip));
  REQUIRE(client->wait_for_output("RDMA Read:", rdma::testing::scaled(30s)));
  REQUIRE(::kill(-server->pid(), SIGKILL) == 0);  // its process group: the program, under a wrapper too
  const auto killed = std::chrono::steady_clock::now();
  const auto c = client->wait(rdma::testing::scaled(60s));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  INFO(rdma::testing::describe(c));
  CHECK(c.exit_code == 1);
  CHECK(has_line(c.out, "^QP 0x[0-9a-f]+ as rdma_cm left it: RTS, timeout 14 \\(67 ms\\), retry_cnt 3, rnr_retry 3, "));
  const std::string ms = first_match(c.err, "^cm_events: the RDMA (?:Write|Read) failed (\\d+) ms after it was posted: "
                                            "wr_id \\d: IBV_WC_RETRY_EXC_ERR \\(12, ");
  CHECK(has_line(c.err, "likely fix: .*the peer is gone"));
  MESSAGE("dead peer found " << ms << " ms after the post, " << seconds << " s after the kill");
}

TEST_CASE("a client killed mid-stream should be named by the server, which releases everything") {
  const std::string ip = rdma_cm_address();
  auto server = rdma::testing::start(server_command());
  REQUIRE(server->wait_for_output("(rdma_listen)", rdma::testing::scaled(30s)));
  auto client = rdma::testing::start(client_command({"--iters", "100000000"}, ip));
  REQUIRE(client->wait_for_output("RDMA Read:", rdma::testing::scaled(30s)));
  REQUIRE(::kill(-client->pid(), SIGKILL) == 0);  // its process group: the program, under a wrapper too
  const auto s = server->wait(rdma::testing::scaled(30s));
  INFO(rdma::testing::describe(s));
  CHECK(s.exit_code == 1);
  CHECK_FALSE(s.timed_out);
  CHECK(has_line(s.out, "^ESTABLISHED: "));
  // The killed client's kernel closed its id, which disconnects.
  CHECK(has_line(s.err, "^cm_events: the client disconnected before its notice \\(our Recv came back flushed\\)$"));
}

TEST_CASE("across two hosts, a connection made by rdma_cm should work over the wire, each end its own address") {
  const char* peer_ip = std::getenv("RXE_VM_PEER_IPV4");
  REQUIRE_MESSAGE(peer_ip != nullptr, "no peer guest: run the pair suite inside scripts/rxe_vm.sh --pair");
  const std::string ip = rdma_cm_address();
  // The server starts through the peer agent: the client retries its
  // connect (nobody listening yet) for up to 30 s.
  const auto r = run_pair(server_command(), client_command({"--wait-ms", rdma::testing::peer_wait_ms(30s)}, peer_ip), 120s,
                          rdma::testing::on_peer_prefix());
  INFO(both(r));
  check_connection(r, peer_ip, ip, 4096, 1);
}

TEST_CASE("across two hosts, an address nobody owns on the wire should end in ADDR_ERROR, named, within 30 s") {
  REQUIRE_MESSAGE(std::getenv("RXE_VM_PEER_IPV4") != nullptr, "no peer guest: run the pair suite inside scripts/rxe_vm.sh --pair");
  const auto [r, seconds] = run_timed(client_command({}, "192.0.2.77"));
  INFO(rdma::testing::describe(r));
  CHECK(r.exit_code == 1);
  CHECK(has_line(r.err, "^cm_events: rdma_resolve_addr\\(192\\.0\\.2\\.77:18515\\): RDMA_CM_EVENT_ADDR_ERROR "
                        "\\(status -110, ETIMEDOUT\\): no local RDMA device reaches that address$"));
  CHECK(seconds < hang_bound_s());
  MESSAGE("ADDR_ERROR on the wire after " << seconds << " s");
}

// On iWARP (the siw suite, scripts/rxe_vm.sh --provider siw): the same
// program, the same events, over a TCP connection (docs/07-cm-events.md,
// "On iWARP"). What differs is checked, not assumed.

TEST_CASE("on iWARP, a connection made by rdma_cm should carry the private data as sent and read back into a REMOTE_WRITE copy") {
  const std::string ip = rdma_cm_address();
  const auto r = run_pair(server_command(), client_command({"--size", "3000"}, ip), 60s);
  INFO(both(r));
  REQUIRE(r.server.exit_code == 0);
  REQUIRE(r.client.exit_code == 0);
  CHECK(r.server.err.empty());
  CHECK(r.client.err.empty());
  const std::string s = quoted(ip);
  const std::string port = first_match(r.client.out, "^ESTABLISHED: siw\\d+ port 1, " + s + ":(\\d+) -> " + s + ":18515;");
  // MPA carries the private data's length: 8 bytes arrive, not the IB CM's 56.
  CHECK(has_line(r.server.out, "^CONNECT_REQUEST: siw\\d+ port 1, " + s + ":18515 -> " + s + ":" + port +
                                   "; it reads 1 at once, 8 bytes of private data$"));
  const std::string rkey = first_match(r.server.out, "^rdma_accept: region \\d+ bytes at 0x[0-9a-f]+, rkey (0x[0-9a-f]+)");
  CHECK(has_line(r.client.out, "^ESTABLISHED: .*; the server's region: 4096 bytes at 0x[0-9a-f]+, rkey " + rkey + "$"));
  // No timeout or retry counts on an iWARP QP; the state as siw reports it
  // (RESET on Linux 6.1, which fills none; RTS on 6.12).
  for (const std::string& out : {r.client.out, r.server.out}) {
    CHECK(has_line(out, "^QP 0x[0-9a-f]+ as rdma_cm left it: (RESET|RTS), max_rd_atomic [01], max_dest_rd_atomic [01] "
                        "\\(ibv_query_qp; on iWARP TCP does the retrying\\)$"));
  }
  // The Read's sink is named to the server by its key.
  CHECK(has_line(r.client.out, "^RDMA Read: 3000 bytes back from 0x[0-9a-f]+ into our copy at 0x[0-9a-f]+, key 0x[0-9a-f]+$"));
  CHECK(has_line(r.client.out, "^read back 3000 bytes 1 time\\(s\\), each the same as written: \"hello over rdma_cm\""));
  CHECK(has_line(r.server.out, "^the client wrote 3000 bytes: \"hello over rdma_cm\", fnv1a 0x[0-9a-f]{8} \\(as in its notice\\)$"));
  CHECK(has_line(r.client.out, "^DISCONNECTED$"));
  CHECK(has_line(r.server.out, "^DISCONNECTED: releasing the region$"));
}

TEST_CASE("on iWARP, a client with nobody listening should retry on each refused TCP connection until --wait-ms, then say so") {
  const std::string ip = rdma_cm_address();
  const auto [r, seconds] = run_timed(client_command({"--wait-ms", "1500"}, ip));
  INFO(rdma::testing::describe(r));
  CHECK(r.exit_code == 1);
  // siw makes the TCP connection inside rdma_connect: the refusal is the call's errno.
  CHECK(has_line(r.err, "^cm_events: rdma_connect\\(" + quoted(ip) + ":18515\\) failed \\(ECONNREFUSED\\): "));
  CHECK(has_line(r.err, "likely fix: nobody listens on that address and port: start the server first, or check -p$"));
  CHECK(seconds >= 1.3);
}

TEST_CASE("on iWARP, a rejection should arrive as an MPA reject with the server's reason, and the next client be served") {
  check_rejected_then_served(rdma_cm_address(), "the server's own reason \\(iWARP: an MPA reject, status -104, ECONNRESET\\)");
}

TEST_CASE("on iWARP, a connect to a silent address should end at --wait-ms, though siw's rdma_connect blocks in TCP's connect") {
  // dummy0's subnet: nothing answers the SYN; TCP alone would give up after about 130 s.
  const auto [silent, silent_s] = run_timed(client_command({"--wait-ms", "3000"}, "192.0.2.99"));
  INFO(rdma::testing::describe(silent));
  CHECK(silent.exit_code == 1);
  CHECK(has_line(silent.out, "^ROUTE_RESOLVED$"));
  CHECK(has_line(silent.err, "^cm_events: no answer to rdma_connect\\(192\\.0\\.2\\.99:18515\\) within --wait-ms 3000 "
                             "\\(the call itself was still connecting\\)$"));
  CHECK(silent_s < hang_bound_s());
  MESSAGE("a silent address on iWARP ended after " << silent_s << " s");
}

TEST_CASE("on iWARP, a server granting no responder resources should still serve the Read: siw raises it to the client's ask") {
  const std::string ip = rdma_cm_address();
  const auto r = run_pair_once_listening(server_command({"--responder-resources", "0"}), client_command({}, ip), 60s,
                                         "(rdma_listen)");
  INFO(both(r));
  CHECK(has_line(r.server.out, "^rdma_accept: region .*; responder_resources 0$"));
  CHECK(r.client.exit_code == 0);
  CHECK(has_line(r.client.out, "^  completion: wr_id 2: IBV_WC_RDMA_READ$"));
  CHECK(r.server.exit_code == 0);
}

TEST_CASE("on iWARP, a server killed mid-stream should end the client within its --wait-ms, named") {
  const std::string ip = rdma_cm_address();
  auto server = rdma::testing::start(server_command());
  REQUIRE(server->wait_for_output("(rdma_listen)", rdma::testing::scaled(30s)));
  auto client = rdma::testing::start(client_command({"--iters", "100000000", "--wait-ms", "10000"}, ip));
  REQUIRE(client->wait_for_output("RDMA Read:", rdma::testing::scaled(30s)));
  REQUIRE(::kill(-server->pid(), SIGKILL) == 0);
  const auto killed = std::chrono::steady_clock::now();
  const auto c = client->wait(rdma::testing::scaled(60s));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  INFO(rdma::testing::describe(c));
  CHECK(c.exit_code == 1);
  CHECK_FALSE(c.timed_out);
  // No retries to run out: the killed process's kernel closes its TCP
  // connection, and the work request in flight comes back flushed. Or, on
  // siw with Linux 6.12 now and then, never comes back (the QP in ERR, the
  // WR not completed): then --wait-ms names the wait.
  const bool flushed = has_line(c.err, "^cm_events: the RDMA (?:Write|Read) failed \\d+ ms after it was posted: wr_id \\d: "
                                       "IBV_WC_WR_FLUSH_ERR \\(5, ");
  const bool waited = has_line(c.err, "^cm_events: no completion within 10000 ms \\(waiting for the RDMA (?:Write|Read)\\)$");
  CHECK((flushed || waited));
  CHECK_FALSE(has_line(c.err, "GID"));  // no RoCE advice on iWARP
  if (waited) CHECK(has_line(c.err, "likely fix: on iWARP only TCP gives up on a peer"));
  MESSAGE("the killed server's end found " << seconds << " s after the kill, " << (flushed ? "flushed" : "by --wait-ms"));
}
