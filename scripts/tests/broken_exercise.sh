#!/usr/bin/env bash
# Build suite: a learner's half-edited exercise breaks nothing but itself.
# In a copy of one stage (and common/), port_zero.cpp is edited twice, as a
# learner might leave it: once with a warning, once with an error. Each time
# a plain ninja of the stage must stay green, and the checker must call the
# exercise still broken and show the compiler's message.
#   broken_exercise.sh SOURCE_ROOT
set -uo pipefail
source_root="$1"
stage=01_devices name=port_zero
tmp=$(mktemp -d "${TMPDIR:-/tmp}/broken_exercise.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp -a "$source_root/$stage" "$source_root/common" "$tmp/"   # $stage/subprojects/common -> ../../common
exercise="$tmp/$stage/exercises/$name.cpp"
original=$(cat "$exercise")
failures=0
expect() {  # expect WHAT STATUS WANTED OUTPUT PATTERN...: each pattern matches some line
  local what=$1 status=$2 wanted=$3 output=$4 ok=1
  shift 4
  [[ "$status" == "$wanted" ]] || ok=0
  for pattern in "$@"; do grep -qE -- "$pattern" <<<"$output" || ok=0; done
  if [[ $ok == 1 ]]; then echo "ok: $what"; return; fi
  echo "FAILED: $what: exit status $status (wanted $wanted), output should match each of: $*"; sed 's/^/  | /' <<<"$output"
  failures=$((failures + 1))
}
# plain: a warning or an error in the exercise is what matters, not -O2 (faster).
meson setup --werror -Dbuildtype=plain "$tmp/b" "$tmp/$stage" >"$tmp/setup.log" 2>&1 || { cat "$tmp/setup.log"; exit 1; }

for edit in warning error; do
  case $edit in
    warning) line='  int left_over = 0;' ;;   # unused variable
    error) line='  int left_over = ;' ;;
  esac
  printf '%s\n' "$original" | sed "s|^  if (only_port) {|$line\n&|" > "$exercise"
  grep -qF "$line" "$exercise" || { echo "FAILED: could not edit $exercise"; exit 1; }
  out=$(ninja -C "$tmp/b" 2>&1); expect "with a $edit in $name, a plain ninja of $stage should stay green" $? 0 "$out" 'ninja'
  out=$(cd "$source_root" && BUILD_DIR="$tmp/b" scripts/check_exercise.sh "$name" 2>&1); status=$?
  if [[ $edit == warning ]]; then
    expect "with a warning, the check says still broken and shows it" $status 1 "$out" \
      "^still broken: $name compiles, but with a warning" "warning: unused variable .left_over."
  else
    expect "with an error, the check says still broken and shows the compiler's message" $status 1 "$out" \
      "^still broken: $name does not compile; the compiler says:" "error: expected primary-expression"
  fi
done
exit $((failures > 0))
