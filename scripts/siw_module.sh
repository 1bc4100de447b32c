#!/usr/bin/env bash
# Soft-iWARP (siw) for a guest kernel: prints the path of a siw.ko built for
# KERNEL from Debian's own packages, building it the first time.
#
#   scripts/siw_module.sh KERNEL      e.g. 6.1.0-57-amd64, 6.12.118+deb12-amd64
#   scripts/siw_module.sh --check KERNEL
#                                     only say whether it can be had (exit 0/1)
#
# Debian's kernels do not build siw (CONFIG_RDMA_SIW is unset in 6.1 and
# 6.12), but its source is in linux-source-6.1 / linux-source-6.12
# (drivers/infiniband/sw/siw) and linux-headers-KERNEL builds an out-of-tree
# module against the kernel's own configuration and symbol versions:
#   make -C /lib/modules/KERNEL/build M=DIR CONFIG_RDMA_SIW=m modules
# (about 40 s on one core). scripts/install_deps.sh installs both packages
# for every guest kernel. The module is kept in
# ${XDG_CACHE_HOME:-~/.cache}/rdma-tutorial/siw/KERNEL/ with the source
# version it came from, so a second run builds nothing; a new source or
# kernel package builds again. scripts/rxe_vm.sh --provider siw loads it.
#
# The source must be the kernel's own version (linux-source-6.1 6.1.192-3
# for linux-image-6.1.0-57-amd64 6.1.192-3): siw is built against the
# headers of one kernel, and another release's siw may use what that kernel
# lacks. A mismatch is refused with the packages to install.
set -euo pipefail

die() { echo "siw_module: $*" >&2; exit 1; }

check_only=0
case "${1:-}" in
  -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
  --check) check_only=1; shift ;;
esac
[[ $# -eq 1 ]] || { echo "siw_module: usage: siw_module.sh [--check] KERNEL (try --help)" >&2; exit 2; }
kver=$1

# 6.1.0-57-amd64 -> 6.1, 6.12.118+deb12-amd64 -> 6.12: Debian's source package.
series=$(sed -n 's/^\([0-9]*\.[0-9]*\)[.-].*/\1/p' <<<"$kver")
[[ -n "$series" ]] || die "cannot tell the kernel series of '$kver'"
tarball=/usr/src/linux-source-$series.tar.xz
headers=/lib/modules/$kver/build

# The version of the package that installed this kernel, and of the source.
image_version=$(dpkg-query -W -f='${Version}' "linux-image-$kver" 2>/dev/null ||
                dpkg-query -W -f='${Version}' "linux-image-$kver-unsigned" 2>/dev/null || true)
source_version=$(dpkg-query -W -f='${Version}' "linux-source-$series" 2>/dev/null || true)

problem=""
if [[ ! -f "$tarball" ]]; then
  problem="no $tarball: install linux-source-$series${image_version:+ (version $image_version)} (scripts/install_deps.sh does)"
elif [[ ! -f "$headers/Makefile" ]]; then
  problem="no $headers: install linux-headers-$kver (scripts/install_deps.sh does)"
elif [[ -n "$image_version" && "$source_version" != "$image_version" ]]; then
  problem="linux-source-$series is $source_version, the kernel $kver is $image_version: siw must come from the kernel's own source; install linux-source-$series=$image_version, or the kernel of the source's version"
fi
if [[ $check_only == 1 ]]; then
  [[ -z "$problem" ]] && { echo "siw for $kver: from linux-source-$series $source_version"; exit 0; }
  echo "siw for $kver: $problem"
  exit 1
fi
[[ -z "$problem" ]] || die "$problem"

cache=${XDG_CACHE_HOME:-$HOME/.cache}/rdma-tutorial/siw/$kver
stamp="linux-source-$series $source_version, linux-headers-$kver"
mkdir -p "$cache"
# One build at a time: test.sh's guests may ask for the same kernel's at once.
exec 9>"$cache/lock"
flock 9
if [[ -f "$cache/siw.ko" && "$(cat "$cache/built-from" 2>/dev/null)" == "$stamp" ]]; then
  echo "$cache/siw.ko"
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/siw_module.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "siw_module: building siw.ko for $kver from $tarball (once; kept in $cache)" >&2
# Only the one folder comes out of the tarball (its xz stream is still read
# whole: about 15 s).
tar -xJf "$tarball" -C "$work" --wildcards "linux-source-$series/drivers/infiniband/sw/siw/*" ||
  die "could not unpack drivers/infiniband/sw/siw from $tarball"
dir="$work/linux-source-$series/drivers/infiniband/sw/siw"
if ! make -C "$headers" M="$dir" CONFIG_RDMA_SIW=m modules >"$work/make.log" 2>&1; then
  tail -n 20 "$work/make.log" >&2
  die "building siw.ko for $kver failed (the make output's end is above)"
fi
[[ -f "$dir/siw.ko" ]] || die "make succeeded but left no siw.ko"
cp "$dir/siw.ko" "$cache/siw.ko.new"
mv "$cache/siw.ko.new" "$cache/siw.ko"
echo "$stamp" > "$cache/built-from"
echo "$cache/siw.ko"
