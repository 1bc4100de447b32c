// docs_check: runs a chapter's ```console blocks and compares their output
// with what the chapter shows (format in chapter.hpp).
//
//   docs_check --source-root DIR --build-dir DIR CHAPTER.md
//
// A command ending in " &" runs in the background while the block's next
// commands run (a server, then its client); its output, shown under it, is
// compared once they are done.
// Commands run with sh in a scratch folder that looks like the checkout
// (symlinks to every top-level entry) except that `build` points at the real
// build directory, so a chapter can say build/... whatever the build folder
// is called. Exit 0 when every block ran as written.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "chapter.hpp"
#include "output.hpp"
#include "process.hpp"
#include "rdma_tutorial/main.hpp"
#include "rdma_tutorial/command_line.hpp"

namespace fs = std::filesystem;

namespace {

// A folder that mirrors the checkout with `build` pointing at build_dir.
class scratch_checkout {
 public:
  scratch_checkout(const fs::path& source_root, const fs::path& build_dir) {
    std::string pattern = (fs::temp_directory_path() / "docs_check.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
    for (const auto& entry : fs::directory_iterator(source_root)) {
      if (entry.path().filename() == "build") continue;
      fs::create_directory_symlink(fs::canonical(entry.path()), path_ / entry.path().filename());
    }
    fs::create_directory_symlink(fs::canonical(build_dir), path_ / "build");
  }
  ~scratch_checkout() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

int main(int argc, char** argv) {
  return rdma::run_main("docs_check", [&] {
    std::string source_root;
    std::string build_dir;
    long timeout = 300;
    rdma::option_parser parser("docs_check", "Runs a chapter's console blocks and checks their output.");
    parser.add(0, "source-root", "DIR", "the checkout", [&](std::string_view v) { source_root = v; });
    parser.add(0, "build-dir", "DIR", "the build directory chapters call build/", [&](std::string_view v) { build_dir = v; });
    parser.add(0, "timeout", "SECONDS", "per command (default 300)",
               [&](std::string_view v) { timeout = rdma::parse_integer(v, "--timeout", 1, 3600); });
    parser.allow_positional("CHAPTER.md", 1);
    if (!parser.parse(argc, argv)) return 0;
    if (source_root.empty() || build_dir.empty() || parser.positional().empty()) {
      throw rdma::usage_error("needs --source-root, --build-dir and a chapter");
    }
    const fs::path chapter = parser.positional()[0];
    std::ifstream in(chapter);
    if (!in) throw std::runtime_error("cannot read " + chapter.string());
    std::stringstream text;
    text << in.rdbuf();

    const scratch_checkout scratch(source_root, build_dir);
    // Scripts a chapter calls (check_exercise.sh, tour.sh) build into $BUILD_DIR.
    ::setenv("BUILD_DIR", fs::canonical(build_dir).c_str(), 1);
    // A block for one kernel (<!-- kernel: 6.12 -->) runs only there.
    const rdma::testing::kernel_version k = rdma::testing::running_kernel();
    const std::string this_kernel = std::to_string(k.major) + "." + std::to_string(k.minor);
    // And one for one provider (<!-- provider: siw -->): the guest's device,
    // rxe unless scripts/rxe_vm.sh --provider siw booted it.
    const char* provider_env = std::getenv("RXE_VM_PROVIDER");
    const std::string this_provider = provider_env != nullptr && *provider_env != '\0' ? provider_env : "rxe";
    int failures = 0;
    int ran = 0;
    // Compares one finished command with the chapter; counts a failure.
    auto report = [&](const rdma::testing::chapter_command& cmd, const rdma::testing::run_result& r) {
      ++ran;
      const std::string where = chapter.filename().string() + ":" + std::to_string(cmd.line);
      std::string why;
      const bool exit_ok = !r.timed_out && r.exit_code == cmd.expected_exit;
      const bool output_ok = cmd.expected.empty() || rdma::testing::output_matches(cmd.expected, r.out, why);
      if (exit_ok && output_ok) {
        std::cout << where << ": ok: $ " << cmd.command << "\n";
        return;
      }
      ++failures;
      std::cout << where << ": FAILED: $ " << cmd.command << "\n";
      if (!exit_ok) {
        std::cout << "  " << (r.timed_out ? "timed out" : "exit code " + std::to_string(r.exit_code))
                  << ", the chapter expects exit code " << cmd.expected_exit << "\n";
      }
      if (!output_ok) std::cout << "  output differs from the chapter: " << why << "\n";
      std::cout << "  --- output ---\n" << r.out << "  ---\n";
    };
    for (const auto& block : rdma::testing::parse_chapter(text.str())) {
      if (!block.run) {
        std::cout << chapter.filename().string() << ":" << block.line << ": not run (" << block.norun_reason << ")\n";
        continue;
      }
      if (!block.kernel.empty() && block.kernel != this_kernel) {
        std::cout << chapter.filename().string() << ":" << block.line << ": not run (Linux " << block.kernel << "'s output; this is "
                  << this_kernel << ")\n";
        continue;
      }
      if (block.provider != this_provider) {
        std::cout << chapter.filename().string() << ":" << block.line << ": not run (" << block.provider
                  << "'s output; this device is " << this_provider << "'s)\n";
        continue;
      }
      // "$ server &": started in the background (a second terminal, for the
      // reader), judged once the block's other commands are done.
      std::vector<std::pair<const rdma::testing::chapter_command*, std::unique_ptr<rdma::testing::process>>> background;
      for (const auto& cmd : block.commands) {
        std::string command = cmd.command;
        const bool in_background = command.ends_with("&") && !command.ends_with("&&");
        if (in_background) command.pop_back();
        const std::string shell = "cd '" + scratch.path().string() + "' && { " + command + "\n} 2>&1";
        if (in_background) {
          background.emplace_back(&cmd, std::make_unique<rdma::testing::process>(
                                            std::vector<std::string>{"/bin/sh", "-c", shell}));
          continue;
        }
        report(cmd, rdma::testing::run_shell(shell, std::chrono::seconds(timeout)));
      }
      for (auto& [cmd, p] : background) report(*cmd, p->wait(rdma::testing::scaled(std::chrono::seconds(timeout))));
    }
    std::cout << ran << " commands run, " << failures << " failed\n";
    if (ran == 0 && failures == 0) std::cout << "(no runnable console block in this chapter)\n";
    return failures == 0 ? 0 : 1;
  });
}
