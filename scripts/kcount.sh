#!/usr/bin/env bash
# What the kernel does for one round trip (05, 08), one write (04) or one
# record (06, 09) of our programs beside their perftest twins, counted in
# the guest: not timed. Each pair (server and client through rxe0) runs at
# two iteration counts N1 and N2 and every count is taken as
# (count at N2 - count at N1) / (N2 - N1), so start-up and tear-down drop
# out, as scripts/icount.sh does for user space. One CSV per guest kernel
# under docs/data/kcount/, and a table.
#
#   scripts/kcount.sh               in a guest of each kernel installed (Debian 12: 6.1, 6.12)
#   scripts/kcount.sh --kernel K    only this guest kernel (uname -r, e.g. 6.12.118+deb12-amd64)
#   scripts/kcount.sh --only 05     only these pairs (a comma-separated list of 04, 05, 06, 08, 09):
#                                     04  rdma_write --iters beside ib_write_bw (-t 128 -Q 100), per write
#                                     05  write_imm --latency beside ib_send_lat, per round trip
#                                     06  srq_credits, one client (window 64), beside
#                                         ib_send_bw --use-srq, per record
#                                     08  event_channel --poll beside ib_send_lat and
#                                         --event beside ib_send_lat -e, per round trip
#                                     09  mempool, one client (window 64), beside
#                                         ib_send_bw -e --use-srq, per record
#   scripts/kcount.sh --iters 1000,3000
#                                   N1,N2 round trips (default 1000,3000); 04, 06 and 09
#                                   write ten times as many
#   scripts/kcount.sh --data DIR    the CSVs here (default docs/data/kcount): linux-6.1.csv, linux-6.12.csv
#   scripts/kcount.sh --report-only no runs: the table and the CSVs from the files of the last run
# The raw counts stay in build/kcount/RELEASE/: perf stat's files, one per
# run and scope, the programs' output beside.
#
# The counts (perf stat, in the guest, root):
#   the whole guest (perf stat -a), so the kernel's own threads count too:
#     context switches, CPU migrations, wake-ups (sched:sched_wakeup),
#     work items run (workqueue:workqueue_execute_start), softirqs run
#     (irq:softirq_entry), and kprobes on rdma_rxe's functions: how often
#     the kernel was asked to send (rxe_post_send: the doorbell), how often
#     each of rxe's tasks ran (6.1: rxe_do_task; 6.12: do_task) and which
#     (the requester, completer and responder of 6.1; the sender and
#     receiver of 6.12), the packets sent and received (rxe_xmit_packet,
#     rxe_rcv), the CQEs written (rxe_cq_post), the CQs armed
#     (rxe_req_notify_cq)
#   each program (both sides summed; perf stat on the process): its system
#     calls, all of them and by name, its context switches and migrations,
#     and its CPU time (task-clock, in ms per 1000 units: the one count
#     here that is time, not events)
# Which of these move with timing rather than with the protocol: the
# context switches and wake-ups, and a spinning program's clock reads and
# socket looks (it makes them every 256 and 4096 looks while it waits, and
# how long it waits is timing). perftest's clock calibration at start
# (get_cpu_mhz: gettimeofday in a loop for a fixed time) is time, not
# iterations, and does not cancel out: its gettimeofday calls are counted
# but left out of its "all" row, and said.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(repo_root)"
build="${BUILD_DIR:-build}"

only="" iters="1000,3000" data=docs/data/kcount phase=all kernels=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --only) [[ "${2:-}" =~ ^(04|05|06|08|09)(,(04|05|06|08|09))*$ ]] || { echo "kcount: --only takes a list of 04, 05, 06, 08 and 09" >&2; exit 2; }; only=$2; shift 2 ;;
    --iters)
      [[ "${2:-}" =~ ^([1-9][0-9]*),([1-9][0-9]*)$ ]] && ((BASH_REMATCH[1] < BASH_REMATCH[2])) ||
        { echo "kcount: --iters needs N1,N2 with N1 < N2 (e.g. 1000,3000)" >&2; exit 2; }
      iters=$2; shift 2 ;;
    --kernel) [[ -n "${2:-}" ]] || { echo "kcount: --kernel needs a guest kernel's release" >&2; exit 2; }; kernels+=("$2"); shift 2 ;;
    --data) [[ -n "${2:-}" ]] || { echo "kcount: --data needs a directory" >&2; exit 2; }; data=$2; shift 2 ;;
    --report-only) phase=report; shift ;;
    --measure-only) phase=measure; shift ;;  # the guest's half of a run (internal)
    -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "kcount: unknown option '$1'" >&2; exit 2 ;;
  esac
done
wanted() { [[ -z "$only" || ",$only," == *",$1,"* ]]; }
n1=${iters%,*} n2=${iters#*,}
root=$build/kcount

if [[ $phase == all ]]; then
  targets=()
  wanted 04 && targets+=("subprojects/04_rdma_write/rdma_write")
  wanted 05 && targets+=("subprojects/05_write_imm/write_imm")
  wanted 06 && targets+=("subprojects/06_srq_credits/srq_credits")
  wanted 08 && targets+=("subprojects/08_event_channel/event_channel")
  wanted 09 && targets+=("subprojects/09_mempool/mempool")
  if [[ ! -f "$build/build.ninja" ]]; then
    build_tree "$build" || { echo "kcount: the build failed" >&2; exit 1; }
  else
    ninja -C "$build" "${targets[@]}" >/dev/null || ninja -C "$build" "${targets[@]}" >&2 ||
      { echo "kcount: the build of ${targets[*]} failed (above)" >&2; exit 1; }
  fi
  command -v perf >/dev/null || { echo "kcount: perf is missing (scripts/install_deps.sh installs linux-perf)" >&2; exit 1; }
  mkdir -p "$data" && [[ -w "$data" ]] || { echo "kcount: cannot write CSVs into '$data'" >&2; exit 2; }
  if ((${#kernels[@]} == 0)); then mapfile -t kernels < <(guest_kernels); fi
  ((${#kernels[@]})) || { echo "kcount: no guest kernel is installed (scripts/install_deps.sh)" >&2; exit 1; }
  status=0
  for k in "${kernels[@]}"; do
    started=$(date +%s)
    out=$root/$k
    rm -rf "$out"
    echo "kcount: Linux $k" >&2
    scripts/rxe_vm.sh --kernel "$k" --timeout 1800 -- scripts/kcount.sh --measure-only --iters "$iters" ${only:+--only "$only"}
    measured=$?
    ((measured == 0)) || { echo "kcount: runs in the $k guest failed (above; exit $measured)" >&2; status=1; }
    "$0" --report-only --kernel "$k" --data "$data" || status=1
    echo "kcount: $k took $((($(date +%s) - started) / 60)) min $((($(date +%s) - started) % 60)) s, the guest's boot included" >&2
  done
  exit "$status"
fi

if [[ $phase == measure ]]; then
  command -v perf >/dev/null || { echo "kcount: perf is missing in the guest" >&2; exit 1; }
  command -v ib_send_lat >/dev/null || { echo "kcount: perftest is missing (scripts/install_deps.sh)" >&2; exit 1; }
  out=$root/$(uname -r)
  rm -rf "$out" && mkdir -p "$out" || { echo "kcount: cannot make $out" >&2; exit 1; }
  dev=$(ls /sys/class/infiniband | head -n1)
  gid_index=$(roce_v2_ipv4_gid_index "$dev") || { echo "kcount: $dev has no RoCE v2 IPv4 GID" >&2; exit 1; }
  cm_addr=$(rdma_ipv4)  # 09's rdma_cm client connects to the RDMA interface's own address
  tracing=/sys/kernel/tracing
  [[ -d $tracing/events ]] || mount -t tracefs nodev "$tracing" || { echo "kcount: cannot mount tracefs on $tracing" >&2; exit 1; }
  # rdma_rxe's functions, where this kernel has them, as kprobes (group
  # kcount): perf stat counts them like any tracepoint.
  probes=""
  echo >"$tracing/kprobe_events"
  for f in rxe_post_send rxe_do_task do_task rxe_requester rxe_completer rxe_responder rxe_sender rxe_receiver \
           rxe_xmit_packet rxe_rcv rxe_cq_post rxe_req_notify_cq; do
    grep -q " $f	\[rdma_rxe\]" /proc/kallsyms || continue
    echo "p:kcount/$f rdma_rxe:$f" >>"$tracing/kprobe_events" || { echo "kcount: cannot place a kprobe on $f" >&2; exit 1; }
    probes+=",kcount:$f"
  done
  system_events="context-switches,cpu-migrations,sched:sched_wakeup,workqueue:workqueue_execute_start,irq:softirq_entry$probes"
  process_events="task-clock,context-switches,cpu-migrations,raw_syscalls:sys_enter"
  for s in clock_gettime gettimeofday write read ioctl poll ppoll sched_yield epoll_wait nanosleep clock_nanosleep; do
    [[ -d $tracing/events/syscalls/sys_enter_$s ]] && process_events+=",syscalls:sys_enter_$s"
  done
  # Every count on from here to the end, by a perf stat that outlives the
  # runs: each event's first user patches the kernel's code (its static
  # key; a kprobe's int3), and a 6.12 guest under TCG once panicked in
  # __schedule while a run's perf stat did that (2026-12-07). Patched once,
  # the runs' own perf stats only add counters.
  perf stat -a -x, -o /dev/null -e "$system_events" -e "$process_events" -- sleep 100000 2>/dev/null &
  keeper=$!
  # perf stat ends when its command does: stop the sleep, then wait for it.
  trap 'pkill -P "$keeper" sleep; wait "$keeper" 2>/dev/null; echo >"$tracing/kprobe_events"' EXIT
  sleep 1
  {
    echo "date=$(date -u +%Y-%m-%d)"
    echo "kernel=Linux $(uname -r)"
    echo "device=$dev, GID index $gid_index, Soft-RoCE (rdma_rxe) in a qemu TCG guest, $(nproc) vCPUs, loopback through $dev (127.0.0.1)"
    echo "clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
    echo "perf=$(perf --version)"
    echo "perftest=$(ib_send_lat --version 2>/dev/null | awk '/Version/ { print $2; exit }')"
    echo "iters=$n1,$n2"
  } >"$out/env"

  limit=30 port=18515  # ten times the slowest run here
  listening() { ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; }
  # run_pair NAME "SERVER..." "CLIENT..." [cm]: the pair under perf stat
  # -a, each side under a perf stat of its own; the client starts once the
  # server listens on its TCP port (perftest's client does not retry), or
  # at once for an rdma_cm server (cm: the client retries while nobody
  # listens, common/src/cm_connect.cpp).
  run_pair() {
    local name=$1 server=$2 client=$3 p=$out/$1 tcp_port=$port
    [[ "${4:-}" == cm ]] && tcp_port=0
    rm -f "$p".*
    if listening; then echo "kcount: port $port is taken before $name" >&2; return 1; fi
    perf stat -a -x, -o "$p.system" -e "$system_events" -- bash -c '
      set -u
      timeout '"$limit"' perf stat -x, -o "$1.server" -e "$2" -- $3 >"$1.server.txt" 2>&1 &
      spid=$!
      for _ in $(seq 100); do (('"$tcp_port"' == 0)) || ss -Hltn "sport = :'"$tcp_port"'" | grep -q . && break; sleep 0.1; done
      timeout '"$limit"' perf stat -x, -o "$1.client" -e "$2" -- $4 >"$1.client.txt" 2>&1; c=$?
      [[ $c -eq 0 ]] || kill "$spid" 2>/dev/null
      wait "$spid"; s=$?
      exit $((c ? c : s))' _ "$p" "$process_events" "$server" "$client" 2>"$p.perf.txt"
    local rc=$?
    if ((rc != 0)); then
      echo "exit $rc" >"$p.failed"  # its counts are a part of a run: the report leaves them out
      echo "kcount: $name failed (exit $rc$( ((rc == 124)) && echo ": no end within $limit s")); the client's and the server's output:" >&2
      cat "$p.client.txt" "$p.server.txt" "$p.perf.txt" >&2 2>/dev/null
      return 1
    fi
  }
  commands() {  # commands KEY SIZE ITERS -> "SERVER|CLIENT"
    local b=$build/subprojects r w e q m
    r=$b/04_rdma_write/rdma_write w=$b/05_write_imm/write_imm e=$b/08_event_channel/event_channel
    q=$b/06_srq_credits/srq_credits m=$b/09_mempool/mempool
    local p="-d $dev -x $gid_index -F" waits="--wait-ms 30000"
    case "$1" in
      rdma_write) echo "$r --size $2 $waits|$r -s 127.0.0.1 --size $2 --iters $3 --tx-depth 128 --cq-mod 100 $waits" ;;
      write_bw) echo "ib_write_bw $p -s $2 -n $3 -t 128 -Q 100|ib_write_bw $p -s $2 -n $3 -t 128 -Q 100 127.0.0.1" ;;
      write_imm) echo "$w --size $2 $waits|$w -s 127.0.0.1 --latency --iters $3 --size $2 $waits" ;;
      ec_poll) echo "$e --poll $waits|$e -s 127.0.0.1 --poll --size $2 --iters $3 $waits" ;;
      ec_event) echo "$e --event $waits|$e -s 127.0.0.1 --event --size $2 --iters $3 $waits" ;;
      send_lat) echo "ib_send_lat $p -s $2 -n $3|ib_send_lat $p -s $2 -n $3 127.0.0.1" ;;
      send_lat_e) echo "ib_send_lat $p -e -s $2 -n $3|ib_send_lat $p -e -s $2 -n $3 127.0.0.1" ;;
      srq) echo "$q --clients 1 --window 64 --size $2 $waits|$q -s 127.0.0.1 --size $2 --records $3 $waits" ;;
      send_bw_srq) echo "ib_send_bw $p --use-srq -s $2 -n $3|ib_send_bw $p --use-srq -s $2 -n $3 127.0.0.1" ;;
      # rdma_cm resolves the RDMA interface's own address, not loopback.
      mempool) echo "$m --clients 1 --window 64 --record-size $2 $waits|$m -s $cm_addr --record-size $2 --records $3 $waits" ;;
      send_bw_srq_e) echo "ib_send_bw $p -e --use-srq -s $2 -n $3|ib_send_bw $p -e --use-srq -s $2 -n $3 127.0.0.1" ;;
    esac
  }
  # The cases: PAIR|UNIT|OURS|THEIRS|SIZE|SCALE (a run's iterations are
  # N times SCALE).
  cases=()
  if wanted 04; then for s in 64 4096; do cases+=("04 rdma_write / ib_write_bw|write|rdma_write|write_bw|$s|10"); done; fi
  if wanted 05; then for s in 8 4096; do cases+=("05 write_imm --latency / ib_send_lat|round trip|write_imm|send_lat|$s|1"); done; fi
  if wanted 06; then for s in 64 4096; do cases+=("06 srq_credits / ib_send_bw --use-srq|record|srq|send_bw_srq|$s|10"); done; fi
  if wanted 08; then
    cases+=("08 --poll / ib_send_lat|round trip|ec_poll|send_lat|8|1")
    cases+=("08 --event / ib_send_lat -e|round trip|ec_event|send_lat_e|8|1")
  fi
  if wanted 09; then for s in 64 4096; do cases+=("09 mempool / ib_send_bw -e --use-srq|record|mempool|send_bw_srq_e|$s|10"); done; fi
  printf '%s\n' "${cases[@]}" >"$out/cases"
  status=0 started=$(date +%s) done_runs=0 total=$((${#cases[@]} * 4))
  # The programs take turns, N1 then N2, ours then perftest's.
  for c in "${cases[@]}"; do
    IFS='|' read -r _ _ ours theirs size scale <<<"$c"
    for n in "$n1" "$n2"; do
      for key in "$ours" "$theirs"; do
        name=$key-$size-$((n * scale))
        [[ -f "$out/$name.system" ]] && continue  # ib_send_lat at 8 B serves 05 and 08
        printf 'kcount: [%d/%d] %s, %s B, %s\n' "$((done_runs + 1))" "$total" "$key" "$size" "$((n * scale))" >&2
        IFS='|' read -r server client <<<"$(commands "$key" "$size" "$((n * scale))")"
        # A run that hangs (ib_send_lat -e did, on Linux 6.12: both sides
        # waiting for an event) is tried again, three tries in all.
        for try in 1 2 3; do
          run_pair "$name" "$server" "$client" "$([[ $key == mempool ]] && echo cm)" && break
          ((try < 3)) && echo "kcount: $name again (try $((try + 1)) of 3)" >&2 || status=1
        done
        done_runs=$((done_runs + 1))
      done
    done
  done
  echo "kcount: the runs took $((($(date +%s) - started) / 60)) min $((($(date +%s) - started) % 60)) s" >&2
  exit "$status"
fi

# --report-only: the CSV of one kernel (the last one measured, without --kernel).
if ((${#kernels[@]} == 0)); then
  k=$(ls -t "$root" 2>/dev/null | head -n1)
  [[ -n "$k" ]] || { echo "kcount: no runs in $root to report on (run scripts/kcount.sh first)" >&2; exit 1; }
  kernels=("$k")
fi
out=$root/${kernels[0]}
[[ -s "$out/env" && -s "$out/cases" ]] || { echo "kcount: no runs in $out to report on" >&2; exit 1; }
mkdir -p "$data" && [[ -w "$data" ]] || { echo "kcount: cannot write CSVs into '$data'" >&2; exit 2; }
python3 - "$out" "$data" "$0 ${only:+--only $only }--iters $iters --kernel ${kernels[0]}" <<'PY'
import csv, os, re, sys

out, data, command = sys.argv[1:4]
env = dict(line.rstrip("\n").split("=", 1) for line in open(os.path.join(out, "env")))
n1, n2 = (int(x) for x in env["iters"].split(","))
release = env["kernel"].split()[-1]
major_minor = ".".join(release.split(".")[:2])


def counts(path):  # perf stat -x, -> {event: value}; None when the file is missing
    if not os.path.exists(path):
        return None
    got = {}
    for row in csv.reader(open(path)):
        if len(row) < 3 or row[0].startswith("#"):
            continue
        try:
            value = float(row[0])
        except ValueError:  # <not counted>, <not supported>
            continue
        got[row[2].split("/")[0] if row[2].startswith("cpu/") else row[2]] = value
    return got


def run(key, size, n):  # {scope: counts}
    base = os.path.join(out, f"{key}-{size}-{n}")
    if os.path.exists(base + ".failed"):
        return None
    system, server, client = (counts(base + x) for x in (".system", ".server", ".client"))
    if system is None or server is None or client is None:
        return None
    both = {e: server.get(e, 0) + client.get(e, 0) for e in set(server) | set(client)}
    return {"system": system, "process": both}


# What each count is called in the table, in the table's order.
SYSTEM = [
    ("context-switches", "context switches"),
    ("cpu-migrations", "CPU migrations"),
    ("sched:sched_wakeup", "wake-ups"),
    ("workqueue:workqueue_execute_start", "work items run"),
    ("irq:softirq_entry", "softirqs run"),
    ("kcount:rxe_post_send", "rxe_post_send (doorbells)"),
    ("kcount:rxe_do_task", "rxe_do_task (task runs, 6.1)"),
    ("kcount:do_task", "do_task (task runs, 6.12)"),
    ("kcount:rxe_requester", "rxe_requester"),
    ("kcount:rxe_completer", "rxe_completer"),
    ("kcount:rxe_responder", "rxe_responder (6.1)"),
    ("kcount:rxe_sender", "rxe_sender (6.12)"),
    ("kcount:rxe_receiver", "rxe_receiver (6.12)"),
    ("kcount:rxe_xmit_packet", "rxe_xmit_packet (packets sent)"),
    ("kcount:rxe_rcv", "rxe_rcv (packets received)"),
    ("kcount:rxe_cq_post", "rxe_cq_post (CQEs)"),
    ("kcount:rxe_req_notify_cq", "rxe_req_notify_cq (CQ armed)"),
]
PROCESS = [
    ("raw_syscalls:sys_enter", "system calls, all but gettimeofday"),
    ("syscalls:sys_enter_clock_gettime", "clock_gettime"),
    ("syscalls:sys_enter_gettimeofday", "gettimeofday"),
    ("syscalls:sys_enter_write", "write"),
    ("syscalls:sys_enter_read", "read"),
    ("syscalls:sys_enter_ioctl", "ioctl"),
    ("syscalls:sys_enter_poll", "poll"),
    ("syscalls:sys_enter_ppoll", "ppoll"),
    ("syscalls:sys_enter_sched_yield", "sched_yield"),
    ("syscalls:sys_enter_epoll_wait", "epoll_wait"),
    ("syscalls:sys_enter_nanosleep", "nanosleep"),
    ("syscalls:sys_enter_clock_nanosleep", "clock_nanosleep"),
    ("context-switches", "context switches of the programs"),
    ("cpu-migrations", "CPU migrations of the programs"),
    ("task-clock", "CPU ms of the programs per 1000"),
]


def per_unit(key, size, scale, event, scope):
    a, b = run(key, size, n1 * scale), run(key, size, n2 * scale)
    if a is None or b is None:
        return None
    va, vb = a[scope].get(event), b[scope].get(event)
    if va is None or vb is None:
        return None
    if scope == "process" and event == "raw_syscalls:sys_enter":  # perftest's calibration left out
        va -= a[scope].get("syscalls:sys_enter_gettimeofday", 0)
        vb -= b[scope].get("syscalls:sys_enter_gettimeofday", 0)
    v = (vb - va) / ((n2 - n1) * scale)
    return v * 1000 if event == "task-clock" else v  # task-clock: ms per 1000 units


rows, missing = [], []
for line in open(os.path.join(out, "cases")):
    pair, unit, ours, theirs, size, scale = line.rstrip("\n").split("|")
    scale = int(scale)
    for scope, names in (("system", SYSTEM), ("process", PROCESS)):
        for event, label in names:
            o, t = per_unit(ours, size, scale, event, scope), per_unit(theirs, size, scale, event, scope)
            if o is None and t is None:
                continue
            rows.append((pair, unit, size, "guest" if scope == "system" else "programs", label, o, t))
    for key in (ours, theirs):
        for n in (n1, n2):
            if run(key, size, n * scale) is None:
                missing.append(f"{key} {size} B x {n * scale}")

path = os.path.join(data, f"linux-{major_minor}.csv")
fmt = lambda v: "" if v is None else f"{v:.2f}".replace("-0.00", "0.00")
with open(path + ".tmp", "w") as f:
    f.write(f"# what: what the kernel does per write (04), round trip (05, 08) or record (06, 09) for our program and its perftest twin, counted, not timed\n")
    f.write(f"# how: (count at N2 - count at N1) / (N2 - N1), N = {n1} and {n2} round trips (04, 06, 09: ten times as many writes); perf stat in the guest; guest: the whole guest (perf stat -a, kernel threads included), programs: both sides' processes summed\n")
    f.write(f"# timing, not protocol: context switches, wake-ups, a spinning program's clock_gettime and poll, task-clock (CPU ms per 1000 units); perftest's gettimeofday is its clock calibration at start, time not iterations, left out of its system calls\n")
    for k in ("date", "kernel", "device", "clocksource", "perf", "perftest"):
        f.write(f"# {k}: {env[k]}\n")
    f.write(f"# remake: {command}\n")
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["pair", "unit", "size_bytes", "scope", "count", "ours", "perftest"])
    for r in rows:
        w.writerow([*r[:5], fmt(r[5]), fmt(r[6])])
os.replace(path + ".tmp", path)

print(f"kcount: {env['kernel']}, clocksource {env['clocksource']}, per unit: (N2 - N1) = ({n1}, {n2})")
last = None
for pair, unit, size, scope, label, o, t in rows:
    if (pair, size) != last:
        print(f"\n{pair}, {size} B, per {unit}")
        print(f"  {'':9} {'count':42} {'ours':>9} {'perftest':>9}")
        last = (pair, size)
    print(f"  {scope:9} {label:42} {fmt(o):>9} {fmt(t):>9}")
for m in missing:
    print(f"kcount: no counts for {m} (its run failed: the output beside it in {out})", file=sys.stderr)
print(f"kcount: wrote {path}", file=sys.stderr)
sys.exit(1 if missing else 0)
PY
