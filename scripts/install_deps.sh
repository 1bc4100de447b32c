#!/usr/bin/env bash
# Install the Debian/Ubuntu packages this tutorial needs.
#
#   scripts/install_deps.sh [--no-vm] [--no-docs]
#
# Only packages that are not installed yet are fetched, so running it again is
# cheap. Uses sudo when not run as root.
#
#   --no-vm    skip the packages for the qemu guest (scripts/rxe_vm.sh); use this
#              when the host kernel has RDMA support (Soft-RoCE or a real NIC)
#   --no-docs  skip what only the chapters' figures (scripts/plot.py,
#              matplotlib) and the book (scripts/book.sh: mkdocs and its
#              Material theme, mermaid's script from the npm registry,
#              Chromium for the book suite) need; every stage builds and
#              runs without them
#   -h, --help show this text
set -euo pipefail

# The help text is the comment block at the top of this file.
usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }

want_vm=1 want_docs=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-vm) want_vm=0; shift ;;
    --no-docs) want_docs=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install_deps: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done

# Compilers and headers to build the chapters and their tests; patch makes
# each exercise's wrong fix, valgrind runs the valgrind suite and counts
# instructions per round trip (scripts/icount.sh, with callgrind), tmux
# drives the workshop runner's watch mode in its test.
build_pkgs=(g++ meson ninja-build pkg-config cmake doctest-dev
            libibverbs-dev librdmacm-dev python3 patch valgrind tmux)
# The verbs providers (ibverbs-providers), the known-good peers and benchmarks
# (ibv_rc_pingpong, rping, perftest), and the "rdma" and "modprobe" tools.
runtime_pkgs=(rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest iproute2 kmod)
# What scripts/rxe_vm.sh needs to boot a throwaway guest with Soft-RoCE: qemu,
# a distribution kernel that ships rdma_rxe.ko, a static busybox for the init,
# the tools that pack the initramfs and unpack compressed modules, and the
# pair's packet capture and its decoding (run.sh --pair --capture, the pair
# suite's wire checks: tcpdump in the guest, tshark's RoCE v2 dissector),
# and perf, which scripts/kcount.sh runs in the guest to count what the
# kernel does per round trip.
# The docs part: scripts/plot.py draws docs/img/*.svg from docs/data/*.csv;
# scripts/book.sh builds the chapters into a site with MkDocs and its
# Material theme, and the book suite opens every page in headless Chromium
# (selenium drives it), which needs one font at least: with none, mermaid
# measures every label as nothing and fails to place zh 08's flowchart
# (translate(undefined)); DejaVu is enough. Mermaid's script is fetched
# apart (fetch_mermaid).
docs_pkgs=(python3-matplotlib mkdocs mkdocs-material python3-pymdownx python3-pygments
           chromium chromium-driver python3-selenium fonts-dejavu-core curl ca-certificates)
vm_pkgs=(qemu-system-x86 KERNEL busybox-static cpio xz-utils zstd file tcpdump tshark nftables linux-perf)

# Read the distribution once: the kernel meta-package has a different name on
# Ubuntu, where rdma_rxe.ko comes with linux-modules-extra (pulled in by
# linux-image-generic).
distro_id="" distro_like=""
if [[ -r /etc/os-release ]]; then
  # shellcheck disable=SC1091
  distro_id=$(. /etc/os-release && echo "${ID:-}")
  # shellcheck disable=SC1091
  distro_like=$(. /etc/os-release && echo "${ID_LIKE:-}")
fi
kernel_pkg=linux-image-amd64
if [[ "$distro_id" == ubuntu || " $distro_like " == *" ubuntu "* ]]; then
  kernel_pkg=linux-image-generic
fi
vm_pkgs=("${vm_pkgs[@]/KERNEL/$kernel_pkg}")
# A second guest kernel, for the tests (scripts/test.sh runs stages on both):
# Debian 12 carries Linux 6.12 beside its 6.1, with rdma_rxe, as versioned
# packages only (linux-image-6.12.N+deb12-amd64-unsigned); the newest is
# taken once the package lists are fresh. The guest's default stays 6.1.
second_kernel=0
distro_version=""
[[ -r /etc/os-release ]] && distro_version=$(. /etc/os-release && echo "${VERSION_ID:-}")
if [[ $want_vm == 1 && "$distro_id" == debian && "$distro_version" == 12 ]]; then
  second_kernel=1
fi
newest_612() {
  apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' | awk '{ print $1 }' | sort -V | tail -n1
}

pkgs=("${build_pkgs[@]}" "${runtime_pkgs[@]}")
if [[ $want_vm == 1 ]]; then pkgs+=("${vm_pkgs[@]}"); fi
if [[ $want_docs == 1 ]]; then pkgs+=("${docs_pkgs[@]}"); fi

# Not a Debian family system: say what is needed and stop; package names differ
# elsewhere (rdma-core, libibverbs-utils, perftest... on Fedora, for example).
if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
  {
    echo "install_deps: apt-get not found; this script only knows Debian and Ubuntu."
    echo "Install the equivalents of these Debian packages with your package manager:"
    echo "  build:   ${build_pkgs[*]}"
    echo "  runtime: ${runtime_pkgs[*]}"
    if [[ $want_vm == 1 ]]; then
      echo "  guest:   ${vm_pkgs[*]}  (only for scripts/rxe_vm.sh)"
    fi
    if [[ $want_docs == 1 ]]; then
      echo "  docs:    ${docs_pkgs[*]}  (only for scripts/plot.py and scripts/book.sh)"
    fi
  } >&2
  exit 1
fi

# The guest boots the host's own x86-64 kernel package under qemu-system-x86_64.
if [[ $want_vm == 1 ]]; then
  arch=$(dpkg --print-architecture)
  if [[ "$arch" != amd64 ]]; then
    echo "install_deps: the qemu guest (scripts/rxe_vm.sh) needs an amd64 host, this one is $arch;" \
         "rerun with --no-vm and use a kernel with Soft-RoCE (scripts/setup_rxe.sh)" >&2
    exit 1
  fi
fi

# "install ok installed" is the only state that counts: "deinstall ok
# config-files" means removed with its configuration left behind.
missing=()
for p in "${pkgs[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == *" ok installed" ]] || missing+=("$p")
done

want_612=0
if [[ $second_kernel == 1 ]] && ! dpkg-query -W -f='${Status}\n' 'linux-image-6.12.*+deb12-amd64-unsigned' 2>/dev/null | grep -q ' ok installed'; then
  want_612=1
fi

# Soft-iWARP for the guests (scripts/siw_module.sh, rxe_vm.sh --provider
# siw): Debian builds no siw, but its source is in linux-source-6.1 and
# linux-source-6.12 (about 140 and 150 MB), and each guest kernel's
# linux-headers package builds it out of tree. Debian 12 only; every
# installed guest kernel, once the kernels themselves are in.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
siw_packages() {
  local k series
  [[ $second_kernel == 1 ]] || return 0
  for k in $(guest_kernels); do
    series=$(sed -n 's/^\([0-9]*\.[0-9]*\)[.-].*/\1/p' <<<"$k")
    for p in "linux-source-$series" "linux-headers-$k"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q ' ok installed' || echo "$p"
    done
  done | sort -u
}

# The book's copy of mermaid (the theme would load it from a CDN): the npm
# package of the version lib.sh names, checked against the sha512 the npm
# registry publishes for it (lib.sh), its minified script and licence kept in the
# user's cache (not the system's: no sudo). Once.
fetch_mermaid() {
  local dest tmp url digest
  dest=$(book_mermaid_path)
  [[ -s "$dest" ]] && return 0
  url="https://registry.npmjs.org/mermaid/-/mermaid-$BOOK_MERMAID_VERSION.tgz"
  echo "install_deps: fetching mermaid $BOOK_MERMAID_VERSION for the book ($url)"
  tmp=$(mktemp -d)
  if ! curl -sSfL --retry 3 -o "$tmp/mermaid.tgz" "$url"; then
    rm -rf "$tmp"
    echo "install_deps: could not fetch $url; scripts/book.sh needs it (or use --no-docs)" >&2
    return 1
  fi
  digest=$(sha512sum "$tmp/mermaid.tgz" | cut -d' ' -f1)
  if [[ "$digest" != "$BOOK_MERMAID_SHA512" ]]; then
    rm -rf "$tmp"
    echo "install_deps: $url is not the package the registry published (sha512 $digest, expected $BOOK_MERMAID_SHA512)" >&2
    return 1
  fi
  tar -xzf "$tmp/mermaid.tgz" -C "$tmp" package/dist/mermaid.min.js package/LICENSE
  mkdir -p "$(dirname "$dest")"
  cp "$tmp/package/LICENSE" "${dest%.min.js}.LICENSE"
  mv "$tmp/package/dist/mermaid.min.js" "$dest"
  rm -rf "$tmp"
}

if [[ ${#missing[@]} -eq 0 && $want_612 == 0 && -z "$(siw_packages)" ]]; then
  echo "install_deps: all packages present"
  if [[ $want_docs == 1 ]]; then fetch_mermaid; fi
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || {
    echo "install_deps: not root and sudo is missing; run as root: apt-get install ${missing[*]}" >&2
    exit 1
  }
  sudo=(sudo)
fi

echo "install_deps: installing ${missing[*]}${missing[*]:+ }$([[ $want_612 == 1 ]] && echo "the Linux 6.12 guest kernel")"
# Never stop for a debconf question; "env" because sudo drops most of the
# environment, so an exported variable would not reach apt-get.
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
if [[ $want_612 == 1 ]]; then
  pkg_612=$(newest_612)
  if [[ -n "$pkg_612" ]]; then
    missing+=("$pkg_612")
  else
    echo "install_deps: no linux-image-6.12.*+deb12-amd64-unsigned in the package lists; the tests on a second kernel will say so" >&2
  fi
fi
[[ ${#missing[@]} -eq 0 ]] ||
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
# The kernels are in now: the source and headers that build siw for each.
mapfile -t siw < <(siw_packages)
if [[ ${#siw[@]} -gt 0 ]]; then
  echo "install_deps: installing ${siw[*]} (Soft-iWARP for the guests, built by scripts/siw_module.sh)"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${siw[@]}"
fi
if [[ $want_docs == 1 ]]; then fetch_mermaid; fi
echo "install_deps: done"
