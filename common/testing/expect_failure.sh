#!/bin/sh
# expect_failure.sh CODE TEXT COMMAND [ARGS...]: passes when COMMAND exits
# with CODE and prints TEXT (on either stream). For the canaries of the
# checker suites: a checker that stopped failing bad programs fails here.
set -u
code=$1 text=$2
shift 2
out=$("$@" 2>&1)
status=$?
if [ "$status" -eq "$code" ] && printf '%s\n' "$out" | grep -qF -- "$text"; then
  echo "ok: $(basename "$1") exited $status and printed '$text'"
  exit 0
fi
echo "FAILED: $* exited $status (wanted $code), and should print '$text'; it printed:"
printf '%s\n' "$out"
exit 1
