#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "exercise_spec.hpp"

using rdma::testing::checker_file_of;
using rdma::testing::judge;
using rdma::testing::parse_exercise_spec;
using rdma::testing::run_result;

namespace {

const char* const source = R"(// EXERCISE: ports are numbered from 1
// TODO: fix the loop
// SYMPTOM: ibv_query_port\(port 0\)
// FIXED: ^  port 1$
// FIXED: ^    state +PORT_
// ARGS: -d rxe0
// TIMEOUT: 12
void f();
)";

}  // namespace

TEST_CASE("an exercise header should give title, symptom, arguments and timeout") {
  const auto spec = parse_exercise_spec(source);
  CHECK(spec.title == "ports are numbered from 1");
  CHECK(spec.symptom == R"(ibv_query_port\(port 0\))");
  CHECK(spec.fixed == std::vector<std::string>{"^  port 1$", "^    state +PORT_"});
  CHECK(spec.args == std::vector<std::string>{"-d", "rxe0"});
  CHECK(spec.timeout_seconds == 12);
  CHECK_FALSE(spec.two_peers);
}

TEST_CASE("a SERVER line, even an empty one, should make the exercise a two-peer run") {
  const auto two = parse_exercise_spec(std::string(source) + "// SERVER: --notify flag\n");
  CHECK(two.two_peers);
  CHECK(two.server_args == std::vector<std::string>{"--notify", "flag"});
  const auto bare = parse_exercise_spec(std::string(source) + "// SERVER:\n");
  CHECK(bare.two_peers);
  CHECK(bare.server_args.empty());
}

TEST_CASE("a CLIENTS line should start that many clients, and only beside a SERVER line") {
  CHECK(parse_exercise_spec(std::string(source) + "// SERVER:\n").clients == 1);
  CHECK(parse_exercise_spec(std::string(source) + "// SERVER:\n// CLIENTS: 4\n").clients == 4);
  CHECK_THROWS_AS(parse_exercise_spec(std::string(source) + "// CLIENTS: 4\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_exercise_spec(std::string(source) + "// SERVER:\n// CLIENTS: 0\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_exercise_spec(std::string(source) + "// SERVER:\n// CLIENTS: many\n"), std::invalid_argument);
}

TEST_CASE("an INJECT line should name the injection shim's modes, and nothing else") {
  CHECK(parse_exercise_spec(source).inject.empty());
  const auto spec =
      parse_exercise_spec(std::string(source) + "// INJECT: RDMA_INJECT_LATE_ARM=400 RDMA_INJECT_STRAGGLER=100\n");
  using setting = std::pair<std::string, std::string>;
  CHECK(spec.inject == std::vector<setting>{{"RDMA_INJECT_LATE_ARM", "400"}, {"RDMA_INJECT_STRAGGLER", "100"}});
  CHECK_THROWS_AS(parse_exercise_spec(std::string(source) + "// INJECT: LD_PRELOAD=x.so\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_exercise_spec(std::string(source) + "// INJECT: RDMA_INJECT_LATE_ARM\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_exercise_spec(std::string(source) + "// INJECT: RDMA_INJECT_LATE_ARM=\n"), std::invalid_argument);
}

TEST_CASE("an exercise without title, symptom or fixed line, or with a bad regex, should be refused") {
  CHECK_THROWS_AS(parse_exercise_spec("// SYMPTOM: x\n// FIXED: y\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_exercise_spec("// EXERCISE: x\n// FIXED: y\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_exercise_spec("// EXERCISE: x\n// SYMPTOM: y\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_exercise_spec("// EXERCISE: x\n// SYMPTOM: (\n// FIXED: y\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_exercise_spec("// EXERCISE: x\n// SYMPTOM: y\n// FIXED: [\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_exercise_spec("// EXERCISE: x\n// SYMPTOM: y\n// FIXED: z\n// TIMEOUT: soon\n"),
                  std::invalid_argument);
}

TEST_CASE("a clean exit without the symptom and with every fixed line should be judged fixed") {
  const auto spec = parse_exercise_spec(source);
  run_result r;
  r.exit_code = 0;
  r.out = "1 RDMA device\n  port 1\n    state        PORT_ACTIVE (4)\n";
  CHECK(judge(spec, r).fixed);
}

TEST_CASE("a clean exit that lacks a fixed line should be still broken, naming what is missing (the regex, without words)") {
  // A "fix" that makes the loop visit no port at all: no error, no port.
  const auto spec = parse_exercise_spec(source);
  run_result r;
  r.exit_code = 0;
  r.out = "1 RDMA device\n";
  const auto j = judge(spec, r);
  CHECK_FALSE(j.fixed);
  CHECK(j.reason == "exit code 0, but the output lacks what a fixed run prints: /^  port 1$/");
}

TEST_CASE("a missing fixed line should be named by its FIXED-SAYS words, not its regex, when it has them") {
  const auto spec = parse_exercise_spec(
      "// EXERCISE: ports are numbered from 1\n// SYMPTOM: ibv_query_port\\(port 0\\)\n"
      "// FIXED: ^  port 1$\n// FIXED-SAYS: a section for port 1\n// FIXED: ^    state +PORT_\n");
  CHECK(spec.fixed == std::vector<std::string>{"^  port 1$", "^    state +PORT_"});
  CHECK(spec.fixed_says == std::vector<std::string>{"a section for port 1", ""});
  run_result r;
  r.exit_code = 0;
  r.out = "1 RDMA device\n";
  CHECK(judge(spec, r).reason == "exit code 0, but the output lacks what a fixed run prints: a section for port 1");
  // The second line has no words: its regex, as before.
  r.out = "1 RDMA device\n  port 1\n";
  CHECK(judge(spec, r).reason == "exit code 0, but the output lacks what a fixed run prints: /^    state +PORT_/");
  r.out = "1 RDMA device\n  port 1\n    state        PORT_ACTIVE (4)\n";
  CHECK(judge(spec, r).fixed);
}

TEST_CASE("a FIXED-SAYS line that follows no FIXED line should be refused, naming its line") {
  const std::string head = "// EXERCISE: x\n// SYMPTOM: y\n";
  const auto message = [](const std::string& text) {
    try {
      parse_exercise_spec(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(message(head + "// FIXED-SAYS: words\n// FIXED: z\n").starts_with("line 3: FIXED-SAYS:"));
  CHECK(message(head + "// FIXED: z\n// ARGS: -d rxe0\n// FIXED-SAYS: words\n").starts_with("line 5: FIXED-SAYS:"));
  CHECK(message(head + "// FIXED: z\n// FIXED-SAYS: words\n// FIXED-SAYS: more\n").starts_with("line 5: FIXED-SAYS:"));
  CHECK(message(head + "// FIXED: z\n// FIXED-SAYS:\n").starts_with("line 4: FIXED-SAYS:"));
  CHECK(message(head + "// FIXED: z\n// FIXED-SAYS: words\n") == "accepted");
}

TEST_CASE("the program's likely fix should be passed on, and a checker's report should fail the fix") {
  const auto spec = parse_exercise_spec(source);
  run_result broken;
  broken.exit_code = 1;
  broken.err = "devices: ibv_query_port(port 0) failed (EINVAL): Invalid argument\n  likely fix: ports start at 1\n";
  CHECK(judge(spec, broken).likely_fix == "ports start at 1");
  run_result leaky;
  leaky.exit_code = 0;
  leaky.out = "  port 1\n    state        PORT_ACTIVE (4)\n";
  leaky.err = "==12==ERROR: LeakSanitizer: detected memory leaks\n";
  const auto j = judge(spec, leaky);
  CHECK_FALSE(j.fixed);
  CHECK(j.checker_report == "==12==ERROR: LeakSanitizer: detected memory leaks");
}

TEST_CASE("the likely fix passed on should be the one after the symptom, not the other peer's") {
  const auto spec = parse_exercise_spec(source);
  // A pair's combined output: the client's error first (its peer quit under
  // it), then the server's, which is the symptom.
  run_result both;
  both.exit_code = 1;
  both.err = "client: completion failed: IBV_WC_RETRY_EXC_ERR\n  likely fix: the peer never acknowledged\n"
             "devices: ibv_query_port(port 0) failed (EINVAL): Invalid argument\n  likely fix: ports start at 1\n";
  CHECK(judge(spec, both).likely_fix == "ports start at 1");
  // No fix after the symptom: the first one there is.
  both.err = "  likely fix: the peer never acknowledged\ndevices: ibv_query_port(port 0) failed (EINVAL)\n";
  CHECK(judge(spec, both).likely_fix == "the peer never acknowledged");
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

TEST_CASE("a hang that is the symptom should be seen, through the checker's own line") {
  const auto spec = parse_exercise_spec("// EXERCISE: x\n// SYMPTOM: \\[exercise_check\\] no answer within\n// FIXED: y\n// TIMEOUT: 9\n");
  run_result hung;
  hung.timed_out = true;
  hung.out = "resolving\n";
  const auto j = judge(spec, hung);
  CHECK(j.symptom_seen);
  CHECK_FALSE(j.fixed);
  CHECK(j.reason == "no answer within 9 s (killed)");
  run_result done;
  done.exit_code = 0;
  done.out = "y\n";
  CHECK_FALSE(judge(spec, done).symptom_seen);
}

TEST_CASE("an EXIT line should make that exit code, and only it, the fixed one") {
  const auto spec = parse_exercise_spec(std::string(source) + "// EXIT: 1\n");
  CHECK(spec.exit_code == 1);
  run_result r;
  r.exit_code = 1;
  r.out = "  port 1\n    state        PORT_ACTIVE (4)\n";
  CHECK(judge(spec, r).fixed);
  CHECK(judge(spec, r).reason == "exit code 1");
  r.exit_code = 0;
  CHECK_FALSE(judge(spec, r).fixed);
  CHECK_THROWS_AS(parse_exercise_spec(std::string(source) + "// EXIT: no\n"), std::invalid_argument);
}

TEST_CASE("under a time scale, a two-peer run's waits for its peer should stretch, defaults included") {
  using strings = std::vector<std::string>;
  using rdma::testing::with_scaled_waits;
  const strings server{"prog", "--wait-ms", "3000", "--accept-ms", "20000"};
  const strings client{"prog", "-s", "127.0.0.1", "--resolve-ms", "2000"};
  CHECK(with_scaled_waits(server, true) == server);  // no scale set: as written
  CHECK(with_scaled_waits(client, false) == client);
  ::setenv("RDMA_TUTORIAL_TIME_SCALE", "20", 1);
  const strings stretched_server = with_scaled_waits(server, true);
  const strings stretched_client = with_scaled_waits(client, false);
  const strings odd = with_scaled_waits({"prog", "--wait-ms", "soon", "--accept-ms"}, true);
  ::unsetenv("RDMA_TUTORIAL_TIME_SCALE");
  CHECK(stretched_server == strings{"prog", "--wait-ms", "60000", "--accept-ms", "400000"});
  // --resolve-ms is the kernel's ARP, not a peer: left; common's default --wait-ms (5000) added, scaled; a client
  // takes no --accept-ms.
  CHECK(stretched_client == strings{"prog", "-s", "127.0.0.1", "--resolve-ms", "2000", "--wait-ms", "100000"});
  // A value that is no number, or a flag without one, is left for the program to refuse.
  CHECK(odd == strings{"prog", "--wait-ms", "soon", "--accept-ms"});
}

TEST_CASE("a learner's port should replace a two-peer run's -p, or be added where it has none") {
  using strings = std::vector<std::string>;
  using rdma::testing::with_port;
  const strings client{"prog", "-s", "127.0.0.1", "-p", "18515"};
  CHECK(with_port(client, "") == client);  // no learner's port: as written
  CHECK(with_port(client, "21000") == strings{"prog", "-s", "127.0.0.1", "-p", "21000"});
  CHECK(with_port({"prog", "--port", "18515"}, "21000") == strings{"prog", "--port", "21000"});
  CHECK(with_port({"prog", "--accept-ms", "20000"}, "21000") == strings{"prog", "--accept-ms", "20000", "-p", "21000"});
}

TEST_CASE("a machine's own rdma_cm address should replace only the guest's in -s") {
  using strings = std::vector<std::string>;
  using rdma::testing::with_server_address;
  const strings cm{"prog", "-s", "192.0.2.1", "--records", "100"};
  CHECK(with_server_address(cm, "") == cm);
  CHECK(with_server_address(cm, "10.1.2.3") == strings{"prog", "-s", "10.1.2.3", "--records", "100"});
  const strings tcp{"prog", "-s", "127.0.0.1"};
  CHECK(with_server_address(tcp, "10.1.2.3") == tcp);  // loopback works anywhere
  const strings nobody{"prog", "-s", "203.0.113.99"};
  CHECK(with_server_address(nobody, "10.1.2.3") == nobody);  // an address nobody owns, on purpose
}

TEST_CASE("the exercise file should give only its title, the checker file everything else") {
  const char* const exercise = "// EXERCISE: the port report stops\n// TODO: find it\n#include <x>\n";
  const char* const checker =
      "# what the checker reads\nSYMPTOM: ibv_query_port\\(port 0\\)\nSYMPTOM-SAYS: querying port 0 fails\n"
      "FIXED: ^  port 1$\nFIXED-SAYS: a section for port 1\nARGS: -d rxe0\nAGAIN: -g 0\n";
  const auto spec = parse_exercise_spec(exercise, checker);
  CHECK(spec.title == "the port report stops");
  CHECK(spec.symptom_says == "querying port 0 fails");
  CHECK(spec.fixed_says == std::vector<std::string>{"a section for port 1"});
  CHECK(spec.args == std::vector<std::string>{"-d", "rxe0"});
  CHECK(spec.again == std::vector<std::string>{"-g", "0"});
  const auto message = [](const std::string& a, const std::string& b) {
    try {
      parse_exercise_spec(a, b);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // What spells the fixed output never sits in the learner's file.
  CHECK(message(std::string(exercise) + "// FIXED: ^  port 1$\n", checker).find("belongs in its checker file") !=
        std::string::npos);
  CHECK(message(exercise, std::string(checker) + "EXERCISE: another title\n").find("the exercise file's own") !=
        std::string::npos);
  CHECK(message(exercise, std::string(checker) + "FIXD: typo\n") == "checker line 8: no key FIXD:");
  CHECK(message(exercise, std::string(checker) + "a line that is no field\n").starts_with("line 8: expects 'KEY: value'"));
  CHECK(message(exercise, "SYMPTOM: x\nFIXED: y\n").find("SYMPTOM-SAYS") != std::string::npos);
  CHECK(message(exercise, std::string(checker) + "AGAIN:\n").starts_with("AGAIN:"));
  CHECK(checker_file_of("04_rdma_write/exercises/advertised_gid.cpp") ==
        "04_rdma_write/exercises/checker/advertised_gid.check");
}

TEST_CASE("a run the server ended should be told as the server's failure, with the server's likely fix") {
  const auto spec = parse_exercise_spec("// EXERCISE: x\n// SYMPTOM: IBV_WC_REM_ACCESS_ERR\n// FIXED: y\n");
  // A server that could not register its region quits; its client only
  // learns that nobody answered.
  run_result server;
  server.exit_code = 1;
  server.err = "rdma_write: ibv_reg_mr(landing region) failed (EINVAL): Invalid argument\n"
               "  likely fix: REMOTE_WRITE needs LOCAL_WRITE too\n";
  run_result client;
  client.exit_code = 1;
  client.err = "rdma_write: no server answered at 127.0.0.1:18515\n  likely fix: start the server first\n";
  run_result both;
  both.exit_code = 1;
  both.err = client.err + server.err;
  const auto j = judge(spec, both, &server);
  CHECK_FALSE(j.fixed);
  CHECK(j.reason == "the server ended with exit code 1: rdma_write: ibv_reg_mr(landing region) failed (EINVAL): Invalid argument");
  CHECK(j.likely_fix == "REMOTE_WRITE needs LOCAL_WRITE too");
  // Without the server's result, as before: the combined output's first line.
  CHECK(judge(spec, both).reason == "exit code 1: rdma_write: no server answered at 127.0.0.1:18515");
  // A server that did its part: the client's failure is the reason.
  server.exit_code = 0;
  server.err.clear();
  both.err = client.err;
  CHECK(judge(spec, both, &server).reason == "exit code 1: rdma_write: no server answered at 127.0.0.1:18515");
}
