#!/usr/bin/env bash
# The vm suite: scripts/rxe_vm.sh itself, booting real guests on this host.
#   rxe_vm_test.sh BUILD_DIR
# Skips (77) where no guest can boot: no qemu, or no kernel with rdma_rxe.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build="$1"
vm=scripts/rxe_vm.sh

if [[ "${RXE_VM:-}" == 1 ]]; then echo "SKIP: already inside the guest"; exit 77; fi
source scripts/lib.sh
guest_available || { echo "SKIP: no guest can boot here (needs qemu-system-x86_64 and a kernel with rdma_rxe.ko)"; exit 77; }

failures=0
expect() {  # expect WHAT ACTUAL_STATUS WANTED_STATUS OUTPUT PATTERN
  local what="$1" status="$2" wanted="$3" output="$4" pattern="$5"
  if [[ "$status" == "$wanted" ]] && grep -qE -- "$pattern" <<<"$output"; then
    echo "ok: $what"
  else
    echo "FAILED: $what: exit status $status (wanted $wanted), output should match /$pattern/:"
    echo "$output" | sed 's/^/  | /'
    failures=$((failures + 1))
  fi
}

out=$($vm -- ibv_devinfo 2>&1); expect "ibv_devinfo in the guest shows rxe0 PORT_ACTIVE" $? 0 "$out" 'state:[[:space:]]+PORT_ACTIVE'
out=$($vm -- sh -c 'echo "$PWD"; exit 42' 2>&1); expect "the exit status and the directory come back from the guest" $? 42 "$out" "^$PWD\$"
out=$($vm -- false 2>&1); expect "a failing command makes rxe_vm.sh fail" $? 1 "$out" '.*'
out=$($vm --timeout 20 -- sleep 600 2>&1); expect "a hung command is ended by the time limit" $? 124 "$out" 'did not finish within 20s'
out=$($vm --no-rxe -- "$build/subprojects/01_devices/devices" 2>&1)
expect "with no rxe link, devices names the cause and the fix" $? 1 "$out" 'no RDMA device found: .*no Soft-RoCE link.*|setup_rxe.sh'
# setup_rxe.sh for real: a guest with dummy0 but no link gets one, twice (idempotent), the doctor agrees, --remove undoes it.
out=$($vm --no-rxe -- sh -c 'scripts/setup_rxe.sh && scripts/setup_rxe.sh && scripts/check_env.sh -q; scripts/setup_rxe.sh --remove && ls /sys/class/infiniband | wc -l' 2>&1)
expect "setup_rxe.sh adds rxe0 once, keeps it on a rerun, removes it" $? 0 "$out" 'already exists on dummy0'
expect "setup_rxe.sh reports the RoCE v2 IPv4 GID" 0 0 "$out" 'RoCE v2 IPv4 GID: index 1 +::ffff:192.0.2.1'
problems=$(grep -E '^(FAIL|WARN)' <<<"$out")
expect "the doctor finds nothing worse than the memlock warning" "$(wc -l <<<"$problems")" 1 "$problems" '^WARN memlock'
expect "after --remove no device is left" 0 0 "$(tail -n1 <<<"$out")" '^0$'
# --pair: two guests on a wire, each with its own rxe0; the first runs the
# command, the second what on_peer.sh hands it. One boot of the pair checks
# the peer's address and exit status, RDMA across the wire (ibv_rc_pingpong
# between the two GIDs), and that a peer command past its time is ended.
out=$($vm --pair --timeout 400 -- bash -c '
  scripts/on_peer.sh -- bash -c "echo peer at \$RXE_VM_IPV4, mine is \$RXE_VM_PEER_IPV4; exit 7"; echo "peer status $?"
  scripts/on_peer.sh --start pingpong -- ibv_rc_pingpong -g 1 -n 5
  for try in 1 2 3 4 5 6 7 8 9 10; do sleep 1; ibv_rc_pingpong -g 1 -n 5 "$RXE_VM_PEER_IPV4" && break; done
  echo "client status $?"
  scripts/on_peer.sh --wait pingpong --timeout 60; echo "server status $?"
  scripts/on_peer.sh --timeout 3 -- sleep 600; echo "sleeper status $?"
  scripts/on_peer.sh --start idle -- sleep 600; sleep 1
  start=$SECONDS; scripts/on_peer.sh --stop idle --timeout 60; echo "stopped status $? after $((SECONDS - start)) s"' 2>&1)
status=$?
expect "with --pair the command runs, and the peer answers from 192.0.2.2 with its exit status" $status 0 "$out" \
  '^peer at 192.0.2.2, mine is 192.0.2.1$'
expect "the peer's exit status comes back" 0 0 "$out" '^peer status 7$'
expect "RDMA crosses the wire: the client sees the server's GID ::ffff:192.0.2.2" 0 0 "$out" \
  'remote address: .*GID ::ffff:192.0.2.2$'
expect "both ends of ibv_rc_pingpong succeed" 0 0 "$(grep -E '^(client|server) status' <<<"$out" | paste -sd' ')" \
  '^client status 0 server status 0$'
expect "a peer command past its timeout is ended, with 124" 0 0 "$out" '^sleeper status 124$'
expect "--stop ends a started peer job at once (SIGTERM: 143)" 0 0 "$out" '^stopped status 143 after [0-9] s$'
out=$($vm -- scripts/rxe_vm.sh --pair -- true 2>&1)
expect "inside a single guest, --pair says there is no peer" $? 2 "$out" 'starts from the host'

# Each stage's run.sh (a link to scripts/run_stage.sh): builds, boots the
# guest where there is no RDMA, runs one program or both peers, labelled.
out=$(BUILD_DIR="$build" 01_devices/run.sh 2>&1)
expect "01_devices/run.sh runs devices in the guest" $? 0 "$out" 'state +PORT_ACTIVE'
out=$(BUILD_DIR="$build" 04_rdma_write/run.sh --pair --client --iters 50 2>&1); status=$?
expect "04_rdma_write/run.sh --pair runs the server on 192.0.2.2 and the client here" $status 0 "$out" \
  '^\[client\] server 192\.0\.2\.2:18515: qp_num '
expect "its server's output comes back labelled, with every write counted" 0 0 "$out" \
  '^\[server\] the client wrote 4096 bytes, 50 time\(s\)'
out=$(BUILD_DIR="$build" 02_pd_mr/run.sh --pair 2>&1)
expect "a one-program stage refuses --pair" $? 2 "$out" 'has one program and no peer'
out=$(scripts/run_stage.sh 2>&1)
expect "run_stage.sh called by its own name says how to call it" $? 2 "$out" 'call this script as NN_stage/run.sh'

# --provider siw (Soft-iWARP; its stages run in the siw suite): bad
# spellings refused before anything boots.
out=$($vm --provider roce -- true 2>&1)
expect "--provider takes rxe or siw, nothing else" $? 2 "$out" "takes rxe \(Soft-RoCE\) or siw \(Soft-iWARP\), got 'roce'"
out=$(BUILD_DIR="$build" 04_rdma_write/run.sh --pair --provider siw --drop 2 2>&1)
expect "run.sh refuses to lose packets on iWARP: TCP resends them before RDMA sees the loss" $? 2 "$out" 'iWARP rides in TCP'
# Inside a guest, the script runs the command only for the guest's own
# provider (what RXE_VM and RXE_VM_PROVIDER say there; a Soft-iWARP guest
# itself boots in the siw suite of scripts/test.sh and in the wire check).
out=$(RXE_VM=1 RXE_VM_PROVIDER=siw $vm --provider rxe -- true 2>&1)
expect "in a siw guest, --provider rxe says the guest has siw's device" $? 2 "$out" \
  "this guest's device is siw's; --provider rxe boots a guest from the host"
out=$(RXE_VM=1 RXE_VM_PROVIDER=siw $vm --provider siw -- sh -c 'echo ran here' 2>&1)
expect "in a siw guest, --provider siw just runs the command" $? 0 "$out" '^ran here$'

exit $((failures > 0))
