#!/bin/sh
# memcheck.sh PROGRAM [ARGS...]: runs PROGRAM under valgrind's memcheck, for
# the valgrind suite (common/stage_rules.build puts it in front of the program
# under test through RDMA_TUTORIAL_WRAPPER).
#
# The program's own output and exit code pass through untouched; valgrind
# writes to a log of its own. If memcheck finds an error or a leak
# (definite, indirect or possible), or a file descriptor besides 0, 1 and 2
# is still open at exit, this prints "memcheck: ..." and the log on stderr
# and exits 99, which no program of this tutorial uses.
set -u
here=$(cd "$(dirname "$0")" && pwd -P)
log=$(mktemp "${TMPDIR:-/tmp}/memcheck.XXXXXX")
trap 'rm -f "$log"' EXIT
valgrind --tool=memcheck --quiet --log-file="$log" \
  --leak-check=full --show-leak-kinds=definite,indirect,possible \
  --errors-for-leak-kinds=definite,indirect,possible \
  --track-fds=yes --error-exitcode=99 \
  --suppressions="$here/valgrind.supp" -- "$@"
status=$?
# --track-fds lists every descriptor open at exit. 0-2 are the program's
# streams; a descriptor followed by "<inherited from parent>" (valgrind's own
# log among them) was open before the program started. Any other one is a
# descriptor the program opened and never closed.
open_fds=$(awk '
  / Open .* [0-9]+:/ { if (pending != "") print pending; pending = ""
                       n = $0; sub(/:.*/, "", n); sub(/.* /, "", n)
                       if (n + 0 >= 3) pending = $0; next }
  /<inherited from parent>/ { pending = ""; next }
  # librdmacm opens each RDMA device once and keeps it open for the life of
  # the process (valgrind.supp, librdmacm-device-*): not a descriptor of ours.
  /librdmacm\.so/ { if (pending ~ /\/dev\/infiniband\/uverbs/) pending = ""; next }
  END { if (pending != "") print pending }' "$log")
if [ "$status" -eq 99 ] || [ -n "$open_fds" ]; then
  echo "memcheck: $(basename "$1") has memcheck findings (errors, leaks or descriptors left open); the log:" >&2
  cat "$log" >&2
  exit 99
fi
exit "$status"
