#!/usr/bin/env bash
# exercise suite: two learners on one machine's device check two-peer
# exercises at the same moment, each on the port of their own checkout
# (RDMA_TUTORIAL_PORT, which scripts/workshop.sh sets): learner A's broken
# no_recv_posted and learner B's fixed one (the stage's own server) run
# their servers and clients side by side, and each gets its own verdict:
# A still broken with the RNR error, B fixed. On one port the second server
# could not even listen (EADDRINUSE). The same for 07's rdma_cm port.
#   workshop_two_learners.sh SOURCE_ROOT BUILD_DIR
set -uo pipefail
cd "$1" || exit 1
build=$2
source scripts/lib.sh
have_active_port || { echo "SKIP: no active RDMA port here (run inside scripts/rxe_vm.sh)"; exit 77; }
check="$build/subprojects/common/exercise_check"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/two_learners.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0

both() {  # both EXERCISE.cpp BROKEN_PROGRAM FIXED_PROGRAM SYMPTOM
  RDMA_TUTORIAL_PORT=21101 "$check" "$1" "$2" >"$tmp/a.out" 2>&1 &
  local a=$!
  RDMA_TUTORIAL_PORT=21102 "$check" "$1" "$3" >"$tmp/b.out" 2>&1 &
  local b=$!
  wait "$a"; local sa=$?
  wait "$b"; local sb=$?
  if [[ $sa -eq 1 ]] && grep -q "^still broken: .*$4" "$tmp/a.out" && [[ $sb -eq 0 ]] && grep -q "^fixed: " "$tmp/b.out"; then
    echo "ok: $(basename "$1" .cpp): learner A still broken ($4), learner B fixed, at the same time"
  else
    echo "FAILED: $(basename "$1" .cpp) at the same time: A exit $sa, B exit $sb"
    sed 's/^/  A | /' "$tmp/a.out"; sed 's/^/  B | /' "$tmp/b.out"
    failures=$((failures + 1))
  fi
}
both 05_write_imm/exercises/no_recv_posted.cpp "$build/subprojects/05_write_imm/exercises/no_recv_posted" \
  "$build/subprojects/05_write_imm/write_imm" "IBV_WC_RNR_RETRY_EXC_ERR"
both 07_cm_events/exercises/no_responder_resources.cpp "$build/subprojects/07_cm_events/exercises/no_responder_resources" \
  "$build/subprojects/07_cm_events/cm_events" "waiting for the RDMA Read"
[[ $failures -eq 0 ]]
