#include <doctest/doctest.h>

#include "drift.hpp"

using rdma::testing::body_lines;
using rdma::testing::drift_problems;

namespace {

const char* const piece = R"(// ports.cpp: the story of ports.
// Ports start at 1.
#include "stage.hpp"

void print_ports(int count) {
  for (int port = 1; port <= count; ++port) {
    print_port(port);
  }
}
)";

}  // namespace

TEST_CASE("the header comment should not count as the body") {
  const auto lines = body_lines(piece);
  REQUIRE_FALSE(lines.empty());
  CHECK(lines.front() == "#include \"stage.hpp\"");
}

TEST_CASE("an exercise that differs only in marked lines, with its own header, should pass") {
  const char* exercise = R"(// EXERCISE: ports are numbered from 1
// TODO: fix the loop.
#include "stage.hpp"

void print_ports(int count) {
  for (int port = 0; port < count; ++port) {  // TODO
    print_port(port);
  }
}
)";
  CHECK(drift_problems(piece, exercise, "ports.cpp").empty());
}

TEST_CASE("a change in the piece that the exercise lacks should be named with its line") {
  const char* piece_fixed_later = R"(#include "stage.hpp"

void print_ports(int count) {
  for (int port = 1; port <= count; ++port) {
    print_port(port, true);
  }
}
)";
  const char* exercise = R"(// EXERCISE: x
#include "stage.hpp"

void print_ports(int count) {
  for (int port = 0; port < count; ++port) {  // TODO
    print_port(port);
  }
}
)";
  const auto problems = drift_problems(piece_fixed_later, exercise, "ports.cpp");
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "exercise line 6 differs from ports.cpp but is not marked // TODO:     print_port(port);");
}

TEST_CASE("a line removed from the exercise should need a marked line in its place") {
  const char* removed = R"(#include "stage.hpp"

void print_ports(int count) {
  for (int port = 1; port <= count; ++port) {
  }
}
)";
  const auto problems = drift_problems(piece, removed, "ports.cpp");
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].starts_with("ports.cpp line 7 is missing from the exercise"));
  const char* marked_gap = R"(#include "stage.hpp"

void print_ports(int count) {
  for (int port = 1; port <= count; ++port) {
    // TODO: something is missing here
  }
}
)";
  CHECK(drift_problems(piece, marked_gap, "ports.cpp").empty());
}

TEST_CASE("an unmarked extra line in the exercise should be refused") {
  const char* extra = R"(#include "stage.hpp"
#include <cstdio>

void print_ports(int count) {
  for (int port = 1; port <= count; ++port) {
    print_port(port);
  }
}
)";
  const auto problems = drift_problems(piece, extra, "ports.cpp");
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "exercise line 2 differs from ports.cpp but is not marked // TODO: #include <cstdio>");
}
