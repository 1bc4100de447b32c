#include "rdma_tutorial/command_line.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <iostream>

namespace rdma {

long parse_integer(std::string_view text, std::string_view option, long min, long max) {
  long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
    throw usage_error(std::string(option) + " expects a number, got '" + std::string(text) + "'");
  }
  if (value < min || value > max) {
    throw usage_error(std::string(option) + " must be between " + std::to_string(min) + " and " +
                      std::to_string(max) + ", got " + std::to_string(value));
  }
  return value;
}

std::uint32_t parse_u32(std::string_view text, std::string_view option, long min, long max) {
  return static_cast<std::uint32_t>(parse_integer(text, option, min, max));
}

option_parser::option_parser(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void option_parser::add_device_options(device_options& out) {
  add('d', "ib-dev", "NAME", "RDMA device to use (default: the first one found)", [&out](std::string_view v) {
    // An empty name would silently mean "the first device"; say so instead.
    if (v.empty()) throw usage_error("--ib-dev needs a device name (ibv_devices lists them)");
    out.device = std::string(v);
  });
  // 0 passes on purpose: the device's own EINVAL for port 0 is a lesson of stage 01.
  add('i', "ib-port", "N", "device port, numbered from 1 (default 1)", [&out](std::string_view v) {
    out.port = static_cast<std::uint8_t>(parse_integer(v, "--ib-port", 0, 255));
  });
  add('g', "gid-index", "N", "GID table index (default: the port's RoCE v2 IPv4 entry)",
      [&out](std::string_view v) { out.gid_index = static_cast<int>(parse_integer(v, "--gid-index", 0, 65535)); });
}

void option_parser::add_ack_timeout(std::optional<std::uint8_t>& out) {
  add(0, "ack-timeout", "N",
      "wait 4.096 us x 2^N for an ACK before resending, 0-31; 0 waits forever (default: 18, 1.07 s, on Soft-RoCE; "
      "14, 67 ms, on any other device)",
      [&out](std::string_view v) { out = static_cast<std::uint8_t>(parse_integer(v, "--ack-timeout", 0, 31)); });
}

void option_parser::add_peer_options(peer_options& out, peer_channel channel) {
  const bool cm = channel == peer_channel::rdma_cm;
  add('s', "server", "ADDR", "be the client of the server at ADDR (default: be the server)", [&out](std::string_view v) {
    if (v.empty()) throw usage_error("--server needs an address");
    out.server = std::string(v);
  });
  add(0, "bind", "ADDR", "server: listen on this IPv4 address only (default: all)", [&out](std::string_view v) {
    in_addr ignored{};
    if (::inet_pton(AF_INET, std::string(v).c_str(), &ignored) != 1) {
      throw usage_error("--bind expects an IPv4 address, got '" + std::string(v) + "'");
    }
    out.bind = std::string(v);
  });
  add('p', "port", "N", cm ? "the rdma_cm port the server listens on (default 18515)" : "TCP port of the handshake (default 18515)",
      [&out](std::string_view v) { out.port = static_cast<std::uint16_t>(parse_integer(v, "--port", 1, 65535)); });
  add(0, "wait-ms", "MS",
      cm ? "give up on a peer silent for MS: the connect, each completion or notice, the disconnect (default 5000)"
         : "give up on a peer silent for MS: each handshake message, each completion or notice (default 5000)",
      [&out](std::string_view v) { out.wait_ms = static_cast<int>(parse_integer(v, "--wait-ms", 1, 3600000)); });
  add(0, "accept-ms", "MS", "server: give up when no client came within MS (default 60000)",
      [&out](std::string_view v) { out.accept_ms = static_cast<int>(parse_integer(v, "--accept-ms", 1, 86400000)); });
}

void option_parser::check_roles(const peer_options& peer, std::initializer_list<const char*> client_only) const {
  for (const char* name : client_only) {
    if (!peer.is_client() && given(name)) {
      throw usage_error(std::string("--") + name + " is for the client (with -s ADDR)");
    }
  }
  for (const char* name : {"bind", "accept-ms"}) {
    if (peer.is_client() && given(name)) throw usage_error(std::string("--") + name + " is for the server (without -s)");
  }
}

void option_parser::add(char short_name, std::string long_name, std::string value_name, std::string help,
                        std::function<void(std::string_view)> on_value) {
  options_.push_back({short_name, std::move(long_name), std::move(value_name), std::move(help), std::move(on_value)});
}

void option_parser::allow_positional(std::string usage_name, std::size_t max) {
  positional_name_ = std::move(usage_name);
  max_positional_ = max;
}

const option_parser::option* option_parser::find_short(char c) const {
  for (const auto& o : options_) {
    if (o.short_name != 0 && o.short_name == c) return &o;
  }
  return nullptr;
}

const option_parser::option* option_parser::find_long(std::string_view name) const {
  for (const auto& o : options_) {
    if (o.long_name == name) return &o;
  }
  return nullptr;
}

bool option_parser::parse(int argc, const char* const* argv) {
  positional_.clear();
  given_.clear();
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << help_text();
      return false;
    }
    if (arg.starts_with("--help=")) throw usage_error("--help takes no value");
    if (arg.starts_with("-h") && arg.size() > 2) throw usage_error("-h takes no value");
    const option* opt = nullptr;
    std::optional<std::string_view> inline_value;  // "--name=v" or "-dv"
    std::string shown;                             // the option as the user wrote it
    if (arg.starts_with("--") && arg.size() > 2) {
      const auto eq = arg.find('=');
      shown = std::string(arg.substr(0, eq));
      opt = find_long(arg.substr(2, eq == std::string_view::npos ? eq : eq - 2));
      if (eq != std::string_view::npos) inline_value = arg.substr(eq + 1);
    } else if (arg.starts_with('-') && arg.size() > 1) {
      shown = std::string(arg.substr(0, 2));
      opt = find_short(arg[1]);
      if (arg.size() > 2) inline_value = arg.substr(2);
    } else {
      if (positional_.size() >= max_positional_) {
        throw usage_error("unexpected argument '" + std::string(arg) + "'");
      }
      positional_.emplace_back(arg);
      continue;
    }
    if (opt == nullptr && (shown == "-p" || shown == "--port")) {
      throw usage_error("unknown option '" + shown + "': " + program_ +
                        " has no TCP port; the device port is -i/--ib-port (as in perftest)");
    }
    if (opt == nullptr) throw usage_error("unknown option '" + shown + "'");
    given_.push_back(opt->long_name);
    if (opt->value_name.empty()) {
      if (inline_value) throw usage_error(shown + " takes no value");
      opt->on_value("");
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argc) throw usage_error(shown + " needs a value (" + opt->value_name + ")");
      inline_value = argv[++i];
    }
    opt->on_value(*inline_value);
  }
  return true;
}

bool option_parser::given(std::string_view long_name) const {
  return std::find(given_.begin(), given_.end(), long_name) != given_.end();
}

std::string option_parser::help_text() const {
  std::string text = "usage: " + program_ + " [options]";
  if (max_positional_ > 0) text += " " + positional_name_;
  text += "\n" + summary_ + "\n\noptions:\n";
  for (const auto& o : options_) {
    std::string left = o.short_name != 0 ? std::string("  -") + o.short_name + ", " : std::string("      ");
    left += "--" + o.long_name;
    if (!o.value_name.empty()) left += " " + o.value_name;
    left.resize(std::max<std::size_t>(left.size() + 2, 28), ' ');
    text += left + o.help + "\n";
  }
  text += "  -h, --help                show this help\n";
  return text;
}

}  // namespace rdma
