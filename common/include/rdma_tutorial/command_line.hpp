// Command-line options shared by every stage. The short forms are
// ibv_rc_pingpong's and the long ones perftest's, so a reader who knows those
// tools finds them where expected; the two tools spell only the GID index
// differently (ibv_rc_pingpong -g, --gid-idx; perftest -x, --gid-index, its
// -g being a multicast switch of the Send tests). docs/01-devices.md says so.
//
//   -d, --ib-dev NAME     RDMA device (default: the first one found)
//   -i, --ib-port N       port on that device, numbered from 1 (default 1)
//   -g, --gid-index N     GID table index (default: the port's RoCE v2 IPv4
//                         entry, found in the table, never assumed)
//   -p, --port N          the TCP port of the two-peer stages (04 on), which
//                         add it themselves; elsewhere it is refused with a
//                         pointer to -i
//   -h, --help
//
// One rule for every program: a malformed or out-of-range value, an unknown
// option or a value given to a flag is a usage error (exit 2); a value that is
// well-formed but names nothing on this machine (no such device, an empty GID
// entry) is a run-time error (exit 1).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rdma {

struct device_options {
  std::string device;             // empty: the first device in the list
  std::uint8_t port = 1;
  std::optional<int> gid_index;   // empty: pick_default_gid() decides
};

// The two-peer stages' (04 on) options, spelled as perftest spells them:
//   -s, --server ADDR   be the client of the server at ADDR (without: the server)
//       --bind ADDR     server: listen on this IPv4 address only
//   -p, --port N        the handshake's TCP port (default 18515)
//       --wait-ms MS    bound on each wait for the peer once connected
//       --accept-ms MS  server: bound on the wait for a client to come and finish
struct peer_options {
  std::string server;         // empty: we are the server
  std::string bind;           // empty: every address
  std::uint16_t port = 18515;
  int wait_ms = 5000;
  int accept_ms = 60000;
  bool is_client() const { return !server.empty(); }
};

// Bad command line; main prints it with the usage and exits 2.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses "42" into [min, max]; throws usage_error naming the option otherwise.
long parse_integer(std::string_view text, std::string_view option, long min, long max);
// parse_integer for the many options held in a std::uint32_t (sizes, depths,
// counts, milliseconds): the same checks and messages; [min, max] must lie
// within 0 and UINT32_MAX.
std::uint32_t parse_u32(std::string_view text, std::string_view option, long min, long max);

class option_parser {
 public:
  option_parser(std::string program, std::string summary);

  // -d, -i and -g, writing into `out`.
  void add_device_options(device_options& out);

  // -s, --bind, -p, --wait-ms, --accept-ms, writing into `out`. The port
  // is a TCP port for the handshake (stages 04-06, 08) or rdma_cm's own
  // (stage 07 on); the help says which.
  enum class peer_channel { tcp, rdma_cm };
  void add_peer_options(peer_options& out, peer_channel channel = peer_channel::tcp);

  // --ack-timeout N (0-31) for the stages whose QPs may cross the
  // two-guest wire (06, 08, 09): the QP's ACK timeout, 4.096 us x 2^N;
  // unset, rdma::default_ack_timeout picks it by the device.
  void add_ack_timeout(std::optional<std::uint8_t>& out);

  // After parse(): an option of one role given to the other is a usage
  // error. `client_only` lists the program's own client-only options;
  // --bind and --accept-ms are the server's.
  void check_roles(const peer_options& peer, std::initializer_list<const char*> client_only) const;

  // An option taking a value (value_name non-empty) or a flag (value_name
  // empty; on_value then receives ""). short_name 0 means long form only.
  void add(char short_name, std::string long_name, std::string value_name, std::string help,
           std::function<void(std::string_view)> on_value);

  // Accept up to `max` positional arguments, described in the usage line.
  void allow_positional(std::string usage_name, std::size_t max);

  // Returns false if --help was given (the help text went to stdout and the
  // program should exit 0). Throws usage_error on anything malformed.
  bool parse(int argc, const char* const* argv);

  const std::vector<std::string>& positional() const noexcept { return positional_; }
  // Whether the option (by long name) was on the command line.
  bool given(std::string_view long_name) const;
  std::string help_text() const;

 private:
  struct option {
    char short_name;
    std::string long_name;
    std::string value_name;
    std::string help;
    std::function<void(std::string_view)> on_value;
  };
  const option* find_short(char c) const;
  const option* find_long(std::string_view name) const;

  std::string program_;
  std::string summary_;
  std::vector<option> options_;
  std::string positional_name_;
  std::size_t max_positional_ = 0;
  std::vector<std::string> positional_;
  std::vector<std::string> given_;
};

}  // namespace rdma
