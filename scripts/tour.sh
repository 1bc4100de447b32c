#!/usr/bin/env bash
# The README's main command: builds the tutorial, makes sure a Soft-RoCE
# device is there, and runs every stage in order, each under a one-line
# heading, showing what the programs really print.
#
# Where the device comes from, in order: an RDMA port already ACTIVE here; a
# Soft-RoCE link set up here (only as root with the rdma_rxe module
# available); otherwise the whole tour runs inside the throwaway Soft-RoCE
# guest (scripts/rxe_vm.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(repo_root)"
build="${BUILD_DIR:-build}"

# The stages come from stages.txt, the one list: folder | program | chapter | title.
# Each runs through its run.sh: one program, or a server and its client.
run_stages() {
  local status=0 stage program chapter title
  while IFS='|' read -r stage program chapter title; do
    [[ -z "${stage// /}" || "$stage" == \#* ]] && continue
    stage=$(xargs <<<"$stage") title=$(xargs <<<"$title")
    echo
    echo "=== $stage: $title  (\$ $stage/run.sh)"
    BUILD_DIR="$build" RDMA_TUTORIAL_BUILT=1 "$stage/run.sh" </dev/null || { status=$?; echo "=== $stage exited with status $status"; }
  done < stages.txt
  return "$status"
}

if [[ "${1:-}" == "--stages-only" ]]; then
  run_stages
  exit
fi

echo "tour: building into $build/"
scripts/install_deps.sh >/dev/null
build_tree "$build"

if have_active_port; then
  echo "tour: using this machine's RDMA device"
elif [[ $EUID -eq 0 ]] && modprobe -n rdma_rxe 2>/dev/null && rdma link show >/dev/null 2>&1; then
  echo "tour: setting up Soft-RoCE here (scripts/setup_rxe.sh)"
  scripts/setup_rxe.sh
else
  echo "tour: no RDMA here; running the tour in the Soft-RoCE guest (about 10 s to boot)"
  exec scripts/rxe_vm.sh -- scripts/tour.sh --stages-only
fi
run_stages
