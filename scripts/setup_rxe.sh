#!/usr/bin/env bash
# Create (or remove) a Soft-RoCE device on a real Linux host. Safe to re-run.
#
#   sudo scripts/setup_rxe.sh [--netdev IF] [--name NAME]
#   sudo scripts/setup_rxe.sh [--name NAME] --remove
#
# Loads rdma_rxe, adds an rxe link on top of an Ethernet interface, waits for
# its port to come up and prints the RoCE v2 GID of the interface's IPv4
# address (the GID index programs use to reach this host over IPv4).
#
#   --netdev IF   interface to attach to (default: the first interface other
#                 than lo that is up and has an IPv4 address)
#   --name NAME   RDMA device name (default rxe0)
#   --remove      delete the link NAME instead (nothing to do if it is absent)
#   -h, --help    show this text
#
# If this kernel has no RDMA support at all (containers, CI, many cloud VMs),
# run the programs in a throwaway guest instead: scripts/rxe_vm.sh -- COMMAND
set -euo pipefail

# The help text is the comment block at the top of this file.
usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }

args="$*"                # for the "run with sudo" hint
name=rxe0
netdev=""
remove=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --netdev) [[ $# -ge 2 ]] || { echo "setup_rxe: --netdev needs an interface name" >&2; exit 2; }
              netdev="$2"; shift 2 ;;
    --name)   [[ $# -ge 2 ]] || { echo "setup_rxe: --name needs a device name" >&2; exit 2; }
              name="$2"; shift 2 ;;
    --remove) remove=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup_rxe: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done

say() { echo "setup_rxe: $*"; }
warn() { echo "setup_rxe: warning: $*" >&2; }
die() { echo "setup_rxe: error: $*" >&2; exit 1; }

# --- preconditions ------------------------------------------------------------
[[ $(id -u) -eq 0 ]] || die "loading modules and adding RDMA links needs root; run with sudo: sudo $0${args:+ $args}"
command -v rdma >/dev/null || die "the 'rdma' tool is missing; install the iproute2 package"

# "rdma link" talks to the kernel over a netlink family that only exists when
# the kernel has RDMA support (CONFIG_INFINIBAND) and ib_core is loaded.
kernel_lacks_rdma() {
  local out
  out=$(rdma link show 2>&1) && return 1
  [[ $out == *NETLINK_RDMA* ]]
}
no_rdma_hint="Soft-RoCE cannot run on this kernel; run the programs in a qemu guest that has it: scripts/rxe_vm.sh -- <command>"

# Print "name netdev" for every RDMA link: "link rxe0/1 state ACTIVE ... netdev dummy0".
list_links() {
  rdma link show 2>/dev/null | awk '$1 == "link" {
    dev = $2; sub(/\/.*/, "", dev); nd = "-"
    for (i = 3; i < NF; i++) if ($i == "netdev") nd = $(i + 1)
    print dev, nd }'
}
netdev_of_link() { list_links | awk -v n="$1" '$1 == n { print $2; exit }'; }

# --- --remove -------------------------------------------------------------------
if [[ $remove == 1 ]]; then
  if kernel_lacks_rdma; then
    say "this kernel has no RDMA support loaded, so there is no $name; nothing to remove"
    exit 0
  fi
  if [[ -z "$(netdev_of_link "$name")" ]]; then
    say "no RDMA link named $name; nothing to remove"
    exit 0
  fi
  err=$(rdma link delete "$name" 2>&1) || die "rdma link delete $name failed: $err"
  say "removed $name"
  exit 0
fi

# --- the kernel modules ---------------------------------------------------------
# /sys/module/X exists when X is loaded or built in; checking it first also lets
# the script work where modprobe cannot (a container on a host that loaded it).
if [[ ! -d /sys/module/rdma_rxe ]]; then
  command -v modprobe >/dev/null || die "modprobe is missing; install the kmod package"
  if ! err=$(modprobe rdma_rxe 2>&1); then
    if kernel_lacks_rdma; then
      die "this kernel ($(uname -r)) has no RDMA support:
  rdma link: Failed to open NETLINK_RDMA socket
  modprobe rdma_rxe: ${err:-failed}
  $no_rdma_hint
  (In a container on a kernel that has RDMA, load rdma_rxe on the host instead.)"
    fi
    die "cannot load the rdma_rxe module: ${err:-modprobe failed}
  On Ubuntu it is in a separate package: sudo apt-get install linux-modules-extra-$(uname -r)
  On Debian the stock kernel (linux-image-amd64) ships it; a custom kernel needs CONFIG_RDMA_RXE=m"
  fi
fi
# rdma_rxe asks the crypto API for "crc32" when a link is added (rxe_icrc.c on
# 6.1 and 6.12); no module dependency loads one, and where the kernel cannot
# load it on demand "rdma link add" fails with ENOENT ("No such file or
# directory"). Loading crc32_generic first takes that chance away.
if [[ ! -d /sys/module/crc32_generic ]] && command -v modprobe >/dev/null; then
  modprobe crc32_generic 2>/dev/null \
    || warn "could not load crc32_generic; if 'rdma link add' fails with 'No such file or directory', this is why"
fi
if kernel_lacks_rdma; then
  die "rdma_rxe is loaded but 'rdma link' still cannot reach the kernel (NETLINK_RDMA)
  $no_rdma_hint"
fi

# --- the link -------------------------------------------------------------------
existing=$(netdev_of_link "$name")
if [[ -n "$existing" && -z "$netdev" ]]; then
  netdev=$existing       # re-run without --netdev: accept the link where it is
fi
if [[ -z "$netdev" ]]; then
  # "show up" keeps only interfaces that are administratively up.
  netdev=$(ip -o -4 addr show up | awk '$2 != "lo" { sub(/@.*/, "", $2); print $2; exit }')
  [[ -n "$netdev" ]] || die "no interface other than lo is up with an IPv4 address; pick one with --netdev IF (see: ip -br addr)"
fi
ip link show dev "$netdev" >/dev/null 2>&1 || die "there is no network interface '$netdev' (see: ip -br link)"

if [[ -n "$existing" ]]; then
  if [[ "$existing" != "$netdev" ]]; then
    die "an RDMA link named $name already exists on $existing, not on $netdev;" \
        "remove it first (sudo $0 --name $name --remove) or choose another --name"
  fi
  say "$name already exists on $netdev; not adding it again"
else
  # The port only becomes ACTIVE when the interface is up, so catch that here.
  ip -o link show dev "$netdev" | grep -q '[<,]UP[,>]' \
    || die "$netdev is down; bring it up first: sudo ip link set $netdev up"
  [[ "$netdev" == lo ]] && warn "an rxe device on lo only reaches this same host (and older kernels refuse it); use a real or dummy interface for anything else"
  if ! err=$(rdma link add "$name" type rxe netdev "$netdev" 2>&1); then
    hint="the kernel log may say more: dmesg | tail"
    case "$err" in
      *"No such file or directory"*) hint="load crc32_generic (sudo modprobe crc32_generic) and retry; $hint" ;;
      *"File exists"*)
        other=$(list_links | awk -v d="$netdev" '$2 == d { print $1 }' | paste -sd' ')
        hint="$netdev already carries a Soft-RoCE link (${other:-see: rdma link}); only one rxe device per interface is allowed, use --name ${other%% *} or remove it" ;;
    esac
    die "rdma link add $name type rxe netdev $netdev failed: $err
  $hint"
  fi
  say "added $name on $netdev"
fi

# --- wait for the port and the IPv4 GID -----------------------------------------
port=/sys/class/infiniband/$name/ports/1
[[ -d "$port" ]] || die "$port does not exist although the link does; is /sys mounted from this host?"

# The netdev's IPv4 addresses; each gets a RoCE v2 GID ::ffff:a.b.c.d.
# (A here-string, not "< <(...)": this script also runs on minimal systems
# without /dev/fd.)
read -ra ipv4s <<< "$(ip -o -4 addr show dev "$netdev" | awk '{ sub(/\/.*/, "", $4); print $4 }' | paste -sd' ')"

# Print "index dotted-address" for each RoCE v2 GID of $netdev that is an
# IPv4-mapped address; sysfs shows it as 0000:...:0000:ffff:c000:0201.
ipv4_gids() {
  local f i gid type ndev hex
  for f in "$port"/gids/*; do
    i=${f##*/}
    read -r gid 2>/dev/null < "$f" || continue
    [[ "$gid" == 0000:0000:0000:0000:0000:ffff:* ]] || continue
    # Unused entries have no type (reading it fails with EINVAL).
    read -r type 2>/dev/null < "$port/gid_attrs/types/$i" || continue
    read -r ndev 2>/dev/null < "$port/gid_attrs/ndevs/$i" || ndev=""
    [[ "$type" == "RoCE v2" && "$ndev" == "$netdev" ]] || continue
    hex=${gid:30:4}${gid:35:4}
    printf '%s %d.%d.%d.%d\n' "$i" "0x${hex:0:2}" "0x${hex:2:2}" "0x${hex:4:2}" "0x${hex:6:2}"
  done
}

state="" phys="" gids=""
for ((tries = 0; tries < 50; tries++)); do     # 50 x 0.1 s = 5 s
  read -r state 2>/dev/null < "$port/state" || true
  read -r phys 2>/dev/null < "$port/phys_state" || true
  # sysfs spells them "4: ACTIVE" and "5: LinkUp" ("LINK_UP" in rdma link).
  if [[ "$state" == *ACTIVE* && "$phys" == 5:* ]]; then
    gids=$(ipv4_gids)
    # The GID for the address may appear a moment after the port is up.
    [[ ${#ipv4s[@]} -eq 0 || -n "$gids" ]] && break
  fi
  sleep 0.1
done
say "$name port 1: state ${state#*: }, phys_state ${phys#*: }"
if [[ "$state" != *ACTIVE* || "$phys" != 5:* ]]; then
  die "port 1 of $name did not become ACTIVE/LinkUp within 5 s; check that $netdev is up and has a carrier (ip link show $netdev)"
fi

if [[ ${#ipv4s[@]} -eq 0 ]]; then
  warn "$netdev has no IPv4 address, so there is no RoCE v2 IPv4 GID;" \
       "rdma_cm and the examples need one: sudo ip addr add ADDRESS/PREFIX dev $netdev"
elif [[ -z "$gids" ]]; then
  die "no RoCE v2 GID for the IPv4 address(es) ${ipv4s[*]} of $netdev appeared within 5 s" \
      "(see: ls $port/gids; cat $port/gid_attrs/types/*)"
else
  while read -r index addr; do
    say "RoCE v2 IPv4 GID: index $index  ::ffff:$addr"
  done <<< "$gids"
fi

# --- memlock ----------------------------------------------------------------------
# Registered memory is pinned and counts against RLIMIT_MEMLOCK; small limits make
# ibv_reg_mr fail with ENOMEM although plenty of RAM is free.
memlock=$(ulimit -l)
if [[ "$memlock" != unlimited ]] && (( memlock < 65536 )); then
  warn "the locked-memory limit (ulimit -l) is ${memlock} KiB; memory registration will fail beyond that. Fixes:
    for all users: add '* - memlock unlimited' to /etc/security/limits.conf and log in again
    for this shell: ulimit -l unlimited (as root, or up to the hard limit)
    in a container: docker/podman run --ulimit memlock=-1 ..."
  # Under sudo this is the sudo session's limit; the programs run as the user.
  if [[ -n "${SUDO_USER:-}" ]]; then
    warn "(that is the limit inside sudo; check yours as $SUDO_USER with: ulimit -l)"
  fi
fi

say "$name is ready on $netdev; try: ibv_devinfo -d $name"
