// What an exercise declares about itself, and how a run is judged.
//
// An exercise is one source file that replaces one piece of a stage. Its
// header comment gives the learner a title that says what goes wrong, never
// what to change, and the TODO:
//
//   // EXERCISE: the device lists no port        (title, required)
//
// Everything the checker reads lives apart, in STAGE/exercises/checker/
// NAME.check, with the wrong fixes: its FIXED lines spell a fixed run's
// output, which is the answer. One "KEY: value" a line, "#" comments:
//
//   SYMPTOM: ibv_query_port\(port 0\)           (regex over the program's
//                                                  output, required)
//   SYMPTOM-SAYS: querying the first port fails  (required: the symptom in
//                                                  words, as the workshop shows
//                                                  it before a try)
//   FIXED: ^  port 1$                           (regex a fixed run must
//                                                  print; one or more lines)
//   FIXED-SAYS: a section for port 1            (optional, right after the
//                                                  FIXED line it describes:
//                                                  what that line is, in words,
//                                                  for a learner whose run lacks
//                                                  it; its role, not its content
//                                                  where the content is the
//                                                  answer. Without it the
//                                                  checker quotes the regex; one
//                                                  after anything else is an
//                                                  error naming its line)
//   ARGS: -d rxe0                               (arguments, optional)
//   SERVER: --notify flag                       (two-peer stages: the program
//                                                  is first started as the server
//                                                  with these arguments, maybe
//                                                  none, then run with ARGS as
//                                                  the client; both are judged)
//   CLIENTS: 4                                  (with SERVER: that many clients,
//                                                  all started at once with ARGS;
//                                                  default 1)
//   TIMEOUT: 30                                 (seconds, optional)
//   EXIT: 1                                     (the exit code of a fixed run,
//                                                  default 0: for an exercise whose
//                                                  program must fail, clearly)
//   PAIR: --drop 4                              (with SERVER: the run crosses the
//                                                  wire of scripts/rxe_vm.sh --pair,
//                                                  the server on the second guest,
//                                                  the client here, ARGS' -s
//                                                  192.0.2.2; and that wire loses
//                                                  what run.sh's impairments say,
//                                                  --drop N, --server-drop N ...,
//                                                  set by scripts/impair.sh for the
//                                                  run and cleared after it)
//   INJECT: RDMA_INJECT_LATE_ARM=400            (optional: every run of the
//                                                  exercise, both peers, whichever
//                                                  program is judged, goes through
//                                                  the injection shim in these
//                                                  modes, common/testing/inject.cpp:
//                                                  a race the bug loses only now
//                                                  and then on Soft-RoCE is lost
//                                                  on every run)
//   AGAIN: -g 0                                 (optional: a run judged fixed
//                                                  runs a second time with these
//                                                  arguments added to every
//                                                  program's command line, and
//                                                  must pass again: a fix that
//                                                  holds only for the defaults
//                                                  is still broken)
//
// A run still going at the timeout is killed, and judged with one more line
// after its output, "[exercise_check] no answer within N s (killed)": an
// exercise whose symptom is a hang names that line in its SYMPTOM.
//
// A run is "fixed" when the program (both peers, in a two-peer stage) exits 0 (or EXIT) within the timeout, its output
// does not show the symptom, shows every FIXED line, and carries no report
// of a memory checker (ASan, UBSan, LSan, memcheck). So a "fix" that only
// makes the symptom go away (a loop that visits no port at all) is still
// broken; its reason names the first FIXED line missing, by its FIXED-SAYS
// words ("... lacks what a fixed run prints: a section for port 1"), or by
// the regex, /^  port 1$/, where the checker file gives none. The exercise suite
// also demands that the shipped file fails *with* the symptom, so an
// exercise that breaks for an unrelated reason does not count as proven, and
// that each plausible wrong fix (checker/NAME.wrong_fix*.patch) is judged still
// broken.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "process.hpp"

namespace rdma::testing {

struct exercise_spec {
  std::string title;
  std::string symptom;  // ECMAScript regex
  std::string symptom_says;  // the symptom in words, as the workshop shows it before a try
  std::vector<std::string> fixed;  // regexes a fixed run must all match (multiline)
  std::vector<std::string> fixed_says;  // per FIXED line, its FIXED-SAYS words, or empty
  std::vector<std::string> args;
  bool two_peers = false;               // a SERVER: line was given
  std::vector<std::string> server_args;
  int clients = 1;
  int timeout_seconds = 30;
  int exit_code = 0;  // what a fixed run returns (EXIT:)
  // INJECT: the shim's modes, NAME=VALUE each, every NAME an RDMA_INJECT_ one.
  std::vector<std::pair<std::string, std::string>> inject;
  // PAIR: across two guests; the impairments of each side's wire, as
  // scripts/impair.sh takes them (the server's --server-drop N as --drop N).
  bool pair = false;
  std::vector<std::string> impair_client;
  std::vector<std::string> impair_server;
  // AGAIN: a fixed run must pass a second time with these arguments added
  // to every program's command line (a fix that holds only for the first
  // run's defaults is still broken).
  std::vector<std::string> again;
};

// The exercise file gives only its title (EXERCISE:); every other line is
// the checker file's (STAGE/exercises/checker/NAME.check, "KEY: value"
// lines, "#" comments), out of the learner's sight: its FIXED lines spell
// the fixed output. Throws std::invalid_argument naming the missing or
// malformed line, or a checker line found in the exercise file.
exercise_spec parse_exercise_spec(std::string_view exercise_source, std::string_view checker_source);
// One text in the header form ("// KEY: value" lines), for the unit tests.
exercise_spec parse_exercise_spec(std::string_view source);

// The checker file of an exercise file: beside it, in checker/NAME.check.
std::string checker_file_of(const std::string& exercise_file);

struct judgement {
  bool fixed = false;
  bool symptom_seen = false;
  std::string reason;      // one line: what was seen
  std::string likely_fix;  // the program's own "likely fix:" text, if it printed one
  std::string checker_report;  // the first line of a sanitizer or memcheck report, if any
};

// `server`, in a two-peer run: the server's own result (also in `run`,
// the combined one), so that a run the server ended is told as the
// server's failure, not read from the client that lost it.
judgement judge(const exercise_spec& spec, const run_result& run, const run_result* server = nullptr);

// The line a killed run is judged with: "[exercise_check] no answer within N s (killed)".
std::string hang_line(const exercise_spec& spec);

// A two-peer run's command line with each wait for the other peer stretched
// like the checker's own timeout (RDMA_TUTORIAL_TIME_SCALE: under memcheck a
// peer starts 10-30 times slower): --wait-ms, and a server's --accept-ms,
// scaled; where the line has none, common's default (rdma::peer_options),
// scaled. Unchanged when no scale is set.
std::vector<std::string> with_scaled_waits(std::vector<std::string> argv, bool server);

// A two-peer run's command line on the port `port` (-p, the TCP handshake's
// or rdma_cm's), replacing a -p or --port the line has: scripts/workshop.sh
// gives each learner's checkout a port of its own (RDMA_TUTORIAL_PORT), so
// two learners checking at once on one machine's device never meet each
// other's servers. Unchanged when `port` is empty.
std::vector<std::string> with_port(std::vector<std::string> argv, const std::string& port);

// The address an exercise's header gives rdma_cm clients is the guest's
// (-s 192.0.2.1, scripts/rxe_vm.sh); on a machine whose RDMA interface has
// another one (RDMA_TUTORIAL_IPV4, a room's shared server) that -s value is
// replaced by `address`. Every other -s (127.0.0.1, an address nobody owns)
// stays. Unchanged when `address` is empty.
inline constexpr const char* guest_address = "192.0.2.1";
std::vector<std::string> with_server_address(std::vector<std::string> argv, const std::string& address);

}  // namespace rdma::testing
