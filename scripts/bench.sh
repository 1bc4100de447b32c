#!/usr/bin/env bash
# Our programs beside perftest on the same device, in the same run, with the
# same sizes and depths: sweeps over message sizes, one CSV per figure under
# docs/data/ (scripts/plot.py draws them), and a table of our figure,
# perftest's and the ratio.
#
#   scripts/bench.sh            in one Soft-RoCE guest (or here, with an RDMA port)
#   scripts/bench.sh --pair     across two guests on a virtual wire (figure 10
#                               needs it: only there do packets cross a netdev)
#   scripts/bench.sh --reps N   runs per point (default 3): the median is the
#                               point, the smallest and largest its spread
#   scripts/bench.sh --only 06  only the figures and rows whose label starts with this
#                               (a comma-separated list: --only 04,05)
#   scripts/bench.sh --second-kernel
#                               then the same again in a guest booted with the
#                               second guest kernel (Debian 12: 6.12 beside
#                               6.1), its CSVs into DATA/linux-MAJOR.MINOR/;
#                               scripts/plot.py draws them beside the first
#   scripts/bench.sh --data DIR write the CSVs here (default docs/data)
#   scripts/bench.sh --pin      in one guest, each pair's server on CPU 0 and its
#                               client on CPU 1 (taskset), ours and perftest's
#                               alike: 04's and 05's points and 08-modes (not the
#                               paced runs, 06's and 09's, whose clients share CPU 1
#                               or run beside the server); the CSVs say so
#
# Every run of 04's, 05's and 08-modes' points is kept in DATA/runs/NAME.csv
# (the points' CSVs hold their medians and spreads); the table gives each
# ratio twice: of the medians, and "in turns", the median of the ratios of
# the two programs' runs of each turn.
#
# Figures (each a CSV named after it):
#   02-registration  stage 02's ibv_reg_mr + ibv_dereg_mr from 4 KiB to half
#                    the memlock limit (raised to 128 MiB for the run)
#   04-write-rate    04's throughput mode beside ib_write_bw, 64 B to 64 KiB:
#                    message rate and bandwidth (depth 128, one completion in 100)
#   05-latency       05's latency mode beside ib_write_lat (the same writes,
#                    the target polls memory) and ib_send_lat (a Recv consumed
#                    per message, as ours), 8 B to 64 KiB: median and 99 %
#   06-greedy        one run of 06: a greedy client (60000 records) beside
#                    three fair ones (2000), each client's records over time
#   08-modes         08's --poll, --event and --hybrid at 8 B and 4 KiB: median,
#                    99 %, CPU and wake-ups per message, beside ib_send_lat
#                    with and without -e
#   08-paced         the same three modes at 8 B with the client paced by
#                    --rate (200 to 20000 rounds a second, and back to back):
#                    the client's median and 99 %, the server's CPU
#   09-pool-cost     09's --pool-cost: ibv_reg_mr per message against the pool
#   10-loss          04's throughput mode beside ib_write_bw, 4 KiB and 64 KiB,
#                    on a wire that loses 0 to 5 % of the packets at random
#                    (tc netem on both guests' eth0, scripts/impair.sh); the
#                    same retry settings for both: --pair only
# Rows of the table: the sweeps' points, then 06's four clients on one SRQ
# beside ib_send_bw -q 4 --use-srq (window 64 each; perftest keeps 128 sends
# in flight) and 09's pipeline (four clients, Write with Immediate into
# pooled slots, the server asleep on a completion channel, window 64) beside
# ib_send_bw -e -q 4 --use-srq and ib_write_bw -q 4, at 64 B and 4 KiB.
# A row whose median comes from fewer runs than --reps, or whose perftest
# runs were repeated (perftest's clock calibration fails now and then in a
# guest: such a run is run again, three tries in all, then left out), says
# so after its ratio. Latency ratios: lower is better; rates: higher is
# better. Soft-RoCE in an emulated guest says nothing about real hardware:
# only the ratios mean something, and no test ever passes or fails on them.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(repo_root)"
build="${BUILD_DIR:-build}"

pair=0 reps=3 only="" data=docs/data second=0 pin=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --pair) pair=1; shift ;;
    --only) [[ -n "${2:-}" ]] || { echo "bench: --only needs a row prefix" >&2; exit 2; }; only=$2; shift 2 ;;
    --data) [[ -n "${2:-}" ]] || { echo "bench: --data needs a directory" >&2; exit 2; }; data=$2; shift 2 ;;
    --reps) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "bench: --reps needs a count" >&2; exit 2; }; reps=$2; shift 2 ;;
    --second-kernel) second=1; shift ;;
    --pin) pin=1; shift ;;
    -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "bench: unknown option '$1'" >&2; exit 2 ;;
  esac
done
wanted() {  # wanted LABEL: true when --only asks for it (or is not given)
  local prefix
  [[ -z "$only" ]] && return 0
  for prefix in ${only//,/ }; do [[ "$1" == "$prefix"* ]] && return 0; done
  return 1
}
# Figure 10 loses packets on the wire between two guests: in one guest rxe0
# loops its traffic back without it ever reaching a netdev, so there is
# nothing for netem to drop. Asked for by name, it is refused without
# --pair; in a run of every figure it is left out, and said.
if [[ $pair == 0 && -n "$only" ]] && wanted 10; then
  echo "bench: figure 10-loss needs --pair: its losses are made on the wire between two guests, and one guest's rxe0 sends nothing over a wire (scripts/bench.sh --pair --only 10)" >&2
  exit 2
fi

if [[ -z "${RXE_VM:-}" ]]; then
  build_tree "$build" || { echo "bench: the build failed" >&2; exit 1; }
  command -v ib_write_bw >/dev/null || { echo "bench: perftest is missing (scripts/install_deps.sh)" >&2; exit 1; }
  mkdir -p "$data" && [[ -w "$data" ]] || { echo "bench: cannot write CSVs into '$data'" >&2; exit 2; }
  # The guest sees this machine read-only but for the checkout and what is
  # shared with it: share the CSVs' folder, wherever it is.
  vm=(scripts/rxe_vm.sh --timeout 3600 --share "$data")
  [[ $pair == 1 ]] && vm+=(--pair)
  inner=(scripts/bench.sh --reps "$reps" ${only:+--only "$only"})
  [[ $pin == 1 ]] && inner+=(--pin)
  [[ $pair == 1 ]] && inner+=(--pair)  # the guest's run must know it has a peer
  if [[ $second == 1 ]]; then
    # Both kernels in one run: the same day, host, build and options, so
    # that their points can stand side by side.
    k2=$(second_guest_kernel)
    [[ -n "$k2" ]] || { echo "bench: no second guest kernel is installed (scripts/install_deps.sh installs Debian 12's 6.12)" >&2; exit 2; }
    data2=$data/linux-$(cut -d. -f1,2 <<<"$k2")
    mkdir -p "$data2" || exit 2
    "${vm[@]}" --kernel "$(default_guest_kernel)" -- "${inner[@]}" --data "$data"; first_status=$?
    "${vm[@]}" --kernel "$k2" -- "${inner[@]}" --data "$data2" || exit
    exit "$first_status"
  fi
  if [[ $pair == 1 ]] || ! have_active_port; then exec "${vm[@]}" -- "${inner[@]}" --data "$data"; fi
fi

if [[ $pair == 1 ]]; then
  server_addr=$RXE_VM_PEER_IPV4
  cm_addr=$server_addr
  on_server() { scripts/on_peer.sh --timeout 300 -- "$@"; }
  where="across two guests ($RXE_VM_IPV4 -> $server_addr)"
else
  server_addr=127.0.0.1
  cm_addr=$(rdma_ipv4)  # rdma_cm needs the RDMA interface's own address, not loopback
  on_server() { "$@"; }
  where="in one guest (loopback through rxe0)"
fi

# --pin: the two sides of a pair on the guest's two CPUs, one each, so
# that where the scheduler puts them is the same for every program. On
# Soft-RoCE with Linux 6.12 a spinning pair runs each round trip in about
# 30 us or in about 45 to 50, a whole run at one speed or the other,
# whatever the program; pinned, runs of both programs still took either
# (2026-12-07: docs/data/turns/).
pin_server="" pin_client="" pinned=""
if [[ $pin == 1 ]]; then
  [[ $pair == 0 ]] || { echo "bench: --pin is for one guest (across two, each side has a guest of its own)" >&2; exit 2; }
  (($(nproc) >= 2)) || { echo "bench: --pin needs two CPUs, this machine has $(nproc)" >&2; exit 2; }
  pin_server="taskset -c 0" pin_client="taskset -c 1"
  pinned="each pair's server on CPU 0, its client on CPU 1 (taskset), for 04, 05 and 08-modes"
  where+=", pinned"
fi

# The RoCE v2 IPv4 GID's index (perftest's -x), read from sysfs.
dev=$(ls /sys/class/infiniband | head -n1)
gid_index=$(roce_v2_ipv4_gid_index "$dev") || { echo "bench: $dev has no RoCE v2 IPv4 GID" >&2; exit 1; }

# Starts a server with on_server in the background, then runs the client
# until it connects (perftest's client does not retry by itself). Each side
# gets run_limit seconds, ten times what the longest run takes here: a run
# that hangs is left out, and said (ib_send_lat -e hung in 5 of 8 runs on
# Soft-RoCE with Linux 6.12, both sides waiting for an event).
run_limit=40
pair_run() {  # pair_run "SERVER..." "CLIENT..." -> client's output on stdout
  local server=$1 client=$2 out status
  on_server timeout "$run_limit" $pin_server $server >/dev/null 2>&1 &
  local spid=$!
  for _ in $(seq 50); do
    out=$(timeout "$run_limit" $pin_client $client 2>&1); status=$?
    [[ $status -eq 0 ]] && break
    grep -qiE 'refused|Couldn.t connect|Unable to open file descriptor' <<<"$out" || break
    sleep 0.2
  done
  wait "$spid"
  if [[ $status -eq 124 ]]; then echo "bench: '$client' did not end within $run_limit s: left out" >&2; return 1; fi
  [[ $status -eq 0 ]] || { echo "bench: '$client' failed:" >&2; echo "$out" >&2; return 1; }
  echo "$out"
}

# Each measurement prints one line of numbers per run.
ours_bw() {  # ours_bw SIZE ITERS -> MB/s Mpps
  pair_run "$build/subprojects/04_rdma_write/rdma_write --size $1" \
    "$build/subprojects/04_rdma_write/rdma_write -s $server_addr --size $1 --iters $2 --tx-depth 128 --cq-mod 100" |
    awk -v s="$1" '$1 == s && NF == 4 { print $3, $4 }'
}
# perftest turns cycles into seconds with a CPU frequency it measures
# against gettimeofday() as it reports; in a guest on a busy host that fit
# can fail ("Correlation coefficient r^2: 0.705045 < 0.9"), and with -F a
# bandwidth test then prints 0.00 MB/s and 0 Mpps rather than stopping.
# Such a run measured nothing.
# perftest_line SIZE "N...": from a bandwidth test's output on stdin, the
# fields N of its line for SIZE, counted from the line's end (2: BW average
# in MB/s, 1: MsgRate in Mpps), or "uncalibrated" for such a run.
perftest_line() {
  awk -v s="$1" -v from_end="$2" '
    /^Correlation coefficient r\^2/ { bad = 1 }
    $1 == s && NF >= 5 { line = ""; zero = 0; n = split(from_end, f, " ")
                         for (i = 1; i <= n; i++) {
                           v = $(NF + 1 - f[i]); line = line (i > 1 ? " " : "") v
                           if (v + 0 == 0) zero = 1 } }
    END { if (line != "") print (bad && zero ? "uncalibrated" : line) }'
}
# Where a reader notes what befell a counted run: points names a file for
# each ("repeated": it measured at a second or third try; "left out": it
# measured nothing), and its row of the table says so.
run_notes=/dev/null
# perftest_run SIZE "N..." PROGRAM ARGS...: one run of a perftest bandwidth
# test, the server given ARGS and the client ARGS and the server's address
# -> perftest_line's fields. A run whose clock calibration failed is run
# again, three tries in all (as figure 10's lossy_run does); after three it
# is left out: nothing printed, so that no 0 reaches a median, and said.
perftest_run() {
  local size=$1 fields=$2 line rc try
  shift 2
  for try in 1 2 3; do
    line=$(pair_run "$*" "$* $server_addr" | perftest_line "$size" "$fields"); rc=$?
    [[ "$line" == uncalibrated ]] && continue
    ((try > 1)) && echo repeated >>"$run_notes"
    [[ -z "$line" ]] || echo "$line"
    return "$rc"
  done
  echo "left out" >>"$run_notes"
  echo "bench: $1 at $size bytes: its clock calibration failed in 3 tries (r^2 < 0.9, then 0 printed): the run left out" >&2
  return 1
}
perftest_bw() {  # perftest_bw SIZE ITERS -> MB/s Mpps (BW average, MsgRate)
  perftest_run "$1" "2 1" ib_write_bw -d "$dev" -x "$gid_index" -F -s "$1" -n "$2" -t 128 -Q 100
}
lat_fields='$1 == s && NF >= 9 { print $5, $8 }'  # t_typical and the 99 % percentile, perftest's columns
ours_lat() {  # ours_lat SIZE ITERS -> median p99 (us)
  pair_run "$build/subprojects/05_write_imm/write_imm --size $1" \
    "$build/subprojects/05_write_imm/write_imm -s $server_addr --size $1 --latency --iters $2" | awk -v s="$1" "$lat_fields"
}
perftest_lat() {  # perftest_lat SIZE ITERS -> median p99 (us): ib_write_lat
  pair_run "ib_write_lat -d $dev -x $gid_index -F -s $1 -n $2" \
    "ib_write_lat -d $dev -x $gid_index -F -s $1 -n $2 $server_addr" | awk -v s="$1" "$lat_fields"
}
perftest_send_lat() {  # perftest_send_lat SIZE ITERS [-e] -> median p99 (us): ib_send_lat, a Recv per message
  pair_run "ib_send_lat -d $dev -x $gid_index -F ${3:-} -s $1 -n $2" \
    "ib_send_lat -d $dev -x $gid_index -F ${3:-} -s $1 -n $2 $server_addr" | awk -v s="$1" "$lat_fields"
}
perftest_event_lat() { perftest_send_lat "$1" "$2" -e; }
ours_mode() {  # ours_mode MODE SIZE ITERS -> median p99 (us), the client's CPU us per message, wake-ups per message
  pair_run "$build/subprojects/08_event_channel/event_channel --$1" \
    "$build/subprojects/08_event_channel/event_channel -s $server_addr --$1 --size $2 --iters $3" |
    awk -v s="$2" '$1 == s && NF >= 9 { lat = $5 " " $8 }
                   /^wake-ups: / { w = $2 / $4 }
                   /^CPU: / { for (i = 1; i < NF; i++) if ($(i + 1) == "us" && $(i + 2) == "per") cpu = $i }
                   END { if (lat != "" && cpu != "") print lat, cpu, w + 0 }'
}
# A paced run: the client starts a round RATE times a second (0: back to
# back); the server, which needs no rate, prints the CPU it spent waiting.
# Both sides' output is read, so this starts the server itself (pair_run
# keeps the client's only).
ours_paced() {  # ours_paced MODE RATE ITERS -> the client's median p99 (us), the server's CPU s per s and us per message, late rounds per round, rounds per second
  local srv out status spid
  srv=$(mktemp)
  on_server timeout "$run_limit" "$build/subprojects/08_event_channel/event_channel" "--$1" >"$srv" 2>&1 &
  spid=$!
  for _ in $(seq 50); do
    out=$(timeout "$run_limit" "$build/subprojects/08_event_channel/event_channel" -s "$server_addr" "--$1" --size 8 \
          --iters "$3" --rate "$2" 2>&1); status=$?
    [[ $status -eq 0 ]] && break
    grep -qi 'refused' <<<"$out" || break
    sleep 0.2
  done
  wait "$spid" || status=1
  if [[ $status -ne 0 ]]; then
    echo "bench: 08 paced --$1 --rate $2 failed:" >&2; echo "$out" >&2; cat "$srv" >&2; rm -f "$srv"; return 1
  fi
  { echo "$out"; echo "== server"; cat "$srv"; } |
    awk '/^== server$/ { server = 1; next }
         !server && $1 == 8 && NF >= 9 { lat = $5 " " $8 }
         !server && /^paced: / { late = $6 / $8 }
         !server && /^CPU: / { for (i = 1; i < NF; i++) if ($i == "in" && $(i + 2) == "s") rate = $(i + 4) / $(i + 1) }
         server && /^CPU: / { for (i = 1; i < NF; i++) { if ($(i + 1) == "us" && $(i + 2) == "per") us = $i
                                                          if ($(i + 1) == "s" && $(i + 2) == "of") sps = substr($i, 2) } }
         END { if (lat != "" && us != "" && rate != "") print lat, sps, us, late + 0, rate }'
  rm -f "$srv"
}
ours_srq() {  # ours_srq SIZE ITERS -> Mpps: 4 clients on one SRQ, window 64 each, every record together (the server's line)
  local out status=0
  out=$(mktemp)
  on_server "$build/subprojects/06_srq_credits/srq_credits" --size "$1" --window 64 >"$out" 2>&1 &
  local spid=$! pids=()
  for _ in 1 2 3 4; do
    "$build/subprojects/06_srq_credits/srq_credits" -s "$server_addr" --size "$1" --records $(($2 / 4)) --wait-ms 30000 >/dev/null 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}" "$spid"; do wait "$p" || status=1; done
  [[ $status -eq 0 ]] || { echo "bench: srq_credits failed:" >&2; cat "$out" >&2; }
  awk -v s="$1" '/^all clients/ { f = 1 } f && $1 == s && NF == 4 { print $4 }' "$out"
  rm -f "$out"
}
perftest_srq() {  # perftest_srq SIZE ITERS -> Mpps: 4 QPs on one SRQ, Sends
  perftest_run "$1" 1 ib_send_bw -d "$dev" -x "$gid_index" -F -s "$1" -n $(($2 / 4)) -q 4 --use-srq
}
ours_pipeline() {  # ours_pipeline SIZE ITERS -> Mpps: 09's server and 4 clients, every record together
  local out status=0 addr=$cm_addr
  out=$(mktemp)
  on_server "$build/subprojects/09_mempool/mempool" --record-size "$1" --window 64 >"$out" 2>&1 &
  local spid=$! pids=()
  for _ in 1 2 3 4; do
    "$build/subprojects/09_mempool/mempool" -s "$addr" --record-size "$1" --records $(($2 / 4)) --wait-ms 30000 >/dev/null 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}" "$spid"; do wait "$p" || status=1; done
  [[ $status -eq 0 ]] || { echo "bench: mempool failed:" >&2; cat "$out" >&2; }
  awk -v s="$1" '/^all clients/ { f = 1 } f && $1 == s && NF == 4 { print $4 }' "$out"
  rm -f "$out"
}
perftest_send_event_srq() {  # -> Mpps: 4 QPs on one SRQ, Sends, the receiver woken by events
  perftest_run "$1" 1 ib_send_bw -d "$dev" -x "$gid_index" -F -e -s "$1" -n $(($2 / 4)) -q 4 --use-srq
}
perftest_write_q4() {  # -> Mpps: 4 QPs of plain RDMA Writes, nobody notified
  perftest_run "$1" 1 ib_write_bw -d "$dev" -x "$gid_index" -F -s "$1" -n $(($2 / 4)) -q 4
}
# 02's table, one line per size: bytes and the median us of its --iters runs.
registration_costs() {
  (ulimit -l "$memlock_kib" 2>/dev/null; "$build/subprojects/02_pd_mr/pd_mr" --iters 5) |
    awk '/^registration cost/ { f = 1; next } f && $3 ~ /^[0-9]+$/ && $5 == "us" {
           m = $2 == "KiB" ? 1024 : $2 == "MiB" ? 1048576 : 1; print $1 * m, $4 }'
}
# 09's --pool-cost machine lines: bytes, reg+dereg us, pool alloc+release us.
pool_costs() {
  "$build/subprojects/09_mempool/mempool" --pool-cost --cost-runs 5 | awk '$1 == "pool-cost" { print $2, $3, $4 }'
}

# Stats over the runs of one point: for each column, "median,min,max". The
# median of an even count of runs (one of 3 or 5 left out) is the lower of
# the two middle values: a value some run measured, never below the min.
spread() {
  awk '{ for (i = 1; i <= NF; i++) v[i, NR] = $i; if (NF > k) k = NF }
       END { if (!NR) exit 1
             for (i = 1; i <= k; i++) {
               n = 0; for (r = 1; r <= NR; r++) if ((i, r) in v) a[++n] = v[i, r] + 0
               for (x = 2; x <= n; x++) { t = a[x]; for (y = x - 1; y >= 1 && a[y] > t; y--) a[y + 1] = a[y]; a[y + 1] = t }
               printf "%s%s,%s,%s", (i > 1 ? "," : ""), a[int((n + 1) / 2)], a[1], a[n] }
             print "" }'
}

# The CSVs' header: what a reader needs to know before trusting a number.
kernel=$(uname -r)
perftest_version=$(ib_write_bw --version 2>/dev/null | awk '/Version/ { print $2; exit }')
if [[ -n "${RXE_VM:-}" ]]; then
  platform="Soft-RoCE (rdma_rxe) in a qemu TCG guest, 2 vCPUs"
elif [[ -d /sys/module/rdma_rxe ]]; then
  platform="Soft-RoCE (rdma_rxe) on this host"
else
  platform="$dev, a real port"
fi
csv_open() {  # csv_open NAME "COLUMNS" "WHAT" ["KEY: VALUE"...] -> prints the file name; the header is written
  local file=$data/$1.csv line
  {
    echo "# figure: $1"
    echo "# what: $3"
    for line in "${@:4}"; do echo "# $line"; done
    echo "# date: $(date -u +%Y-%m-%d)"
    echo "# kernel: Linux $kernel"
    echo "# device: $dev, $platform, $where"
    echo "# perftest: ${perftest_version:-unknown}"
    echo "# repetitions: $reps (a point is their median; _min and _max are the spread)"
    [[ $pin == 0 ]] || echo "# pinned: $pinned"
    echo "$2"
  } >"$file.tmp"
  echo "$file"
}
csv_close() { mv "$1.tmp" "$1" && echo "bench: wrote $1" >&2 || status=1; }

# The progress line: which figure, which point, and the time left, from the
# average so far of the points done.
units_total=0 units_done=0 started=$(date +%s) warmed=""
plan() { wanted "$1" && units_total=$((units_total + $2)); }
progress() {  # progress LABEL POINT
  local now left=""
  now=$(date +%s)
  if ((units_done > 0)); then
    left=$(( (now - started) * (units_total - units_done) / units_done ))
    left=", about $((left / 60)) min $((left % 60)) s left"
  fi
  units_done=$((units_done + 1))
  printf 'bench: [%d/%d] %s, %s%s\n' "$units_done" "$units_total" "$1" "$2" "$left" >&2
}
# warm_up LABEL SIZE FN ARGS...: one run of FN, not counted, silent when it
# gives its line. One that fails is said, with the first lines of what it
# printed, and the counted runs go on: a warm-up that hangs (ib_send_lat -e
# on Linux 6.12) is the first sign of a point whose runs will hang too.
warm_up() {
  local label=$1 size=$2 out rc err what
  shift 2
  err=$(mktemp)
  out=$("$@" 2>"$err"); rc=$?
  if [[ $rc -ne 0 || -z "$out" ]]; then
    if grep -q 'did not end within' "$err"; then
      what="did not end within $run_limit s"
    else
      what="failed"
    fi
    echo "bench: warm-up of '$label' at $size bytes $what (not counted; its runs go on):" >&2
    if [[ -s "$err" ]]; then head -n 5 "$err" | sed 's/^/  /' >&2; else echo "  (it printed no line)" >&2; fi
  fi
  rm -f "$err"
}
# points SIZE VAR LABEL "FN ARGS" [VAR LABEL "FN ARGS"]...: for each
# program, VAR="median,min,max" for each column of its line over --reps
# runs. The programs take turns (the first run of each, then the second of
# each, ...), so that the points set side by side were measured side by
# side: the guest's timing comes in stretches (about 10 or 13 to 20 us a
# round trip at 8 B, for any program), and five runs of one program in a
# row can all fall in a slow stretch that its rival's five then miss
# (2026-12-05: 05's 64 B point, 1.32 times ib_send_lat measured in turn
# after it, its five runs 10.6 to 15.7 us). A run that printed no line
# (it failed or hung, or perftest_run left it out: each said where it
# happened) leaves the point to the runs that did; point_notes[VAR] then
# says how many they were, and which were left out or repeated for
# perftest's clock (perftest_run), for the row of the table (notes_of).
# Returns 1 (and sets the run's status) when a program got no figure; the
# others' VARs are set all the same.
declare -A point_notes=()
points() {
  local size=$1 i k rc=0 out dir counted left repeated note line
  shift
  local -a vars=() labels=() cmds=() cmd
  while (($# >= 3)); do vars+=("$1"); labels+=("$2"); cmds+=("$3"); shift 3; done
  dir=$(mktemp -d)
  for i in "${!cmds[@]}"; do : >"$dir/$i"; : >"$dir/$i.notes"; done
  for k in $(seq "$reps"); do
    for i in "${!cmds[@]}"; do
      read -ra cmd <<<"${cmds[i]}"
      if ((k == 1)); then
        progress "${labels[i]}" "$size bytes"
        # Each measurement's first run in a fresh guest is not counted: its
        # first seconds ran slow (05's first point, 8 B: a 99 % of 0.1 to
        # 4 ms in one run of five, where the others' were 30 to 60 us).
        if [[ " $warmed " != *" ${cmd[0]} "* ]]; then
          warm_up "${labels[i]}" "$size" "${cmd[@]}"
          warmed+=" ${cmd[0]}"
        fi
      fi
      run_notes=$dir/$i.notes
      line=$("${cmd[@]}" | head -n 1)
      printf '%s\n' "$line" >>"$dir/$i"
      run_notes=/dev/null
      # Every run, in the order it ran, for the runs CSVs and turn_ratio.
      echo "$size,$k,${labels[i]},${line// /,}" >>"$all_runs"
    done
  done
  for i in "${!cmds[@]}"; do
    # A run whose line is not all finite numbers (ib_send_lat printed inf
    # at 16 KiB once here) is left out, and said; so is an empty line.
    awk -v l="${labels[i]}" 'NF == 0 { next }
                             /inf|nan/ { print "bench: " l ": a run printed \"" $0 "\"; left out" > "/dev/stderr"; next } 1' \
        "$dir/$i" >"$dir/$i.counted"
    point_notes[${vars[i]}]=""
    if out=$(spread <"$dir/$i.counted"); then
      printf -v "${vars[i]}" '%s' "$out"
      counted=$(wc -l <"$dir/$i.counted")
      left=$(grep -c '^left out' "$dir/$i.notes")
      repeated=$(grep -c '^repeated' "$dir/$i.notes")
      note=""
      ((counted < reps)) && note="the median of $counted of $reps runs"
      ((left > 0)) && note+=" ($left left out: perftest's clock calibration failed 3 times)"
      ((repeated == 1)) && note+="${note:+; }1 run repeated: perftest's clock calibration failed"
      ((repeated > 1)) && note+="${note:+; }$repeated runs repeated: perftest's clock calibration failed"
      if [[ -n "$note" ]]; then
        echo "bench: '${labels[i]}' at $size bytes: $note" >&2
        point_notes[${vars[i]}]="${labels[i]}: $note"
      fi
    else
      echo "bench: no figure for '${labels[i]}' at $size bytes" >&2; status=1; rc=1
    fi
  done
  rm -rf "$dir"
  return "$rc"
}
# point VAR LABEL SIZE FN ARGS...: one program's points (a run with no rival).
point() {
  local var=$1 label=$2 size=$3
  shift 3
  points "$size" "$var" "$label" "$*"
}
# per_size FN: FN prints "SIZE VALUE..." lines (a whole table per run); runs
# it --reps times and prints "SIZE,median,min,max,..." for each size.
per_size() {
  local runs s
  runs=$(mktemp)
  for _ in $(seq "$reps"); do "$1"; done >"$runs"
  for s in $(awk '{ print $1 }' "$runs" | sort -nu); do
    echo "$s,$(awk -v s="$s" '$1 == s { $1 = ""; print }' "$runs" | spread)"
  done
  rm -f "$runs"
}
iters_for() {  # enough messages to run about a second, 2000 to 20000
  local n=$(( (32 << 20) / $1 ))
  ((n < 2000)) && n=2000
  ((n > 20000)) && n=20000
  echo "$n"
}

echo "bench: $dev GID [$gid_index], $where, median of $reps run(s) per point; CSVs into $data"
status=0
summary=$(mktemp)
table() {  # table LABEL SIZE OURS THEIRS [NOTE [TURNS]]: TURNS (turn_ratio's) and a NOTE follow the ratio
  local ratio turns=-
  ratio=$(awk -v a="$3" -v b="$4" 'BEGIN { if (a ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "-" }')
  [[ -n "${6:-}" ]] && turns=$(awk '{ printf "%.2f (%.2f-%.2f, %d)", $1, $2, $3, $4 }' <<<"$6")
  printf '%-44s %6s %12s %12s %7s %-22s%s\n' "$1" "$2" "$3" "$4" "$ratio" "$turns" "${5:+  $5}" >>"$summary"
}
# Every run of every point, one line each as it ran: "SIZE,TURN,LABEL,its
# fields" (none for a run that printed no line). A turn's runs are seconds
# apart, so the ratio of two programs' runs of one turn shares the guest's
# stretch of timing that both met (points).
all_runs=$(mktemp)
# turn_ratio SIZE LABEL_A LABEL_B FIELD -> "median min max turns": the
# ratio A/B of FIELD (counted from 1) in each turn where both printed a
# finite number, taken as spread takes a point's runs.
turn_ratio() {
  local ratios out
  ratios=$(awk -F, -v s="$1" -v a="$2" -v b="$3" -v f="$4" '
    $1 != s || $(3 + f) == "" || $(3 + f) ~ /inf|nan/ { next }
    $3 == a { x[$2] = $(3 + f) } $3 == b { y[$2] = $(3 + f) }
    END { for (k in x) if ((k in y) && y[k] > 0) print x[k] / y[k] }' "$all_runs")
  [[ -n "$ratios" ]] && out=$(spread <<<"$ratios") || return 1
  echo "${out//,/ } $(wc -l <<<"$ratios")"
}
# runs_csv FIGURE "FIELDS" LABEL...: DATA/runs/FIGURE.csv, every run of
# these programs: size, turn, program and the fields it printed (scripts/
# plot.py draws each run, and the ratios in turns, from it).
runs_csv() {
  local name=$1 fields=$2 f
  shift 2
  mkdir -p "$data/runs" || { status=1; return; }
  f=$(csv_open "runs/$name" "size_bytes,turn,program,$fields" "every run behind $name.csv, in the order each point's runs took turns")
  sed -i -e 's|^# figure: .*|# figure: '"$name"'|' \
    -e 's/^# repetitions: .*/# repetitions: '"$reps"' (turn k ran each program once, one after the other, then turn k + 1)/' "$f.tmp"
  # A program that prints fewer fields (perftest has no CPU or wake-ups)
  # or none (a run that failed) gets empty ones: every row as wide as the header.
  awk -F, -v OFS=, -v n=$((3 + $(tr ',' '\n' <<<"$fields" | wc -l))) \
    'BEGIN { for (i = 1; i < ARGC; i++) want[ARGV[i]]; ARGC = 1 } $3 in want { $n = $n; print }' "$@" <"$all_runs" >>"$f.tmp"
  csv_close "$f"
}
notes_of() {  # notes_of VAR...: points' notes on these VARs' runs, joined
  local v out=""
  for v in "$@"; do [[ -z "${point_notes[$v]:-}" ]] || out+="${out:+; }${point_notes[$v]}"; done
  echo "$out"
}
first() { cut -d, -f"${2:-1}" <<<"$1"; }  # first "m,min,max,..." [FIELD]

sizes_bw=(64 256 1024 4096 16384 65536)
sizes_lat=(8 64 512 4096 16384 65536)
sizes_modes=(8 4096)
paced_rates=(200 1000 5000 20000 0)  # rounds a second the client offers; 0: back to back
paced_iters() {  # about 2.5 s a point at the offered rate, 500 to 10000 rounds; back to back 2000
  local n=$(($1 * 5 / 2))
  (($1 == 0)) && n=2000
  ((n < 500)) && n=500
  ((n > 10000)) && n=10000
  echo "$n"
}
modes=(poll event hybrid)
sizes_rows=(64 4096)  # 06's and 09's rows of the table, four clients together
rows_iters() { if [[ $1 == 64 ]]; then echo 20000; else echo 8000; fi; }
# Points per figure, for the time left: what the loops below measure.
plan 02 1
plan 04 $((${#sizes_bw[@]} * 2))
plan 05 $((${#sizes_lat[@]} * 3))
plan 06 $((1 + ${#sizes_rows[@]} * 2))
plan 08 $((${#sizes_modes[@]} * (${#modes[@]} + 2) + ${#modes[@]} * ${#paced_rates[@]}))
plan 09 $((1 + ${#sizes_rows[@]} * 3))
loss_rates=(0 0.1 0.5 1 2 5)  # percent of the packets each guest sends
sizes_loss=(4096 65536)
[[ $pair == 1 ]] && plan 10 $((${#loss_rates[@]} * ${#sizes_loss[@]}))

if wanted 02; then
  # Up to 64 MiB, the table's largest size, where the limit can be raised.
  memlock_kib=$( (ulimit -l 131072 2>/dev/null; ulimit -l) )
  f=$(csv_open 02-registration "size_bytes,reg_us,reg_us_min,reg_us_max" \
      "ibv_reg_mr + ibv_dereg_mr of one buffer, median of 5 per run (pd_mr's cost table, up to half the memlock limit: $memlock_kib KiB)")
  progress "02 registration" "4 KiB to 64 MiB"
  per_size registration_costs >>"$f.tmp"
  csv_close "$f"
fi

if wanted 04; then
  f=$(csv_open 04-write-rate "size_bytes,ours_mbps,ours_mbps_min,ours_mbps_max,ours_mpps,ours_mpps_min,ours_mpps_max,perftest_mbps,perftest_mbps_min,perftest_mbps_max,perftest_mpps,perftest_mpps_min,perftest_mpps_max" \
      "04 rdma_write --tx-depth 128 --cq-mod 100 beside ib_write_bw -t 128 -Q 100: message rate and bandwidth" \
      "calibration: an ib_write_bw run whose clock calibration failed (r^2 < 0.9; with -F it then prints 0 MB/s and 0 Mpps) is run again, at most three tries; after three it is left out, and its point is the median of the runs left (bench.sh's table and output name such points)")
  for s in "${sizes_bw[@]}"; do
    n=$(iters_for "$s")
    points "$s" ours "04 rdma_write" "ours_bw $s $n" theirs "04 ib_write_bw" "perftest_bw $s $n" || continue
    echo "$s,$ours,$theirs" >>"$f.tmp"
    table "04 rdma_write / ib_write_bw, Mpps" "$s" "$(first "$ours" 4)" "$(first "$theirs" 4)" "$(notes_of ours theirs)" \
      "$(turn_ratio "$s" "04 rdma_write" "04 ib_write_bw" 2)"
  done
  csv_close "$f"
  runs_csv 04-write-rate "mbps,mpps" "04 rdma_write" "04 ib_write_bw"
fi

if wanted 05; then
  f=$(csv_open 05-latency "size_bytes,ours_median_us,ours_median_us_min,ours_median_us_max,ours_p99_us,ours_p99_us_min,ours_p99_us_max,write_lat_median_us,write_lat_median_us_min,write_lat_median_us_max,write_lat_p99_us,write_lat_p99_us_min,write_lat_p99_us_max,send_lat_median_us,send_lat_median_us_min,send_lat_median_us_max,send_lat_p99_us,send_lat_p99_us_min,send_lat_p99_us_max" \
      "05 write_imm --latency (1000 round trips) beside ib_write_lat and ib_send_lat: one-way latency, median and 99 %")
  for s in "${sizes_lat[@]}"; do
    points "$s" ours "05 write_imm --latency" "ours_lat $s 1000" wl "05 ib_write_lat" "perftest_lat $s 1000" \
      sl "05 ib_send_lat" "perftest_send_lat $s 1000" || continue
    echo "$s,$ours,$wl,$sl" >>"$f.tmp"
    table "05 write_imm / ib_write_lat, median us" "$s" "$(first "$ours")" "$(first "$wl")" "$(notes_of ours wl)" \
      "$(turn_ratio "$s" "05 write_imm --latency" "05 ib_write_lat" 1)"
    table "05 write_imm / ib_send_lat, median us" "$s" "$(first "$ours")" "$(first "$sl")" "$(notes_of ours sl)" \
      "$(turn_ratio "$s" "05 write_imm --latency" "05 ib_send_lat" 1)"
  done
  csv_close "$f"
  runs_csv 05-latency "median_us,p99_us" "05 write_imm --latency" "05 ib_write_lat" "05 ib_send_lat"
fi

if wanted 06; then
  # One run: a timeline is not a median. The server prints every client's
  # count every 50 ms (--progress-ms).
  f=$(csv_open 06-greedy "time_ms,client,role,records" \
      "06 srq_credits, window 16: one greedy client (60000 records) and three fair ones (2000), the server's --progress-ms 50 lines of one run")
  sed -i 's/^# repetitions: .*/# repetitions: 1 (one run: a timeline has no median)/' "$f.tmp"
  progress "06 greedy client" "one run"
  out=$(mktemp)
  on_server "$build/subprojects/06_srq_credits/srq_credits" --progress-ms 50 >"$out" 2>&1 &
  spid=$! pids=()
  "$build/subprojects/06_srq_credits/srq_credits" -s "$server_addr" --records 60000 --wait-ms 30000 >/dev/null 2>&1 &
  pids+=($!)
  # The fair ones start once the greedy one has joined (the server's
  # "client 1" line) and has streamed alone for a moment.
  for _ in $(seq 100); do grep -q '^client 1 ' "$out" && break; sleep 0.1; done
  sleep 0.2
  for _ in 1 2 3; do
    "$build/subprojects/06_srq_credits/srq_credits" -s "$server_addr" --records 2000 --wait-ms 30000 >/dev/null 2>&1 &
    pids+=($!)
  done
  ok=1
  for p in "${pids[@]}" "$spid"; do wait "$p" || ok=0; done
  if [[ $ok == 1 ]]; then
    # A client's role is what it sent: the one that ends at 60000 is greedy.
    awk -v greedy=60000 '
      $1 == "progress" { for (i = 4; i <= NF; i++) { split($i, kv, ":"); line[++n] = $2 "," kv[1]; count[n] = kv[2]; last[kv[1]] = kv[2] } }
      END { for (i = 1; i <= n; i++) { split(line[i], tc, ","); print line[i] "," (last[tc[2]] == greedy ? "greedy" : "fair") "," count[i] } }' "$out" >>"$f.tmp"
    csv_close "$f"
  else
    echo "bench: the greedy-client run failed:" >&2; cat "$out" >&2; rm -f "$f.tmp"; status=1
  fi
  rm -f "$out"
  for s in "${sizes_rows[@]}"; do
    n=$(rows_iters "$s")
    points "$s" ours "06 srq_credits x4" "ours_srq $s $n" theirs "06 ib_send_bw -q 4 --use-srq" "perftest_srq $s $n" || continue
    table "06 srq_credits x4 / ib_send_bw -q 4 --use-srq, Mpps" "$s" "$(first "$ours")" "$(first "$theirs")" "$(notes_of ours theirs)" \
      "$(turn_ratio "$s" "06 srq_credits x4" "06 ib_send_bw -q 4 --use-srq" 1)"
  done
fi

if wanted 08; then
  f=$(csv_open 08-modes "mode,size_bytes,median_us,median_us_min,median_us_max,p99_us,p99_us_min,p99_us_max,cpu_us_per_msg,cpu_us_per_msg_min,cpu_us_per_msg_max,wakeups_per_msg,wakeups_per_msg_min,wakeups_per_msg_max" \
      "08 event_channel, both sides in one mode, 1000 rounds of Sends; the client's CPU (getrusage) and wake-ups; ib_send_lat beside it")
  for s in "${sizes_modes[@]}"; do
    # The three modes and both perftest runs take turns (points).
    v_poll="" v_event="" v_hybrid="" v_sl="" v_sle=""
    points "$s" v_poll "08 --poll" "ours_mode poll $s 1000" v_event "08 --event" "ours_mode event $s 1000" \
      v_hybrid "08 --hybrid" "ours_mode hybrid $s 1000" v_sl "08 ib_send_lat" "perftest_send_lat $s 1000" \
      v_sle "08 ib_send_lat -e" "perftest_event_lat $s 1000"
    for m in "${modes[@]}"; do
      v="v_$m"
      [[ -n "${!v}" ]] && echo "--$m,$s,${!v}" >>"$f.tmp"
    done
    [[ -n "$v_sl" ]] && echo "ib_send_lat,$s,$v_sl,,,,,," >>"$f.tmp"
    if [[ -n "$v_sle" ]]; then
      echo "ib_send_lat -e,$s,$v_sle,,,,,," >>"$f.tmp"
      [[ -n "$v_event" ]] && table "08 event_channel --event / ib_send_lat -e, median us" "$s" "$(first "$v_event")" "$(first "$v_sle")" \
        "$(notes_of v_event v_sle)" "$(turn_ratio "$s" "08 --event" "08 ib_send_lat -e" 1)"
    fi
    [[ -n "$v_poll" && -n "$v_sl" ]] && table "08 event_channel --poll / ib_send_lat, median us" "$s" "$(first "$v_poll")" "$(first "$v_sl")" \
      "$(notes_of v_poll v_sl)" "$(turn_ratio "$s" "08 --poll" "08 ib_send_lat" 1)"
  done
  csv_close "$f"
  runs_csv 08-modes "median_us,p99_us,cpu_us_per_msg,wakeups_per_msg" "08 --poll" "08 --event" "08 --hybrid" \
    "08 ib_send_lat" "08 ib_send_lat -e"
  f=$(csv_open 08-paced "mode,rate_per_s,iters,median_us,median_us_min,median_us_max,p99_us,p99_us_min,p99_us_max,server_cpu_s_per_s,server_cpu_s_per_s_min,server_cpu_s_per_s_max,server_cpu_us_per_msg,server_cpu_us_per_msg_min,server_cpu_us_per_msg_max,late_share,late_share_min,late_share_max,achieved_per_s,achieved_per_s_min,achieved_per_s_max" \
      "08 event_channel --rate: the client starts a round rate_per_s times a second (0: back to back), both sides in one mode, 8 B; the client's latency (half its post-to-answer time), rounds started late and achieved; the server's CPU (getrusage)")
  for m in "${modes[@]}"; do
    for r in "${paced_rates[@]}"; do
      n=$(paced_iters "$r")
      v=""
      point v "08 paced --$m, rate $r/s" 8 ours_paced "$m" "$r" "$n" && echo "--$m,$r,$n,$v" >>"$f.tmp"
    done
  done
  csv_close "$f"
fi

if wanted 09; then
  f=$(csv_open 09-pool-cost "size_bytes,reg_us,reg_us_min,reg_us_max,pool_us,pool_us_min,pool_us_max" \
      "09 mempool --pool-cost --cost-runs 5: ibv_reg_mr + ibv_dereg_mr per message against the pool's alloc + release")
  progress "09 pool cost" "4 KiB to 4 MiB"
  per_size pool_costs >>"$f.tmp"
  csv_close "$f"
  for s in "${sizes_rows[@]}"; do
    n=$(rows_iters "$s")
    points "$s" ours "09 mempool x4" "ours_pipeline $s $n" se "09 ib_send_bw -e -q 4 --use-srq" "perftest_send_event_srq $s $n" \
      wq "09 ib_write_bw -q 4" "perftest_write_q4 $s $n" || continue
    table "09 mempool x4 / ib_send_bw -e -q 4 --use-srq, Mpps" "$s" "$(first "$ours")" "$(first "$se")" "$(notes_of ours se)" \
      "$(turn_ratio "$s" "09 mempool x4" "09 ib_send_bw -e -q 4 --use-srq" 1)"
    table "09 mempool x4 / ib_write_bw -q 4, Mpps" "$s" "$(first "$ours")" "$(first "$wq")" "$(notes_of ours wq)" \
      "$(turn_ratio "$s" "09 mempool x4" "09 ib_write_bw -q 4" 1)"
  done
fi

# Figure 10: 04's writes and ib_write_bw on a wire that loses packets at
# random. The retry settings are the same for both: perftest's RC QPs get
# retry_cnt 7 (fixed in its code) and the ACK timeout -u (default 14, 67 ms),
# so 04 is given --retry-cnt 7 --ack-timeout 14; on Soft-RoCE retry_cnt 7
# retries forever. Each side of a run gets loss_limit seconds, about three
# times the slowest point (64 KiB at 5 %, 6 to 10 s here): a run that hangs
# is recorded as failed, with the reason, and the figure goes on.
loss_limit=30
ours_lossy() {  # ours_lossy SIZE ITERS -> MB/s
  local run_limit=$loss_limit wait_ms=$((loss_limit * 1000))
  # --wait-ms: the server waits for the notice and the client for each
  # completion at most this long (5 s by default, less than a lossy run).
  pair_run "$build/subprojects/04_rdma_write/rdma_write --size $1 --wait-ms $wait_ms" \
    "$build/subprojects/04_rdma_write/rdma_write -s $server_addr --size $1 --iters $2 --tx-depth 128 --cq-mod 100 --retry-cnt 7 --ack-timeout 14 --wait-ms $wait_ms" |
    awk -v s="$1" '$1 == s && NF == 4 { print $3 }'
}
perftest_lossy() {  # perftest_lossy SIZE ITERS -> MB/s (BW average), or "uncalibrated" (perftest_line)
  local run_limit=$loss_limit
  # lossy_run, not perftest_run, tries again: it reads the counters around each try.
  pair_run "ib_write_bw -d $dev -x $gid_index -F -s $1 -n $2 -t 128 -Q 100 -u 14" \
    "ib_write_bw -d $dev -x $gid_index -F -s $1 -n $2 -t 128 -Q 100 -u 14 $server_addr" | perftest_line "$1" 2
}
# What the sending side's rxe0 counted: completer_retry_err is one go-back
# (a resend from the oldest unacknowledged packet, after a NAK or an ACK
# timeout), sent_pkts every packet it sent, resends included.
sender_counters() {
  local d=/sys/class/infiniband/$dev/ports/1/hw_counters
  echo "$(<"$d/completer_retry_err") $(<"$d/sent_pkts")"
}
# lossy_run FN SIZE ITERS -> "MB/s retries sent_pkts", or "failed: WHY";
# before it an "again: WHY" line for each run that measured nothing and was
# run again (three tries in all).
lossy_run() {
  local before after line err why try
  err=$(mktemp)
  for try in 1 2 3; do
    before=$(sender_counters)
    line=$("$1" "$2" "$3" 2>"$err")
    after=$(sender_counters)
    [[ "$line" == uncalibrated ]] || break
    echo "again: its clock calibration failed: r^2 < 0.9 and 0 MB/s printed"
  done
  if [[ "$line" == uncalibrated ]]; then
    echo "failed: $try clock calibrations failed"
  elif [[ -n "$line" ]]; then
    echo "$line $(awk -v b="$before" -v a="$after" 'BEGIN { split(b, x, " "); split(a, y, " "); print y[1] - x[1], y[2] - x[2] }')"
  else
    # The completion status a program printed, or pair_run's own words.
    why=$(grep -oE 'IBV_WC_[A-Z_]+|did not end within [0-9]+ s' "$err" | head -n1)
    [[ -n "$why" ]] || why=$(grep -v '^bench: ' "$err" | grep -m1 . || true)
    echo "failed: ${why:-no result line}" | tr ',' ';'
  fi
  rm -f "$err"
}
# set_loss PERCENT: netem on both ends of the wire; clear_loss prints the
# RoCE packets both guests sent and how many of them netem dropped.
set_loss() {
  scripts/impair.sh --netem "loss $1%" && on_server scripts/impair.sh --netem "loss $1%"
}
clear_loss() {
  { scripts/impair.sh --report; on_server bash -c 'scripts/impair.sh --report; scripts/impair.sh --clear'; } |
    awk '/RoCE packets this guest sent/ { sent += $3; if ($0 ~ /netem dropped/) lost += $(NF - 1) }
         END { print sent + 0, lost + 0 }'
  scripts/impair.sh --clear
}
# loss_iters SIZE PERCENT: writes per run, a budget of bytes that shrinks as
# the loss grows (8 MiB to 0.1 %, 4 MiB to 1 %, 2 MiB above), so that even
# the lowest rate sees dozens of losses per run and the highest ends within
# seconds.
loss_iters() {
  local budget=$((2 << 20))
  awk -v p="$2" 'BEGIN { exit !(p <= 1) }' && budget=$((4 << 20))
  awk -v p="$2" 'BEGIN { exit !(p <= 0.1) }' && budget=$((8 << 20))
  echo $((budget / $1))
}
# What went wrong at a point, from its runs' lines: "WHO: N of M runs
# failed (WHY; WHY)", "WHO: N runs repeated (WHY)", or nothing. No commas:
# the note is the CSV's last field.
failures_of() {
  awk -v who="$2" '
    /^failed: / { n++; sub(/^failed: /, ""); if (!($0 in f)) { f[$0]; fw = fw (fw ? "; " : "") $0 } }
    /^again: / { a++; sub(/^again: /, ""); if (!($0 in g)) { g[$0]; aw = aw (aw ? "; " : "") $0 } next }
    { runs++ }
    END { if (n) out = sprintf("%d of %d runs failed (%s)", n, runs, fw)
          if (a) out = out (out ? "; " : "") sprintf("%d run%s repeated (%s)", a, a == 1 ? "" : "s", aw)
          if (out) print who ": " out }' "$1"
}

if wanted 10 && [[ $pair == 0 ]]; then
  echo "bench: figure 10-loss left out: it needs --pair (its losses are made on the wire between two guests)" >&2
elif wanted 10; then
  mtu=$(ibv_devinfo -d "$dev" 2>/dev/null | awk '$1 == "active_mtu:" { print $2; exit }')
  f=$(csv_open 10-loss "loss_pct,size_bytes,iters,ours_mbps,ours_mbps_min,ours_mbps_max,perftest_mbps,perftest_mbps_min,perftest_mbps_max,ours_retries,ours_retries_min,ours_retries_max,perftest_retries,perftest_retries_min,perftest_retries_max,ours_sent_pkts,ours_sent_pkts_min,ours_sent_pkts_max,perftest_sent_pkts,perftest_sent_pkts_min,perftest_sent_pkts_max,ours_failed,perftest_failed,wire_sent_pkts,wire_lost_pkts,note" \
      "04 rdma_write --tx-depth 128 --cq-mod 100 --retry-cnt 7 --ack-timeout 14 beside ib_write_bw -t 128 -Q 100 -u 14, the same writes on a wire that loses packets at random" \
      "loss: tc netem 'loss P%' on both guests' eth0 (scripts/impair.sh), each packet either way lost with probability P, cleared after each point" \
      "retries: the same for both; perftest's RC QP has retry_cnt 7 (in its code) and ACK timeout -u 14 (4.096 us x 2^14: 67 ms), so 04 is given --retry-cnt 7 --ack-timeout 14; retry_cnt 7 on Soft-RoCE retries forever" \
      "iters: writes per run, the same for both programs: 8 MiB of writes up to 0.1 % loss, 4 MiB up to 1 %, 2 MiB above; path MTU ${mtu:-unknown} bytes, so a write is size / MTU packets" \
      "counters: _retries and _sent_pkts are the sending guest's rxe0 hw_counters completer_retry_err (go-backs: resends after a NAK or an ACK timeout) and sent_pkts over one run; wire_ counts are the RoCE packets both guests sent and netem dropped at that loss rate, both sizes and every run of both programs together" \
      "failed: runs with no result (a completion error or no end within $loss_limit s), left out of the medians and named in the note; a point with no run left has empty values; an ib_write_bw run whose clock calibration failed (it then prints 0 MB/s) is run again, at most three tries, and the note says so")
  # One run of each, lossless and not counted: a fresh guest's first runs are slow.
  lossy_run ours_lossy 4096 512 >/dev/null
  lossy_run perftest_lossy 4096 512 >/dev/null
  for p in "${loss_rates[@]}"; do
    if ! set_loss "$p"; then
      scripts/impair.sh --clear
      echo "bench: could not make the wire lose $p % of the packets (scripts/impair.sh, above): figure 10 stops here" >&2
      status=1; break
    fi
    rows=()  # this loss rate's rows, their numbers and their note apart ("NUMBERS|NOTE")
    for s in "${sizes_loss[@]}"; do
      n=$(loss_iters "$s" "$p")
      progress "10 loss $p %" "$s bytes, $n writes"
      ours_runs=$(mktemp) theirs_runs=$(mktemp)
      # Ours and perftest's in turns, so that the load of the machine
      # weighs on both alike.
      for _ in $(seq "$reps"); do
        lossy_run ours_lossy "$s" "$n" >>"$ours_runs"
        lossy_run perftest_lossy "$s" "$n" >>"$theirs_runs"
      done
      ours=$(grep -vE '^(failed|again): ' "$ours_runs" | spread) || ours=",,,,,,,,"
      theirs=$(grep -vE '^(failed|again): ' "$theirs_runs" | spread) || theirs=",,,,,,,,"
      note=$(failures_of "$ours_runs" "04")
      theirs_note=$(failures_of "$theirs_runs" "ib_write_bw")
      [[ -n "$note" && -n "$theirs_note" ]] && note+="; "
      note+=$theirs_note
      [[ -z "$note" ]] || echo "bench: 10 loss $p %, $s bytes: $note" >&2
      # The CSV's column order: MB/s, retries, packets of ours then of theirs.
      IFS=, read -r om omn omx orr orn orx osp osn osx <<<"$ours"
      IFS=, read -r tm tmn tmx trr trn trx tsp tsn tsx <<<"$theirs"
      rows+=("$p,$s,$n,$om,$omn,$omx,$tm,$tmn,$tmx,$orr,$orn,$orx,$trr,$trn,$trx,$osp,$osn,$osx,$tsp,$tsn,$tsx,$(grep -c '^failed: ' "$ours_runs"),$(grep -c '^failed: ' "$theirs_runs")|$note")
      table "10 rdma_write / ib_write_bw at $p % loss, MB/s" "$s" "${om:--}" "${tm:--}"
      rm -f "$ours_runs" "$theirs_runs"
    done
    # What the wire lost, for both sizes together: one call to the peer.
    read -r wire_sent wire_lost < <(clear_loss)
    for r in "${rows[@]}"; do echo "${r%%|*},$wire_sent,$wire_lost,${r#*|}" >>"$f.tmp"; done
  done
  csv_close "$f"
fi

# ratio: of the medians; in turns: the median of the ratios of each
# turn's two runs (their smallest and largest, how many turns had both).
printf '%-44s %6s %12s %12s %7s %-22s\n' "row" "size" "ours" "perftest" "ratio" "in turns"
cat "$summary"
rm -f "$summary" "$all_runs"
echo "bench: $((($(date +%s) - started) / 60)) min $((($(date +%s) - started) % 60)) s"
exit "$status"
