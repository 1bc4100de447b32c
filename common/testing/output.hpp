// Test support: questions the device tests ask of a program's output, and of
// the files (sysfs) they compare it with.
#pragma once

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace rdma::testing {

// Whether some line of `text` matches the ECMAScript `pattern`; ^ and $
// anchor at line boundaries, and a pattern may span lines with \n.
inline bool has_line(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern, std::regex::multiline));
}

// The first line of a file ("4: ACTIVE" from a port's sysfs state); "" when
// it cannot be read (sysfs answers EINVAL for an empty GID slot's type).
inline std::string read_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace rdma::testing
