#!/usr/bin/env bash
# Instructions per round trip of our ping-pongs beside perftest's, counted
# by valgrind's callgrind: under qemu TCG a clock says little, an
# instruction count is the same from one run to the next. Both sides of
# each pair (server and client, over 127.0.0.1 through rxe0) run under
# callgrind, at two iteration counts N1 and N2; what a round trip costs is
# (count at N2 - count at N1) / (N2 - N1), so start-up and tear-down drop
# out. One CSV per chapter under docs/data/icount/, and a table.
#
#   scripts/icount.sh              in one Soft-RoCE guest (or here, with an RDMA port)
#   scripts/icount.sh --only 05    only these pairs (a comma-separated list: 05,08)
#                                    05  write_imm --latency beside ib_send_lat
#                                    08  event_channel --poll beside ib_send_lat,
#                                        event_channel --event beside ib_send_lat -e
#   scripts/icount.sh --sizes 8,64 these message sizes in bytes (default: 8 and
#                                  4096 for 05, 8 for 08)
#   scripts/icount.sh --iters 200,600
#                                  the iteration counts N1,N2 (default 200,600)
#   scripts/icount.sh --data DIR   write the CSVs here (default docs/data/icount):
#                                  05-icount.csv, 08-icount.csv
#   scripts/icount.sh --report-only
#                                  no runs: the table and the CSVs again, from
#                                  the callgrind files of the last run
# The callgrind files stay in build/icount/: KEY-SIZE-N-SIDE.out, one per
# process (callgrind_annotate reads them), the programs' output beside.
#
# Per round trip, for each program and side:
#   total    every instruction of the process (but what is left out, below)
#   polls    calls of the provider's poll_cq; compl.: how many found a
#            completion (the provider copies a CQE into the caller's ibv_wc
#            once per completion: the least executed instruction of its
#            poll_cq, from callgrind's per-instruction counts)
#   waiting  (polls - completions) x one empty look, plus our waits' look
#            at the clock and the TCP socket every 256 looks
#            (rdma::wait_bound, all it calls included). A polling side spins
#            while its peer works: how often it looks depends on timing, so
#            this part, and the total, change from run to run.
#   work     total - waiting: what the round trip itself costs; the same
#            from run to run within a few percent
# One empty look is counted, not estimated: with --dump-instr=yes callgrind
# counts each instruction, and in a run that polled P times an instruction
# executed about P times (P + a few per round trip, or P minus the
# completions) is on the look's path, k of them when it ran about kP times.
# The look's instructions are those of poll_cq, of what it calls on every
# look (the spin lock and unlock) and of its callers called on every look,
# and, in the function that holds the loop, the instructions that ran once
# per look. This needs many more polls than round trips (in these guests
# 5 to 800 per round trip and run; when neither run reaches 10 the empty
# look, the waiting and the work are not given). When this was
# written, a third run that priced one more look by the slope (the same N,
# one side native so that the other waited otherwise) gave the same: 54.06
# and 55.00 for 05's client and server against 54 and 55 counted, 53.99
# and 54.00 for ib_send_lat against 54, 88.10 and 88.03 for 08's --poll
# against 88. The checks every 256 looks are found by name (PERIODIC in the
# report's code): renamed, they would count as work.
# The event modes (--event, ib_send_lat -e) sleep instead of spinning:
# their empty polls (one per wake-up, to drain the CQ) are part of their
# protocol, and all of their total is work.
# Left out of every count as timing or N log N, not round trips (EXCLUDED
# in the CSVs): perftest's clock calibration at start and end
# (get_cpu_mhz: gettimeofday in a loop for a fixed time, /proc/cpuinfo)
# and the sorting of the samples for the report (what calls qsort or
# std::sort, with all it calls).
# perftest and the rxe provider come stripped (no debug symbols here): their
# functions are OBJECT+OFFSET, with the role when the call graph makes it
# certain: the provider's poll_cq (calls only the spin lock and unlock, the
# most called), post_send (rings the doorbell with write()), post_recv and
# post_one_recv; perftest's run_iter_lat_send (the function that polls).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(repo_root)"
build="${BUILD_DIR:-build}"

only="" sizes="" iters="200,600" data=docs/data/icount phase=all
while [[ $# -gt 0 ]]; do
  case "$1" in
    --only) [[ "${2:-}" =~ ^(05|08)(,(05|08))*$ ]] || { echo "icount: --only takes 05, 08 or 05,08" >&2; exit 2; }; only=$2; shift 2 ;;
    --sizes) [[ "${2:-}" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "icount: --sizes needs sizes in bytes, comma-separated" >&2; exit 2; }; sizes=$2; shift 2 ;;
    --iters)
      [[ "${2:-}" =~ ^([1-9][0-9]*),([1-9][0-9]*)$ ]] && ((BASH_REMATCH[1] < BASH_REMATCH[2])) ||
        { echo "icount: --iters needs N1,N2 with N1 < N2 (e.g. 200,600)" >&2; exit 2; }
      iters=$2; shift 2 ;;
    --data) [[ -n "${2:-}" ]] || { echo "icount: --data needs a directory" >&2; exit 2; }; data=$2; shift 2 ;;
    --report-only) phase=report; shift ;;
    --measure-only) phase=measure; shift ;;  # the guest's half of a run (internal)
    -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "icount: unknown option '$1'" >&2; exit 2 ;;
  esac
done
wanted() { [[ -z "$only" || ",$only," == *",$1,"* ]]; }
n1=${iters%,*} n2=${iters#*,}
out=$build/icount  # the callgrind files, the programs' output and the list of runs

if [[ $phase != report ]]; then
  command -v valgrind >/dev/null || { echo "icount: valgrind is missing (scripts/install_deps.sh installs it)" >&2; exit 1; }
  command -v ib_send_lat >/dev/null || { echo "icount: perftest's ib_send_lat is missing (scripts/install_deps.sh)" >&2; exit 1; }
fi
if [[ -z "${RXE_VM:-}" && $phase == all ]]; then
  # Only the programs measured: a stage being edited elsewhere in the tree
  # need not stop this count.
  targets=()
  wanted 05 && targets+=("subprojects/05_write_imm/write_imm")
  wanted 08 && targets+=("subprojects/08_event_channel/event_channel")
  if [[ ! -f "$build/build.ninja" ]]; then
    build_tree "$build" || { echo "icount: the build failed" >&2; exit 1; }
  else
    ninja -C "$build" "${targets[@]}" >/dev/null || ninja -C "$build" "${targets[@]}" >&2 ||
      { echo "icount: the build of ${targets[*]} failed (above)" >&2; exit 1; }
  fi
  mkdir -p "$data" && [[ -w "$data" ]] || { echo "icount: cannot write CSVs into '$data'" >&2; exit 2; }
  if ! have_active_port; then
    # The runs in a guest; the report here, where Python runs far faster
    # than in the emulator.
    started=$(date +%s)
    rm -rf "$out"  # what the guest leaves there is this run's, or nothing
    scripts/rxe_vm.sh --timeout 3000 -- scripts/icount.sh --measure-only --iters "$iters" \
      ${only:+--only "$only"} ${sizes:+--sizes "$sizes"}
    measured=$?
    "$0" --report-only --data "$data"
    reported=$?
    echo "icount: $((($(date +%s) - started) / 60)) min $((($(date +%s) - started) % 60)) s in all, the guest's boot included" >&2
    if [[ $measured -ne 0 ]]; then
      echo "icount: runs in the guest failed (above; exit $measured$([[ $measured == 124 ]] && echo ": the guest's time ran out"))" >&2
      exit 1
    fi
    exit "$reported"
  fi
fi

if [[ $phase != report ]]; then
  # The RoCE v2 IPv4 GID's index (perftest's -x), read from sysfs.
  dev=$(ls /sys/class/infiniband | head -n1)
  gid_index=$(roce_v2_ipv4_gid_index "$dev") || { echo "icount: $dev has no RoCE v2 IPv4 GID" >&2; exit 1; }
  rm -rf "$out" && mkdir -p "$out" || { echo "icount: cannot make $out" >&2; exit 1; }
  if [[ -n "${RXE_VM:-}" ]]; then
    platform="Soft-RoCE (rdma_rxe) in a qemu TCG guest, loopback through $dev (127.0.0.1)"
  else
    platform="$dev on this host, loopback (127.0.0.1)"
  fi
  {
    echo "date=$(date -u +%Y-%m-%d)"
    echo "kernel=Linux $(uname -r)"
    echo "device=$dev, GID index $gid_index, $platform"
    echo "valgrind=$(valgrind --version)"
    echo "perftest=$(ib_send_lat --version 2>/dev/null | awk '/Version/ { print $2; exit }')"
    echo "iters=$n1,$n2"
  } >"$out/env"

  # Ten times what the slowest side takes here (about 40 s with valgrind in
  # TCG): a run that hangs is stopped, and said. The programs' own waits
  # are generous, valgrind in TCG being some 50 times slower.
  limit=600 port=18515
  vg=(valgrind --tool=callgrind --dump-instr=yes)
  listening() { ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; }

  # run_pair NAME "SERVER..." "CLIENT...": both under callgrind, into
  # $out/NAME-server.* and $out/NAME-client.*. The client starts once the
  # server listens (our clients retry connecting for a few seconds only,
  # and each try would count); perftest's client, which does not retry, is
  # run again while it finds nobody.
  run_pair() {
    local name=$1 server=$2 client=$3 s_status c_status=1 spid t=0
    local sp=$out/$name-server cp=$out/$name-client
    if listening; then echo "icount: port $port is taken before $name: a server of an earlier run is still up" >&2; return 1; fi
    timeout "$limit" "${vg[@]}" --callgrind-out-file="$sp.out" --log-file="$sp.log" $server >"$sp.txt" 2>&1 &
    spid=$!
    until listening; do
      if ! kill -0 "$spid" 2>/dev/null || ((t >= limit * 5)); then
        kill "$spid" 2>/dev/null; wait "$spid"
        echo "icount: $name: the server ($server) never listened on port $port; its output (valgrind's: $sp.log):" >&2
        cat "$sp.txt" >&2
        return 1
      fi
      sleep 0.2; t=$((t + 1))
    done
    for _ in $(seq 10); do
      timeout "$limit" "${vg[@]}" --callgrind-out-file="$cp.out" --log-file="$cp.log" $client >"$cp.txt" 2>&1; c_status=$?
      [[ $c_status -eq 0 ]] && break
      grep -qiE 'refused|Couldn.t connect|Unable to open file descriptor' "$cp.txt" || break
      sleep 1
    done
    # A server whose client failed would wait for another: stop it.
    [[ $c_status -eq 0 ]] || kill "$spid" 2>/dev/null
    wait "$spid"; s_status=$?
    if [[ $c_status -ne 0 ]]; then
      echo "icount: $name: the client ($client) failed (exit $c_status$([[ $c_status == 124 ]] && echo ": no end within $limit s")); its output (valgrind's: $cp.log):" >&2
      cat "$cp.txt" >&2
      return 1
    fi
    if [[ $s_status -ne 0 ]]; then
      echo "icount: $name: the server ($server) failed (exit $s_status$([[ $s_status == 124 ]] && echo ": no end within $limit s")); its output (valgrind's: $sp.log):" >&2
      cat "$sp.txt" >&2
      return 1
    fi
  }

  # The programs, by key: "SERVER|CLIENT" for SIZE and ITERS.
  commands() {  # commands KEY SIZE ITERS
    local w=$build/subprojects/05_write_imm/write_imm e=$build/subprojects/08_event_channel/event_channel
    local p="ib_send_lat -d $dev -x $gid_index -F" waits="--wait-ms 120000"
    case "$1" in
      write_imm) echo "$w --size $2 $waits --accept-ms 600000|$w -s 127.0.0.1 --latency --iters $3 --size $2 $waits" ;;
      ec_poll) echo "$e --poll $waits --accept-ms 600000|$e -s 127.0.0.1 --poll --size $2 --iters $3 $waits" ;;
      ec_event) echo "$e --event $waits --accept-ms 600000|$e -s 127.0.0.1 --event --size $2 --iters $3 $waits" ;;
      send_lat) echo "$p -s $2 -n $3|$p -s $2 -n $3 127.0.0.1" ;;
      send_lat_e) echo "$p -e -s $2 -n $3|$p -e -s $2 -n $3 127.0.0.1" ;;
    esac
  }
  # What the table and the CSVs call them, and whether they spin.
  declare -A tool=([write_imm]="write_imm --latency" [ec_poll]="event_channel --poll" [ec_event]="event_channel --event"
                   [send_lat]="ib_send_lat" [send_lat_e]="ib_send_lat -e")
  declare -A spins=([write_imm]=1 [ec_poll]=1 [ec_event]=0 [send_lat]=1 [send_lat_e]=0)

  # The runs: each program and size at N1 and N2; ib_send_lat at a size
  # both chapters compare with runs once.
  runs=() seen=" "
  add() {  # add FIGURE KEY SIZE
    local r
    for r in "$2:$3:$n1" "$2:$3:$n2"; do
      [[ "$seen" == *" $r "* ]] || { runs+=("$r"); seen+="$r "; }
    done
    echo "$1|$2|${tool[$2]}|$3|${spins[$2]}" >>"$out/cases"
  }
  if wanted 05; then
    for s in $(tr , '\n' <<<"${sizes:-8,4096}" | awk '!seen[$0]++'); do add 05 write_imm "$s"; add 05 send_lat "$s"; done
  fi
  if wanted 08; then
    for s in $(tr , '\n' <<<"${sizes:-8}" | awk '!seen[$0]++'); do
      add 08 ec_poll "$s"; add 08 send_lat "$s"; add 08 ec_event "$s"; add 08 send_lat_e "$s"
    done
  fi

  started=$(date +%s) status=0 done_runs=0
  echo "icount: $dev GID [$gid_index], ${#runs[@]} pairs under callgrind, N = $n1 and $n2; files in $out" >&2
  for r in "${runs[@]}"; do
    IFS=: read -r key s n <<<"$r"
    IFS='|' read -r server client <<<"$(commands "$key" "$s" "$n")"
    left=""
    if ((done_runs > 0)); then
      left=$(( (($(date +%s) - started) * (${#runs[@]} - done_runs)) / done_runs ))
      left=", about $((left / 60)) min $((left % 60)) s left"
    fi
    printf 'icount: [%d/%d] %s, %s B, %s round trips%s\n' "$((done_runs + 1))" "${#runs[@]}" "${tool[$key]}" "$s" "$n" "$left" >&2
    if run_pair "$key-$s-$n" "$server" "$client"; then
      echo "$key|$s|$n|$key-$s-$n" >>"$out/runs"
    else
      status=1
    fi
    done_runs=$((done_runs + 1))
  done
  echo "icount: the runs took $((($(date +%s) - started) / 60)) min $((($(date +%s) - started) % 60)) s" >&2
  [[ $phase == measure ]] && exit "$status"
fi

[[ -s "$out/runs" && -s "$out/cases" && -s "$out/env" ]] || { echo "icount: no runs in $out to report on (run scripts/icount.sh first)" >&2; exit 1; }
mkdir -p "$data" && [[ -w "$data" ]] || { echo "icount: cannot write CSVs into '$data'" >&2; exit 2; }
python3 - "$out" "$data" <<'PY' || exit 1
import collections, csv, os, re, sys

out, data = sys.argv[1], sys.argv[2]
env = dict(line.rstrip("\n").split("=", 1) for line in open(os.path.join(out, "env")))
n1, n2 = (int(x) for x in env["iters"].split(","))
dn = n2 - n1


# --- callgrind's file format (the same numbers callgrind_annotate shows):
# per function, (object, name), its own instructions, its calls (count and
# inclusive cost, per callee), its callers, and the count of each of its
# instructions (--dump-instr=yes).
class Fn:
    __slots__ = ("self", "calls", "callers", "callees", "edge", "instr")

    def __init__(self):
        self.self = 0
        self.calls = 0
        self.callers = collections.Counter()
        self.callees = collections.Counter()
        self.edge = collections.Counter()  # inclusive cost of the calls to each callee
        self.instr = collections.Counter()


def load(path):
    fns = collections.defaultdict(Fn)
    names = {"ob": {}, "fl": {}, "fn": {}}

    def name(kind, text):  # "(id) name" defines an id, "(id)" uses it
        m = re.match(r"\((\d+)\)(?: (.*))?$", text.strip())
        if not m:
            return text.strip()
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind][m.group(1)]

    def pos(text, prev):  # absolute, +N/-N from the previous line's, or * the same
        if text == "*":
            return prev
        if text[0] == "+":
            return prev + int(text[1:], 0)
        if text[0] == "-":
            return prev - int(text[1:], 0)
        return int(text, 0)

    npos, ob, fn, cob, cfn, pending, addr, line, total = 1, "", "", None, "", 0, 0, 0, None
    with open(path) as f:
        for raw in f:
            if not raw.strip() or raw[0] == "#":
                continue
            c = raw[0]
            if c.isdigit() or c in "+-*":
                parts = raw.split()
                addr = pos(parts[0], addr)
                if npos > 1:
                    line = pos(parts[1], line)
                ir = int(parts[npos]) if len(parts) > npos else 0
                here = fns[(ob, fn)]
                if pending:  # the line after calls=: the call's inclusive cost
                    callee = (cob if cob is not None else ob, cfn)
                    here.callees[callee] += pending
                    here.edge[callee] += ir
                    fns[callee].calls += pending
                    fns[callee].callers[(ob, fn)] += pending
                    pending, cob = 0, None
                else:
                    here.self += ir
                    here.instr[addr] += ir
                continue
            if raw.startswith("positions:"):
                npos = len(raw.split()) - 1
                continue
            if raw.startswith("totals:") or raw.startswith("summary:"):
                total = int(raw.split()[1])
                continue
            key, eq, value = raw.rstrip("\n").partition("=")
            if not eq:
                continue
            if key == "ob":
                ob = name("ob", value)
            elif key in ("fl", "fi", "fe", "cfi", "cfl", "jfi"):
                name("fl", value)
            elif key == "fn":
                fn = name("fn", value)
            elif key == "cob":
                cob = name("ob", value)
            elif key in ("cfn", "jfn"):
                v = name("fn", value)
                if key == "cfn":
                    cfn = v
            elif key == "calls":
                pending = int(value.split()[0])
    own = sum(f.self for f in fns.values())
    if total is not None and total != own:
        sys.exit(f"icount: {path}: its functions add up to {own} instructions, the file says {total}")
    return fns


# --- names. Callgrind names a function of a stripped object by its offset;
# roles() reads what it is from the call graph.
SPIN = ("pthread_spin_lock", "pthread_spin_init", "pthread_spin_unlock")
CLOCK = ("gettimeofday", "__gettimeofday_syscall", "clock_gettime", "__clock_gettime")
# Our waits look at the clock (every 16th time at the TCP socket too) once
# every 256 looks within one wait: what that costs depends on how the looks
# fall into waits, so it is counted as it is, all it calls included.
PERIODIC = re.compile(r"^rdma::wait_bound::")
MAIN_OBJECTS = ("write_imm", "event_channel", "ib_send_lat")


def sorts(fn):  # qsort, or std::sort's pieces (their names start with the return type)
    return re.search(r"(^|\s)(qsort|std::__introsort_loop<|std::__final_insertion_sort<|std::__sort<)", fn) is not None


def base(fn):
    return re.sub(r"@.*$", "", fn)


def obj(ob):
    o = re.sub(r"-rdmav\d+\.so$", "", os.path.basename(ob))
    return re.sub(r"\.so[.\d]*$", "", o)


def stripped(key):
    return re.fullmatch(r"0x[0-9a-f]+", key[1]) is not None


def roles(fns):
    """(object, name) -> role, for the stripped functions whose role is certain."""
    role = {}
    rxe = [k for k in fns if stripped(k) and obj(k[0]) == "librxe"]

    def calls(k, pred):
        return [c for c in fns[k].callees if pred(c)]

    # poll_cq takes the CQ's spin lock, looks, copies, unlocks: it calls
    # nothing else, and nothing in the provider is called as often.
    spin_only = [k for k in rxe if fns[k].callees and all(base(c[1]).startswith(SPIN) for c in fns[k].callees)]
    if spin_only:
        role[max(spin_only, key=lambda k: fns[k].calls)] = "poll_cq"
    for k in rxe:
        if k in role:
            continue
        if calls(k, lambda c: base(c[1]) == "write"):
            role[k] = "post_send"  # the doorbell: a write() to the uverbs fd
        elif calls(k, lambda c: base(c[1]).startswith(SPIN)) and calls(k, lambda c: c in rxe):
            role[k] = "post_recv"
            for c in calls(k, lambda c: c in rxe):
                role[c] = "post_one_recv"
    for k in fns:
        if stripped(k) and k not in role and obj(k[0]) != "ib_send_lat":
            # Called (nearly always) from one named function: named after it
            # (libibverbs+0xca40 from ibv_cmd_req_notify_cq).
            named = [(n, c[1]) for c, n in fns[k].callers.items() if not stripped(c)]
            if named and max(named)[0] >= 0.9 * fns[k].calls:
                role[k] = "from " + base(max(named)[1])
    poll = [k for k, r in role.items() if r == "poll_cq"]
    for k in fns:
        if not stripped(k) or obj(k[0]) != "ib_send_lat":
            continue
        if calls(k, lambda c: c in poll):
            role[k] = "run_iter_lat_send"  # perftest's latency loop, the one that polls
        elif calls(k, lambda c: base(c[1]) in CLOCK):
            role[k] = "sample_get_cpu_mhz"  # gettimeofday in a loop for a fixed time
        elif calls(k, lambda c: base(c[1]) == "qsort"):
            role[k] = "print_report_lat"
        elif calls(k, lambda c: role.get(c) == "post_recv"):
            role[k] = "ctx_set_recv_wqes"  # the Recvs posted before the loop
    for k in fns:
        if stripped(k) and obj(k[0]) == "ib_send_lat" and calls(k, lambda c: role.get(c) == "sample_get_cpu_mhz"):
            role[k] = "get_cpu_mhz"  # the calibration above, and /proc/cpuinfo's MHz
    return role


def label(key, role):
    ob, fn = key
    if stripped(key):
        text = f"{obj(ob)}+0x{int(fn, 16):x}"
        return f"{text} {role[key]}" if key in role else text
    fn = base(fn)
    if fn == "pthread_spin_init":
        fn = "pthread_spin_unlock"  # one body in glibc, callgrind shows the other name
    # Argument lists and template arguments say little here and make names
    # long: f(...) becomes f(), std::vector<...> std::vector<>.
    fn = fn.replace("(anonymous namespace)::", "").replace("[abi:cxx11]", "")
    fn = re.sub(r" \[clone [^]]*\]", "", fn)
    short, depth = "", 0
    for ch in fn:
        if ch in "(<":
            depth += 1
            if depth == 1:
                short += ch
            continue
        if ch in ")>" and depth > 0:
            depth -= 1
            if depth == 0:
                short += ch
            continue
        if depth == 0:
            short += ch
    short = re.sub(r"^[\w:<>*&]+ (?=[\w:~]+[(<])", "", short)  # a template's return type
    if obj(ob) not in MAIN_OBJECTS:
        short += f" [{obj(ob)}]"
    return short


# --- one process: its counts, what is left out, its polls and its look.
class Run:
    def __init__(self, path, iters):
        self.fns = fns = load(path)
        self.role = roles(fns)
        self.iters = iters
        # Callgrind folds deep recursion into NAME'2 calling itself: those
        # calls are inside its cost already.
        self.incl = {k: f.self + sum(e for c, e in f.edge.items() if c != k) for k, f in fns.items()}
        excluded = {k for k, f in fns.items()
                    if self.role.get(k) in ("get_cpu_mhz", "sample_get_cpu_mhz") or any(sorts(base(c[1])) for c in f.callees)}
        out, out_calls = self.shares(excluded), self.shares(excluded, by_calls=True)
        self.self = {k: f.self * (1 - out[k]) for k, f in fns.items()}
        self.calls = {k: f.calls * (1 - out_calls[k]) for k, f in fns.items()}
        self.excluded = sum(f.self for f in fns.values()) - sum(self.self.values())
        self.total = sum(self.self.values())
        # Our waits' look at the clock and the socket, all it calls included.
        periodic = {k for k in fns if PERIODIC.search(k[1])}
        checks, checks_calls = self.shares(periodic), self.shares(periodic, by_calls=True)
        self.periodic_self = {k: self.self[k] * checks[k] for k in fns if checks[k]}
        self.periodic_calls = {k: self.calls[k] * checks_calls[k] for k in fns if checks_calls[k]}
        self.periodic = sum(self.periodic_self.values())
        polls = [k for k, r in self.role.items() if r == "poll_cq"]
        self.poll_key = polls[0] if polls else None
        pf = fns[self.poll_key] if self.poll_key else None
        self.polls = pf.calls if pf else 0
        # The copy of a CQE into the caller's ibv_wc runs once per
        # completion: the least executed instruction of poll_cq.
        self.completions = min((n for n in pf.instr.values() if n > 0), default=0) if pf else 0
        self.look, self.provider_look, self.look_parts = self.count_look()

    def shares(self, roots, by_calls=False):
        """For each function, the part of its own cost (or of its calls)
        spent under `roots`: 1 for a root, and for a callee the share of its
        inclusive cost (of its calls) that its calls from there make."""
        fns = self.fns
        whole = {k: f.calls - f.callees.get(k, 0) for k, f in fns.items()} if by_calls else self.incl
        share = collections.defaultdict(float)

        def take(k, part, depth):
            share[k] += part
            for c, e in (fns[k].callees if by_calls else fns[k].edge).items():
                if c not in roots and c != k and whole[c] > 0 and part * e > 1e-3 * whole[c] and depth < 40:
                    take(c, part * e / whole[c], depth + 1)

        for k in roots:
            take(k, 1.0, 0)
        return collections.defaultdict(float, {k: min(1.0, v) for k, v in share.items()})

    def count_look(self):
        """Instructions of one empty look, the provider's part of them, and
        each function's part: {key: (instructions, calls)}."""
        fns, p = self.fns, self.polls
        if not p or p <= self.completions:
            return None, None, {}
        # The functions run on (nearly) every look: poll_cq, what it calls,
        # what calls it, as far as the calls go on every look; the first
        # caller that runs less often holds the loop.
        every, todo, loops = {self.poll_key}, [self.poll_key], {}
        while todo:
            k = todo.pop()
            for c, n in fns[k].callees.items():
                if n >= p / 2 and fns[c].calls >= p / 2 and c not in every:
                    every.add(c)
                    todo.append(c)
            for c, n in fns[k].callers.items():
                if n < p / 2:
                    continue
                if fns[c].calls >= p / 2:
                    if c not in every:
                        every.add(c)
                        todo.append(c)
                else:
                    loops[c] = max(loops.get(c, 0), n)
        # An instruction run about k times per look is k of the look's (a
        # call instruction counts twice in callgrind); one run once per
        # completion only, or per round trip, is none.
        parts = {k: (sum(round(n / p) for n in fns[k].instr.values()), round(fns[k].calls / p)) for k in every}
        for k, per in loops.items():
            parts[k] = (sum(round(n / per) for n in fns[k].instr.values() if n >= per / 2), 0)
        provider = sum(parts[k][0] for k in every if k == self.poll_key or base(k[1]).startswith(SPIN))
        return sum(v[0] for v in parts.values()), provider, parts


runs = {}
for line in open(os.path.join(out, "runs")):
    key, size, n, name = line.strip().split("|")
    runs[(key, int(size), int(n))] = name
cache = {}


def run(key, size, n, side):
    name = runs.get((key, size, n))
    if name is None:
        return None
    path = os.path.join(out, f"{name}-{side}.out")
    if path not in cache:
        cache[path] = Run(path, n) if os.path.exists(path) else None
    return cache[path]


# --- one program and side, per round trip.
MIN_POLLS_PER_RT = 10


def measure(key, size, side, spins):
    a, b = run(key, size, n1, side), run(key, size, n2, side)
    if a is None or b is None:
        return None
    r = {"total": (b.total - a.total) / dn, "polls": (b.polls - a.polls) / dn,
         "completions": (b.completions - a.completions) / dn, "excluded": (b.excluded - a.excluded) / dn,
         "periodic": (b.periodic - a.periodic) / dn, "empty_look": None, "note": ""}
    r["empty"] = r["polls"] - r["completions"]
    # The look is counted in the run of this program and side that polled
    # the most per round trip, at any size (the same loop); the others
    # that polled enough should count the same.
    same = [x for x in (run(k, s, n, side) for (k, s, n) in runs if k == key) if x is not None]
    best = max(same, key=lambda x: x.polls / x.iters)
    if spins:
        if best.look is None or best.polls / best.iters < MIN_POLLS_PER_RT:
            r["note"] = f"no empty look: {best.polls / best.iters:.1f} polls per round trip are too few to tell it"
        else:
            r["empty_look"] = best.look
            r["note"] = f"an empty look: {best.look} instructions, {best.provider_look} of them in the provider"
            if abs(r["periodic"]) >= 0.5:
                r["note"] += f"; the clock and socket every 256 looks: {r['periodic']:.0f}"
            differ = sorted({x.look for x in same if x.look is not None and x.polls / x.iters >= MIN_POLLS_PER_RT})
            if len(differ) > 1:
                r["note"] += f" (other runs counted {', '.join(map(str, differ))}: check)"
                print(f"icount: {key} {side}: its runs count {', '.join(map(str, differ))} instructions per look",
                      file=sys.stderr)
    r["waiting"] = r["empty_look"] * r["empty"] + r["periodic"] if r["empty_look"] is not None else None
    r["work"] = r["total"] - r["waiting"] if r["waiting"] is not None else None if spins else r["total"]
    # Each function's part of the work: its instructions and calls per
    # round trip, less what it did in empty looks and in the checks.
    waits = r["waiting"] is not None
    role = dict(a.role)
    role.update(b.role)
    rows = {}
    for k in set(a.fns) | set(b.fns):
        ins = (b.self.get(k, 0) - a.self.get(k, 0)) / dn
        calls = (b.calls.get(k, 0) - a.calls.get(k, 0)) / dn
        if waits:
            look_ins, look_calls = best.look_parts.get(k, (0, 0))
            ins -= look_ins * r["empty"] + (b.periodic_self.get(k, 0) - a.periodic_self.get(k, 0)) / dn
            calls -= look_calls * r["empty"] + (b.periodic_calls.get(k, 0) - a.periodic_calls.get(k, 0)) / dn
        lab = label(k, role)
        s0, c0 = rows.get(lab, (0, 0))
        rows[lab] = (s0 + ins, c0 + calls)
    r["rows"] = rows
    return r


cases = []
for line in open(os.path.join(out, "cases")):
    fig, key, tool, size, spins = line.strip().split("|")
    cases.append((fig, key, tool, int(size), spins == "1"))

TOP = 12


def fmt(v, digits=0):
    return "-" if v is None else f"{v:,.{digits}f}"


status = 0
csvs = []
for fig in sorted({c[0] for c in cases}):
    figcases = [c for c in cases if c[0] == fig]
    results = {}
    for _, key, tool, size, spins in figcases:
        for side in ("client", "server"):
            results[(key, size, side)] = r = measure(key, size, side, spins)
            if r is None:
                print(f"icount: {fig}: no result for {tool}, {size} B, {side} (a run failed, above)", file=sys.stderr)
                status = 1
    print(f"\n=== {fig}: instructions per round trip, callgrind, N = {n1} and {n2}, {env['kernel']} ===")
    print("total, waiting and polls change from run to run with how long each side waited; work = total - waiting\n"
          "should not. compl.: the polls that found a completion. empty look: instructions of one.")
    print(f"{'program':24} {'side':6} {'size':>5} {'total':>9} {'work':>7} {'waiting':>9} {'polls':>7} {'compl.':>6} {'empty look':>10}")
    for _, key, tool, size, spins in figcases:
        for side in ("client", "server"):
            r = results[(key, size, side)]
            if r is not None:
                print(f"{tool:24} {side:6} {size:>5} {fmt(r['total']):>9} {fmt(r['work']):>7} {fmt(r['waiting']):>9} "
                      f"{fmt(r['polls'], 1):>7} {fmt(r['completions'], 2):>6} {fmt(r['empty_look']):>10}")
    # Ours beside perftest's: the work.
    for size, spins in dict.fromkeys((c[3], c[4]) for c in figcases):
        members = [(c[1], c[2]) for c in figcases if (c[3], c[4]) == (size, spins)]
        for ok, ot in [m for m in members if not m[0].startswith("send_lat")]:
            for tk, tt in [m for m in members if m[0].startswith("send_lat")]:
                parts = []
                for side in ("client", "server"):
                    a, b = results.get((ok, size, side)), results.get((tk, size, side))
                    if a and b and a["work"] is not None and b["work"]:
                        parts.append(f"{side} {a['work']:,.0f} / {b['work']:,.0f} = {a['work'] / b['work']:.2f}")
                if parts:
                    print(f"work, {ot} / {tt}, {size} B: " + ", ".join(parts))
    rows_csv = []
    for _, key, tool, size, spins in figcases:
        for side in ("client", "server"):
            r = results[(key, size, side)]
            if r is None:
                continue
            top = sorted(r["rows"].items(), key=lambda kv: (-abs(round(kv[1][0], 1)), kv[0]))
            shown, rest = top[:TOP], top[TOP:]
            rest_s = sum(v[0] for _, v in rest)
            if r["waiting"] is not None:
                head = f"work {fmt(r['work'])} = total {fmt(r['total'])} - waiting {fmt(r['waiting'])}; {r['note']}"
            elif spins:
                head = f"total {fmt(r['total'])}; {r['note']}"
            else:
                head = f"work = total {fmt(r['total'])}"
            print(f"\n-- {tool}, {side}, {size} B: {head}")
            what_rows = "its part of the work" if r["waiting"] is not None or not spins else "all it did"
            print(f"   {'calls/rt':>9} {'instr/rt':>9} {'instr/call':>10}  function: {what_rows}, own instructions")
            for lab, (ins, c) in shown:
                per = f"{ins / c:,.1f}" if abs(c) >= 0.005 else "-"
                print(f"   {c:>9,.2f} {ins:>9,.0f} {per:>10}  {lab}")
            print(f"   {'':>9} {rest_s:>9,.0f} {'':>10}  (everything else: {len(rest)} functions)")
            row = [tool, side, size]
            rows_csv.append(row + ["TOTAL", "", f"{r['total']:.1f}", ""])
            rows_csv.append(row + ["WORK", "", "" if r["work"] is None else f"{r['work']:.1f}", ""])
            if r["waiting"] is not None:
                rows_csv.append(row + ["WAITING", f"{r['empty']:.2f}", f"{r['waiting']:.1f}", f"{r['empty_look']}"])
                if abs(r["periodic"]) >= 0.05:
                    rows_csv.append(row + ["CHECKS", "", f"{r['periodic']:.1f}", ""])
            rows_csv.append(row + ["POLLS", f"{r['polls']:.2f}", "", ""])
            rows_csv.append(row + ["COMPLETIONS", f"{r['completions']:.3f}", "", ""])
            rows_csv.append(row + ["EXCLUDED", "", f"{r['excluded']:.1f}", ""])
            for lab, (ins, c) in shown:
                per = f"{ins / c:.1f}" if abs(c) >= 0.005 else ""
                rows_csv.append(row + [lab, f"{c:.3f}", f"{ins:.1f}", per])
            rows_csv.append(row + [f"(everything else: {len(rest)} functions)", "", f"{rest_s:.1f}", ""])
    what = {"05": "05 write_imm --latency (Writes with Immediate, the answer's Recv polled) beside ib_send_lat (Sends)",
            "08": "08 event_channel --poll beside ib_send_lat, --event beside ib_send_lat -e"}[fig]
    path = os.path.join(data, f"{fig}-icount.csv")
    with open(path + ".tmp", "w", newline="") as f:
        f.write(f"# figure: {fig}-icount\n")
        f.write(f"# what: {what}, both sides of each pair under valgrind --tool=callgrind: instructions per round trip, "
                f"(count at N2 - count at N1) / (N2 - N1)\n")
        f.write("# rows: TOTAL; WORK = TOTAL - WAITING; WAITING: the polls that found nothing (calls_per_rt) times one "
                "empty look (instr_per_call, counted from callgrind's per-instruction counts), plus CHECKS (our waits' "
                "look at the clock and the TCP socket every 256 looks); POLLS and COMPLETIONS: the provider's poll_cq "
                "calls and the completions they found; EXCLUDED: left out of every row (perftest's clock calibration, "
                f"the sorting of the samples for the report); then WORK by function, the top {TOP} by their own "
                "instructions (what each did in empty looks and checks taken out), and everything else "
                "(scripts/icount.sh -h)\n")
        f.write("# the event modes sleep instead of spinning: no WAITING row, all is WORK; TOTAL and WAITING change "
                "from run to run with the timing, WORK does not\n")
        f.write("# stripped objects (perftest, the rxe provider, libibverbs' internals): OBJECT+OFFSET, with the role "
                "read from the call graph where it is certain\n")
        f.write(f"# date: {env['date']}\n# kernel: {env['kernel']}\n# device: {env['device']}\n")
        f.write(f"# valgrind: {env['valgrind']}\n# perftest: {env['perftest'] or 'unknown'}\n")
        f.write(f"# iterations: {n1} and {n2} round trips, one run of each\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["tool", "side", "size_bytes", "function", "calls_per_rt", "instr_per_rt", "instr_per_call"])
        w.writerows(rows_csv)
    csvs.append(path)
# A CSV with rows missing would replace a whole one: none is written then.
for path in csvs:
    if status == 0:
        os.replace(path + ".tmp", path)
        print(f"icount: wrote {path}", file=sys.stderr)
    else:
        os.remove(path + ".tmp")
if status != 0 and csvs:
    print(f"icount: no CSV written, a run failed (above): {', '.join(csvs)} left as they were", file=sys.stderr)
sys.exit(status)
PY
