#!/usr/bin/env bash
# Runs a command on the other guest of a pair (scripts/rxe_vm.sh --pair),
# from the first one: its output comes back, and its exit status becomes
# this script's. Every wait is bounded.
#
#   on_peer.sh [--timeout S] -- COMMAND [ARGS...]     run it there, wait for it
#   on_peer.sh --start NAME -- COMMAND [ARGS...]      start it there, return at once
#   on_peer.sh --wait NAME [--timeout S]              wait for a started one
#   on_peer.sh --stop NAME                            end a started one (SIGTERM,
#                                                     then SIGKILL), then as --wait
#
# The command runs in the same directory as here (the checkout is shared), as
# root, with RXE_VM_IPV4 set to the peer's own address (192.0.2.2) and
# RXE_VM_PEER_IPV4 to this guest's (192.0.2.1), and this side's
# RDMA_TUTORIAL_* variables. A wait that runs out ends the command and exits
# 124. The peer's agent must have started first; waiting for it counts
# against the same timeout (default 120 s). With RXE_VM_PEER_PID set (the
# workshop's warm guest: the agent runs in a guest this host started, and
# that process is its qemu), a wait ends within a tenth of a second, exit
# 125, once that process is gone or a zombie, or once the agent was told to
# stop (DIR/stop: scripts/workshop.sh guest stop). Ended by a signal while
# it waits, it asks the agent to end the job too.
set -uo pipefail

usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }
die() { echo "on_peer: $*" >&2; exit 2; }

[[ -n "${RXE_VM_PEER_DIR:-}" ]] || die "no peer here; run it inside scripts/rxe_vm.sh --pair"
dir=$RXE_VM_PEER_DIR
timeout_s=120 mode=run name=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --timeout) [[ $# -ge 2 ]] || die "--timeout needs seconds"; timeout_s=$2; shift 2 ;;
    --start|--wait|--stop)
      [[ $# -ge 2 && "$2" =~ ^[A-Za-z0-9_-]+$ ]] || die "$1 needs a NAME of letters, digits, _ and -"
      mode=${1#--} name=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (the command goes after --)" ;;
  esac
done
[[ "$timeout_s" =~ ^[0-9]+$ ]] || die "--timeout expects seconds, got '$timeout_s'"
deadline=$((SECONDS + timeout_s))

# The pause between looks: a read with a timeout on a pipe this shell holds
# both ends of (a fork, not a `sleep` started ten times a second: in a
# guest under TCG each program started costs about 90 ms).
pause=""
{ exec {pause}<> <(:); } 2>/dev/null || pause=""
nap() { [[ -n "$pause" ]] && { read -r -t "$1" -u "$pause" _ 2>/dev/null || [[ $? -gt 128 ]]; } || sleep "$1"; }

peer_gone() {  # true once the guest's process is gone, or a zombie its parent has not collected yet
  local stat
  read -r stat 2>/dev/null < "/proc/$RXE_VM_PEER_PID/stat" || return 0
  stat=${stat##*) }
  [[ ${stat%% *} == Z ]]
}

wait_for() {  # wait_for FILE: true once it exists, false at the deadline
  while [[ ! -e "$1" ]]; do
    (( SECONDS < deadline )) || return 1
    if [[ -n "${RXE_VM_PEER_PID:-}" ]]; then
      if peer_gone; then
        echo "on_peer: the guest running the agent stopped (its process $RXE_VM_PEER_PID is gone)" >&2
        exit 125
      fi
      if [[ -e "$dir/stop" ]]; then
        echo "on_peer: the guest's agent was told to stop ($dir/stop) and ends its jobs" >&2
        exit 125
      fi
    fi
    nap 0.02
  done
}

# Collect a job: its output, then its status; end it first if time runs out.
finish() {
  local job=$1 status
  if ! wait_for "$dir/$job.status"; then
    touch "$dir/$job.kill"
    deadline=$((SECONDS + 10))
    wait_for "$dir/$job.status" || true
    cat "$dir/$job.out" 2>/dev/null
    cat "$dir/$job.err" >&2 2>/dev/null
    echo "on_peer: '$job' did not finish within ${timeout_s}s on the peer and was ended" >&2
    return 124
  fi
  cat "$dir/$job.out" 2>/dev/null
  cat "$dir/$job.err" >&2 2>/dev/null
  # The agent writes the status in one write: an empty file is one read too early.
  status=""
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    read -r status < "$dir/$job.status" && [[ -n "$status" ]] && break
    nap 0.05
  done
  return "${status:-125}"
}

case $mode in
  run|start)
    [[ $# -gt 0 ]] || die "no command given; example: scripts/on_peer.sh -- ibv_devinfo"
    wait_for "$dir/ready" || die "the peer's agent did not start within ${timeout_s}s"
    job=${name:-fg-$$-$RANDOM}
    [[ ! -e "$dir/$job.run" && ! -e "$dir/$job.cmd" ]] || die "a job named '$job' already ran on the peer"
    {
      printf 'cd %q || exit 125\n' "$PWD"
      for v in $(compgen -v RDMA_TUTORIAL_); do printf 'export %s=%q\n' "$v" "${!v}"; done
      printf 'exec'; printf ' %q' "$@"; echo
    } > "$dir/.$job.tmp"
    mv "$dir/.$job.tmp" "$dir/$job.cmd"
    [[ $mode == start ]] && exit 0
    trap 'touch "$dir/$job.kill"; exit 143' TERM
    trap 'touch "$dir/$job.kill"; exit 130' INT
    finish "$job" ;;
  wait|stop)
    [[ -e "$dir/$name.cmd" || -e "$dir/$name.run" ]] || die "no job named '$name' was started"
    [[ $mode == stop ]] && touch "$dir/$name.kill"
    finish "$name" ;;
esac
