#!/usr/bin/env bash
# The other end of scripts/rxe_vm.sh --pair: runs in the second guest and
# carries out what scripts/on_peer.sh asks for, through a folder both guests
# see (the pair's job share). Not meant to be run by hand.
#
#   peer_agent.sh DIR
#
# In DIR, per job NAME: on_peer.sh writes NAME.cmd (a bash script, renamed
# into place whole); the agent renames it NAME.run, runs it in its own
# process group (NAME.pgid) with its output in NAME.out and NAME.err, and
# writes its exit status to NAME.status (renamed into place whole). NAME.kill asks it to end
# the job (SIGTERM, then SIGKILL after 2 s). The agent writes DIR/ready once
# it runs, and on DIR/stop ends every job still running and exits.
set -uo pipefail
dir=$1
declare -A pids=() kill_sent=()

start_job() {
  local name=$1
  mv "$dir/$name.cmd" "$dir/$name.run" || return
  # The job gets a process group of its own (setsid), so a kill ends all it
  # started; the subshell around it stays outside that group, so it lives on
  # to write the job's exit status.
  (
    setsid bash "$dir/$name.run" >"$dir/$name.out" 2>"$dir/$name.err" </dev/null &
    echo $! > "$dir/$name.pgid"
    wait $!
    echo $? > "$dir/$name.status.tmp"
    mv "$dir/$name.status.tmp" "$dir/$name.status"
  ) &
  pids[$name]=$!
}

end_job() {  # end_job NAME SIGNAL
  local pgid
  pgid=$(cat "$dir/$1.pgid" 2>/dev/null) || return 0
  kill "-$2" -- "-$pgid" 2>/dev/null || kill "-$2" "$pgid" 2>/dev/null || true
}

echo "peer agent: ready at $RXE_VM_IPV4, watching $dir"
touch "$dir/ready"
while [[ ! -e "$dir/stop" ]]; do
  for cmd in "$dir"/*.cmd; do
    [[ -e "$cmd" ]] || continue
    name=$(basename "$cmd" .cmd)
    echo "peer agent: starting $name"
    start_job "$name"
  done
  for name in "${!pids[@]}"; do
    if [[ -e "$dir/$name.status" ]]; then
      echo "peer agent: $name ended with status $(cat "$dir/$name.status")"
      unset "pids[$name]" "kill_sent[$name]"
    elif [[ -e "$dir/$name.kill" && -z "${kill_sent[$name]:-}" ]]; then
      end_job "$name" TERM
      kill_sent[$name]=$SECONDS
    elif [[ -n "${kill_sent[$name]:-}" ]] && (( SECONDS - kill_sent[$name] >= 2 )); then
      end_job "$name" KILL
    fi
  done
  sleep 0.1
done
for name in "${!pids[@]}"; do end_job "$name" KILL; done
echo "peer agent: stopped"
