// Not the lesson: --progress-ms, for the measurements (scripts/bench.sh
// draws chapter 06's figure of a greedy client among fair ones from it).
#include <chrono>
#include <cstdio>
#include <string>

#include "server.hpp"

namespace stage06 {

// One line per --progress-ms: the time since the first record and every
// client's records so far (a client that left keeps its last count), so a
// plot can show how the clients shared the SRQ over time.
void server::print_progress(steady::time_point now) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - first_record_).count();
  std::string line = "progress " + std::to_string(ms) + " ms:";
  for (std::size_t i = 0; i < tally_.size(); ++i) line += " " + std::to_string(i + 1) + ":" + std::to_string(tally_[i]);
  std::printf("%s\n", line.c_str());
  progress_printed_ = all_records_;
  // Late by more than a period (a busy loop, a slow host): the next line
  // still falls on the grid, and no line is printed twice for one moment.
  while (next_progress_ <= now) next_progress_ += std::chrono::milliseconds(opts_.progress_ms);
}

}  // namespace stage06
