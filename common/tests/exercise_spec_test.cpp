#include <doctest/doctest.h>

#include "exercise_spec.hpp"

using rdma::testing::judge;
using rdma::testing::parse_exercise_spec;
using rdma::testing::run_result;

namespace {

const char* const source = R"(// EXERCISE: ports are numbered from 1
// TODO: fix the loop
// SYMPTOM: ibv_query_port\(port 0\)
// ARGS: -d rxe0
// TIMEOUT: 12
void f();
)";

}  // namespace

TEST_CASE("an exercise header should give title, symptom, arguments and timeout") {
  const auto spec = parse_exercise_spec(source);
  CHECK(spec.title == "ports are numbered from 1");
  CHECK(spec.symptom == R"(ibv_query_port\(port 0\))");
  CHECK(spec.args == std::vector<std::string>{"-d", "rxe0"});
  CHECK(spec.timeout_seconds == 12);
}

TEST_CASE("an exercise without title or symptom, or with a bad regex, should be refused") {
  CHECK_THROWS_AS(parse_exercise_spec("// SYMPTOM: x\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_exercise_spec("// EXERCISE: x\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_exercise_spec("// EXERCISE: x\n// SYMPTOM: (\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_exercise_spec("// EXERCISE: x\n// SYMPTOM: y\n// TIMEOUT: soon\n"), std::invalid_argument);
}

TEST_CASE("a clean exit without the symptom should be judged fixed") {
  const auto spec = parse_exercise_spec(source);
  run_result r;
  r.exit_code = 0;
  r.out = "port 1\n";
  CHECK(judge(spec, r).fixed);
}

TEST_CASE("the symptom should be judged still broken and quoted") {
  const auto spec = parse_exercise_spec(source);
  run_result r;
  r.exit_code = 1;
  r.err = "devices: starting\ndevices: ibv_query_port(port 0) failed (EINVAL): Invalid argument\n";
  const auto j = judge(spec, r);
  CHECK_FALSE(j.fixed);
  CHECK(j.symptom_seen);
  CHECK(j.reason == "devices: ibv_query_port(port 0) failed (EINVAL): Invalid argument");
}

TEST_CASE("a different failure should be still broken but without the symptom") {
  const auto spec = parse_exercise_spec(source);
  run_result r;
  r.exit_code = 2;
  r.err = "usage error\n";
  const auto j = judge(spec, r);
  CHECK_FALSE(j.fixed);
  CHECK_FALSE(j.symptom_seen);
  CHECK(j.reason == "exit code 2: usage error");
}

TEST_CASE("a hang should be still broken, and exit code 0 with the symptom too") {
  const auto spec = parse_exercise_spec(source);
  run_result hung;
  hung.timed_out = true;
  CHECK_FALSE(judge(spec, hung).fixed);
  CHECK(judge(spec, hung).reason == "no answer within 12 s (killed)");
  run_result quiet_failure;
  quiet_failure.exit_code = 0;
  quiet_failure.out = "ibv_query_port(port 0) gave nonsense\n";
  CHECK_FALSE(judge(spec, quiet_failure).fixed);
}
