#!/usr/bin/env bash
# The other end of scripts/rxe_vm.sh --pair: runs in the second guest and
# carries out what scripts/on_peer.sh asks for, through a folder both guests
# see (the pair's job share). scripts/workshop.sh's warm guest runs it too,
# on a folder the host sees. Not meant to be run by hand.
#
#   peer_agent.sh [--idle SECONDS] DIR
#
# --idle: exit once no job has run or been running for that long (the
# warm guest then powers off).
# In DIR, per job NAME: on_peer.sh writes NAME.cmd (a bash script, renamed
# into place whole); the agent runs it in a process group of its own
# (NAME.pgid) with its output in NAME.out and NAME.err, and writes its exit
# status to NAME.status (one write: a reader that finds it empty reads
# again). NAME.kill asks it to end the job (SIGTERM, then SIGKILL after
# 2 s), with every process the job started, in a group of its own or not.
# The agent writes DIR/ready once it runs, and on DIR/stop ends every job
# still running and exits.
#
# Few processes per job, since under TCG each one started costs a few
# hundred milliseconds (measured in the guest, Linux 6.1: bash 320 ms,
# /bin/true 90 ms, a fork 8 ms): a job is a fork of this shell that reads
# NAME.cmd and execs its command, no bash of its own. Job control (set -m)
# gives each job its process group, /proc says when it ended, and the loop
# pauses on a read with a timeout instead of starting `sleep`.
set -uo pipefail
set -m
idle=""
if [[ "${1:-}" == --idle ]]; then idle=$2; shift 2; fi
dir=$1
declare -A pids=() kill_sent=() started=() tree=()
last_busy=$SECONDS

# The loop's pause: a read with a timeout on a FIFO nobody writes.
tick=$(mktemp -u /tmp/peer_agent.XXXXXX)
mkfifo "$tick" && exec 9<>"$tick" && rm -f "$tick"
nap() { read -r -t "$1" -u 9 _ 2>/dev/null || [[ $? -gt 128 ]] || sleep "$1"; }

start_job() {
  local name=$1
  started[$name]=1
  # NAME.cmd is bash (on_peer.sh writes it: cd, exports, exec): read in a fork
  # of this shell, without the loop's pause (fd 9) or its options.
  ( set +uo pipefail; source "$dir/$name.cmd" ) >"$dir/$name.out" 2>"$dir/$name.err" </dev/null 9<&- &
  pids[$name]=$!
  echo $! > "$dir/$name.pgid"
}

ended() {  # ended PID: true once the job's process is a zombie (or gone)
  local stat
  read -r stat 2>/dev/null < "/proc/$1/stat" || return 0
  stat=${stat##*) }
  [[ ${stat%% *} == Z ]]
}

# The processes under PID, one a line, from /proc (no program started).
descendants() {
  local -A children=()
  local stat pid ppid queue=("$1")
  for stat in /proc/[0-9]*/stat; do
    read -r stat 2>/dev/null < "$stat" || continue
    pid=${stat%% *} stat=${stat##*) }  # "STATE PPID PGRP ..." after the name
    ppid=${stat#* } ppid=${ppid%% *}
    children[$ppid]+=" $pid"
  done
  while (( ${#queue[@]} > 0 )); do
    for pid in ${children[${queue[0]}]:-}; do echo "$pid"; queue+=("$pid"); done
    queue=("${queue[@]:1}")
  done
}

# A job is its process group and what it started in groups of their own:
# exercise_check starts each program so (and impair.sh, and on_peer.sh for
# a server on the other guest). They go with it, or a check ended early
# would leave its server on the learner's port, or the other guest's
# server running, for the next check in a warm guest. Taken once, before
# the first signal: the orphans of an ended process have another parent.
end_job() {  # end_job NAME SIGNAL
  local pgid=${pids[$1]:-} pid
  [[ -n "$pgid" ]] || return 0
  [[ -n "${tree[$1]+set}" ]] || tree[$1]=$(descendants "$pgid")
  kill "-$2" -- "-$pgid" 2>/dev/null || kill "-$2" "$pgid" 2>/dev/null || true
  for pid in ${tree[$1]}; do
    kill "-$2" -- "-$pid" 2>/dev/null || kill "-$2" "$pid" 2>/dev/null || true
  done
}

echo "peer agent: ready at $RXE_VM_IPV4, watching $dir"
touch "$dir/ready"
while [[ ! -e "$dir/stop" ]]; do
  for cmd in "$dir"/*.cmd; do
    [[ -e "$cmd" ]] || continue
    name=${cmd##*/}; name=${name%.cmd}
    [[ -n "${started[$name]:-}" ]] && continue
    echo "peer agent: starting $name"
    start_job "$name"
  done
  for name in "${!pids[@]}"; do
    pid=${pids[$name]}
    if ended "$pid"; then
      wait "$pid"
      status=$?
      echo "$status" > "$dir/$name.status"
      echo "peer agent: $name ended with status $status"
      unset "pids[$name]" "kill_sent[$name]" "tree[$name]"
    elif [[ -e "$dir/$name.kill" && -z "${kill_sent[$name]:-}" ]]; then
      end_job "$name" TERM
      kill_sent[$name]=$SECONDS
    elif [[ -n "${kill_sent[$name]:-}" ]] && (( SECONDS - kill_sent[$name] >= 2 )); then
      end_job "$name" KILL
    fi
  done
  (( ${#pids[@]} > 0 )) && last_busy=$SECONDS
  if [[ -n "$idle" ]] && (( ${#pids[@]} == 0 && SECONDS - last_busy >= idle )); then
    echo "peer agent: idle for ${idle}s, stopping"
    break
  fi
  # Each look reads DIR, over 9p in a guest: at 20 looks a second an idle
  # agent took a third of a core under TCG (a warm guest, each guest of a
  # warm pair). A job comes in a burst of them (a check's, its server's on
  # the other guest): looks are quick while one runs or one ended in the
  # last seconds, slower while nothing happens.
  if (( ${#pids[@]} > 0 || SECONDS - last_busy < 3 )); then nap 0.05; else nap 0.25; fi
done
for name in "${!pids[@]}"; do end_job "$name" KILL; done
rm -f "$dir/ready"
echo "peer agent: stopped"
