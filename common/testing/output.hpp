// Test support: questions the device tests ask of a program's output, and of
// the files (sysfs) they compare it with.
#pragma once

#include <sys/utsname.h>

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

// The running kernel's version, major and minor: {6, 1}, {6, 12}; {0, 0}
// when uname says something else.
struct kernel_version {
  int major = 0;
  int minor = 0;
};
inline kernel_version running_kernel() {
  utsname u{};
  kernel_version v;
  if (::uname(&u) == 0) {
    std::smatch m;
    const std::string release = u.release;
    if (std::regex_search(release, m, std::regex(R"(^(\d+)\.(\d+))"))) v = {std::stoi(m[1]), std::stoi(m[2])};
  }
  return v;
}

// How stages 06 and 09 say a departing QP on their SRQ was let go, as a
// pattern: the kernels the tests run on are held to what their rxe does
// (6.1 sends no IBV_EVENT_QP_LAST_WQE_REACHED: the marker and the wait;
// 6.12 sends it: the event and the CQ polled empty); another kernel (a
// reader's own) may show either.
inline std::string srq_departure_pattern() {
  const std::string event = R"(IBV_EVENT_QP_LAST_WQE_REACHED, then the CQ polled empty)";
  const std::string fallback = R"(no IBV_EVENT_QP_LAST_WQE_REACHED within \d+ ms: after its marker WR came back flushed)";
  const kernel_version k = running_kernel();
  if (k.major == 6 && k.minor == 1) return fallback;
  if (k.major == 6 && k.minor == 12) return event;
  return "(?:" + event + "|" + fallback + ")";
}

}  // namespace rdma::testing
