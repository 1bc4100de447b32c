#!/usr/bin/env bash
# Unit suite, on a host without RDMA: scripts/check_env.sh tells a learner
# whether they can go on. With a guest scripts/rxe_vm.sh can boot, the host's
# missing RDMA is no failure (INFO lines, exit 0, a last line saying the
# commands use the guest); without one (here: qemu taken off the PATH), it is
# (FAIL lines, exit 1).
#   check_env_test.sh SOURCE_ROOT
set -uo pipefail
cd "$1" || exit 2
if [[ -d /sys/class/infiniband ]]; then
  echo "SKIP: this host has RDMA; the case is a host without it"
  exit 77
fi
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }
expect_line() {  # expect_line OUTPUT REGEX WHAT
  grep -Eq "$2" <<<"$1" || fail "$3: no line matching /$2/ in:"$'\n'"$1"
}

out=$(scripts/check_env.sh 2>&1); status=$?
if grep -q '^OK   guest:' <<<"$out"; then
  [[ $status == 0 ]] || fail "with a bootable guest, check_env.sh should exit 0, not $status"
  expect_line "$out" '^INFO kernel RDMA support: none in ' "the kernel's missing RDMA, as a fact"
  expect_line "$out" '^OK   ready: this machine has no RDMA of its own, .* run their device part in the Soft-RoCE guest; go on$' "the verdict"
  [[ $(tail -n 1 <<<"$out") == "OK   ready: "* ]] || fail "the verdict should be the last line"
  ! grep -q '^FAIL' <<<"$out" || fail "no FAIL line expected with a bootable guest:"$'\n'"$out"
  echo "ok: with a guest: exit 0, the kernel's missing RDMA as INFO, the verdict last"
else
  echo "note: no bootable guest on this host; only the case without one runs"
fi

# The same host without qemu: every command on the PATH but that one.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  for f in "$d"/*; do
    name=${f##*/}
    [[ -x $f && ! -d $f && $name != qemu-system-x86_64 && ! -e $bin/$name ]] && ln -s "$f" "$bin/$name"
  done
done
out=$(PATH=$bin scripts/check_env.sh 2>&1); status=$?
[[ $status == 1 ]] || fail "without a guest, check_env.sh should exit 1, not $status"
expect_line "$out" '^FAIL kernel RDMA support: none in ' "the kernel's missing RDMA, as a failure"
expect_line "$out" '^FAIL no RDMA devices' "no device, as a failure"
expect_line "$out" '^FAIL guest: qemu-system-x86_64 not found' "the missing qemu named"
! grep -q '^OK   ready:' <<<"$out" || fail "no 'ready' verdict without a guest"
echo "ok: without qemu: exit 1, the kernel, the devices and the guest as FAIL"

[[ $failures == 0 ]] || exit 1
