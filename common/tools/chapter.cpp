#include "chapter.hpp"

#include <regex>
#include <sstream>

namespace rdma::testing {

namespace {

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string rtrim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

// "<!-- key: value -->" -> value, if the line is such a comment with that key.
bool comment_value(const std::string& line, const std::string& key, std::string& value) {
  const std::string open = "<!-- " + key + ":";
  if (!line.starts_with(open) || !line.ends_with("-->")) return false;
  value = line.substr(open.size(), line.size() - open.size() - 3);
  value = rtrim(value);
  while (!value.empty() && value.front() == ' ') value.erase(0, 1);
  return true;
}

}  // namespace

std::vector<chapter_block> parse_chapter(std::string_view markdown) {
  const auto lines = split_lines(markdown);
  std::vector<chapter_block> blocks;
  std::vector<std::string> comments;  // the "<!-- ... -->" lines right above, nearest last
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string line = rtrim(lines[i]);
    if (line != "```console") {
      if (line.starts_with("<!--") && line.ends_with("-->")) {
        comments.push_back(line);
      } else if (!line.empty()) {
        comments.clear();
      }
      continue;
    }
    chapter_block block;
    block.line = static_cast<int>(i) + 1;
    std::string value;
    std::vector<int> exit_codes;  // one for the last command, or one per command
    for (const std::string& comment : comments) {
      if (comment_value(comment, "kernel", value)) block.kernel = value;
      if (comment_value(comment, "provider", value)) block.provider = value;
      if (comment_value(comment, "norun", value)) {
        block.run = false;
        block.norun_reason = value;
      }
      if (comment_value(comment, "exit", value)) {
        std::istringstream codes(value);
        for (int code = 0; codes >> code;) exit_codes.push_back(code);
      }
    }
    for (++i; i < lines.size() && rtrim(lines[i]) != "```"; ++i) {
      std::string text = rtrim(lines[i]);
      if (text.starts_with("$ ")) {
        chapter_command cmd;
        cmd.line = static_cast<int>(i) + 1;
        cmd.command = text.substr(2);
        while (cmd.command.ends_with("\\") && i + 1 < lines.size()) {
          cmd.command.pop_back();
          cmd.command += " " + rtrim(lines[++i]);
        }
        block.commands.push_back(cmd);
      } else if (!block.commands.empty()) {
        block.commands.back().expected.push_back(text);
      }
    }
    if (exit_codes.size() == block.commands.size()) {
      for (std::size_t c = 0; c < exit_codes.size(); ++c) block.commands[c].expected_exit = exit_codes[c];
    } else if (!exit_codes.empty() && !block.commands.empty()) {
      block.commands.back().expected_exit = exit_codes.back();
    }
    // Trailing blank lines are layout, not output.
    for (auto& cmd : block.commands) {
      while (!cmd.expected.empty() && cmd.expected.back().empty()) cmd.expected.pop_back();
    }
    blocks.push_back(block);
    comments.clear();
  }
  return blocks;
}

std::string mask_variable_fields(std::string_view line) {
  static const std::regex guid(R"([0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{4})");
  static const std::regex link_local(R"(fe80::[0-9a-f:]+)");
  // An iWARP GID: the netdev's MAC, then zeros ("fa36:6baa:c0c::").
  static const std::regex mac_gid(R"(\b[0-9a-f]{1,4}:[0-9a-f]{1,4}:[0-9a-f]{1,4}::(?=\s|$))");
  static const std::regex hex(R"(0x[0-9a-f]+)");
  static const std::regex timing(R"(\d+(\.\d+)? ?(ns|us|µs|ms|s)\b)");
  static const std::regex tcp_port(R"((\d+\.\d+\.\d+\.\d+):\d+\b)");
  std::string s(line);
  s = std::regex_replace(s, link_local, "fe80::<id>");
  s = std::regex_replace(s, mac_gid, "<mac>::");
  s = std::regex_replace(s, guid, "<guid>");
  s = std::regex_replace(s, hex, "<hex>");
  s = std::regex_replace(s, timing, "<time>");
  s = std::regex_replace(s, tcp_port, "$1:<port>");
  return rtrim(s);
}

bool output_matches(const std::vector<std::string>& expected, std::string_view actual_text, std::string& why) {
  std::vector<std::string> actual;
  for (const auto& l : split_lines(actual_text)) actual.push_back(mask_variable_fields(l));
  while (!actual.empty() && actual.back().empty()) actual.pop_back();

  // Greedy match with "..." as a gap that may swallow lines; backtracks over
  // the gap length so a later expected line can still be found.
  std::size_t e = 0;
  std::size_t a = 0;
  std::vector<std::pair<std::size_t, std::size_t>> gaps;  // (expected index after gap, actual index to retry)
  while (e < expected.size() || a < actual.size()) {
    if (e < expected.size() && expected[e] == "...") {
      gaps.emplace_back(e + 1, a);
      ++e;
      continue;
    }
    if (e < expected.size() && a < actual.size() && mask_variable_fields(expected[e]) == actual[a]) {
      ++e;
      ++a;
      continue;
    }
    if (e == expected.size() && !gaps.empty() && gaps.back().first == e) {
      return true;  // a trailing "..." takes the rest
    }
    while (!gaps.empty() && gaps.back().second >= actual.size()) gaps.pop_back();
    if (!gaps.empty()) {
      e = gaps.back().first;
      a = ++gaps.back().second;
      continue;
    }
    std::ostringstream msg;
    if (e < expected.size()) {
      msg << "expected line " << e + 1 << ": '" << expected[e] << "'";
      msg << (a < actual.size() ? ", got: '" + actual[a] + "'" : ", but the output ended");
    } else {
      msg << "unexpected extra output: '" << actual[a] << "'";
    }
    why = msg.str();
    return false;
  }
  return true;
}

}  // namespace rdma::testing
