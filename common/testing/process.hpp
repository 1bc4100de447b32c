// Test support: run the tutorial's real programs and see what they did.
//
// Device tests and the exercise/docs checkers start programs as a reader
// would, bound every wait with a timeout (a hung RDMA program is a symptom
// worth reporting, not a reason to hang CI), and look at the exit code and
// both output streams.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace rdma::testing {

struct run_result {
  int exit_code = -1;      // the program's exit status; 128 + N when killed by signal N
  bool timed_out = false;  // true: it was still running at the deadline and was killed
  std::string out;
  std::string err;
  std::string all() const { return out + err; }
};

// One started program. Its output is collected while waiting; destroying a
// process that still runs kills it, so a failed assertion leaks nothing.
class process {
 public:
  explicit process(const std::vector<std::string>& argv);
  ~process();
  process(const process&) = delete;
  process& operator=(const process&) = delete;

  // Waits until the program exits or `timeout` passes (then kills it).
  // The result holds everything it printed, including what
  // wait_for_output already read.
  run_result wait(std::chrono::milliseconds timeout);

  // Reads the program's stdout until it contains `text`; false when the
  // program closed it or `timeout` passed first. For a test that must act
  // at a moment in the program's run ("it is streaming now: kill it").
  bool wait_for_output(const std::string& text, std::chrono::milliseconds timeout);

  pid_t pid() const noexcept { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_so_far_;
};

// Start, wait, collect. Two environment variables, set by the suites that
// rerun the device tests under a checker (see common/stage_rules.build):
//   RDMA_TUTORIAL_WRAPPER     a program put in front of argv (memcheck.sh);
//   RDMA_TUTORIAL_TIME_SCALE  a whole number every timeout is multiplied by,
//                             because a program under valgrind runs slower.
run_result run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// Two peers: the server started first, then the client (which retries its
// connect while the server starts up); both bounded by `timeout`, both
// wrapped and scaled as run() does. `server_prefix` goes in front of the
// server's command unwrapped: scripts/on_peer.sh runs it on the other guest.
struct pair_result {
  run_result server;
  run_result client;
  // Both outputs, the client's first, for a checker that judges the pair.
  run_result combined() const;
};
pair_result run_pair(const std::vector<std::string>& server, const std::vector<std::string>& client,
                     std::chrono::milliseconds timeout, const std::vector<std::string>& server_prefix = {});

// A server and several clients (stage 06 on): the server started first,
// then every client at once; all bounded by `timeout`, wrapped and scaled
// as run() does; `server_prefix` as for run_pair.
struct group_result {
  run_result server;
  std::vector<run_result> clients;
  // Every client's output in order, then the server's; the first non-zero
  // exit code among the clients, else the server's.
  run_result combined() const;
};
group_result run_group(const std::vector<std::string>& server, const std::vector<std::vector<std::string>>& clients,
                       std::chrono::milliseconds timeout, const std::vector<std::string>& server_prefix = {});

// A process started as run() starts it (wrapped), to be waited for later.
std::unique_ptr<process> start(const std::vector<std::string>& argv);

// `sh -c command`, for command lines copied from a chapter (never wrapped;
// its timeout is scaled like run's).
run_result run_shell(const std::string& command, std::chrono::milliseconds timeout);

// `timeout` times RDMA_TUTORIAL_TIME_SCALE.
std::chrono::milliseconds scaled(std::chrono::milliseconds timeout);

// The path a test was given in an environment variable (set by meson.build);
// throws when it is missing so a misconfigured test fails instead of passing.
std::string program_from_env(const char* variable);

// One-line description for assertion messages: exit code and both streams.
std::string describe(const run_result& r);
// The server's, then each client's, under a "--- server ---" / "--- client N ---" line.
std::string describe(const group_result& r);

}  // namespace rdma::testing
