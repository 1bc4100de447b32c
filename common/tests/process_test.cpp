#include <doctest/doctest.h>

#include "process.hpp"

using namespace std::chrono_literals;

TEST_CASE("run should collect both streams and the exit code") {
  const auto r = rdma::testing::run_shell("echo out; echo err >&2; exit 3", 5s);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 3);
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
}

TEST_CASE("a program that hangs should be killed at the deadline with what it printed so far") {
  const auto start = std::chrono::steady_clock::now();
  const auto r = rdma::testing::run_shell("echo started; sleep 30", 300ms);
  CHECK(r.timed_out);
  CHECK(r.out == "started\n");
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("a program that closes its output but keeps running should still time out") {
  const auto r = rdma::testing::run_shell("exec >&- 2>&-; sleep 30", 300ms);
  CHECK(r.timed_out);
}

TEST_CASE("a missing program should report exit code 127") {
  const auto r = rdma::testing::run({"/nonexistent/program"}, 5s);
  CHECK(r.exit_code == 127);
  CHECK(r.err.find("cannot execute") != std::string::npos);
}

TEST_CASE("a program killed by a signal should report 128 + the signal") {
  const auto r = rdma::testing::run_shell("kill -9 $$", 5s);
  CHECK(r.exit_code == 137);
}
