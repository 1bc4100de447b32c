#!/usr/bin/env bash
# exercise suite: scripts/workshop.sh verify, as an instructor runs it the
# day before, for one stage's exercises (each stage registers its own):
# every one as shipped is still broken *with its own symptom*, and the
# stage's own code passes every one; each a table and an exit status. These
# are CI's proofs that each exercise fails unsolved and passes solved.
#   workshop_verify.sh SOURCE_ROOT BUILD_DIR STAGE
set -uo pipefail
cd "$1" || exit 1
build=$2 stage=$3
source scripts/lib.sh
have_active_port || { echo "SKIP: no active RDMA port here (run inside scripts/rxe_vm.sh)"; exit 77; }
state=$(mktemp -d "${TMPDIR:-/tmp}/workshop_verify.XXXXXX")
trap 'rm -rf "$state"' EXIT
shopt -s nullglob
files=("$stage"/exercises/*.cpp)
# Exercises across two hosts (a PAIR line) are the pair suite's: verify
# skips them in this guest, which has no second one.
total=0
for f in "${files[@]}"; do
  n=${f##*/}
  grep -q '^PAIR:' "$stage/exercises/checker/${n%.cpp}.check" || total=$((total + 1))
done
failures=0
# The tree and every exercise are built already (scripts/test.sh: ninja
# exercises, on the host): no ninja in the guest, where each run costs seconds.
out=$(WORKSHOP_STATE=$state BUILD_DIR=$build RDMA_TUTORIAL_BUILT=exercises scripts/workshop.sh verify --both "$stage" 2>&1)
status=$?
printf '%s\n' "$out" | sed 's/^/  | /'
for what in "every exercise is still broken" "the stages' own code passes every exercise"; do
  if [[ $total -gt 0 ]] && grep -qF "$total of $total as expected ($what)" <<<"$out"; then
    echo "ok: verify $stage: $total of $total as expected ($what)"
  else
    echo "FAILED: verify $stage: not $total of $total as expected ($what)"
    failures=$((failures + 1))
  fi
done
[[ $status -eq 0 ]] || { echo "FAILED: verify $stage --both exited $status"; failures=$((failures + 1)); }
# What verify saw of the shipped files is the learner's progress too: all still broken.
[[ "$(grep -c '"verdict": "still broken"' "$state/progress.json" 2>/dev/null)" == "$total" ]] ||
  { echo "FAILED: the progress file should hold $total still-broken verdicts"; failures=$((failures + 1)); }
[[ $failures -eq 0 ]]
