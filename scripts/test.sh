#!/usr/bin/env bash
# The README's test command (and CI's): installs what is missing, configures
# with -Werror, builds, runs the host suites (unit, nodevice, build, vm), then the
# device suites (rxe, exercise, docs) on a native Soft-RoCE/RDMA port if there
# is one, else inside the throwaway Soft-RoCE guest. Ends with one line
# "N passed, N failed, N skipped"; exits non-zero on any failure.
#
#   scripts/test.sh            BUILD_DIR=other scripts/test.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(repo_root)"
build="${BUILD_DIR:-build}"

scripts/install_deps.sh || { echo "test: installing the dependencies failed"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
if ! build_tree "$build"; then
  echo "test: the build failed"
  echo "0 passed, 1 failed, 0 skipped"
  exit 1
fi

logs="$build/meson-logs"
rm -f "$logs"/host.json "$logs"/device.json

echo "== host suites: unit, nodevice, build, vm"
meson test -C "$build" --no-rebuild --print-errorlogs --logbase host \
  --suite unit --suite nodevice --suite build --suite vm

runs=(host device)
if have_active_port; then
  echo "== device suites on this machine's RDMA port"
  meson test -C "$build" --no-rebuild --print-errorlogs --logbase device --suite rxe --suite exercise
  # The chapters show the guest's device (rxe0 on dummy0, 192.0.2.1), so
  # check them there whenever a guest can boot.
  runs+=(docs)
  rm -f "$logs"/docs.json
  if guest_available; then
    scripts/rxe_vm.sh --timeout 1800 -- meson test -C "$build" --no-rebuild --print-errorlogs --logbase docs --suite docs
  else
    meson test -C "$build" --no-rebuild --print-errorlogs --logbase docs --suite docs
  fi
else
  echo "== device suites in the Soft-RoCE guest (no RDMA port here)"
  scripts/rxe_vm.sh --timeout 1800 -- \
    meson test -C "$build" --no-rebuild --print-errorlogs --logbase device --suite rxe --suite exercise --suite docs
fi

# Count what meson recorded, per test, in both runs.
passed=0 failed=0 skipped=0
for run in "${runs[@]}"; do
  log="$logs/$run.json"
  if [[ ! -s "$log" ]]; then
    echo "test: the $run run recorded no results (see its output above)"
    failed=$((failed + 1))
    continue
  fi
  while read -r result; do
    case "$result" in
      OK|EXPECTEDFAIL) passed=$((passed + 1)) ;;
      SKIP) skipped=$((skipped + 1)) ;;
      *) failed=$((failed + 1)) ;;
    esac
  done < <(grep -o '"result": "[A-Z]*"' "$log" | cut -d'"' -f4)
done
echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
