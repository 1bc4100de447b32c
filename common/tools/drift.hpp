// The drift guard for exercises: an exercise is the piece it replaces with a
// bug in it, and must stay exactly that. With the header comments of both
// files stripped, every line where the exercise differs from the piece must
// carry the marker "// TODO" (the bug, and the place the learner is sent to),
// and nothing else may differ. So a fix made in a piece fails this check
// until its exercise gets the same fix, instead of silently leaving the
// exercise behind.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rdma::testing {

inline constexpr std::string_view drift_marker = "// TODO";

// The lines after the leading block of comments and blank lines.
std::vector<std::string> body_lines(std::string_view source);

// One problem per unmarked difference, naming the line; empty when the
// exercise differs from the piece only in marked lines. `piece_name` is used
// in the messages.
std::vector<std::string> drift_problems(std::string_view piece, std::string_view exercise,
                                        std::string_view piece_name);

}  // namespace rdma::testing
