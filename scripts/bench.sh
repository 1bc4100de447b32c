#!/usr/bin/env bash
# Our programs beside perftest on the same device, in the same run, with the
# same sizes and depths; prints our figure, perftest's, and the ratio.
#
#   scripts/bench.sh            in one Soft-RoCE guest (or here, with an RDMA port)
#   scripts/bench.sh --pair     across two guests on a virtual wire
#   scripts/bench.sh --reps N   runs per row (default 3; the median counts)
#   scripts/bench.sh --only 06  only the rows whose label starts with this
#
# Rows: 04's throughput mode beside ib_write_bw, message rate at 64 B and
# 4 KiB (depth 128, one completion in 100): ratio ours/theirs, higher is
# better. 05's latency mode beside ib_write_lat, median one-way latency
# (t_typical) at 8 B and 4 KiB, 1000 round trips: ratio ours/theirs, lower
# is better. 06's four clients on one SRQ beside ib_send_bw -q 4 --use-srq
# (four QPs on one SRQ, Sends), every message together, at 64 B and 4 KiB,
# each client with a window of 64 (perftest keeps 128 sends in flight):
# higher is better. 08's --event mode beside ib_send_lat -e (both sides asleep on
# a completion channel), median one-way latency at 8 B. 09's pipeline (four
# clients writing records with Write with Immediate into pooled slots, the
# server asleep on a completion channel, window 64) beside ib_send_bw -e -q 4
# --use-srq (the same notification model: four QPs on one SRQ, the server
# woken by events) and beside ib_write_bw -q 4 (plain writes, no
# notification at all), at 64 B and 4 KiB: higher is better. Soft-RoCE in an
# emulated guest says nothing about real hardware: only the ratios mean
# something, and no test ever passes or fails on them.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(repo_root)"
build="${BUILD_DIR:-build}"

pair=0 reps=3 only="" args=("$@")
while [[ $# -gt 0 ]]; do
  case "$1" in
    --pair) pair=1; shift ;;
    --only) [[ -n "${2:-}" ]] || { echo "bench: --only needs a row prefix" >&2; exit 2; }; only=$2; shift 2 ;;
    --reps) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "bench: --reps needs a count" >&2; exit 2; }; reps=$2; shift 2 ;;
    -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "bench: unknown option '$1'" >&2; exit 2 ;;
  esac
done

if [[ -z "${RXE_VM:-}" ]]; then
  build_tree "$build" || { echo "bench: the build failed" >&2; exit 1; }
  command -v ib_write_bw >/dev/null || { echo "bench: perftest is missing (scripts/install_deps.sh)" >&2; exit 1; }
  if [[ $pair == 1 ]]; then exec scripts/rxe_vm.sh --pair --timeout 1200 -- scripts/bench.sh "${args[@]}"; fi
  if ! have_active_port; then exec scripts/rxe_vm.sh --timeout 1200 -- scripts/bench.sh "${args[@]}"; fi
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

# The RoCE v2 IPv4 GID's index (perftest's -x), read from sysfs.
dev=$(ls /sys/class/infiniband | head -n1)
gid_index=""
for g in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
  i=${g##*/}
  [[ $(cat "$g") == 0000:0000:0000:0000:0000:ffff:* ]] || continue
  [[ $(cat /sys/class/infiniband/"$dev"/ports/1/gid_attrs/types/"$i" 2>/dev/null) == "RoCE v2" ]] && { gid_index=$i; break; }
done
[[ -n "$gid_index" ]] || { echo "bench: $dev has no RoCE v2 IPv4 GID" >&2; exit 1; }

# Starts a server with on_server in the background, then runs the client
# until it connects (perftest's client does not retry by itself).
pair_run() {  # pair_run "SERVER..." "CLIENT..." -> client's output on stdout
  local server=$1 client=$2 out status
  on_server $server >/dev/null 2>&1 &
  local spid=$!
  for _ in $(seq 50); do
    out=$($client 2>&1); status=$?
    [[ $status -eq 0 ]] && break
    grep -qiE 'refused|Couldn.t connect|Unable to open file descriptor' <<<"$out" || break
    sleep 0.2
  done
  wait "$spid"
  [[ $status -eq 0 ]] || { echo "bench: '$client' failed:" >&2; echo "$out" >&2; return 1; }
  echo "$out"
}

ours_bw() {  # ours_bw SIZE ITERS -> Mpps
  pair_run "$build/subprojects/04_rdma_write/rdma_write --size $1" \
    "$build/subprojects/04_rdma_write/rdma_write -s $server_addr --size $1 --iters $2 --tx-depth 128 --cq-mod 100" |
    awk -v s="$1" '$1 == s && NF == 4 { print $4 }'
}
perftest_bw() {  # perftest_bw SIZE ITERS -> Mpps (the last column of its result line)
  pair_run "ib_write_bw -d $dev -x $gid_index -F -s $1 -n $2 -t 128 -Q 100" \
    "ib_write_bw -d $dev -x $gid_index -F -s $1 -n $2 -t 128 -Q 100 $server_addr" |
    awk -v s="$1" '$1 == s && NF >= 5 { print $NF }'
}
ours_lat() {  # ours_lat SIZE ITERS -> t_typical (us)
  pair_run "$build/subprojects/05_write_imm/write_imm --size $1" \
    "$build/subprojects/05_write_imm/write_imm -s $server_addr --size $1 --latency --iters $2" |
    awk -v s="$1" '$1 == s && NF >= 9 { print $5 }'
}
perftest_lat() {  # perftest_lat SIZE ITERS -> t_typical (us)
  pair_run "ib_write_lat -d $dev -x $gid_index -F -s $1 -n $2" \
    "ib_write_lat -d $dev -x $gid_index -F -s $1 -n $2 $server_addr" |
    awk -v s="$1" '$1 == s && NF >= 9 { print $5 }'
}
ours_event_lat() {  # ours_event_lat SIZE ITERS -> t_typical (us), both sides asleep on events
  pair_run "$build/subprojects/08_event_channel/event_channel --event" \
    "$build/subprojects/08_event_channel/event_channel -s $server_addr --event --size $1 --iters $2" |
    awk -v s="$1" '$1 == s && NF >= 9 { print $5 }'
}
perftest_event_lat() {  # perftest_event_lat SIZE ITERS -> t_typical (us), ib_send_lat -e
  pair_run "ib_send_lat -d $dev -x $gid_index -F -e -s $1 -n $2" \
    "ib_send_lat -d $dev -x $gid_index -F -e -s $1 -n $2 $server_addr" |
    awk -v s="$1" '$1 == s && NF >= 9 { print $5 }'
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
  pair_run "ib_send_bw -d $dev -x $gid_index -F -s $1 -n $(($2 / 4)) -q 4 --use-srq" \
    "ib_send_bw -d $dev -x $gid_index -F -s $1 -n $(($2 / 4)) -q 4 --use-srq $server_addr" |
    awk -v s="$1" '$1 == s && NF >= 5 { print $NF }'
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
  pair_run "ib_send_bw -d $dev -x $gid_index -F -e -s $1 -n $(($2 / 4)) -q 4 --use-srq" \
    "ib_send_bw -d $dev -x $gid_index -F -e -s $1 -n $(($2 / 4)) -q 4 --use-srq $server_addr" |
    awk -v s="$1" '$1 == s && NF >= 5 { print $NF }'
}
perftest_write_q4() {  # -> Mpps: 4 QPs of plain RDMA Writes, nobody notified
  pair_run "ib_write_bw -d $dev -x $gid_index -F -s $1 -n $(($2 / 4)) -q 4" \
    "ib_write_bw -d $dev -x $gid_index -F -s $1 -n $(($2 / 4)) -q 4 $server_addr" |
    awk -v s="$1" '$1 == s && NF >= 5 { print $NF }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

echo "bench: $dev GID [$gid_index], $where, median of $reps run(s) per figure"
printf '%-40s %6s %12s %12s %7s\n' "row" "size" "ours" "perftest" "ratio"
status=0
row() {  # row LABEL SIZE ITERS OURS_FN THEIRS_FN
  local label=$1 size=$2 iters=$3 ours theirs scratch
  [[ -z "$only" || "$label" == "$only"* ]] || return 0
  scratch=$(mktemp)
  ours=$(for _ in $(seq "$reps"); do "$4" "$size" "$iters"; "$5" "$size" "$iters" >>"$scratch"; done | median)
  theirs=$(median <"$scratch"); rm -f "$scratch"
  if [[ -z "$ours" || -z "$theirs" ]]; then
    echo "bench: no figure for '$label' at $size bytes (ours '$ours', perftest '$theirs')" >&2; status=1; return
  fi
  printf '%-40s %6s %12s %12s %7s\n' "$label" "$size" "$ours" "$theirs" \
    "$(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }')"
}
row "04 rdma_write / ib_write_bw, Mpps" 64 20000 ours_bw perftest_bw
row "04 rdma_write / ib_write_bw, Mpps" 4096 5000 ours_bw perftest_bw
row "05 write_imm / ib_write_lat, median us" 8 1000 ours_lat perftest_lat
row "05 write_imm / ib_write_lat, median us" 4096 1000 ours_lat perftest_lat
row "06 srq_credits x4 / ib_send_bw -q 4 --use-srq, Mpps" 64 20000 ours_srq perftest_srq
row "06 srq_credits x4 / ib_send_bw -q 4 --use-srq, Mpps" 4096 8000 ours_srq perftest_srq
row "08 event_channel / ib_send_lat -e, median us" 8 1000 ours_event_lat perftest_event_lat
row "09 mempool x4 / ib_send_bw -e -q 4 --use-srq, Mpps" 64 20000 ours_pipeline perftest_send_event_srq
row "09 mempool x4 / ib_send_bw -e -q 4 --use-srq, Mpps" 4096 8000 ours_pipeline perftest_send_event_srq
row "09 mempool x4 / ib_write_bw -q 4, Mpps" 64 20000 ours_pipeline perftest_write_q4
row "09 mempool x4 / ib_write_bw -q 4, Mpps" 4096 8000 ours_pipeline perftest_write_q4
exit "$status"
