#include "drift.hpp"

#include <algorithm>
#include <sstream>

namespace rdma::testing {

namespace {

std::string rtrim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

bool is_comment_or_blank(const std::string& line) {
  const auto first = line.find_first_not_of(" \t");
  return first == std::string::npos || line.compare(first, 2, "//") == 0;
}

struct numbered {
  int number;  // 1-based line number in the file
  std::string text;
};

std::vector<numbered> body(std::string_view source) {
  std::vector<numbered> lines;
  std::istringstream in{std::string(source)};
  bool in_header = true;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    line = rtrim(line);
    if (in_header && is_comment_or_blank(line)) continue;
    in_header = false;
    lines.push_back({number, line});
  }
  return lines;
}

}  // namespace

std::vector<std::string> body_lines(std::string_view source) {
  std::vector<std::string> out;
  for (auto& l : body(source)) out.push_back(l.text);
  return out;
}

std::vector<std::string> drift_problems(std::string_view piece_source, std::string_view exercise_source,
                                        std::string_view piece_name) {
  const auto a = body(piece_source);
  const auto b = body(exercise_source);
  // Longest common subsequence of lines, then walk it: what is not common is
  // a difference.
  std::vector<std::vector<int>> lcs(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (std::size_t i = a.size(); i-- > 0;) {
    for (std::size_t j = b.size(); j-- > 0;) {
      lcs[i][j] = a[i].text == b[j].text ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  // The edit script: each piece line kept or deleted, each exercise line kept
  // or inserted. A run of deletions and insertions is one changed place.
  struct edit {
    bool keep;
    bool from_piece;  // for a change: a deleted piece line (else an inserted exercise line)
    std::size_t index;
  };
  std::vector<edit> edits;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i].text == b[j].text) {
      edits.push_back({true, false, j});
      ++i;
      ++j;
    } else if (j == b.size() || (i < a.size() && lcs[i + 1][j] >= lcs[i][j + 1])) {
      edits.push_back({false, true, i++});
    } else {
      edits.push_back({false, false, j++});
    }
  }
  std::vector<std::string> problems;
  const auto marked = [](const numbered& l) { return l.text.find(drift_marker) != std::string::npos; };
  for (std::size_t k = 0; k < edits.size();) {
    if (edits[k].keep) {
      ++k;
      continue;
    }
    std::size_t end = k;
    bool has_marked_line = false;
    while (end < edits.size() && !edits[end].keep) {
      if (!edits[end].from_piece) {
        const numbered& line = b[edits[end].index];
        if (marked(line)) {
          has_marked_line = true;
        } else {
          problems.push_back("exercise line " + std::to_string(line.number) + " differs from " +
                             std::string(piece_name) + " but is not marked " + std::string(drift_marker) + ": " +
                             line.text);
        }
      }
      ++end;
    }
    if (!has_marked_line) {
      for (std::size_t m = k; m < end; ++m) {
        if (!edits[m].from_piece) continue;
        const numbered& line = a[edits[m].index];
        problems.push_back(std::string(piece_name) + " line " + std::to_string(line.number) +
                           " is missing from the exercise, with no marked line in its place: " + line.text);
      }
    }
    k = end;
  }
  return problems;
}

}  // namespace rdma::testing
