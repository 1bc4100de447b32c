#!/usr/bin/env bash
# "Set up Soft-RoCE and run me", for each stage: NN_stage/run.sh is a
# symlink to this script, and the folder it is called through names the stage.
#
#   01_devices/run.sh [ARGS...]                  the stage's program with ARGS
#   04_rdma_write/run.sh [ARGS...] [--client ARGS...]
#         two-peer stages: the server, then the client (-s 127.0.0.1, or for
#         rdma_cm from stage 07 on, the RDMA interface's address); ARGS
#         go to both, those after --client to the client only; each line of
#         output is labelled [server] or [client]
#   06_srq_credits/run.sh [ARGS...] [--client ARGS...]
#         stages whose server takes --clients N (06 on): the server with ARGS,
#         then N clients at once (default: the server's own default), each
#         with the ARGS after --client only, labelled [client 1], [client 2]...
#   04_rdma_write/run.sh --pair [ARGS...] [--client ARGS...]
#         the same across two hosts: two guests on a virtual wire, the server
#         on 192.0.2.2, the client on 192.0.2.1
#   04_rdma_write/run.sh --pair --capture FILE [ARGS...] [--client ARGS...]
#         and the RoCE v2 packets that crossed the wire: tcpdump on the first
#         guest's eth0 writes FILE (a pcap), then scripts/wire.py lists them,
#         one line each, decoded by tshark
#   04_rdma_write/run.sh --pair --drop N [--capture FILE] [ARGS...]
#         and a wire that loses packets on purpose (docs/10-lossy-wire.md):
#         --drop N          the Nth RoCE packet the client sends, once
#         --drop-from N     the client's Nth RoCE packet and all after it
#         --drop-every N    every Nth RoCE packet the client sends
#         --server-drop N, --server-drop-from N, --server-drop-every N
#                           the same for the packets the server sends
#                           (its ACKs and NAKs, for 04)
#         --netem 'ARGS'    tc netem on both guests' eth0: 'loss 1%',
#                           'delay 2ms', 'reorder 25% delay 2ms'
#         (scripts/impair.sh sets them up in each guest); after the run,
#         what each side lost
#   07_cm_events/run.sh --provider siw [--pair [--capture FILE]] [ARGS...]
#         on Soft-iWARP instead of Soft-RoCE: the guest (or the pair) gets
#         siw0 in place of rxe0 (scripts/rxe_vm.sh --provider siw); a
#         capture then holds the TCP segments the iWARP traffic rides in,
#         listed as MPA, DDP and RDMAP by scripts/wire.py. Stages that
#         cannot run on iWARP say so in one line (docs/moving-to-a-nic.md)
#   05_write_imm/run.sh --exercise NAME [ARGS...] [--client ARGS...]
#         an exercise's program (NAME.cpp in the stage's exercises/, as it
#         is now: shipped broken, or your fix) in place of the stage's own,
#         for both peers: with --pair --capture, its packets
#
# Builds first if needed (into $BUILD_DIR, default build/). Runs here when
# this machine has an ACTIVE RDMA port, otherwise inside the throwaway
# Soft-RoCE guest (scripts/rxe_vm.sh, about 10 s to boot; 30 s for --pair).
# Exits with the program's status (two peers: the first failure's).
set -uo pipefail

usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }
stage_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # the folder called through, not the link's target
stage=$(basename "$stage_dir")
root=$(cd "$stage_dir/.." && pwd)
source "$root/scripts/lib.sh"
cd "$root"
build="${BUILD_DIR:-build}"

program=$(awk -F'|' -v s="$stage" '!/^#/ { gsub(/ /, "", $1); gsub(/ /, "", $2); if ($1 == s) print $2 }' stages.txt)
if [[ -z "$program" ]]; then
  echo "run: call this script as NN_stage/run.sh (stages.txt lists the stages)" >&2
  exit 2
fi

pair=0 both=() client_only=() target=both capture="" want_capture=0 exercise="" want_exercise=0
provider="" want_provider=0
impair_client=() impair_server=() want_impair=""
for arg in "$@"; do
  case "$arg" in
    -h|--help) [[ $target == both ]] && { usage; exit 0; } ;;
  esac
  if [[ -n $want_impair ]]; then
    # --drop* and --server-drop* to one side's scripts/impair.sh, --netem to both
    case "$want_impair" in
      --server-*) impair_server+=("--${want_impair#--server-}" "$arg") ;;
      --netem) impair_client+=(--netem "$arg"); impair_server+=(--netem "$arg") ;;
      *) impair_client+=("$want_impair" "$arg") ;;
    esac
    want_impair=""
  elif [[ $target == both && "$arg" =~ ^--(server-)?drop(-from|-every)?$|^--netem$ ]]; then want_impair=$arg
  elif [[ $want_capture == 1 ]]; then capture=$arg; want_capture=0
  elif [[ $want_provider == 1 ]]; then provider=$arg; want_provider=0
  elif [[ "$arg" == --provider && $target == both ]]; then want_provider=1
  elif [[ $want_exercise == 1 ]]; then exercise=$arg; want_exercise=0
  elif [[ "$arg" == --capture && $target == both ]]; then want_capture=1
  elif [[ "$arg" == --exercise && $target == both ]]; then want_exercise=1
  elif [[ "$arg" == --pair && $target == both ]]; then pair=1
  elif [[ "$arg" == --client && $target == both ]]; then target=client_only
  elif [[ $target == both ]]; then both+=("$arg")
  else client_only+=("$arg"); fi
done

# Build on the host, once; inside the guest (or under scripts/tour.sh,
# which built already) the build is there.
if [[ -z "${RXE_VM:-}" && -z "${RDMA_TUTORIAL_BUILT:-}" ]]; then
  echo "run: building into $build/" >&2
  build_tree "$build" || { echo "run: the build failed" >&2; exit 1; }
fi
exe="$build/subprojects/$stage/$program"
if [[ $want_exercise == 1 ]]; then
  echo "run: --exercise takes an exercise's name (scripts/check_exercise.sh --list)" >&2
  exit 2
fi
if [[ -n "$exercise" ]]; then
  exercise=${exercise%.cpp}
  exercise=${exercise##*/}
  if [[ ! -f "$stage/exercises/$exercise.cpp" ]]; then
    echo "run: $stage has no exercise '$exercise' (scripts/check_exercise.sh --list shows them)" >&2
    exit 2
  fi
  # Exercises are built on demand (never by a plain ninja), here on the host.
  exe="$build/subprojects/$stage/exercises/$exercise"
  if [[ -z "${RXE_VM:-}" && "${RDMA_TUTORIAL_BUILT:-}" != exercises ]]; then
    log=$(ninja -C "$build" "subprojects/$stage/exercises/$exercise" 2>&1) ||
      { printf '%s\n' "$log" >&2; echo "run: exercise $exercise does not build" >&2; exit 1; }
  fi
  [[ -x "$exe" ]] || { echo "run: $exe is not built (ninja -C $build subprojects/$stage/exercises/$exercise, on the host)" >&2; exit 1; }
fi

two_peers=0 clients=0
help_text=$("$exe" --help 2>/dev/null)
grep -q -- '--server ADDR' <<<"$help_text" && two_peers=1
if grep -q -- '--clients N' <<<"$help_text"; then
  # How many clients the server waits for: --clients N, else its default.
  clients=$(sed -n 's/.*--clients N .*(default \([0-9]*\)).*/\1/p' <<<"$help_text")
  for ((i = 0; i < ${#both[@]}; i++)); do
    [[ ${both[i]} == --clients ]] && clients=${both[i + 1]:-}
  done
  [[ $clients =~ ^[1-9][0-9]*$ ]] || { echo "run: --clients needs a count" >&2; exit 2; }
fi
case "$want_provider:$provider" in
  1:*) echo "run: --provider takes rxe (Soft-RoCE) or siw (Soft-iWARP)" >&2; exit 2 ;;
  0:|0:rxe|0:siw) ;;
  *) echo "run: --provider takes rxe (Soft-RoCE) or siw (Soft-iWARP), got '$provider'" >&2; exit 2 ;;
esac
# Inside a guest (or on a machine with its own device) the device is what
# it is: a provider asked for must be the one there.
provider_here=${RXE_VM_PROVIDER:-}
if [[ -z "$provider_here" ]] && have_active_port; then
  provider_here=rxe
  compgen -G '/sys/class/infiniband/siw*' >/dev/null && ! compgen -G '/sys/class/infiniband/rxe*' >/dev/null && provider_here=siw
fi
if [[ -n "$provider" && -n "$provider_here" && "$provider" != "$provider_here" && ( -n "${RXE_VM:-}" || $pair == 0 ) ]]; then
  echo "run: --provider $provider, but this machine's RDMA device is ${provider_here}'s; run it where the guest boots (a machine without RDMA) or set up that device" >&2
  exit 2
fi
if [[ ( "$provider" == siw || "$provider_here" == siw ) && ${#impair_client[@]}${#impair_server[@]} != 00 ]]; then
  echo "run: --drop, --server-drop and --netem lose RoCE packets (UDP 4791); iWARP rides in TCP, which resends what is lost before RDMA sees it" >&2
  exit 2
fi
vm_provider=()
[[ -n "$provider" ]] && vm_provider=(--provider "$provider")
if [[ $want_capture == 1 || ( -n "$capture" && $pair == 0 ) ]]; then
  echo "run: --capture FILE goes with --pair: only packets between two guests cross a wire (rxe's loopback on one device reaches no netdev)" >&2
  exit 2
fi
if [[ -n $want_impair ]]; then
  echo "run: $want_impair needs a value (run.sh --help)" >&2
  exit 2
fi
if [[ $pair == 0 && ${#impair_client[@]}${#impair_server[@]} != 00 ]]; then
  echo "run: --drop, --server-drop and --netem go with --pair: they impair the wire between two guests" >&2
  exit 2
fi
if [[ $two_peers == 0 && ( $pair == 1 || ${#client_only[@]} -gt 0 ) ]]; then
  echo "run: $stage has one program and no peer; --pair and --client are for stages 04 on" >&2
  exit 2
fi

# Where the device is: here, or in the guest (which runs this same script).
if [[ $pair == 1 && -z "${RXE_VM_PEER_DIR:-}" ]]; then
  [[ -z "${RXE_VM:-}" ]] || { echo "run: --pair starts from the host, not from inside a guest" >&2; exit 2; }
  # The guest writes the capture where this machine reads it: a folder it
  # shares. One that cannot be written is refused before any guest boots.
  if [[ -n "$capture" ]] && ! { mkdir -p "$(dirname "$capture")" && touch "$capture"; } 2>/dev/null; then
    echo "run: cannot write the capture to $capture: name a file in a folder you can write to" >&2
    exit 2
  fi
  echo "run: booting two $([[ $provider == siw ]] && echo Soft-iWARP || echo Soft-RoCE) guests joined by a virtual wire" >&2
  [[ -n "$capture" ]] || exec scripts/rxe_vm.sh --pair "${vm_provider[@]}" -- "$stage/run.sh" "$@"
  capture=$(cd "$(dirname "$capture")" && pwd -P)/$(basename "$capture")
  share=()
  [[ $capture == "$root"/* ]] || share=(--share "$(dirname "$capture")")
  rm -f "$capture"
  args=()
  skip=0
  for arg in "$@"; do
    if [[ $skip == 1 ]]; then args+=("$capture"); skip=0; else args+=("$arg"); [[ $arg == --capture ]] && skip=1; fi
  done
  scripts/rxe_vm.sh --pair "${vm_provider[@]}" "${share[@]}" -- "$stage/run.sh" "${args[@]}"
  status=$?
  if [[ $provider == siw ]]; then
    echo "run: the iWARP traffic on the wire, its TCP segments as MPA, DDP and RDMAP ($capture; c>s is the client, 192.0.2.1):"
  else
    echo "run: the RoCE v2 packets on the wire ($capture; c>s is the client, 192.0.2.1):"
  fi
  lossy=()
  [[ ${#impair_client[@]} -eq 0 && ${#impair_server[@]} -eq 0 ]] || lossy=(--lossy)
  scripts/wire.py "${lossy[@]}" "$capture" || [[ $status -ne 0 ]] || status=1
  exit "$status"
fi
if [[ $pair == 0 ]] && ! have_active_port; then
  echo "run: no active RDMA port here; running in the $([[ $provider == siw ]] && echo Soft-iWARP || echo Soft-RoCE) guest" >&2
  exec scripts/rxe_vm.sh "${vm_provider[@]}" -- "$stage/run.sh" "$@"
fi

if [[ $two_peers == 0 ]]; then
  exec "$exe" "${both[@]}"
fi

label() { sed -u "s/^/[$1] /"; }
# The impairments first (before tcpdump: a capture shows only what the
# wire carried). The server's are set through its agent, before it starts.
# With them, what the losses moved on each side (scripts/hw_counters.sh):
# NAKs, duplicates and retries are counted by the devices, not the
# programs. The server's side in one call to its agent before the run and
# one after (each costs seconds under TCG).
impaired=$(( ${#impair_client[@]} + ${#impair_server[@]} ))
if [[ $impaired -gt 0 ]]; then
  if [[ ${#impair_client[@]} -gt 0 ]]; then scripts/impair.sh "${impair_client[@]}" || exit 2; fi
  scripts/hw_counters.sh -d rxe0 --save /tmp/run_hw_counters || exit 2
  scripts/on_peer.sh --timeout 60 -- bash -c '[[ $# -eq 0 ]] || scripts/impair.sh "$@" || exit 2
    scripts/hw_counters.sh -d rxe0 --save /tmp/run_hw_counters' bash "${impair_server[@]}" || exit 2
fi
capture_pid=""
if [[ -n "$capture" ]]; then
  # Both directions on the wire (RoCE v2 is UDP port 4791, rdma_cm's MADs
  # included). --immediate-mode hands tcpdump each packet as it comes and
  # -U writes it at once. Without the first, libpcap takes packets from the
  # kernel a block at a time (up to a second's worth), and a tcpdump stopped
  # right after a short exchange had seen none of it: "0 packets captured"
  # for 04's whole run, in two of four runs here. -s 2048 (a whole frame:
  # eth0's MTU is 1500): in immediate mode libpcap's ring holds 2 MiB in
  # frames of the snapshot length, 256 KiB by default, so eight packets at
  # most; a clean-clone run lost 3 of 06's 20 writes that way ("3 packets
  # dropped by kernel").
  # iWARP is TCP: every segment on the wire is the connection's (the
  # guests have nothing else on eth0; the pair's agent talks over 9p).
  filter="udp port 4791"
  [[ $provider_here == siw ]] && filter=tcp
  tcpdump -i eth0 --immediate-mode -U -s 2048 -B 4096 -w "$capture" "$filter" 2>"$capture.log" &
  capture_pid=$!
  for _ in $(seq 100); do grep -qs 'listening on' "$capture.log" && break; sleep 0.1; done
  grep -qs 'listening on' "$capture.log" || { echo "run: tcpdump did not start: $(cat "$capture.log")" >&2; kill "$capture_pid" 2>/dev/null; exit 1; }
fi
if [[ $pair == 1 ]]; then
  server_addr=192.0.2.2
  ( scripts/on_peer.sh --timeout 300 -- "$exe" "${both[@]}" 2>&1 | label server; exit "${PIPESTATUS[0]}" ) &
elif grep -q -- 'rdma_cm port' <<<"$help_text"; then
  # rdma_cm (stage 07 on) needs the address of an interface with an RDMA
  # device; 127.0.0.1 has none.
  server_addr=$(rdma_ipv4) || { echo "run: no IPv4 address on an RDMA interface; set RDMA_TUTORIAL_IPV4" >&2; exit 2; }
  ( stdbuf -oL "$exe" "${both[@]}" 2>&1 | label server; exit "${PIPESTATUS[0]}" ) &
else
  server_addr=127.0.0.1
  ( stdbuf -oL "$exe" "${both[@]}" 2>&1 | label server; exit "${PIPESTATUS[0]}" ) &
fi
server_pid=$!
# Across two guests the server starts through the peer agent, which takes
# seconds on a busy host: unless told otherwise, the clients retry their
# connect for 30 s instead of their default 5.
client_wait=()
if [[ $pair == 1 && " ${both[*]} ${client_only[*]} " != *" --wait-ms "* ]]; then client_wait=(--wait-ms 30000); fi
if [[ $clients -gt 0 ]]; then
  # Several clients at once; the first failure's status is kept.
  pids=()
  for ((i = 1; i <= clients; i++)); do
    ( stdbuf -oL "$exe" -s "$server_addr" "${client_wait[@]}" "${client_only[@]}" 2>&1 | label "client $i"; exit "${PIPESTATUS[0]}" ) &
    pids+=($!)
  done
  client_status=0
  for pid in "${pids[@]}"; do
    wait "$pid"; status=$?
    [[ $client_status -eq 0 ]] && client_status=$status
  done
else
  # The client retries its connect while the server starts (--wait-ms).
  stdbuf -oL "$exe" -s "$server_addr" "${client_wait[@]}" "${both[@]}" "${client_only[@]}" 2>&1 | label client
  client_status=${PIPESTATUS[0]}
fi
wait "$server_pid"
server_status=$?
if [[ -n "$capture_pid" ]]; then
  kill -INT "$capture_pid"; wait "$capture_pid"
  echo "run: tcpdump on eth0: $(grep -h 'captured\|dropped by kernel' "$capture.log" | paste -sd, -)" >&2
  dropped=$(sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel.*/\1/p' "$capture.log")
  [[ ${dropped:-0} -eq 0 ]] || echo "run: the capture misses $dropped packets tcpdump could not keep up with: the listing is incomplete" >&2
  rm -f "$capture.log"
fi
if [[ $impaired -gt 0 ]]; then
  counted() { sed -e '1s/^hw_counters that changed:/run: hw_counters that changed, '"$1"':/' -e 's/^rxe0 port 1 /  rxe0 port 1 /'; }
  scripts/hw_counters.sh -d rxe0 --since /tmp/run_hw_counters | counted "client (192.0.2.1)" >&2
  # The server's counters, then what its wire lost (a line starting "wire:").
  server_after=$(scripts/on_peer.sh --timeout 60 -- bash -c 'scripts/hw_counters.sh -d rxe0 --since /tmp/run_hw_counters
    [[ $1 == 0 ]] || { echo "wire: $(scripts/impair.sh --report)"; scripts/impair.sh --clear; }' bash "${#impair_server[@]}")
  grep -v '^wire: ' <<<"$server_after" | counted "server (192.0.2.2)" >&2
  if [[ ${#impair_client[@]} -gt 0 ]]; then
    echo "run: the wire, client (192.0.2.1): $(scripts/impair.sh --report)" >&2
    scripts/impair.sh --clear
  fi
  sed -n 's/^wire: /run: the wire, server (192.0.2.2): /p' <<<"$server_after" >&2
fi
if [[ $client_status -ne 0 || $server_status -ne 0 ]]; then
  echo "run: the server exited with $server_status, the client with $client_status" >&2
  [[ $client_status -ne 0 ]] && exit "$client_status"
  exit "$server_status"
fi
