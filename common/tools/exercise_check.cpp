// exercise_check: says whether an exercise is fixed.
//
//   exercise_check EXERCISE.cpp PROGRAM                    learner: "fixed" / "still broken"
//   exercise_check --expect broken   EXERCISE.cpp PROGRAM  CI: the shipped file fails with its symptom
//   exercise_check --expect fixed    EXERCISE.cpp PROGRAM  CI: the stage's own piece passes
//   exercise_check --expect rejected EXERCISE.cpp PROGRAM  CI: a plausible wrong fix is still broken
//
// PROGRAM is the stage built with the exercise file (or, in CI, with the
// stage's own piece, or with a wrong fix applied). The exercise's checker
// file (checker/NAME.check beside it) says how to run it, which symptom the
// broken form shows and what a fixed run must print (see exercise_spec.hpp),
// with an AGAIN line the second run a fix must pass too, and, with an INJECT line, the
// injection shim's modes every run goes through (librdma_inject.so, which
// the build puts beside this program). With a PAIR line the run crosses the
// wire of scripts/rxe_vm.sh --pair, impaired as the line says: this checker
// then runs in the first guest, the server through scripts/on_peer.sh.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "exercise_spec.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/main.hpp"
#include "rdma_tutorial/command_line.hpp"

namespace {

// The exercise's INJECT modes, set in the environment every program started
// from here inherits (through a checker's wrapper too: valgrind hands
// LD_PRELOAD on to the program it runs).
void use_shim(const rdma::testing::exercise_spec& spec) {
  const std::filesystem::path shim = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "librdma_inject.so";
  if (!std::filesystem::exists(shim)) {
    throw rdma::tutorial_error("this exercise runs through the injection shim, and " + shim.string() + " is missing",
                               "build the tree first: ninja -C build");
  }
  std::string preload = shim.string();
  if (const char* others = std::getenv("LD_PRELOAD"); others != nullptr && *others != '\0') {
    preload += ":" + std::string(others);
  }
  ::setenv("LD_PRELOAD", preload.c_str(), 1);
  // An ASan build wants its runtime first among the preloaded; the shim is.
  const char* asan = std::getenv("ASAN_OPTIONS");
  ::setenv("ASAN_OPTIONS", (std::string(asan != nullptr ? asan : "") + ":verify_asan_link_order=0").c_str(), 1);
  for (const auto& [name, value] : spec.inject) ::setenv(name.c_str(), value.c_str(), 1);
}

// PAIR: the two guests' wire loses what the exercise says for the run
// (scripts/impair.sh in this guest, and through scripts/on_peer.sh in the
// other), and is whole again after it, whatever the run did.
class impaired_wire {
 public:
  impaired_wire(const std::filesystem::path& scripts, const rdma::testing::exercise_spec& spec)
      : impair_((scripts / "impair.sh").string()), on_peer_((scripts / "on_peer.sh").string()) {
    if (!spec.impair_client.empty()) {
      std::vector<std::string> here{impair_};
      here.insert(here.end(), spec.impair_client.begin(), spec.impair_client.end());
      set(here, "this guest");
    }
    if (!spec.impair_server.empty()) {
      std::vector<std::string> there{on_peer_, "--timeout", "60", "--", impair_};
      there.insert(there.end(), spec.impair_server.begin(), spec.impair_server.end());
      set(there, "the server's guest");
    }
  }
  ~impaired_wire() {
    for (const auto& argv : set_) {
      std::vector<std::string> clear(argv.begin(), argv.begin() + (argv[0] == on_peer_ ? 5 : 1));
      clear.push_back("--clear");
      rdma::testing::process(clear).wait(std::chrono::seconds(60));
    }
  }
  impaired_wire(const impaired_wire&) = delete;
  impaired_wire& operator=(const impaired_wire&) = delete;

 private:
  void set(const std::vector<std::string>& argv, const std::string& where) {
    const auto r = rdma::testing::process(argv).wait(std::chrono::seconds(60));
    if (r.exit_code != 0) {
      throw rdma::tutorial_error("could not impair the wire in " + where + " (" + argv.back() + "): " + r.all(),
                                 "scripts/impair.sh needs nftables and the guest's tc modules (scripts/rxe_vm.sh --pair)");
    }
    set_.push_back(argv);
  }
  std::string impair_;
  std::string on_peer_;
  std::vector<std::vector<std::string>> set_;
};

}  // namespace

int main(int argc, char** argv) {
  return rdma::run_main("exercise_check", [&] {
    std::string expect;
    rdma::option_parser parser("exercise_check", "Runs PROGRAM as the exercise says and judges the result.");
    parser.add(0, "expect", "broken|fixed|rejected", "exit 0 only if the verdict is this (CI proves each)",
               [&](std::string_view v) { expect = v; });
    parser.allow_positional("EXERCISE.cpp PROGRAM", 2);
    if (!parser.parse(argc, argv)) return 0;
    if (parser.positional().size() != 2) throw rdma::usage_error("needs EXERCISE.cpp and PROGRAM");
    if (!expect.empty() && expect != "broken" && expect != "fixed" && expect != "rejected") {
      throw rdma::usage_error("--expect takes 'broken', 'fixed' or 'rejected'");
    }
    const std::string& exercise_file = parser.positional()[0];
    const auto read = [](const std::string& path) {
      std::ifstream in(path);
      if (!in) throw std::runtime_error("cannot read " + path);
      std::stringstream text;
      text << in.rdbuf();
      return text.str();
    };
    const std::string checker_file = rdma::testing::checker_file_of(exercise_file);
    rdma::testing::exercise_spec spec;
    try {
      spec = rdma::testing::parse_exercise_spec(read(exercise_file), read(checker_file));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(exercise_file + " / " + checker_file + ": " + e.what());
    }

    // INJECT: every program this run starts goes through the injection
    // shim, which the build puts beside this checker.
    if (!spec.inject.empty()) use_shim(spec);

    const std::string& program = parser.positional()[1];
    // One run of the exercise's scenario, every program's command line with
    // `extra` added: the combined result, and the server's own.
    struct scenario_run {
      rdma::testing::run_result run;
      std::optional<rdma::testing::run_result> server;
    };
    const auto run_scenario = [&](const std::vector<std::string>& extra) {
      std::vector<std::string> command{program};
      command.insert(command.end(), spec.args.begin(), spec.args.end());
      command.insert(command.end(), extra.begin(), extra.end());
      scenario_run r;
      if (!spec.two_peers) {
        r.run = rdma::testing::run(command, std::chrono::seconds(spec.timeout_seconds));
        return r;
      }
      // The server first, then the client; the pair is judged as one run.
      std::vector<std::string> server{program};
      server.insert(server.end(), spec.server_args.begin(), spec.server_args.end());
      server.insert(server.end(), extra.begin(), extra.end());
      // Under memcheck each peer starts slower: stretch their waits for each other.
      server = rdma::testing::with_scaled_waits(server, true);
      command = rdma::testing::with_scaled_waits(command, false);
      // A learner's own port (scripts/workshop.sh), when the checkout has
      // one; this machine's rdma_cm address, when it is not the guest's.
      const char* port = std::getenv("RDMA_TUTORIAL_PORT");
      const char* address = std::getenv("RDMA_TUTORIAL_IPV4");
      server = rdma::testing::with_port(server, port != nullptr ? port : "");
      command = rdma::testing::with_server_address(rdma::testing::with_port(command, port != nullptr ? port : ""),
                                                   address != nullptr ? address : "");
      if (spec.pair) {
        // The server on the other guest (scripts/on_peer.sh, in the checkout
        // this exercise file is in), the client here, across the wire.
        if (std::getenv("RXE_VM_PEER_DIR") == nullptr) {
          throw rdma::tutorial_error("this exercise runs across two hosts, and there is no second guest here",
                                     "scripts/check_exercise.sh boots the two guests it needs (scripts/rxe_vm.sh --pair)");
        }
        // (canonical: the tests name the file through subprojects/, a link to the stage's folder)
        const auto scripts =
            std::filesystem::canonical(exercise_file).parent_path().parent_path().parent_path() / "scripts";
        const auto limit = rdma::testing::scaled(std::chrono::seconds(spec.timeout_seconds));
        const std::vector<std::string> on_peer{(scripts / "on_peer.sh").string(), "--timeout",
                                               std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count() + 30),
                                               "--"};
        const impaired_wire wire(scripts, spec);
        const auto both = rdma::testing::run_pair(server, command, std::chrono::seconds(spec.timeout_seconds), on_peer);
        r.run = both.combined();
        r.server = both.server;
      } else if (spec.clients > 1) {
        const std::vector<std::vector<std::string>> clients(static_cast<std::size_t>(spec.clients), command);
        const auto all = rdma::testing::run_group(server, clients, std::chrono::seconds(spec.timeout_seconds));
        r.run = all.combined();
        r.server = all.server;
      } else {
        const auto both = rdma::testing::run_pair(server, command, std::chrono::seconds(spec.timeout_seconds));
        r.run = both.combined();
        r.server = both.server;
      }
      return r;
    };
    auto judged = run_scenario({});
    auto verdict = rdma::testing::judge(spec, judged.run, judged.server ? &*judged.server : nullptr);
    if (verdict.fixed && !spec.again.empty()) {
      // AGAIN: fixed for the defaults; fixed for the second run's arguments too?
      judged = run_scenario(spec.again);
      verdict = rdma::testing::judge(spec, judged.run, judged.server ? &*judged.server : nullptr);
      std::string again_words;
      for (const auto& word : spec.again) again_words += (again_words.empty() ? "" : " ") + word;
      verdict.reason = "run again with " + again_words + ": " + verdict.reason;
    }
    const auto& run = judged.run;

    // The title says what goes wrong, so a fixed run says it no longer does.
    if (verdict.fixed) {
      std::cout << "fixed: no longer \"" << spec.title << "\" (" << verdict.reason << ")\n";
    } else if (verdict.symptom_seen) {
      std::cout << "still broken: " << spec.title << " (" << verdict.reason << ")\n";
    } else {
      // Past the exercise's own symptom: the headline is what this run shows,
      // not the first mistake (a QP walked to RTS with the wrong PSN now fails
      // with a retry error, not "sending needs RTS").
      std::cout << "still broken, no longer with its first symptom: " << verdict.reason << " (the exercise: " << spec.title
                << ")\n";
    }
    if (!verdict.fixed && !verdict.likely_fix.empty()) std::cout << "  likely fix: " << verdict.likely_fix << "\n";
    // A memory checker's report is never hidden behind a verdict.
    if (!verdict.checker_report.empty()) std::cout << "the program's output, with the report:\n" << run.all();

    if (expect.empty() || expect == "fixed") return verdict.fixed ? 0 : 1;
    if (expect == "rejected") return verdict.fixed ? 1 : 0;
    // As shipped, the exercise must fail with its own symptom, not any failure.
    if (!verdict.symptom_seen) {
      std::cout << "the symptom /" << spec.symptom << "/ did not show; the program printed:\n" << run.all();
    }
    return !verdict.fixed && verdict.symptom_seen ? 0 : 1;
  });
}
