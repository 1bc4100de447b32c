#!/usr/bin/env bash
# Checks one exercise: rebuilds, runs the stage built with your exercise file
# on a device (here, or in the Soft-RoCE guest), and says "fixed" or "still
# broken" with what it saw.
#
#   scripts/check_exercise.sh 01_devices/port_zero
#   scripts/check_exercise.sh --list
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(repo_root)"
build="${BUILD_DIR:-build}"

if [[ "${1:-}" == "--list" || $# -eq 0 ]]; then
  echo "exercises (scripts/check_exercise.sh STAGE/NAME):"
  for f in [0-9][0-9]_*/exercises/*.cpp; do
    [[ -e "$f" ]] || continue
    printf '  %-28s %s\n' "$(dirname "$(dirname "$f")")/$(basename "$f" .cpp)" \
      "$(sed -n 's|^// EXERCISE: ||p' "$f")"
  done
  exit 0
fi

stage="${1%%/*}"
name="${1#*/}"
source_file="$stage/exercises/$name.cpp"
[[ -f "$source_file" ]] || { echo "check_exercise: no exercise $1 (no $source_file); see --list" >&2; exit 2; }

build_tree "$build" || { echo "still broken: it does not compile (see the errors above)"; exit 1; }
on_device "$build/subprojects/common/exercise_check" "$source_file" "$build/subprojects/$stage/exercises/$name"
