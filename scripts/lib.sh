# Shared by the scripts that build and then run something on a device.
# Source it; it defines functions only.

# The checkout's root, whatever the caller's directory.
repo_root() { local here=${BASH_SOURCE[0]%/*}; [[ $here == "${BASH_SOURCE[0]}" ]] && here=.; cd "$here/.." && pwd -P; }

# True when this machine (or the guest we are in) has an RDMA port ACTIVE.
have_active_port() {
  grep -qs ACTIVE /sys/class/infiniband/*/ports/*/state
}

# The IPv4 address rdma_cm programs use here: $RDMA_TUTORIAL_IPV4, the
# guest's ($RXE_VM_IPV4), or the first one on a netdev that has an RDMA link.
rdma_ipv4() {
  local v=${RDMA_TUTORIAL_IPV4:-${RXE_VM_IPV4:-}} netdev
  if [[ -z "$v" ]]; then
    for netdev in $(rdma link show 2>/dev/null | sed -n 's/.* netdev \([^ ]*\).*/\1/p'); do
      v=$(ip -4 -br addr show dev "$netdev" 2>/dev/null | awk '{ sub(/\/.*/, "", $3); print $3 }')
      [[ -n "$v" ]] && break
    done
  fi
  [[ -n "$v" ]] && echo "$v"
}

# The index of DEV's port 1 RoCE v2 IPv4 GID (perftest's -x), from sysfs;
# fails, printing nothing, when there is none.
roce_v2_ipv4_gid_index() {
  local g i
  for g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
    i=${g##*/}
    [[ $(cat "$g" 2>/dev/null) == 0000:0000:0000:0000:0000:ffff:* ]] || continue
    [[ $(cat /sys/class/infiniband/"$1"/ports/1/gid_attrs/types/"$i" 2>/dev/null) == "RoCE v2" ]] && { echo "$i"; return 0; }
  done
  return 1
}

# True when scripts/rxe_vm.sh can boot a guest here: qemu and an installed
# kernel that ships rdma_rxe.
guest_available() {
  command -v qemu-system-x86_64 >/dev/null &&
    compgen -G '/lib/modules/*/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*' >/dev/null
}

# The guest kernels (scripts/rxe_vm.sh --kernel): every installed kernel
# that ships rdma_rxe.ko and has its vmlinuz in /boot, newest first.
guest_kernels() {
  local k
  for k in $(ls /lib/modules 2>/dev/null | sort -rV); do
    [[ -e "/boot/vmlinuz-$k" ]] && compgen -G "/lib/modules/$k/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*" >/dev/null && echo "$k"
  done
  return 0
}

# The guest's kernel when none is named: $RXE_VM_KERNEL, else the one the
# distribution's kernel meta-package installs (Debian 12's linux-image-amd64:
# 6.1), else the newest. The chapters' outputs were measured on the first.
default_guest_kernel() {
  local k meta
  [[ -n "${RXE_VM_KERNEL:-}" ]] && { echo "$RXE_VM_KERNEL"; return; }
  meta=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null | sed -n 's/^linux-image-\([^ ,]*\).*/\1/p')
  for k in $(guest_kernels); do
    [[ "$k" == "$meta" ]] && { echo "$k"; return; }
  done
  guest_kernels | head -n1
}

# The other guest kernel the tests run on (Debian 12's 6.12, which
# scripts/install_deps.sh installs beside 6.1): the newest one that is not
# the default; nothing when there is no second.
second_guest_kernel() {
  local default
  default=$(default_guest_kernel)
  guest_kernels | grep -vxF "$default" | head -n1
  return 0
}

# The guest kernels Soft-iWARP can be had for (scripts/siw_module.sh
# --check: Debian's linux-source and the kernel's headers installed).
siw_kernels() {
  local k
  for k in $(guest_kernels); do
    "$(repo_root)/scripts/siw_module.sh" --check "$k" >/dev/null && echo "$k"
  done
  return 0
}

# True where scripts/install_deps.sh installs what siw needs (Debian 12):
# there a guest kernel without siw is a failure, elsewhere a skip.
siw_expected() {
  [[ -r /etc/os-release ]] && [[ "$(. /etc/os-release && echo "${ID:-}:${VERSION_ID:-}")" == debian:12 ]]
}

# Configure (once, with -Werror as CI builds) and build: build_tree BUILD
# [FD]. Quiet when nothing needs building. A build with work to do shows
# how far it is on FD (default 2) when that is a terminal: one line, drawn
# over, with ninja's latest step ("building: [37/212] Compiling C++ object
# ..."), cleared when done; a first build of the tree takes minutes. A
# failed build shows ninja's output, the compiler's messages in it. FD "-":
# ninja's own output on stdout as it comes, for a caller that shows its
# steps itself (scripts/workshop.py).
build_tree() {
  local build=$1 fd=${2:-2}
  if [[ ! -f "$build/build.ninja" ]]; then
    meson setup --werror "$build" >/dev/null || return 1
  fi
  if [[ $fd == - ]]; then
    NINJA_STATUS='[%f/%t] ' ninja -C "$build"
  elif [[ -t $fd ]]; then
    NINJA_STATUS='[%f/%t] ' ninja -C "$build" | show_build_steps "$fd"
    [[ ${PIPESTATUS[0]} == 0 ]] || ninja -C "$build"
  else
    ninja -C "$build" >/dev/null || ninja -C "$build"
  fi
}

# ninja's output on stdin as one line on FD, a terminal: its latest step,
# cut to the terminal's width (a longer one would wrap, and the next could
# not be drawn over it); the line cleared at the end.
show_build_steps() {
  local fd=$1 line width shown=0
  width=$(stty size <&"$fd" 2>/dev/null) && width=${width#* }
  [[ $width =~ ^[1-9][0-9]*$ ]] || width=80  # a terminal that tells no size says 0
  while IFS= read -r line; do
    [[ $line =~ ^\[[0-9]+/[0-9]+\]\  ]] || continue
    line="building: $line"
    printf '\r%s\033[K' "${line:0:width-1}" >&"$fd"
    shown=1
  done
  (( shown == 0 )) || printf '\r\033[K' >&"$fd"
}

# Run a command where an RDMA device is: natively if there is an active port
# here; else in the warm guest of scripts/workshop.sh when one is up
# ($RDMA_TUTORIAL_GUEST, its agent's folder, and $RXE_VM_PEER_PID, the
# guest's qemu: scripts/on_peer.sh gives up once it is gone, a zombie
# counting as gone); else inside a
# Soft-RoCE guest booted for it.
on_device() {
  if have_active_port; then
    "$@"
  elif [[ -n "${RDMA_TUTORIAL_GUEST:-}" && -e "$RDMA_TUTORIAL_GUEST/ready" ]]; then
    RXE_VM_PEER_DIR=$RDMA_TUTORIAL_GUEST "$(repo_root)/scripts/on_peer.sh" --timeout 600 -- "$@"
  else
    "$(repo_root)/scripts/rxe_vm.sh" -- "$@"
  fi
}

# Run a command in the first guest of a pair (scripts/rxe_vm.sh --pair),
# which reaches the second with scripts/on_peer.sh: in the warm pair of
# scripts/workshop.sh when one is up ($RDMA_TUTORIAL_PAIR, the agent's
# folder in its first guest, and $RXE_VM_PEER_PID, that guest's qemu);
# else in a pair booted for it (22-48 s under TCG).
on_pair() {
  if [[ -n "${RDMA_TUTORIAL_PAIR:-}" && -e "$RDMA_TUTORIAL_PAIR/ready" ]]; then
    RXE_VM_PEER_DIR=$RDMA_TUTORIAL_PAIR "$(repo_root)/scripts/on_peer.sh" --timeout 600 -- "$@"
  else
    "$(repo_root)/scripts/rxe_vm.sh" --pair --timeout 600 -- "$@"
  fi
}

# The book's copy of mermaid (scripts/book.sh puts it in the site; the
# theme would fetch it from a CDN): scripts/install_deps.sh fetches the
# npm package once, checks it against the digest the registry publishes for
# that version (its "integrity", sha512, here in hex), and keeps only its
# minified script and licence here. 8.13.3 is the version the theme
# (mkdocs-material 8.2.5) was made for: it calls mermaid's 8.x API.
BOOK_MERMAID_VERSION=8.13.3
BOOK_MERMAID_SHA512=c3a2a60ed4b3924f39e96515aa506cc8b657d2ae09af7e489718874cf4da5b032058716923cac42737315a8caba71793fd169cfefbef485399ca60d3780d2288
book_mermaid_path() { echo "${XDG_CACHE_HOME:-$HOME/.cache}/rdma-tutorial/book/mermaid-$BOOK_MERMAID_VERSION.min.js"; }
