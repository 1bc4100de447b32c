// Test support: questions the device tests ask of a program's output.
#pragma once

#include <regex>
#include <string>

namespace rdma::testing {

// Whether some line of `text` matches the ECMAScript `pattern`; ^ and $
// anchor at line boundaries, and a pattern may span lines with \n.
inline bool has_line(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern, std::regex::multiline));
}

}  // namespace rdma::testing
