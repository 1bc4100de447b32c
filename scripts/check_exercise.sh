#!/usr/bin/env bash
# Checks one exercise: builds the stage with your exercise file, runs it on a
# device (here, or in the Soft-RoCE guest), and says "fixed" or "still broken"
# with what it saw, and the program's own likely fix when it printed one.
#
#   scripts/check_exercise.sh port_zero
#   scripts/check_exercise.sh 01_devices/port_zero
#   scripts/check_exercise.sh 01_devices/exercises/port_zero.cpp   (tab completion)
#   scripts/check_exercise.sh --list      (or no argument; -h, --help: this text)
#   scripts/check_exercise.sh --reference port_zero   (the stage's own program
#                                                       judged as a fix of it)
#   scripts/check_exercise.sh --expect broken port_zero   (exit 0 only if still
#                                  broken with its own symptom: what CI proves)
#   scripts/check_exercise.sh --show-output port_zero   (then each program's
#                                  whole output, server first: the checker
#                                  itself shows only the verdict; slower, each
#                                  program's output copied by tee on its way)
#
# Only the exercise you name is built: a half-edited exercise never breaks
# the rest of the tree. If it does not compile, or compiles with a warning,
# the compiler's message is shown and the exercise is still broken.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(repo_root)"
build="${BUILD_DIR:-build}"

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"
  exit 0
fi
if [[ "${1:-}" == "--list" || $# -eq 0 ]]; then
  echo "exercises (scripts/check_exercise.sh NAME):"
  for f in [0-9][0-9]_*/exercises/*.cpp; do
    [[ -e "$f" ]] || continue
    printf '  %-36s %s\n' "$(dirname "$(dirname "$f")")/$(basename "$f" .cpp)" \
      "$(sed -n 's|^// EXERCISE: ||p' "$f")"
  done
  exit 0
fi

reference=0 expect=() show_output=0
while [[ "${1:-}" == --reference || "${1:-}" == --expect || "${1:-}" == --show-output ]]; do
  case "$1" in
    --reference) reference=1; shift ;;
    --show-output) show_output=1; shift ;;
    --expect)
      [[ "${2:-}" == broken || "${2:-}" == fixed ]] || { echo "check_exercise: --expect takes broken or fixed" >&2; exit 2; }
      expect=(--expect "$2"); shift 2 ;;
  esac
done
[[ $# -eq 1 ]] || { echo "check_exercise: name one exercise (scripts/check_exercise.sh --list shows them)" >&2; exit 2; }

# NAME, STAGE/NAME or the file's path, as typed or tab-completed.
arg="${1#./}"
arg="${arg%.cpp}"
arg="${arg/\/exercises\//\/}"
matches=()
for f in [0-9][0-9]_*/exercises/*.cpp; do
  [[ -e "$f" ]] || continue
  stage="${f%%/*}" name="${f##*/}" name="${name%.cpp}"  # no basename: each process costs in a TCG guest
  [[ "$arg" == "$name" || "$arg" == "$stage/$name" ]] && matches+=("$f")
done
if [[ ${#matches[@]} -ne 1 ]]; then
  if [[ ${#matches[@]} -eq 0 ]]; then
    echo "check_exercise: no exercise '$1'; scripts/check_exercise.sh --list shows them" >&2
  else
    echo "check_exercise: '$1' names several exercises (${matches[*]}); add the stage: STAGE/NAME" >&2
  fi
  exit 2
fi
source_file="${matches[0]}"
stage="${source_file%%/*}"
name="${source_file##*/}" name="${name%.cpp}"

# The tree as shipped (quietly, but for how far a build with work to do is,
# on a terminal; not again where the caller just built it,
# RDMA_TUTORIAL_BUILT=1, as scripts/workshop.sh does; =exercises: and every
# exercise too), then this one exercise.
if [[ -z "${RDMA_TUTORIAL_BUILT:-}" ]] && ! tree_log=$(build_tree "$build" 3 3>&2 2>&1); then
  echo "check_exercise: the stages themselves do not build:" >&2
  printf '%s\n' "$tree_log" >&2
  exit 2
fi
stage_dir="subprojects/$stage/"
# A build of this one stage on its own (meson setup b 01_devices) has it here.
[[ -d "$build/subprojects/$stage" ]] || stage_dir=""

# --show-output: every program the checker starts is started through a
# wrapper (RDMA_TUTORIAL_WRAPPER, common/testing/process.hpp) that copies its
# output into a folder beside the build's, which the guest sees too; after
# the verdict each program's command line and output. The copy costs a bash
# and two tee per program (0.2 to 0.3 s a check in the guest under TCG), so
# it is asked for, never the default.
# Where the checker runs: on a device (lib.sh's on_device); an exercise
# whose checker file has a PAIR line crosses the wire between two hosts, so it
# runs in the first guest of a pair (lib.sh's on_pair: the workshop's warm
# pair, else one booted for it, about 30 s; never the workshop's one-host
# warm guest), or where that pair already is.
where() {
  if [[ $pair == 1 && -z "${RXE_VM_PEER_DIR:-}" ]]; then
    if [[ -n "${RXE_VM:-}" ]]; then
      echo "check_exercise: $name runs across two hosts: check it from the host, which boots the two guests (scripts/rxe_vm.sh --pair)" >&2
      return 2
    fi
    on_pair "$@"
  else
    on_device "$@"
  fi
}
pair=0
grep -q '^PAIR:' "$stage/exercises/checker/$name.check" && pair=1
judge() {  # judge PROGRAM: the checker's run of PROGRAM on a device, and with --show-output what each program printed
  [[ $show_output == 1 ]] || { where "$build/subprojects/common/exercise_check" "${expect[@]}" "$source_file" "$1"; return; }
  local kept status f n=0 count
  # A folder of this check's own, in the build folder, which every guest
  # sees: two checks of one exercise at once (two terminals, or CI's two
  # guests on one build) never mix their programs.
  mkdir -p "$build/exercise_output" && kept=$(mktemp -d "$build/exercise_output/$stage.$name.XXXXXX") || return 2
  [[ $kept == /* ]] || kept="$PWD/$kept"  # the path the guest runs the wrapper by, the same there
  {
    echo '#!/bin/bash'
    echo '# written by scripts/check_exercise.sh --show-output: one program, its output copied here'
    # Named by role, not by process id alone: across two guests ids say
    # nothing of the order, and the two guests can hand out the same one.
    # A client is the program told its server (-s); the checker starts
    # nothing else with one.
    echo 'role=server; for a in "$@"; do [[ $a == -s || $a == --server ]] && role=client; done'
    printf 'printf "%%q " "$@" > %q/$role.$$.cmd\n' "$kept"
    printf 'exec > >(exec tee %q/$role.$$.out) 2> >(exec tee %q/$role.$$.err >&2)\n' "$kept" "$kept"
    printf 'exec %s"$@"\n' "${RDMA_TUTORIAL_WRAPPER:+$(printf '%q ' "$RDMA_TUTORIAL_WRAPPER")}"
  } > "$kept/keep.sh"
  chmod +x "$kept/keep.sh"
  status=0
  RDMA_TUTORIAL_WRAPPER="$kept/keep.sh" where "$build/subprojects/common/exercise_check" "${expect[@]}" \
    "$source_file" "$1" || status=$?
  shopt -s nullglob
  local started=("$kept"/*.cmd)
  count=${#started[@]}
  echo "--- the programs' whole output ---"
  # The server first, then its clients in the order they started (one guest: by process id).
  local clients
  clients=$(printf '%s\n' "${started[@]}" | grep -c '/client\.' || true)
  for f in $(printf '%s\n' "${started[@]}" | sed 's|.*/||; s|\.cmd$||' | sort -t. -k1,1r -k2,2n); do
    local who=${f%%.*}
    if [[ $who == client ]]; then
      n=$((n + 1))
      (( clients > 1 )) && who="client $n"
    elif (( count == 1 )); then
      who="program"
    fi
    echo "--- $who: $(<"$kept/$f.cmd")"
    cat "$kept/$f.out" "$kept/$f.err" 2>/dev/null
  done
  (( count > 0 )) || echo "(no program was started)"
  rm -rf "$kept"
  return "$status"
}

if [[ $reference == 1 ]]; then
  # The stage's own program (stages.txt names it), judged by the exercise's spec.
  program=$(awk -F'|' -v s="$stage" '$1 ~ "^" s " *$" { gsub(/ /, "", $2); print $2 }' stages.txt)
  judge "$build/$stage_dir$program"
  exit
fi
target="${stage_dir}exercises/$name"
built=0
if [[ "${RDMA_TUTORIAL_BUILT:-}" == exercises ]]; then
  log=""  # the caller built every exercise just now (scripts/workshop.sh verify)
else
  log=$(ninja -C "$build" "$target" 2>&1) || built=$?
fi
# What the compiler said about the exercise is kept beside its object, so a
# warning is shown on every check, not only on the first build after an edit.
saved="$build/$target.p/compiler.txt"
if [[ "$log" == *"Compiling C++ object $target.p/"* ]]; then
  grep -v -E '^(ninja: |\[[0-9]+/[0-9]+\] )' <<<"$log" | grep -v -E '^FAILED: |^c\+\+ ' > "$saved" || true
fi
said=""
[[ -f "$saved" ]] && said=$(<"$saved")
if [[ $built -ne 0 ]]; then
  echo "still broken: $name does not compile; the compiler says:"
  printf '%s\n' "${said:-$log}"
  exit 1
fi
if [[ "$said" == *warning:* ]]; then
  echo "still broken: $name compiles, but with a warning the rest of the tutorial does not allow:"
  printf '%s\n' "$said"
  exit 1
fi
judge "$build/$target"
