// Device test for stage 03: runs the real qp_state program on the device and
// checks what it printed at every step, plus its error paths. The attribute
// values the program prints after each step are what ibv_query_qp read back
// from the device, so comparing them with the command line proves the knobs
// reach the device. Every run is bounded; a hang is reported as a failure
// with what the program printed.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <regex>
#include <string>
#include <thread>

#include "output.hpp"
#include "process.hpp"

using namespace std::chrono_literals;
using rdma::testing::describe;
using rdma::testing::has_line;
using rdma::testing::read_line;
using rdma::testing::run;

namespace {

std::string qp_state() { return rdma::testing::program_from_env("PROGRAM"); }

// The block one QP's connect_qp printed, from its header to the next blank line.
std::string block_of(const std::string& out, const std::string& label) {
  const auto start = out.find("\n" + label + " (qp_num ");
  REQUIRE_MESSAGE(start != std::string::npos, label << " never started connecting:\n" << out);
  const auto end = out.find("\n\n", start + 1);
  return out.substr(start + 1, end == std::string::npos ? std::string::npos : end - start);
}

// The five numbers of a caps row ("  ibv_query_qp   31 31 4 1 64") under `label`.
std::vector<unsigned long> caps_row(const std::string& out, const std::string& label, const std::string& row) {
  std::smatch m;
  const std::regex re(label + ": qp_num 0x[0-9a-f]+\n(?:.*\n)*?  " + row + R"( +(\d+) +(\d+) +(\d+) +(\d+) +(\d+)\n)");
  REQUIRE_MESSAGE(std::regex_search(out, m, re), "no '" << row << "' row for " << label << " in:\n" << out);
  std::vector<unsigned long> values;
  for (std::size_t i = 1; i <= 5; ++i) values.push_back(std::stoul(m[i]));
  return values;
}

}  // namespace

TEST_CASE("both QPs should go RESET, INIT, RTR, RTS as ibv_query_qp reports, each step with its mask") {
  const auto r = run({qp_state()}, 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  for (const std::string label : {"QP A", "QP B"}) {
    const std::string block = block_of(r.out, label);
    INFO(block);
    CHECK(std::regex_search(block, std::regex(
        "created +now RESET\n"
        " +RESET -> INIT +now INIT +mask STATE\\|ACCESS_FLAGS\\|PKEY_INDEX\\|PORT\n.*\n"
        " +INIT -> RTR +now RTR +mask STATE\\|AV\\|PATH_MTU\\|RQ_PSN\\|MIN_RNR_TIMER\\|MAX_DEST_RD_ATOMIC\\|DEST_QPN\n.*\n"
        " +RTR -> RTS +now RTS +mask STATE\\|TIMEOUT\\|RETRY_CNT\\|RNR_RETRY\\|MAX_QP_RD_ATOMIC\\|SQ_PSN\n")));
  }
  // Each QP's rq_psn, as the device holds it, is the other's sq_psn (defaults 4000 and 2000).
  CHECK(has_line(block_of(r.out, "QP A"), "rq_psn 2000,"));
  CHECK(has_line(block_of(r.out, "QP A"), "sq_psn 4000,"));
  CHECK(has_line(block_of(r.out, "QP B"), "rq_psn 4000,"));
  CHECK(has_line(block_of(r.out, "QP B"), "sq_psn 2000,"));
  // The device kept every value it was given: no "(asked: ...)" line.
  CHECK_FALSE(has_line(r.out, R"(\(asked: )"));
}

TEST_CASE("each QP's dest_qp_num should be the other's qp_num") {
  const auto r = run({qp_state()}, 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  std::smatch a;
  std::smatch b;
  REQUIRE(std::regex_search(r.out, a, std::regex("^QP A: qp_num (0x[0-9a-f]+)$", std::regex::multiline)));
  REQUIRE(std::regex_search(r.out, b, std::regex("^QP B: qp_num (0x[0-9a-f]+)$", std::regex::multiline)));
  CHECK(a[1] != b[1]);
  CHECK(has_line(block_of(r.out, "QP A"), "dest_qp_num " + b[1].str() + ","));
  CHECK(has_line(block_of(r.out, "QP B"), "dest_qp_num " + a[1].str() + ","));
}

TEST_CASE("the queue sizes should be shown as asked, as created and as queried, never below what was asked") {
  const auto r = run({qp_state()}, 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(has_line(r.out, R"(^  asked +16 +16 +1 +1 +64$)"));
  CHECK(has_line(r.out, R"(^CQ: 64 entries asked, \d+ granted$)"));
  for (const std::string label : {"QP A", "QP B"}) {
    const auto created = caps_row(r.out, label, "ibv_create_qp");
    const auto queried = caps_row(r.out, label, "ibv_query_qp");
    const std::vector<unsigned long> asked{16, 16, 1, 1, 64};
    for (std::size_t i = 0; i < asked.size(); ++i) {
      CHECK(created[i] >= asked[i]);
      CHECK(queried[i] >= asked[i]);
    }
  }
}

TEST_CASE("a message should arrive each way, with successful completions on both ends") {
  const auto r = run({qp_state()}, 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(has_line(r.out, "^  QP A send completion: wr_id 1: IBV_WC_SEND$"));
  CHECK(has_line(r.out, "^  QP B recv completion: wr_id 2: IBV_WC_RECV, 15 bytes$"));
  CHECK(has_line(r.out, "^  QP B received \"hello from QP A\"$"));
  CHECK(has_line(r.out, "^  QP B send completion: wr_id 3: IBV_WC_SEND$"));
  CHECK(has_line(r.out, "^  QP A recv completion: wr_id 4: IBV_WC_RECV, 15 bytes$"));
  CHECK(has_line(r.out, "^  QP A received \"hello from QP B\"$"));
  CHECK(has_line(r.out, "^both QPs are in RTS and a message went each way$"));
}

TEST_CASE("the knobs should be what the device holds after each step") {
  // --size 4096 at MTU 256: A's message is 16 packets, PSN 0xffffff then 0..14.
  const auto r = run({qp_state(), "--mtu", "256", "--psn-a", "16777215", "--psn-b", "0", "--timeout", "10",
                      "--retry-cnt", "1", "--rnr-retry", "7", "--min-rnr-timer", "5", "--size", "4096"}, 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(has_line(r.out, "path_mtu 256$"));
  CHECK(has_line(block_of(r.out, "QP A"), "^ +path_mtu 256, dest_qp_num 0x[0-9a-f]+, rq_psn 0, max_dest_rd_atomic 1, "
                                          "min_rnr_timer 5, dgid "));
  CHECK(has_line(block_of(r.out, "QP A"), "^ +timeout 10, retry_cnt 1, rnr_retry 7, sq_psn 16777215, max_rd_atomic 1$"));
  CHECK(has_line(block_of(r.out, "QP B"), "^ +timeout 10, retry_cnt 1, rnr_retry 7, sq_psn 0, max_rd_atomic 1$"));
  CHECK_FALSE(has_line(r.out, R"(\(asked: )"));
  // PSNs are 24 bits and wrap: B must accept 0 after 0xffffff.
  CHECK(has_line(r.out, "^  QP B recv completion: wr_id 2: IBV_WC_RECV, 4096 bytes$"));
  CHECK(has_line(r.out, "^  QP A received \"hello from QP B\"$"));
}

TEST_CASE("a message larger than the path MTU should arrive whole, split into packets and reassembled") {
  const auto r = run({qp_state(), "--size", "4096", "--mtu", "256"}, 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(has_line(r.out, "^  QP B recv completion: wr_id 2: IBV_WC_RECV, 4096 bytes$"));
  CHECK(has_line(r.out, "^  QP A received \"hello from QP B\"$"));
}

TEST_CASE("a path MTU above the port's active_mtu should be refused before any QP is touched") {
  const auto r = run({qp_state(), "--mtu", "4096"}, 60s);
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(has_line(r.err, R"(^qp_state: --mtu 4096 is larger than the port's active_mtu \d+$)"));
  CHECK(r.out.find("QP A") == std::string::npos);
}

TEST_CASE("an empty GID index should be an error naming it, and bad knobs a usage error") {
  const auto g = run({qp_state(), "-g", "999"}, 60s);
  INFO(describe(g));
  CHECK(g.exit_code == 1);
  CHECK(has_line(g.err, "^qp_state: GID index 999 is empty or past the table of port 1$"));
  const auto u = run({qp_state(), "--retry-cnt", "8"}, 60s);
  INFO(describe(u));
  CHECK(u.exit_code == 2);
  CHECK(has_line(u.err, "--retry-cnt must be between 0 and 7, got 8"));
}

TEST_CASE("with the netdev down, INIT -> RTR should fail with ENETUNREACH and the hint should name the netdev") {
  // Only in the project's guest, whose dummy0 exists for this program alone.
  if (std::getenv("RXE_VM_IPV4") == nullptr) {
    MESSAGE("skipped outside the Soft-RoCE guest: it takes the RDMA port's netdev down");
    return;
  }
  const std::string netdev = read_line("/sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/1");
  REQUIRE_FALSE(netdev.empty());
  REQUIRE(rdma::testing::run_shell("ip link set " + netdev + " down", 10s).exit_code == 0);
  const auto r = run({qp_state(), "-g", "1"}, 60s);
  REQUIRE(rdma::testing::run_shell("ip link set " + netdev + " up", 10s).exit_code == 0);
  // Wait for the port to come back, so the tests after this one find it ACTIVE.
  const auto deadline = std::chrono::steady_clock::now() + rdma::testing::scaled(10s);
  while (read_line("/sys/class/infiniband/rxe0/ports/1/state").find("ACTIVE") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(has_line(r.err, R"(^qp_state: ibv_modify_qp\(QP A, INIT -> RTR\) failed \(ENETUNREACH\))"));
  CHECK(has_line(r.err, "^  likely fix: INIT -> RTR looks up the peer's MAC .*netdev"));
}
