#!/usr/bin/env bash
# check_exercise.sh --show-output labels each program's output by its role:
# the server's block under "server", each client's under "client" (numbered
# when there are several), never by process id, which across two guests
# says nothing of the order (and two guests can give the same one).
#   show_output_roles.sh SOURCE_ROOT BUILD_DIR EXERCISE CLIENTS
# Runs on a device (exercise suite) or in the pair's first guest (pair suite).
set -uo pipefail
cd "$1" || exit 1
build=$2 name=$3 clients=$4
source scripts/lib.sh
have_active_port || { echo "SKIP: no active RDMA port here (run inside scripts/rxe_vm.sh)"; exit 77; }
out=$(BUILD_DIR=$build RDMA_TUTORIAL_BUILT=exercises scripts/check_exercise.sh --show-output "$name" 2>&1)
printf '%s\n' "$out" | grep -E '^(---|still|fixed)' | cut -c1-160 | sed 's/^/  | /'
failures=0
expect() {  # expect WHAT REGEX: the labelled lines, in order, match REGEX
  if grep -E '^--- (server|client|program)' <<<"$out" | tr '\n' '|' | grep -qE "$2"; then echo "ok: $1"
  else echo "FAILED: $1"; failures=$((failures + 1)); fi
}
expect "the server's block should come first, labelled server (no -s on its command line)" '^--- server: [^|]*/'"$name"' [^|]*\|'
if [[ $clients == 1 ]]; then
  expect "its one client should follow, labelled client, with -s" '^--- server: [^|]*\|--- client: [^|]* -s [^|]*\|$'
else
  want='^--- server: [^|]*'
  for ((i = 1; i <= clients; i++)); do want+="\\|--- client $i: [^|]* -s [^|]*"; done
  expect "its $clients clients should follow, client 1 to $clients, each with -s" "$want\\|\$"
fi
[[ $failures -eq 0 ]]
