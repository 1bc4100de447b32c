#!/usr/bin/env bash
# vm suite: the workshop runner's watch mode as a learner meets it, driven
# through a real terminal (tmux), with its warm Soft-RoCE guest:
#   - it opens on port_zero with "0 of N fixed" and checks it at once: the
#     symptom is on the screen before any save, with when the check ran;
#   - `check` with no name, from another terminal, checks the current
#     exercise (port_zero) in the same warm guest;
#   - a save that does not compile: the compiler's location as the learner
#     opens it (01_devices/exercises/port_zero.cpp:N:), not the build
#     folder's (../01_devices/...);
#   - the guest killed during a check (07's drops_error_events, picked from
#     the list with l; its check takes 20 s): the screen says so within
#     10 s, and p goes back to port_zero while the runner boots another;
#   - a save that fixes port_zero: "fixed", "1 of N fixed";
#   - the guest killed between checks: said within 5 s, booted again;
#   - n checks the next exercise at once, h shows its first hint; o shows a
#     two-peer check's whole output, server and client;
#   - `guest stop` from another terminal during a check (drops_error_events
#     again): said within 10 s, and the check's verdict comes from a warm
#     guest booted again (a new one, which ran the check), never from one
#     booted for that check alone;
#   - an exercise across two hosts (gives_up_at_once): its first check boots
#     the warm pair, and a save's check runs in that same pair (its second
#     job there);
#   - q during a check ends the check, the runner (exit 0), its guest and
#     its pair;
#   - once more, Ctrl-C while its guest boots: no guest, no qemu, no runner
#     left behind.
# Where this machine has an RDMA port the checks run here and no guest is
# booted (the guest's parts are left out; the pair's still run).
#   workshop_watch.sh SOURCE_ROOT BUILD_DIR
set -uo pipefail
cd "$1" || exit 1
build=$2
source scripts/lib.sh
file=01_devices/exercises/port_zero.cpp
if ! have_active_port && ! guest_available; then
  echo "SKIP: no RDMA port here and no way to boot a guest (scripts/check_env.sh says why)"
  exit 77
fi
command -v tmux >/dev/null || { echo "FAILED: tmux is not installed (scripts/install_deps.sh installs it)"; exit 1; }
git diff --quiet HEAD -- "$file" || { echo "FAILED: $file differs from the shipped file, and this test edits it"; exit 1; }

state=$(mktemp -d "${TMPDIR:-/tmp}/workshop_watch.XXXXXX")
backup="$state/port_zero.cpp.shipped"
cp "$file" "$backup"
sock="workshop-test-$$"
failures=0
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null
  cp "$backup" "$file"
  # The fixed file was built into the tree; the shipped one goes back in too,
  # or the exercise suite, which checks the tree's exercises as built, would
  # find port_zero fixed (it did, in a clean-clone run).
  ninja -C "$build" "subprojects/01_devices/exercises/port_zero" >/dev/null 2>&1 ||
    echo "FAILED: port_zero as shipped should build again"
  for g in guest pair; do [[ -f "$state/$g.pid" ]] && kill -9 -- "-$(cat "$state/$g.pid")" 2>/dev/null; done
  rm -rf "$state"
}
trap cleanup EXIT

screen() { tmux -L "$sock" capture-pane -p -J -S -200 2>/dev/null; }
fail() { echo "FAILED: $*"; screen | sed 's/^/  | /'; failures=$((failures + 1)); }
wait_for() {  # wait_for REGEX SECONDS WHAT
  local i t0=${EPOCHREALTIME/./} us
  for ((i = 0; i < $2 * 10; i++)); do
    if screen | grep -qE -- "$1"; then
      us=$((${EPOCHREALTIME/./} - t0))  # the time it took (a look costs more than its 0.1 s nap on a busy host)
      echo "ok: $3 (after $((us / 1000000)).$((us / 100000 % 10)) s)"
      return 0
    fi
    sleep 0.1
  done
  fail "$3: the screen never showed /$1/ within $2 s"
  exit 1
}
start_runner() {  # start_runner [NAME]: watch mode (on NAME)
  # The last runner's tmux server is stopped first, and gone before a new one
  # starts: a new-session that reached the old server while it was exiting
  # died with it ("server exited unexpectedly", in a clean-clone run), and
  # the runner never came up.
  local i
  tmux -L "$sock" kill-server 2>/dev/null
  for ((i = 0; i < 50; i++)); do tmux -L "$sock" list-sessions >/dev/null 2>&1 || break; sleep 0.1; done
  for ((i = 0; i < 3; i++)); do
    tmux -L "$sock" new-session -d -x 150 -y 60 \
      "WORKSHOP_STATE='$state' WORKSHOP_IDLE=600 BUILD_DIR='$build' scripts/workshop.sh watch ${1:-}; echo runner-exited-\$?; sleep 60" \
      2>/dev/null && tmux -L "$sock" has-session 2>/dev/null && return 0
    sleep 0.5
  done
  fail "tmux would not start the runner's session"
  exit 1
}
keys() { tmux -L "$sock" send-keys "$@"; }
# Nothing of that runner's guest may be left: its rxe_vm.sh and qemu share a
# process group, named in guest.pid while it runs. (A killed rxe_vm.sh is a
# zombie until the runner looks at it: a zombie runs nothing.)
alive_in_group() { ps -e -o pgid=,stat=,pid=,comm= | awk -v g="$1" '$1 == g && $2 !~ /^Z/'; }
no_guest_left() {  # no_guest_left PGID WHAT
  local i
  for ((i = 0; i < 200; i++)); do
    [[ -z "$(alive_in_group "$1")" ]] && { echo "ok: $2"; return 0; }
    sleep 0.1
  done
  fail "$2: processes of the guest's group $1 still run: $(alive_in_group "$1" | tr '\n' ' ')"
}
guest_group() { have_active_port || cat "$state/guest.pid" 2>/dev/null; }
kill_qemu() {  # kill_qemu: the warm guest's qemu, by its pid, as a crash would end it
  local pgid qemu
  pgid=$(guest_group)
  qemu=$(ps -e -o pid=,pgid=,comm= | awk -v g="$pgid" '$2 == g && $3 ~ /^qemu/ { print $1 }')
  [[ -n "$qemu" ]] || { fail "no qemu runs in the guest's group ${pgid:-(none)}"; exit 1; }
  kill -9 "$qemu"
}
number_of() {  # number_of NAME: its number in watch mode's list
  python3 -c 'import sys; sys.path.insert(0, "scripts"); import workshop_lib as l
print([e.name for e in l.find_exercises(".")].index(sys.argv[1]) + 1)' "$1"
}
in_guest=1
have_active_port && in_guest=0

total=$(scripts/workshop.sh list | grep -c '^  ')
start_runner
wait_for "0 of $total fixed" 30 "watch mode should come up on the first exercise with its progress bar"
wait_for "01_devices/port_zero: the port report stops with EINVAL before it shows any port" 5 "it should show port_zero, the first exercise"
wait_for "still broken: the port report stops with EINVAL before it shows any port \(devices: ibv_query_port\(port 0\) failed" 180 \
  "it should check port_zero at once and show its symptom before any save (booting its guest first)"
wait_for "checked: +[0-9:]+, check 1 of it here" 5 "it should say when that check ran"
pgid=$(guest_group)
[[ $in_guest == 0 || -n "$pgid" ]] || fail "no warm guest was booted (no $state/guest.pid)"

# Another terminal: `check` with no name checks the current exercise, in the same guest.
jobs_before=$(ls "$state/guest" 2>/dev/null | grep -c '\.status$')
out=$(WORKSHOP_STATE=$state BUILD_DIR=$build scripts/workshop.sh check 2>&1)
status=$?
jobs_after=$(ls "$state/guest" 2>/dev/null | grep -c '\.status$')
if [[ $status == 1 ]] && grep -q "^01_devices/port_zero (the current exercise" <<<"$out" &&
   grep -q "^still broken: the port report stops with EINVAL before it shows any port" <<<"$out" && { [[ $in_guest == 0 ]] || (( jobs_after > jobs_before )); }; then
  echo "ok: check with no name should check the current exercise, in the warm guest"
else
  fail "check with no name: exit $status, guest jobs $jobs_before -> $jobs_after, said: $out"
fi

# A save that does not compile: the location as the learner opens it.
echo "this line is not C++;" >> "$file"
wait_for "still broken: port_zero does not compile" 60 "a save that does not compile should be checked"
wait_for "^ *01_devices/exercises/port_zero\.cpp:[0-9]+:[0-9]+: .*error" 5 \
  "the compiler's location should be relative to the checkout"
screen | grep -q '\.\./01_devices/exercises/port_zero\.cpp' && fail "a location relative to the build folder was shown"
cp "$backup" "$file"

if [[ $in_guest == 1 ]]; then
  # The guest dies under a check: said within 10 s, a new guest booted; p goes back meanwhile.
  keys l
  wait_for "type its number and Enter" 5 "l should list every exercise"
  keys "$(number_of drops_error_events)" Enter
  wait_for "checking 07_cm_events/drops_error_events \.\.\." 10 "a number from the list should open and check it"
  sleep 1.5  # the check runs in the guest by now (its build is done: nothing to build)
  kill_qemu
  wait_for "the warm guest stopped during the check of 07_cm_events/drops_error_events \(its qemu is gone" 10 \
    "the guest killed during a check should be said within 10 s"
  keys p
  wait_for "checking 01_devices/port_zero" 10 "p should go back to port_zero"
  no_guest_left "$pgid" "the killed guest should be gone"
fi

# The learner's fix, saved as an editor would: the loop over the ports the device has.
sed -i 's/for (int port = 0; port < attr.phys_port_cnt; ++port) {  \/\/ TODO/for (int port = 1; port <= attr.phys_port_cnt; ++port) {  \/\/ TODO/' "$file"
grep -q 'port = 1; port <=' "$file" || { fail "could not edit $file"; exit 1; }
wait_for "fixed: no longer .the port report stops with EINVAL before it shows any port" 180 "a save that fixes port_zero should be built, checked and called fixed"
wait_for "1 of $total fixed" 5 "the progress bar should move"
if [[ $in_guest == 1 ]]; then
  pgid=$(guest_group)
  [[ -n "$pgid" && -n "$(alive_in_group "$pgid")" ]] && echo "ok: a new warm guest should run" ||
    fail "after the crash a new warm guest should run (guest.pid: ${pgid:-none})"
  # The guest dies between checks: said at once, booted again.
  kill_qemu
  wait_for "the warm guest stopped \(its qemu is gone: it crashed, or was killed\); booting it again" 5 \
    "the guest killed between checks should be said within 5 s, and booted again"
  no_guest_left "$pgid" "the guest killed between checks should be gone"
fi
keys n
wait_for "02_pd_mr/remote_write_alone: the buffer the peer is to write cannot be registered" 10 "n should move to the next exercise"
wait_for "still broken: the buffer the peer is to write cannot be registered" 180 "n should check it at once (in the guest booted again)"
keys h
wait_for "hint 1 of [0-9]+:" 10 "h should show the exercise's first hint"
keys l "$(number_of no_recv_posted)" Enter
wait_for "^  still broken: .*IBV_WC_RNR_RETRY_EXC_ERR" 60 "a two-peer exercise should be checked"
keys o
wait_for "^--- server: .*no_recv_posted" 10 "o should show the server's whole output"
wait_for "^--- client( 1)?: .*no_recv_posted .*-s " 2 "and the client's"
keys x
wait_for "save the file to check it" 5 "any key should go back from the output"

if [[ $in_guest == 1 ]]; then
  # `guest stop` from another terminal during a check: the verdict comes from a warm guest booted again.
  keys l "$(number_of drops_error_events)" Enter
  wait_for "checking 07_cm_events/drops_error_events \.\.\." 10 "the list should open drops_error_events again"
  sleep 3  # in the guest by now: it runs 20 s there
  pgid=$(guest_group)
  out=$(WORKSHOP_STATE=$state scripts/workshop.sh guest stop 2>&1)
  [[ $out == "the warm guest is stopped" ]] || fail "guest stop from another terminal said: $out"
  wait_for "the warm guest stopped during the check of 07_cm_events/drops_error_events \(it was stopped" 10 \
    "guest stop during a check should be said within 10 s"
  wait_for "checked: +[0-9:]+, check 1 of it here" 200 "the check should run again and give its verdict"
  wait_for "^  still broken: " 5 "and say still broken"
  again=$(guest_group)
  ran=$(ls "$state/guest" 2>/dev/null | grep -c '\.status$')
  if [[ -n "$again" && $again != "$pgid" && -n "$(alive_in_group "$again")" && $ran -ge 1 ]]; then
    echo "ok: its verdict should come from a warm guest booted again ($ran check(s) in it)"
  else
    fail "after guest stop the check should run in a new warm guest (guest.pid ${again:-none}, was $pgid; checks in it: $ran)"
  fi
  screen | grep -qE "did not come up|a guest of its own" && fail "after guest stop the reboot should not fail"
  no_guest_left "$pgid" "the stopped guest should be gone"
fi

# Across two hosts: the first check boots the warm pair, the next runs in it.
keys l "$(number_of gives_up_at_once)" Enter
wait_for "booting the warm pair of Soft-RoCE guests" 30 "an exercise across two hosts should boot the warm pair"
wait_for "checked: +[0-9:]+, check 1 of it here" 240 "and be checked in it"
wait_for "^  still broken: .*IBV_WC_RETRY_EXC_ERR" 5 "with its symptom"
pair_group=$(cat "$state/pair.pid" 2>/dev/null)
touch 04_rdma_write/exercises/gives_up_at_once.cpp  # a save, as ninja sees one
wait_for "checked: +[0-9:]+, check 2 of it here, [0-9.]+ s" 120 "a save should check it again"
took=$(screen | sed -n 's/.*check 2 of it here, \([0-9.]*\) s.*/\1/p' | head -n1)
ran=$(ls "$state/pair" 2>/dev/null | grep -c '\.status$')
if [[ -n "$pair_group" && $(cat "$state/pair.pid" 2>/dev/null) == "$pair_group" && $ran -eq 2 ]]; then
  echo "ok: the second check across two hosts should run in the same warm pair (${took} s from the save)"
else
  fail "the second check should run in the warm pair (pair.pid ${pair_group:-none} -> $(cat "$state/pair.pid" 2>/dev/null); checks in it: $ran)"
fi

pgid=$(guest_group)
keys c
wait_for "checking every exercise \.\.\." 10 "c should check every exercise"
keys q
wait_for "runner-exited-0" 15 "q during a check should end the runner, exit 0"
[[ -n "$pgid" ]] && no_guest_left "$pgid" "q should leave no guest running"
[[ -n "$pair_group" ]] && no_guest_left "$pair_group" "q should leave no pair running"
left=""
for pid in $(ps -e -o pid=); do  # a check of this runner carries its guest's folder in its environment
  { tr '\0' '\n' < "/proc/$pid/environ"; } 2>/dev/null | grep -qxF "RDMA_TUTORIAL_GUEST=$state/guest" && left+=" $pid"
done
[[ -z "$left" ]] && echo "ok: q should leave no check running" || fail "q should leave no check running (pids$left)"
grep -q '"verdict": "fixed"' "$state/progress.json" || fail "the progress file should record port_zero fixed"
grep -q '"current": "04_rdma_write/gives_up_at_once"' "$state/progress.json" ||
  fail "the progress file should name the exercise shown last as the current one"

# Ctrl-C while its guest boots: everything the runner started goes with it.
cp "$backup" "$file"
start_runner port_zero  # not the current exercise, which needs the pair
if [[ $in_guest == 1 ]]; then
  for ((i = 0; i < 100; i++)); do [[ -s "$state/guest.pid" ]] && break; sleep 0.1; done
  pgid=$(guest_group)
  [[ -n "$pgid" ]] || fail "watch mode should boot a guest again"
  wait_for "booting the warm Soft-RoCE guest" 10 "watch mode should say it boots its guest"
else
  wait_for "0 of $total fixed" 30 "watch mode should come up again"
fi
keys C-c
wait_for "runner-exited-130" 30 "Ctrl-C should end the runner (exit 130)"
[[ -n "${pgid:-}" ]] && no_guest_left "$pgid" "Ctrl-C should leave no guest, and no qemu, running"
[[ ! -e "$state/guest.pid" ]] || fail "Ctrl-C should leave no guest.pid behind"

[[ $failures -eq 0 ]]
