#!/usr/bin/env bash
# Runs a command and prints which RDMA hardware counters it moved: the way to
# see packets that vanish without a completion (a PSN nobody expects, an
# unanswered request, a receiver that was not ready).
#
#   scripts/hw_counters.sh [-d DEVICE] -- COMMAND [ARGS...]
#   scripts/hw_counters.sh [-d DEVICE] --save FILE     the counters now, into FILE
#   scripts/hw_counters.sh [-d DEVICE] --since FILE    what changed since --save FILE
#                          (run.sh --pair does this on both guests around a
#                          run on an impaired wire)
#
# Every port of every device (or of DEVICE) is read from
# /sys/class/infiniband/<dev>/ports/<port>/hw_counters before and after the
# command; the counters that changed are printed with the difference, after
# the command's own output. The command's exit status becomes this script's.
# Run it where the device is (inside the guest: scripts/rxe_vm.sh -- ...).
set -uo pipefail
shopt -s nullglob

usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }
device="" save="" since=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --save|--since)
      [[ $# -ge 2 ]] || { echo "hw_counters: $1 needs a file" >&2; exit 2; }
      [[ $1 == --save ]] && save=$2 || since=$2
      shift 2 ;;
    -d) [[ $# -ge 2 ]] || { echo "hw_counters: -d needs a device name" >&2; exit 2; }
        device="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) echo "hw_counters: unknown option '$1' (the command goes after --)" >&2; exit 2 ;;
  esac
done
[[ $# -gt 0 || -n "$save$since" ]] || { echo "hw_counters: no command given; example: scripts/hw_counters.sh -- ibv_devinfo" >&2; exit 2; }

dirs=(/sys/class/infiniband/${device:-*}/ports/*/hw_counters)
[[ ${#dirs[@]} -gt 0 ]] || { echo "hw_counters: no RDMA port with hw_counters${device:+ on $device} (see scripts/check_env.sh)" >&2; exit 2; }

snapshot() {  # "dev port counter value" per line
  local d f
  for d in "${dirs[@]}"; do
    for f in "$d"/*; do
      [[ -f "$f" ]] || continue
      local rest=${d#/sys/class/infiniband/}
      printf '%s %s %s %s\n' "${rest%%/*}" "$(cut -d/ -f3 <<<"$rest")" "${f##*/}" "$(cat "$f" 2>/dev/null || echo 0)"
    done
  done
}

if [[ -n "$save" ]]; then snapshot > "$save" || exit 2; exit 0; fi
if [[ -n "$since" ]]; then
  before=$(cat "$since") || exit 2
  status=0
else
  before=$(snapshot)
  "$@"
  status=$?
fi
after=$(snapshot)
changes=$(join -j1 <(awk '{ print $1 "/" $2 "/" $3, $4 }' <<<"$before" | sort) \
                  <(awk '{ print $1 "/" $2 "/" $3, $4 }' <<<"$after" | sort) |
          awk '$3 != $2 { split($1, k, "/"); printf "%s port %s  %-24s %+d\n", k[1], k[2], k[3], $3 - $2 }')
echo "hw_counters that changed:"
if [[ -n "$changes" ]]; then echo "$changes"; else echo "  (none)"; fi
exit "$status"
