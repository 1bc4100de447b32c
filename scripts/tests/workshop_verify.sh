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
total=${#files[@]}
failures=0
for mode in shipped reference; do
  args=(verify "$stage"); [[ $mode == reference ]] && args+=(--reference)
  out=$(WORKSHOP_STATE=$state BUILD_DIR=$build scripts/workshop.sh "${args[@]}" 2>&1); status=$?
  printf '%s\n' "$out" | sed "s/^/  $mode | /"
  if [[ $status -eq 0 && $total -gt 0 ]] && grep -q "^$total of $total as expected" <<<"$out"; then
    echo "ok: verify $stage ($mode): $total of $total as expected"
  else
    echo "FAILED: verify $stage ($mode): exit $status, not $total of $total as expected"
    failures=$((failures + 1))
  fi
done
# What verify saw of the shipped files is the learner's progress too: all still broken.
[[ "$(grep -c '"verdict": "still broken"' "$state/progress.json" 2>/dev/null)" == "$total" ]] ||
  { echo "FAILED: the progress file should hold $total still-broken verdicts"; failures=$((failures + 1)); }
[[ $failures -eq 0 ]]
