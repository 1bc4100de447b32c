// exercise_drift: fails when an exercise has drifted from the piece it
// replaces (drift.hpp says what counts).
//
//   exercise_drift PIECE.cpp EXERCISE.cpp
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "drift.hpp"
#include "rdma_tutorial/main.hpp"
#include "rdma_tutorial/command_line.hpp"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int main(int argc, char** argv) {
  return rdma::run_main("exercise_drift", [&] {
    rdma::option_parser parser("exercise_drift",
                               "Checks that EXERCISE.cpp differs from PIECE.cpp only in lines marked // TODO.");
    parser.allow_positional("PIECE.cpp EXERCISE.cpp", 2);
    if (!parser.parse(argc, argv)) return 0;
    if (parser.positional().size() != 2) throw rdma::usage_error("needs PIECE.cpp and EXERCISE.cpp");
    const std::string& piece = parser.positional()[0];
    const std::string& exercise = parser.positional()[1];
    const std::string piece_name = std::filesystem::path(piece).filename();
    const auto problems = rdma::testing::drift_problems(read_file(piece), read_file(exercise), piece_name);
    for (const auto& p : problems) std::cout << p << "\n";
    if (!problems.empty()) {
      std::cout << exercise << " has drifted from " << piece
                << ": bring the exercise up to date with the piece (only the bug may differ, marked // TODO)\n";
      return 1;
    }
    std::cout << "ok: " << exercise << " is " << piece_name << " except its marked lines\n";
    return 0;
  });
}
