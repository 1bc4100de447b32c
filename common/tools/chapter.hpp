// Executed chapters: the commands a chapter shows in ```console blocks are run
// by the docs suite, and where a block shows output, the program's output must
// match it. Block syntax, in the Markdown itself:
//
//   ```console
//   $ build/subprojects/01_devices/devices -p 0
//   devices: ibv_query_port(port 0) failed (EINVAL): Invalid argument
//   ...
//   ```
//
// - "$ " starts a command; a line ending in "\" continues it. The lines after
//   it, up to the next "$ ", are its expected output (stdout and stderr as a
//   terminal would show them). No lines: the output is not compared.
// - A command ending in " &" runs in the background (a server the next
//   command's client talks to); its own output is shown under it and
//   compared when the block's other commands are done.
// - A line "..." stands for any number of lines.
// - Fields that differ between runs are masked on both sides before comparing:
//   GUIDs, link-local GIDs, an iWARP GID (its MAC), hex keys and
//   addresses, timings, TCP ports after an IPv4 address.
// - An HTML comment right before the block changes how it is run:
//     <!-- norun: why -->     the block is not run (say why)
//     <!-- exit: N -->        the block's last command must exit N (default 0)
//     <!-- exit: N M ... -->  one exit code per command, in order
//     <!-- sketch: why -->    a ```cpp block not quoted from the sources (checked by scripts/tests/chapter_quotes.py)
//     <!-- kernel: 6.12 -->   the block runs only on that kernel (major.minor):
//                             where Soft-RoCE's output differs between the
//                             kernels tested, one block for each
//     <!-- provider: siw -->  the block runs only on that device's provider,
//                             in the Soft-iWARP guest (scripts/rxe_vm.sh
//                             --provider siw); a block without one runs on
//                             Soft-RoCE, the guest's default
//   These comments stack: kernel, provider, then exit or norun, each on its
//   own line right above the block.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rdma::testing {

struct chapter_command {
  std::string command;               // as the shell gets it, continuations joined
  std::vector<std::string> expected; // expected output lines; empty: not compared
  int expected_exit = 0;
  int line = 0;                      // line number of the "$ " in the chapter
};

struct chapter_block {
  int line = 0;
  bool run = true;
  std::string norun_reason;
  std::string kernel;  // "6.1", "6.12": runs only there; "" on any
  std::string provider = "rxe";  // the device's provider it runs on: "rxe" or "siw"
  std::vector<chapter_command> commands;
};

std::vector<chapter_block> parse_chapter(std::string_view markdown);

// Masks the fields that vary between runs (see above).
std::string mask_variable_fields(std::string_view line);

// Whether `actual` output matches the expected lines ("..." wildcard, masks,
// trailing whitespace ignored). On mismatch, `why` says where.
bool output_matches(const std::vector<std::string>& expected, std::string_view actual, std::string& why);

}  // namespace rdma::testing
