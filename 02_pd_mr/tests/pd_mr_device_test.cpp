// Device test for stage 02: runs the real `pd_mr` program and checks what it
// printed against what the kernel says in the same environment: the memlock
// limit from getrlimit (the child inherits ours), the table sizes that limit
// allows, the keys of each registration, VmPin, and the errors the kernel
// gives (EBUSY for a PD still in use, ENOMEM past the lowered limit).
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "output.hpp"
#include "process.hpp"
#include "../stage.hpp"

using namespace std::chrono_literals;
using rdma::testing::describe;
using rdma::testing::has_line;
using rdma::testing::run;

namespace {

std::string pd_mr() { return rdma::testing::program_from_env("PROGRAM"); }

std::string limit_text(rlim_t value) {
  return value == RLIM_INFINITY ? "unlimited" : std::to_string(value / 1024) + " KiB";
}

rlimit memlock_here() {
  rlimit limit{};
  REQUIRE(getrlimit(RLIMIT_MEMLOCK, &limit) == 0);
  return limit;
}

}  // namespace

TEST_CASE("pd_mr should allocate a PD and print an lkey and an rkey for every buffer, each for its user") {
  const auto r = run({pd_mr()}, 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(has_line(r.out, R"(^device \w+$)"));
  CHECK(has_line(r.out, R"(^protection domain allocated \(ibv_alloc_pd\), handle \d+$)"));
  CHECK(has_line(r.out, R"(^  recv    LOCAL_WRITE \()"));
  CHECK(has_line(r.out, R"(^  target  LOCAL_WRITE \| REMOTE_WRITE \()"));
  CHECK(has_line(r.out, R"(^  source  REMOTE_READ \()"));
  // Three registrations, three distinct lkeys.
  std::set<std::string> lkeys;
  const std::regex lkey(R"(lkey (0x[0-9a-f]+)  for this process)");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), lkey); it != std::sregex_iterator(); ++it) {
    lkeys.insert((*it)[1]);
  }
  CHECK(lkeys.size() == 3);
  // recv grants no remote access; target and source do.
  CHECK(has_line(r.out, R"(^  recv .*\n +lkey 0x[0-9a-f]+ .*\n +rkey 0x[0-9a-f]+  for nobody)"));
  CHECK(has_line(r.out, R"(^  target .*\n +lkey 0x[0-9a-f]+ .*\n +rkey 0x[0-9a-f]+  for the peer)"));
  CHECK(has_line(r.out, R"(^  source .*\n +lkey 0x[0-9a-f]+ .*\n +rkey 0x[0-9a-f]+  for the peer)"));
}

TEST_CASE("pd_mr should show the buffers pinned while registered and unpinned after ibv_dereg_mr") {
  const auto r = run({pd_mr(), "--size", "16384"}, 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(has_line(r.out, "^registering 3 buffers of 16 KiB "));
  CHECK(has_line(r.out, R"(^pinned by this process \(VmPin\): 48 KiB$)"));
  CHECK(has_line(r.out, R"(^after ibv_dereg_mr, before free: VmPin 0 KiB$)"));
}

TEST_CASE("a write from memory of the QP's own PD should land, one from another PD should fail in its completion") {
  const auto r = run({pd_mr()}, 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(has_line(r.out, R"(^  source MR in the QP's PD:  wr_id 1: IBV_WC_RDMA_WRITE; target holds "hello, RDMA"$)"));
  // Soft-RoCE says LOC_QP_OP_ERR on Linux 6.1 and WR_FLUSH_ERR on 6.12, where
  // NICs typically say LOC_PROT_ERR; success would be the bug.
  CHECK(has_line(r.out, R"(^  source MR in another PD:   wr_id 2: IBV_WC_(LOC_QP_OP|LOC_PROT|WR_FLUSH)_ERR \(\d+, .*\), vendor_err 0x[0-9a-f]+   <- expected$)"));
}

TEST_CASE("pd_mr should show that a PD with an MR on it cannot be freed (EBUSY)") {
  const auto r = run({pd_mr()}, 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(has_line(r.out, R"(^ibv_dealloc_pd with an MR still on the PD: ibv_dealloc_pd failed \(EBUSY\): .*<- expected$)"));
}

TEST_CASE("pd_mr should print the memlock limit getrlimit reports and measure exactly the sizes it allows") {
  const rlimit limit = memlock_here();
  const auto r = run({pd_mr(), "--iters", "1"}, 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(has_line(r.out, "^RLIMIT_MEMLOCK \\(ulimit -l\\): soft " + limit_text(limit.rlim_cur) + ", hard " +
                            limit_text(limit.rlim_max) + "$"));
  CHECK(has_line(r.out, "^CAP_IPC_LOCK (dropped|not held)"));
  // The limit is shown, and applied, before the first registration.
  CHECK(r.out.find("RLIMIT_MEMLOCK") < r.out.find("registering 3 buffers"));
  CHECK(has_line(r.out, "median of 1 runs"));
  const std::size_t bytes = limit.rlim_cur == RLIM_INFINITY ? std::size_t{128} << 20 : limit.rlim_cur;
  const auto sizes = stage02::table_sizes(bytes, std::size_t{64} << 20);
  REQUIRE_FALSE(sizes.empty());
  std::string rows;
  for (const std::size_t size : sizes) {
    rows += " +" + stage02::size_text(size) + " +" + std::to_string(size / stage02::page_size) +
            R"(   \d+\.\d us   \d+\.\d\d us/page\n)";
  }
  CHECK(has_line(r.out, R"(reg\+dereg   per page\n)" + rows + "\n"));
}

TEST_CASE("pd_mr should get ENOMEM past a lowered memlock limit, explain it, and restore the limit") {
  const rlimit limit = memlock_here();
  const auto r = run({pd_mr(), "--iters", "1"}, 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(has_line(r.out, R"(^memlock demo: soft limit lowered to \d+ KiB with setrlimit, then ibv_reg_mr of 128 KiB$)"));
  CHECK(has_line(r.out, R"(^  ibv_reg_mr\(128 KiB\) failed \(ENOMEM\): Cannot allocate memory   <- expected$)"));
  CHECK(has_line(r.out, R"(^  fix: .*ulimit -l unlimited.*--ulimit memlock=-1)"));
  CHECK(has_line(r.out, "^soft limit restored to " + limit_text(limit.rlim_cur) + "$"));
  CHECK(r.err.empty());
}

TEST_CASE("a bad command line should exit 2 naming the option") {
  const auto r = run({pd_mr(), "--iters", "0"}, 60s);
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--iters must be between 1 and 1000, got 0") != std::string::npos);
}

TEST_CASE("an unknown device should be an error naming the devices present") {
  const auto r = run({pd_mr(), "-d", "no_such_device"}, 60s);
  INFO(describe(r));
  CHECK(r.exit_code == 2);  // a usage error: the name on the command line matches nothing
  // The names sysfs lists (rxe0 in the guest, siw0 in its iWARP twin).
  std::string present;
  for (const auto& dev : std::filesystem::directory_iterator("/sys/class/infiniband")) {
    present += (present.empty() ? "" : "|") + dev.path().filename().string();
  }
  CHECK(has_line(r.err, "^pd_mr: no RDMA device named 'no_such_device' \\(devices present: (" + present + ")"));
}

TEST_CASE("--memlock should lower the soft limit for the whole run, as ulimit -S -l does") {
  const rlimit limit = memlock_here();
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < 64 * 1024) {
    MESSAGE("skipped: the hard memlock limit is below 64 KiB here");
    return;
  }
  const auto r = run({pd_mr(), "--iters", "1", "--memlock", "64"}, 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(has_line(r.out, "^RLIMIT_MEMLOCK \\(ulimit -l\\): soft 64 KiB, hard " + limit_text(limit.rlim_max) + "$"));
  CHECK(has_line(r.out, R"(reg\+dereg   per page\n +4 KiB .*\n +8 KiB .*\n +16 KiB .*\n +32 KiB .*\n\n)"));
  CHECK(has_line(r.out, "^soft limit restored to 64 KiB$"));
}

TEST_CASE("a demo buffer past the memlock limit should fail with ENOMEM and its fix, as root too") {
  // 16 MiB x 3 under an 8 MiB limit: root would pin them all if CAP_IPC_LOCK
  // were dropped only after the registrations.
  const rlimit limit = memlock_here();
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < 8192 * 1024) {
    MESSAGE("skipped: the hard memlock limit is below 8 MiB here");
    return;
  }
  const auto r = run({pd_mr(), "--memlock", "8192", "--size", "16777216"}, 120s);
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(has_line(r.err, R"(^pd_mr: ibv_reg_mr\(recv, LOCAL_WRITE\) failed \(ENOMEM\))"));
  CHECK(has_line(r.err, "^  likely fix: pinned memory is capped by RLIMIT_MEMLOCK"));
  const auto big = run({pd_mr(), "--size", "1073741824"}, 60s);
  INFO(describe(big));
  CHECK(big.exit_code == 2);
  CHECK(has_line(big.err, "--size must be between 1 and 67108864"));
}

// On iWARP (the siw suite, scripts/rxe_vm.sh --provider siw): everything
// but the loopback QP, which would have to be connected by hand.
TEST_CASE("on iWARP, pd_mr should register and show its keys, and say why the PD boundary is not shown there") {
  const auto r = run({pd_mr(), "--iters", "1"}, 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(has_line(r.out, R"(^the PD boundary: not shown on \w+, an iWARP device: the demo connects a QP to itself by )"
                        R"(hand, and an iWARP QP is connected by rdma_cm \(stage 07\)$)"));
  CHECK_FALSE(has_line(r.out, "source MR in the QP's PD"));
  CHECK(has_line(r.out, R"(^ibv_dealloc_pd with an MR still on the PD: .*EBUSY.*<- expected$)"));
  CHECK(has_line(r.out, R"(^  ibv_reg_mr\(\d+ KiB\) failed \(ENOMEM\): Cannot allocate memory   <- expected$)"));
  CHECK(r.err.empty());
}
