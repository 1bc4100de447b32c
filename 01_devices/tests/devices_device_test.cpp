// Device test for stage 01: runs the real `devices` program and compares what
// it printed with what the kernel says through sysfs and what the device says
// through the verbs. Nothing here is a hard-coded expectation except, inside
// the project's Soft-RoCE guest (RXE_VM_IPV4 set), the address the guest gave
// its dummy0 interface.
#include <doctest/doctest.h>
#include <infiniband/verbs.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

#include "output.hpp"
#include "process.hpp"
#include "rdma_tutorial/device.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/gid.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using rdma::testing::describe;
using rdma::testing::has_line;
using rdma::testing::read_line;
using rdma::testing::run;

namespace {

std::string devices() { return rdma::testing::program_from_env("PROGRAM"); }

// The block of output between "\n<name>\n" and the next device (or the end).
std::string section_of(const std::string& out, const std::string& name) {
  const auto start = out.find("\n" + name + "\n");
  REQUIRE_MESSAGE(start != std::string::npos, "device " << name << " missing from:\n" << out);
  return out.substr(start + 1);
}

}  // namespace

TEST_CASE("devices should list every device in /sys/class/infiniband with the state sysfs reports") {
  const auto r = run({devices()}, 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  int count = 0;
  for (const auto& dev : fs::directory_iterator("/sys/class/infiniband")) {
    ++count;
    const std::string name = dev.path().filename();
    const std::string section = section_of(r.out, name);
    // sysfs: "4: ACTIVE" and "5: LinkUp"; the program prints the verbs names with the number.
    const std::string state = read_line(dev.path() / "ports/1/state");
    const std::string phys = read_line(dev.path() / "ports/1/phys_state");
    CHECK(has_line(section, "^    state +PORT_\\w+ \\(" + state.substr(0, state.find(':')) + "\\)$"));
    CHECK(has_line(section, "^    phys_state +\\w+ \\(" + phys.substr(0, phys.find(':')) + "\\)$"));
  }
  CHECK(r.out.starts_with(std::to_string(count) + " RDMA device"));
}

TEST_CASE("devices should print the limits ibv_query_device reports") {
  const auto r = run({devices()}, 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const auto list = rdma::get_device_list();
  for (ibv_device* dev : list.devices()) {
    rdma::context_ptr ctx(rdma::check_ptr(ibv_open_device(dev), "ibv_open_device"));
    ibv_device_attr attr{};
    rdma::check_rc(ibv_query_device(ctx.get(), &attr), "ibv_query_device");
    const std::string section = section_of(r.out, ibv_get_device_name(dev));
    // The transport comes from the device itself: InfiniBand (0) for RoCE too, iWARP (1).
    const int transport = ctx->device->transport_type;
    CHECK(has_line(section, std::string("^  transport +") + (transport == IBV_TRANSPORT_IWARP ? "iWARP" : "InfiniBand") +
                                " \\(" + std::to_string(transport) + "\\)$"));
    CHECK(has_line(section, "^  max_qp +" + std::to_string(attr.max_qp) + "$"));
    CHECK(has_line(section, "^  max_qp_wr +" + std::to_string(attr.max_qp_wr) + "$"));
    CHECK(has_line(section, "^  max_cqe +" + std::to_string(attr.max_cqe) + "$"));
    CHECK(has_line(section, "^  max_srq_wr +" + std::to_string(attr.max_srq_wr) + "$"));
    CHECK(has_line(section, "^  max_sge +" + std::to_string(attr.max_sge) + "$"));
    CHECK(has_line(section, "^  phys_port_cnt +" + std::to_string(attr.phys_port_cnt) + "$"));
  }
}

TEST_CASE("every filled GID of port 1 should be printed with its sysfs type, and the default is RoCE v2 IPv4") {
  const auto r = run({devices()}, 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  for (const auto& dev : fs::directory_iterator("/sys/class/infiniband")) {
    const std::string section = section_of(r.out, dev.path().filename());
    int filled = 0;
    for (const auto& type_file : fs::directory_iterator(dev.path() / "ports/1/gid_attrs/types")) {
      const std::string type = read_line(type_file.path());  // unreadable (EINVAL) for empty slots
      if (type.empty()) continue;
      ++filled;
      const std::string index = type_file.path().filename();
      CHECK_MESSAGE(has_line(section, "^      \\[" + index + "\\] " + std::regex_replace(type, std::regex(" "), " ") + " "),
                    "GID " << index << " (" << type << ") missing");
    }
    CHECK(filled > 0);
    // The default marker sits on a RoCE v2 line whose GID is IPv4-mapped.
    CHECK(has_line(section, R"(^      \[\d+\] RoCE v2 +\S+ +::ffff:\d+\.\d+\.\d+\.\d+   <- default$)"));
  }
  if (const char* guest_ip = std::getenv("RXE_VM_IPV4")) {
    // In the project's guest: rxe0 on dummy0 with 192.0.2.1, port active.
    CHECK(has_line(r.out, "^rxe0$"));
    CHECK(has_line(r.out, R"(^    state +PORT_ACTIVE \(4\)$)"));
    CHECK(has_line(r.out, std::string(R"(^      \[\d+\] RoCE v2 dummy0   ::ffff:)") + guest_ip + "   <- default$"));
  }
}

TEST_CASE("-g should move the marker to the chosen entry") {
  const auto r = run({devices(), "-g", "0"}, 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(has_line(r.out, R"(^      \[0\] .*<- chosen with -g$)"));
  CHECK_FALSE(has_line(r.out, "<- default$"));
}

TEST_CASE("port 0 should be refused by the device with EINVAL and the hint that ports start at 1") {
  const auto r = run({devices(), "-i", "0"}, 60s);
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("devices: ibv_query_port(port 0) failed (EINVAL): Invalid argument") != std::string::npos);
  CHECK(r.err.find("likely fix: port numbers start at 1") != std::string::npos);
}

TEST_CASE("an unknown device name should be an error, not an empty report") {
  const auto r = run({devices(), "-d", "no_such_device"}, 60s);
  INFO(describe(r));
  CHECK(r.exit_code == 2);  // a usage error: the name on the command line matches nothing
  CHECK(r.err.find("no RDMA device named 'no_such_device'") != std::string::npos);
}

TEST_CASE("a bad command line should exit 2 with a usage hint") {
  const auto r = run({devices(), "--ib-port", "many"}, 60s);
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--ib-port expects a number, got 'many'") != std::string::npos);
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"-d", ""}, {"--help=yes"}, {"-p", "1"}}) {
    std::vector<std::string> argv{devices()};
    argv.insert(argv.end(), bad.begin(), bad.end());
    const auto u = run(argv, 60s);
    INFO(describe(u));
    CHECK(u.exit_code == 2);
    CHECK(has_line(u.err, "^  likely fix: see devices --help$"));
  }
}

TEST_CASE("-g naming no filled entry should be an error after the table, as in every program") {
  const auto r = run({devices(), "-g", "7"}, 60s);
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(has_line(r.out, R"(^    GID table \(\d+ of \d+ entries filled\)$)"));
  CHECK(has_line(r.err, "^devices: GID index 7 is empty or past the table of port 1$"));
}

// On iWARP (the siw suite, scripts/rxe_vm.sh --provider siw): the device
// described as what it is, and no advice about GIDs that do not apply.
TEST_CASE("on iWARP, devices should name the transport, mark its GID entries iWARP, and say no entry is used") {
  const auto r = run({devices()}, 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  int iwarp = 0;
  for (const auto& dev : fs::directory_iterator("/sys/class/infiniband")) {
    if (read_line(dev.path() / "node_type").find("RNIC") == std::string::npos) continue;
    ++iwarp;
    const std::string section = section_of(r.out, dev.path().filename());
    CHECK(has_line(section, R"(^  transport +iWARP \(1\)$)"));
    CHECK(has_line(section, R"(^      \[0\] iWARP +\S+ +[0-9a-f:]+$)"));
    CHECK(has_line(section, "^    iWARP: no entry is used; a peer is reached by its IP address and a TCP port, through "
                            "rdma_cm \\(stage 07\\)$"));
    CHECK_FALSE(has_line(section, "IP address, or choose an entry"));
    CHECK_FALSE(has_line(section, "<- default$"));
  }
  REQUIRE_MESSAGE(iwarp > 0, "no iWARP device here: the siw suite runs in scripts/rxe_vm.sh --provider siw");
}
