// The injection shim (test-only): LD_PRELOADed in front of a stage program,
// it stands between the program and libibverbs/librdmacm and can make one
// chosen call fail, so that every error path of every program runs for real
// (the inject suite, common/testing/inject_walk.py).
//
// Only calls made from the program itself count: a call's return address
// must lie in the main executable (common/ is linked in statically, so its
// calls count too). What librdmacm calls in libibverbs on its own behalf
// passes through untouched.
//
// The verbs a program reaches through static inline functions of verbs.h
// (ibv_post_send, ibv_post_recv, ibv_post_srq_recv, ibv_poll_cq,
// ibv_req_notify_cq, ibv_alloc_mw, ibv_bind_mw, ibv_dealloc_mw) never cross
// a symbol boundary: they call through the context's ops table. The shim
// swaps those table entries for its own in every context ibv_open_device
// returns (librdmacm's included), keeping the provider's functions to call.
//
// Environment:
//   RDMA_INJECT_LOG=FILE      append one line per call site reached, in the
//                             order first reached: "call NAME SITE" (SITE: the
//                             return address's offset in the executable, hex);
//                             "inject NAME SITE ERRNO" when it failed one;
//                             at exit "leak NAME SITE" per object still alive
//                             that the program created, "fd N TARGET" per
//                             descriptor it opened and left open (not one
//                             open before main, nor librdmacm's own device
//                             contexts, kept for the process's life); "end"
//                             last
//   RDMA_INJECT_FAIL=NAME@SITE  fail the first call of NAME from SITE
//   RDMA_INJECT_ERRNO=N       the errno it fails with (default EIO)
//   RDMA_INJECT_WR=imm=VALUE@N   a hostile peer: the N-th work request that
//   RDMA_INJECT_WR=len=BYTES@N   carries an immediate and data (counted from
//                             1) leaves with the immediate VALUE (as the
//                             receiver decodes it, hex or decimal) or with
//                             BYTES in its first scatter/gather entry
//                             instead; the program's own WR is left as it
//                             was. Logged as "hostile WHAT OLD NEW"
//   RDMA_INJECT_ATTR=device.FIELD=N,port.FIELD=N,...  a smaller device:
//                             what ibv_query_device and ibv_query_port tell
//                             the program (not librdmacm) has these fields
//                             replaced (device: max_qp, max_qp_wr, max_sge,
//                             max_cqe, max_mr_size, max_srq, max_srq_wr,
//                             max_mw, max_qp_rd_atom, max_qp_init_rd_atom,
//                             device_cap_flags; port: link_layer, active_mtu)
//   RDMA_INJECT_PRIVATE=OFFSET:HEX  a lying peer over rdma_cm: the private
//                             data of the program's rdma_accept (or
//                             rdma_connect) leaves with the bytes HEX written
//                             at OFFSET; the program's own buffer is left as
//                             it was. Logged as "private OFFSET HEX"
//
// Five modes stretch a moment a real host may take, so that a race a
// program loses only now and then on Soft-RoCE is lost on every run (the
// exercise suite runs an exercise with them when its checker file has an INJECT
// line, common/tools/exercise_spec.hpp). Each is what a descheduled thread
// or a slow peer can do on any machine; none breaks a program that is right:
//   RDMA_INJECT_LATE_ARM=MS   an ibv_req_notify_cq that comes straight after
//                             an ibv_poll_cq that found nothing (no event
//                             taken in between) is made MS ms late: the
//                             thread preempted just before it. Whatever
//                             completes meanwhile is taken out of the CQ
//                             before the arm, so it raises no event, as a
//                             completion that beat the arm raises none, and
//                             is handed to the program's next ibv_poll_cq
//                             first. A program that polls after it arms
//                             finds it there; one that armed last sleeps
//                             with it. Logged as "late-arm N" (completions
//                             taken before the arm)
//   RDMA_INJECT_STRAGGLER=MS  each QP's first ibv_post_send of a list of
//                             several WRs posts all but the last, then the
//                             last MS ms later: the peer's first wake-up
//                             finds that burst one message short
//   RDMA_INJECT_LATE_EVENT=MS each ibv_get_cq_event returns its event MS ms
//                             late (the thread preempted just after it):
//                             whatever the peer sends meanwhile is in the CQ
//                             before the program re-arms and looks, so one
//                             event stands for all of it
//   RDMA_INJECT_LATE_RECV=MS  the first ibv_poll_cq on each CQ that returns a
//                             successful receive completion returns MS ms
//                             late (the thread preempted just after it): the
//                             program reposts what was consumed that much
//                             later, while the sender, told by the ACK,
//                             writes on. Each later write finds the Recvs
//                             that were posted before it, or none
//   RDMA_INJECT_LATE_POST_RECV=MS  each QP's first ibv_post_recv is made MS
//                             ms late (the thread preempted just before it):
//                             a program that posts its Recvs before it tells
//                             the peer where to write only answers later; one
//                             that tells the peer first meets the peer's
//                             first message with no Recv posted. Logged as
//                             "late-post-recv MS"
//
// How a call fails is how that call reports failure: NULL and errno, an
// errno as the return value, or -1 and errno; the real call is not made. So
// a failed release (destroy, dealloc, dereg, close, ack) leaves its object
// alive, as a real one would: the program can only report it, and the exit
// report lists the object (and whatever it kept busy) as left behind.
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <link.h>
#include <rdma/rdma_cma.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#undef ibv_reg_mr
#undef ibv_query_port

namespace {

struct exe_range {
  std::uintptr_t bias = 0;
  std::uintptr_t low = UINTPTR_MAX;
  std::uintptr_t high = 0;
};

exe_range find_exe() {
  exe_range r;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* out = static_cast<exe_range*>(data);
        // The first object listed is the main program.
        out->bias = info->dlpi_addr;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
          const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          if (start < out->low) out->low = start;
          if (start + ph.p_memsz > out->high) out->high = start + ph.p_memsz;
        }
        return 1;  // only the first
      },
      &r);
  return r;
}

struct shim_state {
  std::mutex lock;
  exe_range exe = find_exe();
  FILE* log = nullptr;
  std::string fail_name;
  std::uintptr_t fail_site = 0;
  bool fail_done = false;
  int fail_errno = EIO;
  std::string hostile_what;  // "imm" or "len", empty: none
  std::uint64_t hostile_value = 0;
  unsigned long hostile_nth = 0;
  unsigned long with_imm = 0;  // work requests with an immediate and data posted so far
  std::set<std::pair<std::string, std::uintptr_t>> seen;
  std::map<const void*, std::pair<const char*, std::uintptr_t>> alive;  // object -> (creating call, site)
  ibv_context_ops real_ops{};  // the provider's, saved from the first context
  bool have_ops = false;
  std::set<int> library_fds;  // the descriptors of contexts librdmacm opened for itself
  std::map<std::string, std::uint64_t> device_attr;  // RDMA_INJECT_ATTR's device.* fields
  std::map<std::string, std::uint64_t> port_attr;    // and port.*
  decltype(verbs_context::query_port) real_query_port = nullptr;
  std::size_t private_offset = 0;       // RDMA_INJECT_PRIVATE
  std::vector<unsigned char> private_bytes;
  long late_arm_ms = 0;   // RDMA_INJECT_LATE_ARM
  long straggler_ms = 0;  // RDMA_INJECT_STRAGGLER
  long late_recv_ms = 0;  // RDMA_INJECT_LATE_RECV
  long late_event_ms = 0;  // RDMA_INJECT_LATE_EVENT
  long late_post_recv_ms = 0;  // RDMA_INJECT_LATE_POST_RECV

  shim_state() {
    if (const char* path = std::getenv("RDMA_INJECT_LOG"); path != nullptr && *path != '\0') {
      log = std::fopen(path, "a");
      if (log != nullptr) std::setvbuf(log, nullptr, _IOLBF, 0);
    }
    if (const char* fail = std::getenv("RDMA_INJECT_FAIL"); fail != nullptr) {
      const std::string spec(fail);
      const auto at = spec.find('@');
      if (at != std::string::npos) {
        fail_name = spec.substr(0, at);
        fail_site = std::strtoull(spec.c_str() + at + 1, nullptr, 16);
      }
    }
    if (const char* e = std::getenv("RDMA_INJECT_ERRNO"); e != nullptr) fail_errno = std::atoi(e);
    if (const char* attrs = std::getenv("RDMA_INJECT_ATTR"); attrs != nullptr) {
      std::string spec(attrs);
      for (std::size_t start = 0; start < spec.size();) {
        const std::size_t end = std::min(spec.find(',', start), spec.size());
        const std::string item = spec.substr(start, end - start);
        const auto dot = item.find('.');
        const auto eq = item.find('=');
        if (dot == std::string::npos || eq == std::string::npos || eq < dot ||
            (item.compare(0, dot, "device") != 0 && item.compare(0, dot, "port") != 0)) {
          std::fprintf(stderr, "rdma_inject: RDMA_INJECT_ATTR takes device.FIELD=N or port.FIELD=N, not '%s'\n", item.c_str());
          std::abort();
        }
        auto& to = item.compare(0, dot, "device") == 0 ? device_attr : port_attr;
        to[item.substr(dot + 1, eq - dot - 1)] = std::strtoull(item.c_str() + eq + 1, nullptr, 0);
        start = end + 1;
      }
    }
    if (const char* pd = std::getenv("RDMA_INJECT_PRIVATE"); pd != nullptr) {
      const std::string spec(pd);
      const auto colon = spec.find(':');
      const std::string hex = colon == std::string::npos ? "" : spec.substr(colon + 1);
      if (colon == std::string::npos || hex.empty() || hex.size() % 2 != 0) {
        std::fprintf(stderr, "rdma_inject: RDMA_INJECT_PRIVATE takes OFFSET:HEXBYTES, not '%s'\n", pd);
        std::abort();
      }
      private_offset = std::strtoull(spec.substr(0, colon).c_str(), nullptr, 0);
      for (std::size_t i = 0; i < hex.size(); i += 2) {
        private_bytes.push_back(static_cast<unsigned char>(std::strtoul(hex.substr(i, 2).c_str(), nullptr, 16)));
      }
    }
    late_arm_ms = milliseconds("RDMA_INJECT_LATE_ARM");
    straggler_ms = milliseconds("RDMA_INJECT_STRAGGLER");
    late_recv_ms = milliseconds("RDMA_INJECT_LATE_RECV");
    late_event_ms = milliseconds("RDMA_INJECT_LATE_EVENT");
    late_post_recv_ms = milliseconds("RDMA_INJECT_LATE_POST_RECV");
    if (const char* wr = std::getenv("RDMA_INJECT_WR"); wr != nullptr) {
      const std::string spec(wr);
      const auto eq = spec.find('=');
      const auto at = spec.find('@');
      if (eq == std::string::npos || at == std::string::npos || at < eq) {
        std::fprintf(stderr, "rdma_inject: RDMA_INJECT_WR takes imm=VALUE@N or len=BYTES@N, not '%s'\n", wr);
        std::abort();
      }
      hostile_what = spec.substr(0, eq);
      hostile_value = std::strtoull(spec.substr(eq + 1, at - eq - 1).c_str(), nullptr, 0);
      hostile_nth = std::strtoul(spec.c_str() + at + 1, nullptr, 10);
    }
  }

  // A mode's MS: a whole number of milliseconds, 0 (off) when unset.
  static long milliseconds(const char* name) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') return 0;
    char* end = nullptr;
    const long ms = std::strtol(value, &end, 10);
    if (*end != '\0' || ms < 0 || ms > 60000) {
      std::fprintf(stderr, "rdma_inject: %s takes milliseconds (0 to 60000), not '%s'\n", name, value);
      std::abort();
    }
    return ms;
  }
};

shim_state& state() {
  static shim_state* s = new shim_state;  // never destroyed: reached from exit-time code
  return *s;
}

// The process's open descriptors (but the one that lists them).
std::set<int> open_fds() {
  std::set<int> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') fds.insert(std::atoi(e->d_name));
  }
  fds.erase(dirfd(dir));
  closedir(dir);
  return fds;
}

// What was open before main (the streams, whatever the parent passed on):
// not the program's to close.
std::set<int>& fds_at_start() {
  static auto* fds = new std::set<int>;  // never destroyed: read at exit
  return *fds;
}
__attribute__((constructor)) void note_fds_at_start() { fds_at_start() = open_fds(); }

// Where the program called from, or 0 when the caller is not the program.
std::uintptr_t site_of(void* return_address) {
  const auto a = reinterpret_cast<std::uintptr_t>(return_address);
  const exe_range& exe = state().exe;
  if (a < exe.low || a >= exe.high) return 0;
  return a - exe.bias;
}

// Records the call; true when this is the call to fail.
bool reached(const char* name, std::uintptr_t site) {
  if (site == 0) return false;
  shim_state& s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  if (s.seen.emplace(name, site).second && s.log != nullptr) std::fprintf(s.log, "call %s %zx\n", name, site);
  if (s.fail_done || site != s.fail_site || s.fail_name != name) return false;
  s.fail_done = true;
  if (s.log != nullptr) std::fprintf(s.log, "inject %s %zx %d\n", name, site, s.fail_errno);
  return true;
}

int fail_errno() { return state().fail_errno; }

void created(const void* object, const char* name, std::uintptr_t site) {
  if (object == nullptr || site == 0) return;
  shim_state& s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  s.alive[object] = {name, site};
}

void released(const void* object) {
  if (object == nullptr) return;
  shim_state& s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  s.alive.erase(object);
}

// The release of an object the shim may not know (made by librdmacm for us).
void released_cm_qp(const rdma_cm_id* id) {
  if (id == nullptr) return;
  shim_state& s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  // rdma_create_qp is recorded under the id's address plus one.
  s.alive.erase(reinterpret_cast<const char*>(id) + 1);
}

template <typename F>
F real(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    std::fprintf(stderr, "rdma_inject: no %s behind the shim (%s)\n", name, dlerror());
    std::abort();
  }
  return reinterpret_cast<F>(f);
}

#define REAL(name) static const auto real_##name = real<decltype(&name)>(#name)
#define SITE() site_of(__builtin_return_address(0))

// --- the late modes ------------------------------------------------------------

// RDMA_INJECT_LATE_ARM's view of one CQ.
struct cq_race {
  std::deque<ibv_wc> stash;       // taken out before an arm; the program's next polls get these first
  bool after_empty_poll = false;  // the program's last poll found nothing, and it has taken no event since
};

std::mutex& race_lock() {
  static auto* lock = new std::mutex;  // never destroyed, as state()
  return *lock;
}

std::map<const ibv_cq*, cq_race>& races() {
  static auto* by_cq = new std::map<const ibv_cq*, cq_race>;
  return *by_cq;
}

// Sleeps, leaving errno as it was: the program may read it after the call.
void pause_ms(long ms) {
  const int saved = errno;
  timespec left{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
  errno = saved;
}

// An arm straight after an empty poll: MS late, and what completes
// meanwhile goes into the stash, out of the CQ, before the arm is made.
void take_before_arm(ibv_cq* cq) {
  shim_state& s = state();
  {
    std::lock_guard<std::mutex> guard(race_lock());
    cq_race& race = races()[cq];
    if (!race.after_empty_poll) return;
    race.after_empty_poll = false;
  }
  const int saved = errno;
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const long long until_ns = now.tv_sec * 1000000000LL + now.tv_nsec + s.late_arm_ms * 1000000LL;
  std::size_t taken = 0;
  for (;;) {
    ibv_wc batch[16];
    const int n = s.real_ops.poll_cq(cq, 16, batch);
    if (n > 0) {
      std::lock_guard<std::mutex> guard(race_lock());
      races()[cq].stash.insert(races()[cq].stash.end(), batch, batch + n);
      taken += static_cast<std::size_t>(n);
    }
    if (n < 0) break;  // the program's own next poll meets the error
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (n < 16 && now.tv_sec * 1000000000LL + now.tv_nsec >= until_ns) break;
    if (n == 0) usleep(100);
  }
  if (s.log != nullptr) std::fprintf(s.log, "late-arm %zu\n", taken);
  errno = saved;
}

bool is_receive(const ibv_wc& wc) { return wc.status == IBV_WC_SUCCESS && (wc.opcode & IBV_WC_RECV) != 0; }

// RDMA_INJECT_LATE_RECV: whether this is the CQ's first poll that returns a receive.
bool first_receive(const ibv_cq* cq) {
  std::lock_guard<std::mutex> guard(race_lock());
  static auto* late = new std::set<const ibv_cq*>;
  return late->insert(cq).second;
}

// --- the ops table -----------------------------------------------------------

int shim_poll_cq(ibv_cq* cq, int n, ibv_wc* wc) {
  const std::uintptr_t site = SITE();
  if (reached("ibv_poll_cq", site)) return -fail_errno();
  shim_state& s = state();
  if (s.late_arm_ms == 0 && s.late_recv_ms == 0) return s.real_ops.poll_cq(cq, n, wc);
  int got = 0;
  if (s.late_arm_ms > 0) {
    std::lock_guard<std::mutex> guard(race_lock());
    std::deque<ibv_wc>& stash = races()[cq].stash;
    for (; got < n && !stash.empty(); ++got) {
      wc[got] = stash.front();
      stash.pop_front();
    }
  }
  if (got < n) {
    const int rc = s.real_ops.poll_cq(cq, n - got, wc + got);
    if (rc < 0 && got == 0) return rc;
    if (rc > 0) got += rc;
  }
  if (site == 0) return got;
  if (s.late_arm_ms > 0) {
    std::lock_guard<std::mutex> guard(race_lock());
    races()[cq].after_empty_poll = got == 0;
  }
  if (s.late_recv_ms > 0 && std::any_of(wc, wc + got, is_receive) && first_receive(cq)) pause_ms(s.late_recv_ms);
  return got;
}

int shim_req_notify_cq(ibv_cq* cq, int solicited_only) {
  const std::uintptr_t site = SITE();
  if (reached("ibv_req_notify_cq", site)) return fail_errno();
  if (state().late_arm_ms > 0 && site != 0) take_before_arm(cq);
  return state().real_ops.req_notify_cq(cq, solicited_only);
}

// RDMA_INJECT_WR: the WR to turn hostile in this list, or none.
ibv_send_wr* hostile_wr(ibv_send_wr* list) {
  shim_state& s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  if (s.hostile_what.empty()) return nullptr;
  for (ibv_send_wr* wr = list; wr != nullptr; wr = wr->next) {
    if (wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM && wr->opcode != IBV_WR_SEND_WITH_IMM) continue;
    if (wr->num_sge == 0) continue;  // an immediate alone (END, a self-test value): not a record
    if (++s.with_imm == s.hostile_nth) return wr;
  }
  return nullptr;
}

// RDMA_INJECT_STRAGGLER: whether this list is the QP's first of several WRs.
bool first_list_of_several(const ibv_qp* qp, const ibv_send_wr* wr) {
  shim_state& s = state();
  if (s.straggler_ms == 0 || wr == nullptr || wr->next == nullptr) return false;
  std::lock_guard<std::mutex> guard(s.lock);
  static auto* seen = new std::set<const ibv_qp*>;
  return seen->insert(qp).second;
}

int shim_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  const std::uintptr_t site = SITE();
  if (reached("ibv_post_send", site)) {
    *bad = wr;
    return fail_errno();
  }
  ibv_send_wr* hostile = hostile_wr(wr);
  if (hostile == nullptr && site != 0 && first_list_of_several(qp, wr)) {
    // All but the last now, the last one STRAGGLER ms later; the program's
    // list is given back as it was.
    ibv_send_wr* before_last = wr;
    while (before_last->next->next != nullptr) before_last = before_last->next;
    ibv_send_wr* last = before_last->next;
    before_last->next = nullptr;
    const int rc = state().real_ops.post_send(qp, wr, bad);
    before_last->next = last;
    if (rc != 0) return rc;
    if (state().log != nullptr) std::fprintf(state().log, "straggler %ld\n", state().straggler_ms);
    pause_ms(state().straggler_ms);
    return state().real_ops.post_send(qp, last, bad);
  }
  if (hostile == nullptr) return state().real_ops.post_send(qp, wr, bad);
  // Changed for this post only: the provider copies the WR into its queue.
  shim_state& s = state();
  const ibv_send_wr saved = *hostile;
  std::vector<ibv_sge> sges(hostile->sg_list, hostile->sg_list + hostile->num_sge);
  std::uint64_t old_value = 0;
  if (s.hostile_what == "imm") {
    old_value = ntohl(hostile->imm_data);
    hostile->imm_data = htonl(static_cast<std::uint32_t>(s.hostile_value));
  } else if (!sges.empty()) {
    old_value = sges[0].length;
    sges[0].length = static_cast<std::uint32_t>(s.hostile_value);
    hostile->sg_list = sges.data();
  }
  if (s.log != nullptr) {
    std::fprintf(s.log, "hostile %s 0x%llx 0x%llx\n", s.hostile_what.c_str(), static_cast<unsigned long long>(old_value),
                 static_cast<unsigned long long>(s.hostile_value));
  }
  const int rc = s.real_ops.post_send(qp, wr, bad);
  hostile->imm_data = saved.imm_data;
  hostile->sg_list = saved.sg_list;
  return rc;
}

// RDMA_INJECT_LATE_POST_RECV: whether this is the QP's first ibv_post_recv.
bool first_post_recv(const ibv_qp* qp) {
  shim_state& s = state();
  if (s.late_post_recv_ms == 0) return false;
  std::lock_guard<std::mutex> guard(s.lock);
  static auto* seen = new std::set<const ibv_qp*>;
  return seen->insert(qp).second;
}

int shim_post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  const std::uintptr_t site = SITE();
  if (reached("ibv_post_recv", site)) {
    *bad = wr;
    return fail_errno();
  }
  if (site != 0 && first_post_recv(qp)) {
    if (state().log != nullptr) std::fprintf(state().log, "late-post-recv %ld\n", state().late_post_recv_ms);
    pause_ms(state().late_post_recv_ms);
  }
  return state().real_ops.post_recv(qp, wr, bad);
}

int shim_post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  if (reached("ibv_post_srq_recv", SITE())) {
    *bad = wr;
    return fail_errno();
  }
  return state().real_ops.post_srq_recv(srq, wr, bad);
}

ibv_mw* shim_alloc_mw(ibv_pd* pd, ibv_mw_type type) {
  const std::uintptr_t site = SITE();
  if (reached("ibv_alloc_mw", site)) {
    errno = fail_errno();
    return nullptr;
  }
  ibv_mw* mw = state().real_ops.alloc_mw(pd, type);
  created(mw, "ibv_alloc_mw", site);
  return mw;
}

int shim_bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind) {
  if (reached("ibv_bind_mw", SITE())) return fail_errno();
  return state().real_ops.bind_mw(qp, mw, bind);
}

int shim_dealloc_mw(ibv_mw* mw) {
  if (reached("ibv_dealloc_mw", SITE())) return fail_errno();
  const int rc = state().real_ops.dealloc_mw(mw);
  if (rc == 0) released(mw);
  return rc;
}

// RDMA_INJECT_ATTR: a field the program is told, replaced. Unknown names abort.
template <typename Field>
void replace(Field& field, const std::map<std::string, std::uint64_t>& with, const char* name) {
  if (const auto it = with.find(name); it != with.end()) field = static_cast<Field>(it->second);
}

void shrink_device(ibv_device_attr* attr) {
  const auto& with = state().device_attr;
  for (const auto& [name, value] : with) {
    static const char* const known[] = {"max_qp", "max_qp_wr", "max_sge", "max_cqe", "max_mr_size", "max_srq",
                                        "max_srq_wr", "max_mw", "max_qp_rd_atom", "max_qp_init_rd_atom",
                                        "device_cap_flags"};
    if (std::none_of(std::begin(known), std::end(known), [&](const char* k) { return name == k; })) {
      std::fprintf(stderr, "rdma_inject: RDMA_INJECT_ATTR: no device field '%s'\n", name.c_str());
      std::abort();
    }
  }
  replace(attr->max_qp, with, "max_qp");
  replace(attr->max_qp_wr, with, "max_qp_wr");
  replace(attr->max_sge, with, "max_sge");
  replace(attr->max_cqe, with, "max_cqe");
  replace(attr->max_mr_size, with, "max_mr_size");
  replace(attr->max_srq, with, "max_srq");
  replace(attr->max_srq_wr, with, "max_srq_wr");
  replace(attr->max_mw, with, "max_mw");
  replace(attr->max_qp_rd_atom, with, "max_qp_rd_atom");
  replace(attr->max_qp_init_rd_atom, with, "max_qp_init_rd_atom");
  replace(attr->device_cap_flags, with, "device_cap_flags");
}

void shrink_port(ibv_port_attr* attr) {
  const auto& with = state().port_attr;
  for (const auto& [name, value] : with) {
    if (name != "link_layer" && name != "active_mtu") {
      std::fprintf(stderr, "rdma_inject: RDMA_INJECT_ATTR: no port field '%s'\n", name.c_str());
      std::abort();
    }
  }
  replace(attr->link_layer, with, "link_layer");
  replace(attr->active_mtu, with, "active_mtu");
}

// The port query verbs.h inlines into the program (___ibv_query_port calls
// the context's query_port), so never the ibv_query_port symbol.
int shim_query_port(ibv_context* ctx, std::uint8_t port, ibv_port_attr* attr, std::size_t len) {
  const std::uintptr_t site = SITE();
  if (reached("ibv_query_port", site)) return fail_errno();
  const int rc = state().real_query_port(ctx, port, attr, len);
  if (rc == 0 && site != 0) shrink_port(attr);
  return rc;
}

void wrap_ops(ibv_context* ctx) {
  shim_state& s = state();
  {
    std::lock_guard<std::mutex> guard(s.lock);
    if (!s.have_ops) {
      s.real_ops = ctx->ops;
      s.have_ops = true;
    }
  }
  if (verbs_context* vctx = verbs_get_ctx(ctx); vctx != nullptr && vctx->query_port != nullptr) {
    {
      std::lock_guard<std::mutex> guard(s.lock);
      if (s.real_query_port == nullptr) s.real_query_port = vctx->query_port;
    }
    vctx->query_port = shim_query_port;
  }
  ctx->ops.poll_cq = shim_poll_cq;
  ctx->ops.req_notify_cq = shim_req_notify_cq;
  ctx->ops.post_send = shim_post_send;
  ctx->ops.post_recv = shim_post_recv;
  if (ctx->ops.post_srq_recv != nullptr) ctx->ops.post_srq_recv = shim_post_srq_recv;
  if (ctx->ops.alloc_mw != nullptr) ctx->ops.alloc_mw = shim_alloc_mw;
  if (ctx->ops.bind_mw != nullptr) ctx->ops.bind_mw = shim_bind_mw;
  if (ctx->ops.dealloc_mw != nullptr) ctx->ops.dealloc_mw = shim_dealloc_mw;
}

// At exit: what the program created and never released.
__attribute__((destructor)) void report_at_exit() {
  shim_state& s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  if (s.log == nullptr) return;
  for (const auto& [object, origin] : s.alive) std::fprintf(s.log, "leak %s %zx\n", origin.first, origin.second);
  for (const int fd : open_fds()) {
    if (fds_at_start().count(fd) != 0 || s.library_fds.count(fd) != 0 || fd == fileno(s.log)) continue;
    char target[256] = "?";
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    if (n > 0) target[n] = '\0';
    std::fprintf(s.log, "fd %d %s\n", fd, target);
  }
  std::fprintf(s.log, "end\n");
  std::fflush(s.log);
}

}  // namespace

// --- the exported calls --------------------------------------------------------
//
// Three shapes, by how the real call reports failure.

// Creation: NULL (errno set) on failure; the object is remembered until released.
#define CREATE(ret, name, params, args, object_of)   \
  ret name params {                                  \
    REAL(name);                                      \
    const std::uintptr_t site = SITE();              \
    if (reached(#name, site)) {                      \
      errno = fail_errno();                          \
      return nullptr;                                \
    }                                                \
    ret result = real_##name args;                   \
    created(object_of, #name, site);                 \
    return result;                                   \
  }

// An errno as the return value (most of libibverbs).
#define RETURNS_ERRNO(name, params, args)  \
  int name params {                        \
    REAL(name);                            \
    if (reached(#name, SITE())) {          \
      errno = fail_errno();                \
      return fail_errno();                 \
    }                                      \
    return real_##name args;               \
  }

// -1 with errno (librdmacm, and libibverbs' event calls).
#define MINUS_ONE(name, params, args)  \
  int name params {                    \
    REAL(name);                        \
    if (reached(#name, SITE())) {      \
      errno = fail_errno();            \
      return -1;                       \
    }                                  \
    return real_##name args;           \
  }

// A release: the object is forgotten once the real call succeeded.
#define RELEASE(name, type, fail_rc)        \
  int name(type object) {                   \
    REAL(name);                             \
    if (reached(#name, SITE())) {           \
      errno = fail_errno();                 \
      return fail_rc;                       \
    }                                       \
    const int rc = real_##name(object);     \
    if (rc == 0) released(object);          \
    return rc;                              \
  }

extern "C" {

CREATE(ibv_device**, ibv_get_device_list, (int* num), (num), result)

void ibv_free_device_list(ibv_device** list) {
  REAL(ibv_free_device_list);
  released(list);
  real_ibv_free_device_list(list);
}

ibv_context* ibv_open_device(ibv_device* device) {
  REAL(ibv_open_device);
  const std::uintptr_t site = SITE();
  if (reached("ibv_open_device", site)) {
    errno = fail_errno();
    return nullptr;
  }
  ibv_context* ctx = real_ibv_open_device(device);
  if (ctx != nullptr) wrap_ops(ctx);
  if (ctx != nullptr && site == 0) {
    // librdmacm's: it keeps each device it opened until the process ends.
    shim_state& s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    s.library_fds.insert({ctx->cmd_fd, ctx->async_fd});
  }
  created(ctx, "ibv_open_device", site);
  return ctx;
}

RELEASE(ibv_close_device, ibv_context*, fail_errno())
int ibv_query_device(ibv_context* ctx, ibv_device_attr* attr) {
  REAL(ibv_query_device);
  const std::uintptr_t site = SITE();
  if (reached("ibv_query_device", site)) {
    errno = fail_errno();
    return fail_errno();
  }
  const int rc = real_ibv_query_device(ctx, attr);
  if (rc == 0 && site != 0) shrink_device(attr);
  return rc;
}
RETURNS_ERRNO(ibv_query_port, (ibv_context * ctx, std::uint8_t port, _compat_ibv_port_attr* attr), (ctx, port, attr))
RETURNS_ERRNO(_ibv_query_gid_ex,
              (ibv_context * ctx, std::uint32_t port, std::uint32_t index, ibv_gid_entry* entry, std::uint32_t flags,
               std::size_t size),
              (ctx, port, index, entry, flags, size))

CREATE(ibv_pd*, ibv_alloc_pd, (ibv_context * ctx), (ctx), result)
RELEASE(ibv_dealloc_pd, ibv_pd*, fail_errno())
CREATE(ibv_mr*, ibv_reg_mr, (ibv_pd * pd, void* addr, std::size_t length, int access), (pd, addr, length, access),
       result)
CREATE(ibv_mr*, ibv_reg_mr_iova2,
       (ibv_pd * pd, void* addr, std::size_t length, std::uint64_t iova, unsigned access),
       (pd, addr, length, iova, access), result)
RELEASE(ibv_dereg_mr, ibv_mr*, fail_errno())
CREATE(ibv_comp_channel*, ibv_create_comp_channel, (ibv_context * ctx), (ctx), result)
RELEASE(ibv_destroy_comp_channel, ibv_comp_channel*, fail_errno())
CREATE(ibv_cq*, ibv_create_cq, (ibv_context * ctx, int cqe, void* cq_context, ibv_comp_channel* channel, int vector),
       (ctx, cqe, cq_context, channel, vector), result)
int ibv_destroy_cq(ibv_cq* cq) {
  REAL(ibv_destroy_cq);
  if (reached("ibv_destroy_cq", SITE())) {
    errno = fail_errno();
    return fail_errno();
  }
  const int rc = real_ibv_destroy_cq(cq);
  if (rc == 0) {
    released(cq);
    std::lock_guard<std::mutex> guard(race_lock());
    races().erase(cq);  // RDMA_INJECT_LATE_ARM's stash goes with its CQ
  }
  return rc;
}

int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  REAL(ibv_get_cq_event);
  const std::uintptr_t site = SITE();
  if (reached("ibv_get_cq_event", site)) {
    errno = fail_errno();
    return -1;
  }
  const int rc = real_ibv_get_cq_event(channel, cq, cq_context);
  if (rc == 0 && site != 0 && state().late_event_ms > 0) pause_ms(state().late_event_ms);
  if (rc == 0 && state().late_arm_ms > 0) {
    // An event taken: an arm after it is not the one RDMA_INJECT_LATE_ARM makes late.
    std::lock_guard<std::mutex> guard(race_lock());
    races()[*cq].after_empty_poll = false;
  }
  return rc;
}
CREATE(ibv_srq*, ibv_create_srq, (ibv_pd * pd, ibv_srq_init_attr* attr), (pd, attr), result)
RETURNS_ERRNO(ibv_modify_srq, (ibv_srq * srq, ibv_srq_attr* attr, int mask), (srq, attr, mask))
RETURNS_ERRNO(ibv_query_srq, (ibv_srq * srq, ibv_srq_attr* attr), (srq, attr))
RELEASE(ibv_destroy_srq, ibv_srq*, fail_errno())
CREATE(ibv_qp*, ibv_create_qp, (ibv_pd * pd, ibv_qp_init_attr* attr), (pd, attr), result)
RETURNS_ERRNO(ibv_modify_qp, (ibv_qp * qp, ibv_qp_attr* attr, int mask), (qp, attr, mask))
RETURNS_ERRNO(ibv_query_qp, (ibv_qp * qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init), (qp, attr, mask, init))
RELEASE(ibv_destroy_qp, ibv_qp*, fail_errno())
MINUS_ONE(ibv_get_async_event, (ibv_context * ctx, ibv_async_event* event), (ctx, event))

CREATE(rdma_event_channel*, rdma_create_event_channel, (void), (), result)

void rdma_destroy_event_channel(rdma_event_channel* channel) {
  REAL(rdma_destroy_event_channel);
  released(channel);
  real_rdma_destroy_event_channel(channel);
}

int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context, rdma_port_space ps) {
  REAL(rdma_create_id);
  const std::uintptr_t site = SITE();
  if (reached("rdma_create_id", site)) {
    errno = fail_errno();
    return -1;
  }
  const int rc = real_rdma_create_id(channel, id, context, ps);
  if (rc == 0) created(*id, "rdma_create_id", site);
  return rc;
}

RELEASE(rdma_destroy_id, rdma_cm_id*, -1)
MINUS_ONE(rdma_bind_addr, (rdma_cm_id * id, sockaddr* addr), (id, addr))
MINUS_ONE(rdma_resolve_addr, (rdma_cm_id * id, sockaddr* src, sockaddr* dst, int ms), (id, src, dst, ms))
MINUS_ONE(rdma_resolve_route, (rdma_cm_id * id, int ms), (id, ms))
MINUS_ONE(rdma_listen, (rdma_cm_id * id, int backlog), (id, backlog))
// RDMA_INJECT_PRIVATE: the connect's or the accept's private data, lying.
// Returns the param to pass on (a copy pointing at `bytes` when it lies).
static rdma_conn_param* lying_param(rdma_conn_param* param, rdma_conn_param& copy, std::vector<unsigned char>& bytes) {
  shim_state& s = state();
  if (param == nullptr || s.private_bytes.empty() || param->private_data == nullptr) return param;
  const auto* data = static_cast<const unsigned char*>(param->private_data);
  bytes.assign(data, data + param->private_data_len);
  if (bytes.size() < s.private_offset + s.private_bytes.size()) bytes.resize(s.private_offset + s.private_bytes.size());
  std::copy(s.private_bytes.begin(), s.private_bytes.end(), bytes.begin() + static_cast<std::ptrdiff_t>(s.private_offset));
  copy = *param;
  copy.private_data = bytes.data();
  copy.private_data_len = static_cast<std::uint8_t>(bytes.size());
  if (s.log != nullptr) std::fprintf(s.log, "private %zu %zu bytes\n", s.private_offset, s.private_bytes.size());
  return &copy;
}

// rdma_connect and rdma_accept: -1 with errno, and their private data may lie.
#define LYING(name)                                               \
  int name(rdma_cm_id* id, rdma_conn_param* param) {              \
    REAL(name);                                                   \
    if (reached(#name, SITE())) {                                 \
      errno = fail_errno();                                       \
      return -1;                                                  \
    }                                                             \
    rdma_conn_param copy{};                                       \
    std::vector<unsigned char> bytes;                             \
    return real_##name(id, lying_param(param, copy, bytes));      \
  }
LYING(rdma_connect)
LYING(rdma_accept)
MINUS_ONE(rdma_reject, (rdma_cm_id * id, const void* data, std::uint8_t length), (id, data, length))
MINUS_ONE(rdma_disconnect, (rdma_cm_id * id), (id))
MINUS_ONE(rdma_set_option, (rdma_cm_id * id, int level, int name, void* value, std::size_t length),
          (id, level, name, value, length))

int rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* attr) {
  REAL(rdma_create_qp);
  const std::uintptr_t site = SITE();
  if (reached("rdma_create_qp", site)) {
    errno = fail_errno();
    return -1;
  }
  const int rc = real_rdma_create_qp(id, pd, attr);
  if (rc == 0) created(reinterpret_cast<const char*>(id) + 1, "rdma_create_qp", site);
  return rc;
}

void rdma_destroy_qp(rdma_cm_id* id) {
  REAL(rdma_destroy_qp);
  released_cm_qp(id);
  real_rdma_destroy_qp(id);
}

int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
  REAL(rdma_get_cm_event);
  const std::uintptr_t site = SITE();
  if (reached("rdma_get_cm_event", site)) {
    errno = fail_errno();
    return -1;
  }
  const int rc = real_rdma_get_cm_event(channel, event);
  if (rc == 0) {
    created(*event, "rdma_get_cm_event", site);
    // A connection request brings a new id, the program's to destroy.
    if ((*event)->event == RDMA_CM_EVENT_CONNECT_REQUEST) created((*event)->id, "rdma_get_cm_event (CONNECT_REQUEST's id)", site);
  }
  return rc;
}

RELEASE(rdma_ack_cm_event, rdma_cm_event*, -1)

CREATE(ibv_context**, rdma_get_devices, (int* num), (num), result)

void rdma_free_devices(ibv_context** list) {
  REAL(rdma_free_devices);
  released(list);
  real_rdma_free_devices(list);
}

}  // extern "C"
