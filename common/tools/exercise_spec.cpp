#include "exercise_spec.hpp"

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "rdma_tutorial/command_line.hpp"

namespace rdma::testing {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::istringstream in{std::string(text)};
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The first line of `text` that matches `re`, or the first non-empty line.
std::string pick_line(const std::string& text, const std::regex* re) {
  std::istringstream in(text);
  std::string first;
  for (std::string line; std::getline(in, line);) {
    if (re != nullptr && std::regex_search(line, *re)) return line;
    if (first.empty() && !trim(line).empty()) first = line;
  }
  return first;
}

// Every "KEY: value" line of `text`; with `commented`, only those behind
// "//" (an exercise file's header), else every line but "#" comments (a
// checker file). A key is upper case, as the header's are.
std::vector<std::tuple<int, std::string, std::string>> fields(std::string_view text, bool commented) {
  std::vector<std::tuple<int, std::string, std::string>> out;
  std::istringstream in{std::string(text)};
  int number = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++number;
    std::string_view line = trim(raw);
    if (commented) {
      if (!line.starts_with("//")) continue;
      line = trim(line.substr(2));
    } else if (line.empty() || line.starts_with("#")) {
      continue;
    }
    const auto colon = line.find(':');
    const std::string_view key = line.substr(0, colon);
    if (colon == std::string_view::npos || key.empty() || !std::all_of(key.begin(), key.end(), [](char c) { return (c >= 'A' && c <= 'Z') || c == '-'; })) {
      if (commented) continue;
      throw std::invalid_argument("line " + std::to_string(number) + ": expects 'KEY: value', got '" + std::string(line) +
                                  "'");
    }
    out.emplace_back(number, std::string(key), std::string(trim(line.substr(colon + 1))));
  }
  return out;
}

exercise_spec parse_fields(const std::vector<std::tuple<int, std::string, std::string>>& lines) {
  exercise_spec spec;
  int last_fixed = 0;  // the line number of the FIXED line just read, if the line before was one
  for (const auto& [number, key, value] : lines) {
    const bool after_fixed = last_fixed == number - 1 && last_fixed != 0;
    const std::string line = key + ": " + value;
    if (key == "EXERCISE") {
      spec.title = value;
    } else if (key == "SYMPTOM") {
      spec.symptom = value;
    } else if (key == "SYMPTOM-SAYS") {
      spec.symptom_says = value;
    } else if (key == "AGAIN") {
      spec.again = split_words(value);
      if (spec.again.empty()) throw std::invalid_argument("AGAIN: expects the arguments of the second run, got none");
    } else if (key == "FIXED") {
      spec.fixed.emplace_back(value);
      spec.fixed_says.emplace_back();
      last_fixed = number;
    } else if (key == "FIXED-SAYS") {
      if (!after_fixed) {
        throw std::invalid_argument("line " + std::to_string(number) +
                                    ": FIXED-SAYS: must follow the FIXED line it describes, got '" + line + "'");
      }
      if (value.empty()) {
        throw std::invalid_argument("line " + std::to_string(number) + ": FIXED-SAYS: expects words, got none");
      }
      spec.fixed_says.back() = value;
    } else if (key == "ARGS") {
      spec.args = split_words(value);
    } else if (key == "SERVER") {
      spec.two_peers = true;
      spec.server_args = split_words(value);
    } else if (key == "PAIR") {
      spec.pair = true;
      const auto words = split_words(value);
      for (std::size_t i = 0; i < words.size(); i += 2) {
        static const std::regex impairment("^--(server-)?(drop|drop-from|drop-every)$");
        std::smatch m;
        if (!std::regex_match(words[i], m, impairment) || i + 1 == words.size() ||
            !std::regex_match(words[i + 1], std::regex("[1-9][0-9]*"))) {
          throw std::invalid_argument("PAIR: expects impairments as run.sh takes them (--drop N, --server-drop N, "
                                      "--drop-from N, --drop-every N ...), got '" + std::string(value) + "'");
        }
        auto& side = m[1].matched ? spec.impair_server : spec.impair_client;
        side.push_back("--" + m[2].str());
        side.push_back(words[i + 1]);
      }
    } else if (key == "CLIENTS") {
      try {
        spec.clients = std::stoi(std::string(value));
      } catch (const std::exception&) {
        throw std::invalid_argument("CLIENTS: expects a number, got '" + std::string(value) + "'");
      }
    } else if (key == "EXIT") {
      try {
        spec.exit_code = std::stoi(std::string(value));
      } catch (const std::exception&) {
        throw std::invalid_argument("EXIT: expects an exit code, got '" + std::string(value) + "'");
      }
    } else if (key == "INJECT") {
      for (const std::string& setting : split_words(value)) {
        const auto eq = setting.find('=');
        if (!setting.starts_with("RDMA_INJECT_") || eq == std::string::npos || eq + 1 == setting.size()) {
          throw std::invalid_argument("INJECT: expects RDMA_INJECT_NAME=VALUE settings, got '" + setting + "'");
        }
        spec.inject.emplace_back(setting.substr(0, eq), setting.substr(eq + 1));
      }
    } else if (key == "TIMEOUT") {
      try {
        spec.timeout_seconds = std::stoi(std::string(value));
      } catch (const std::exception&) {
        throw std::invalid_argument("TIMEOUT: expects seconds, got '" + std::string(value) + "'");
      }
    }
  }
  if (spec.pair && !spec.two_peers) {
    throw std::invalid_argument("PAIR: needs a SERVER line: the server runs on the other guest");
  }
  if (spec.clients < 1 || (spec.clients > 1 && !spec.two_peers)) {
    throw std::invalid_argument("CLIENTS: needs a SERVER line and a number of 1 or more");
  }
  if (spec.title.empty()) throw std::invalid_argument("the exercise has no '// EXERCISE: <title>' line");
  if (spec.symptom.empty()) throw std::invalid_argument("the checker has no 'SYMPTOM: <regex>' line");
  if (spec.fixed.empty()) {
    throw std::invalid_argument("the checker has no 'FIXED: <regex>' line (what a fixed run must print)");
  }
  auto check_regex = [](const std::string& key, const std::string& re) {
    try {
      std::regex check(re);
    } catch (const std::regex_error& e) {
      throw std::invalid_argument(key + ": is not a valid regex: " + std::string(e.what()));
    }
  };
  check_regex("SYMPTOM", spec.symptom);
  for (const auto& re : spec.fixed) check_regex("FIXED", re);
  return spec;
}

}  // namespace

exercise_spec parse_exercise_spec(std::string_view source) { return parse_fields(fields(source, true)); }

exercise_spec parse_exercise_spec(std::string_view exercise_source, std::string_view checker_source) {
  static const std::set<std::string> checker_keys{"SYMPTOM", "SYMPTOM-SAYS", "FIXED", "FIXED-SAYS", "ARGS", "SERVER",
                                                  "CLIENTS", "PAIR", "INJECT", "TIMEOUT", "EXIT", "AGAIN"};
  std::string title;
  for (const auto& [number, key, value] : fields(exercise_source, true)) {
    if (key == "EXERCISE") {
      title = value;
    } else if (checker_keys.contains(key)) {
      // What the checker reads spells the fixed output: never in the learner's file.
      throw std::invalid_argument("the exercise file's line " + std::to_string(number) + " (" + key +
                                  ":) belongs in its checker file, out of the learner's sight");
    }
  }
  auto lines = fields(checker_source, false);
  for (const auto& [number, key, value] : lines) {
    if (key == "EXERCISE") {
      throw std::invalid_argument("checker line " + std::to_string(number) +
                                  ": EXERCISE: is the exercise file's own (its title, which the learner sees)");
    }
    if (!checker_keys.contains(key)) {
      throw std::invalid_argument("checker line " + std::to_string(number) + ": no key " + key + ":");
    }
  }
  lines.emplace_back(0, "EXERCISE", title);
  auto spec = parse_fields(lines);
  if (spec.symptom_says.empty()) {
    throw std::invalid_argument("the checker file has no 'SYMPTOM-SAYS: <words>' line (the symptom as a learner reads it)");
  }
  return spec;
}

std::string hang_line(const exercise_spec& spec) {
  return "[exercise_check] no answer within " + std::to_string(spec.timeout_seconds) + " s (killed)";
}

std::string checker_file_of(const std::string& exercise_file) {
  const std::filesystem::path path(exercise_file);
  return (path.parent_path() / "checker" / path.filename().replace_extension(".check")).string();
}

judgement judge(const exercise_spec& spec, const run_result& run, const run_result* server) {
  const std::regex symptom(spec.symptom);
  std::string output = run.all();
  if (run.timed_out) output += "\n" + hang_line(spec);
  judgement j;
  j.symptom_seen = std::regex_search(output, symptom);
  // The fix the program gave for the symptom: the first one after it. When
  // both peers failed, the other one's (first in the combined output, and
  // about its own error, as a client whose server quit under it) is not it.
  static const std::regex likely_fix("^ +likely fix: (.*)$", std::regex::multiline);
  std::smatch m;
  // A server that ended in error ended the run: its own words come first
  // (a client whose server quit under it only says it lost the server).
  const bool server_failed = server != nullptr && !server->timed_out && server->exit_code != 0;
  if (const std::string said = server_failed ? server->all() : std::string();
      server_failed && !j.symptom_seen && std::regex_search(said, m, likely_fix)) {
    j.likely_fix = m[1];
  } else if (std::smatch s; j.symptom_seen && std::regex_search(output, s, symptom) && s[0].second != output.cbegin() &&
                     std::regex_search(s[0].second, output.cend(), m, likely_fix,
                                       std::regex_constants::match_prev_avail)) {
    j.likely_fix = m[1];
  } else if (std::regex_search(output, m, likely_fix)) {
    j.likely_fix = m[1];
  }
  // ASan/LSan/UBSan reports and common/testing/memcheck.sh's summary.
  static const std::regex report(R"(ERROR: (Address|Leak)Sanitizer|runtime error: |^memcheck: )", std::regex::multiline);
  const bool reported = std::regex_search(output, report);
  if (reported) j.checker_report = pick_line(output, &report);
  if (run.timed_out) {
    j.reason = "no answer within " + std::to_string(spec.timeout_seconds) + " s (killed)";
    if (j.symptom_seen) {
      const std::string line = pick_line(output, &symptom);
      if (line != hang_line(spec)) j.reason += "; " + line;
    }
    return j;
  }
  if (j.symptom_seen) {
    j.reason = pick_line(output, &symptom);
  } else if (server_failed && server->exit_code != spec.exit_code) {
    j.reason = "the server ended with exit code " + std::to_string(server->exit_code) + ": " +
               pick_line(server->err.empty() ? server->out : server->err, nullptr);
  } else if (run.exit_code != spec.exit_code) {
    j.reason = "exit code " + std::to_string(run.exit_code) + ": " + pick_line(run.err.empty() ? run.out : run.err, nullptr);
  } else if (reported) {
    j.reason = "exit code " + std::to_string(run.exit_code) + ", but a memory checker reported: " + j.checker_report;
  } else {
    for (std::size_t i = 0; i < spec.fixed.size(); ++i) {
      const std::string& wanted = spec.fixed[i];
      if (!std::regex_search(output, std::regex(wanted, std::regex::multiline))) {
        // The words, when the header gives them: the regex may be the answer.
        const std::string says = i < spec.fixed_says.size() ? spec.fixed_says[i] : std::string();
        j.reason = "exit code " + std::to_string(run.exit_code) + ", but the output lacks what a fixed run prints: " +
                   (says.empty() ? "/" + wanted + "/" : says);
        return j;
      }
    }
    j.fixed = true;
    j.reason = "exit code " + std::to_string(run.exit_code);
  }
  return j;
}

std::vector<std::string> with_scaled_waits(std::vector<std::string> argv, bool server) {
  using std::chrono::milliseconds;
  if (scaled(milliseconds(1)) == milliseconds(1)) return argv;
  const rdma::peer_options defaults;
  std::vector<std::pair<std::string, int>> waits{{"--wait-ms", defaults.wait_ms}};
  if (server) waits.emplace_back("--accept-ms", defaults.accept_ms);
  for (const auto& [flag, fallback] : waits) {
    const auto at = std::find(argv.begin(), argv.end(), flag);
    if (at == argv.end()) {
      argv.push_back(flag);
      argv.push_back(std::to_string(scaled(milliseconds(fallback)).count()));
      continue;
    }
    // A value that is no number is left for the program to refuse.
    if (at + 1 == argv.end()) continue;
    std::string& value = *(at + 1);
    const bool number = !value.empty() && value.size() <= 9 &&
                        std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (number) value = std::to_string(scaled(milliseconds(std::stoll(value))).count());
  }
  return argv;
}

std::vector<std::string> with_port(std::vector<std::string> argv, const std::string& port) {
  if (port.empty()) return argv;
  for (auto at = argv.begin(); at != argv.end(); ++at) {
    if ((*at == "-p" || *at == "--port") && at + 1 != argv.end()) {
      *(at + 1) = port;
      return argv;
    }
  }
  argv.push_back("-p");
  argv.push_back(port);
  return argv;
}

std::vector<std::string> with_server_address(std::vector<std::string> argv, const std::string& address) {
  if (address.empty()) return argv;
  for (auto at = argv.begin(); at != argv.end(); ++at) {
    if ((*at == "-s" || *at == "--server") && at + 1 != argv.end() && *(at + 1) == guest_address) *(at + 1) = address;
  }
  return argv;
}

}  // namespace rdma::testing
