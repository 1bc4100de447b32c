#!/usr/bin/env bash
# Check that this machine can run the tutorial's RDMA programs, in the order to
# look at things when a program is stuck: kernel support, user-space verbs,
# devices, port state, GID table, memlock limit, firewall, the guest's kernels,
# the running kernel.
#
#   scripts/check_env.sh [-q]
#
# One line per check: "OK", "WARN ... — fix", "FAIL ... — fix", and "INFO" for
# plain facts. Exit status 1 if anything FAILed, else 0. A kernel without RDMA
# is no failure where scripts/rxe_vm.sh can boot a Soft-RoCE guest instead:
# the last line then says the tutorial's commands use the guest.
#
#   -q          print only WARN and FAIL lines
#   -h, --help  show this text
#
# Without RDMA in the host kernel, check the guest instead:
#   scripts/rxe_vm.sh -- scripts/check_env.sh
set -uo pipefail     # no -e: a failing probe is a finding, not a reason to stop
shopt -s nullglob

# The help text is the comment block at the top of this file.
usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }

quiet=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    -q) quiet=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "check_env: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # guest_kernels, default_guest_kernel

fails=0
# report LEVEL WHAT [FIX]
report() {
  local level=$1 what=$2 fix=${3:-}
  [[ $level == FAIL ]] && fails=$((fails + 1))
  [[ $quiet == 1 && $level != WARN && $level != FAIL ]] && return 0
  if [[ -n "$fix" ]]; then
    printf '%-4s %s — %s\n' "$level" "$what" "$fix"
  else
    printf '%-4s %s\n' "$level" "$what"
  fi
}

# sysfs writes GIDs as eight 4-digit groups; show the usual short IPv6 form,
# and IPv4-mapped ones (the RoCE v2 GIDs of IPv4 addresses) as ::ffff:a.b.c.d.
short_gid() {
  local g=$1 h groups=() i best=-1 bestlen=0 run=0 out=""
  if [[ $g == 0000:0000:0000:0000:0000:ffff:* ]]; then
    h=${g:30:4}${g:35:4}
    printf '::ffff:%d.%d.%d.%d' "0x${h:0:2}" "0x${h:2:2}" "0x${h:4:2}" "0x${h:6:2}"
    return
  fi
  IFS=: read -ra groups <<< "$g"
  for i in "${!groups[@]}"; do
    groups[i]=$(printf '%x' "0x${groups[i]}")
    # Find the longest run of zero groups (at least two) to write as "::".
    if [[ ${groups[i]} == 0 ]]; then
      run=$((run + 1))
      (( run > bestlen )) && { bestlen=$run; best=$((i - run + 1)); }
    else
      run=0
    fi
  done
  (( bestlen < 2 )) && best=-1
  for i in "${!groups[@]}"; do
    if (( best >= 0 && i >= best && i < best + bestlen )); then
      (( i == best )) && out+="::"
      continue
    fi
    [[ -n "$out" && $out != *:: ]] && out+=":"
    out+=${groups[i]}
  done
  printf '%s' "$out"
}

sys=/sys/class/infiniband

# --- the throwaway guest, probed first ----------------------------------------
# Whether scripts/rxe_vm.sh can boot a Soft-RoCE guest here decides how much a
# kernel without RDMA matters: with a guest, every command of the tutorial
# runs its device part there, and the learner can go on.
guest_kver=$(default_guest_kernel)
guest_problem="" guest_fix=""
if ! command -v qemu-system-x86_64 >/dev/null; then
  guest_problem="qemu-system-x86_64 not found, so scripts/rxe_vm.sh cannot boot a Soft-RoCE guest"
  guest_fix="scripts/install_deps.sh installs it (package qemu-system-x86)"
elif [[ -z "$guest_kver" ]]; then
  guest_problem="no installed kernel ships rdma_rxe.ko"
  guest_fix="apt-get install linux-image-amd64 (Ubuntu: linux-image-generic)"
elif [[ ! -r /boot/vmlinuz-$guest_kver ]]; then
  guest_problem="/boot/vmlinuz-$guest_kver is readable by root only"
  guest_fix="sudo chmod 0644 /boot/vmlinuz-$guest_kver"
elif ! { busybox=$(command -v busybox) && file -L "$busybox" | grep -q 'statically linked'; } && ! file -L /bin/busybox 2>/dev/null | grep -q 'statically linked'; then
  guest_problem="no static busybox for the guest's init"
  guest_fix="install busybox-static: scripts/install_deps.sh"
fi
# What the host lacks is a failure only when no guest can stand in for it.
host_level=FAIL
[[ -z "$guest_problem" ]] && host_level=INFO


# --- 1. kernel RDMA support -----------------------------------------------------
# /sys/class/infiniband appears once ib_core is loaded (even with no device).
kernel_rdma=1
if [[ -d $sys ]]; then
  report OK "kernel RDMA support ($sys exists)"
elif command -v rdma >/dev/null && rdma link show >/dev/null 2>&1; then
  report OK "kernel RDMA support (rdma link works)"
else
  kernel_rdma=0
  mods=/lib/modules/$(uname -r)
  if [[ -n "$(find "$mods" -name 'ib_core.ko*' -print -quit 2>/dev/null)" ]]; then
    report "${host_level/INFO/WARN}" "kernel RDMA support: the modules exist but are not loaded" "sudo scripts/setup_rxe.sh (loads rdma_rxe and ib_core)"
  else
    report "$host_level" "kernel RDMA support: none in $(uname -r) (no $sys, rdma link fails)" \
      "this kernel has no RDMA; use scripts/rxe_vm.sh -- <command>"
  fi
fi

# --- 2. user-space verbs ----------------------------------------------------------
ibv_tool=""
for t in ibv_devices ibv_devinfo; do
  command -v "$t" >/dev/null && { ibv_tool=$t; break; }
done
if [[ -n "$ibv_tool" ]]; then
  report OK "libibverbs present ($ibv_tool found)"
else
  report FAIL "libibverbs tools not found (ibv_devices, ibv_devinfo)" "install ibverbs-utils: scripts/install_deps.sh"
fi
if [[ -r /usr/include/infiniband/verbs.h && -r /usr/include/rdma/rdma_cma.h ]]; then
  report OK "verbs and rdma_cm headers present (needed to build)"
else
  report WARN "verbs or rdma_cm headers missing (needed to build)" "install libibverbs-dev librdmacm-dev: scripts/install_deps.sh"
fi

# --- 3. devices -------------------------------------------------------------------
devices=()
for d in "$sys"/*; do devices+=("${d##*/}"); done
if [[ ${#devices[@]} -gt 0 ]]; then
  report OK "RDMA devices: ${devices[*]}"
elif [[ $kernel_rdma == 0 ]]; then
  if [[ $host_level == INFO ]]; then
    report INFO "no RDMA devices here; the guest has one (scripts/rxe_vm.sh -- ibv_devinfo)"
  else
    report FAIL "no RDMA devices" "the kernel needs RDMA support first (see above)"
  fi
else
  report FAIL "no RDMA devices" "create a Soft-RoCE device: sudo scripts/setup_rxe.sh"
fi

# A kernel device is only usable if libibverbs has a provider for it (Debian's
# ibverbs-providers ships librxe for Soft-RoCE) and the process can open /dev/infiniband/uverbsN.
if [[ ${#devices[@]} -gt 0 ]]; then
  if command -v ibv_devices >/dev/null; then
    listed=" $(ibv_devices 2>/dev/null | awk 'NR > 2 { print $1 }' | paste -sd' ') "
    for d in "${devices[@]}"; do
      if [[ "$listed" == *" $d "* ]]; then
        report OK "$d is visible to libibverbs"
      else
        report FAIL "$d is not listed by ibv_devices" \
          "install the user-space providers (Debian: ibverbs-providers; librxe for Soft-RoCE) and load ib_uverbs (sudo modprobe ib_uverbs)"
      fi
    done
  fi
  uverbs=(/dev/infiniband/uverbs*)
  if [[ ${#uverbs[@]} -eq 0 ]]; then
    report FAIL "no /dev/infiniband/uverbs* device files" \
      "load ib_uverbs (sudo modprobe ib_uverbs); in a container pass --device /dev/infiniband"
  else
    denied=()
    for u in "${uverbs[@]}"; do [[ -r $u && -w $u ]] || denied+=("$u"); done
    if [[ ${#denied[@]} -eq 0 ]]; then
      report OK "${uverbs[*]} readable and writable"
    else
      report FAIL "no read/write access to ${denied[*]}" "run as a user allowed by udev rules (rdma-core sets mode 0666) or fix the permissions"
    fi
  fi
fi

# --- 4. each port: state, link layer, GID table ---------------------------------
# "rdma link" knows each port's netdev even when the GID table is still empty.
declare -A link_netdev=()
if command -v rdma >/dev/null; then
  # (A here-string, not "< <(...)": minimal systems have no /dev/fd.)
  while read -r devport nd; do
    [[ -n "$devport" ]] && link_netdev[$devport]=$nd
  done <<< "$(rdma link show 2>/dev/null | awk '$1 == "link" {
      nd = "-"; for (i = 3; i < NF; i++) if ($i == "netdev") nd = $(i + 1)
      print $2, nd }')"
fi

for d in "${devices[@]}"; do
  for p in "$sys/$d"/ports/*; do
    pn=${p##*/}
    tag="$d port $pn"
    netdev=${link_netdev[$d/$pn]:-}
    state="" phys="" layer=""
    read -r state 2>/dev/null < "$p/state"
    read -r phys 2>/dev/null < "$p/phys_state"
    read -r layer 2>/dev/null < "$p/link_layer"

    # sysfs says "4: ACTIVE" and "5: LinkUp".
    if [[ $state == *ACTIVE* && $phys == 5:* ]]; then
      report OK "$tag: state ${state#*: }, phys_state ${phys#*: }"
    else
      if [[ -n "$netdev" && "$netdev" != - ]]; then
        fix="bring up $netdev (ip link set $netdev up) and check its carrier"
      elif [[ -r "$sys/$d/parent" ]]; then   # only soft devices (rxe, siw) have it
        fix="its interface is gone or down; recreate it: sudo scripts/setup_rxe.sh --name $d --remove, then sudo scripts/setup_rxe.sh --name $d"
      else
        fix="bring up the interface under it and check its cable/switch port"
      fi
      report FAIL "$tag: state ${state#*: }, phys_state ${phys#*: } (needs ACTIVE and LinkUp)" "$fix"
    fi

    mtu=""
    if command -v ibv_devinfo >/dev/null; then
      mtu=$(ibv_devinfo -d "$d" -i "$pn" 2>/dev/null | awk '$1 == "active_mtu:" { print $2; exit }')
    fi
    report OK "$tag: link layer ${layer:-unknown}${netdev:+ on $netdev}${mtu:+, active MTU $mtu}"

    # The GID table: valid entries only (unused ones are all zero and have no type).
    v2_ipv4="" v2_any=0 v1_any=0 v2_global=0 entries=0
    for g in "$p"/gids/*; do
      i=${g##*/}
      read -r gid 2>/dev/null < "$g" || continue
      [[ $gid == 0000:0000:0000:0000:0000:0000:0000:0000 ]] && continue
      type="" ndev=""
      read -r type 2>/dev/null < "$p/gid_attrs/types/$i"
      read -r ndev 2>/dev/null < "$p/gid_attrs/ndevs/$i"
      entries=$((entries + 1))
      short=$(short_gid "$gid")
      report INFO "$tag GID[$i] $short  ${type:-?}${ndev:+  $ndev}"
      case "$type" in
        "RoCE v2")
          v2_any=1
          [[ $gid == fe80:* ]] || v2_global=1
          [[ $short == ::ffff:* && -z "$v2_ipv4" ]] && v2_ipv4="index $i ($short${ndev:+ on $ndev})" ;;
        *"RoCE v1"*) v1_any=1 ;;
      esac
    done

    [[ $layer == Ethernet ]] || continue       # InfiniBand GIDs are not RoCE
    nd=${netdev:-the interface}
    if [[ -n "$v2_ipv4" ]]; then
      report OK "$tag: RoCE v2 IPv4 GID at $v2_ipv4"
    elif [[ $entries == 0 ]]; then
      report WARN "$tag: the GID table is empty" "bring $nd up and give it an IPv4 address (ip addr add ADDR/PREFIX dev $nd)"
    elif [[ $v2_any == 0 && $v1_any == 1 ]]; then
      report WARN "$tag: only RoCE v1 GIDs" "RoCE v1 is not routable and the examples use v2; enable RoCE v2 for this NIC (vendor tool or /sys/kernel/config/rdma_cm/$d/ports/$pn/default_roce_mode)"
    elif [[ $v2_global == 0 ]]; then
      report WARN "$tag: only link-local GIDs, no RoCE v2 IPv4 entry" "give $nd an IPv4 address (ip addr add ADDR/PREFIX dev $nd); rdma_cm needs a routable address"
    else
      report WARN "$tag: RoCE v2 GIDs but none for IPv4" "the examples use IPv4: ip addr add ADDR/PREFIX dev $nd"
    fi
  done
done

# --- 5. memlock -----------------------------------------------------------------
# Registered memory is pinned and counted against RLIMIT_MEMLOCK; beyond the
# limit, ibv_reg_mr fails with ENOMEM although RAM is free.
memlock=$(ulimit -l)
if [[ $memlock == unlimited ]]; then
  report OK "memlock limit unlimited"
elif (( memlock >= 65536 )); then
  report OK "memlock limit $memlock KiB"
else
  # Without RDMA here the programs pin memory in the guest, under its limit.
  if [[ $kernel_rdma == 0 && $host_level == INFO ]]; then
    report INFO "memlock limit $memlock KiB (ulimit -l) here; the programs run in the guest, under its own"
  else
    report WARN "memlock limit $memlock KiB (ulimit -l), below 64 MiB" \
      "add '* - memlock unlimited' to /etc/security/limits.conf and log in again, or run 'ulimit -l unlimited' as root; containers: --ulimit memlock=-1"
  fi
fi

# --- 6. firewall on UDP 4791 ----------------------------------------------------
# RoCE v2 packets are UDP datagrams to port 4791; a filter that drops them makes
# connections time out (retry exceeded) with no other hint. Reading the rules
# usually needs root; missing tools are not a failure.
fw_read=() fw_drop=() fw_allow=()
if command -v nft >/dev/null && rules=$(nft list ruleset 2>/dev/null); then
  fw_read+=(nft)
  grep -Eq '\b(drop|reject)\b' <<< "$rules" && fw_drop+=(nft)
  grep -Eq 'dport (\{[^}]*)?\b4791\b.*accept' <<< "$rules" && fw_allow+=(nft)
fi
if command -v iptables >/dev/null && rules=$(iptables -S 2>/dev/null); then
  fw_read+=(iptables)
  grep -Eq -- '-j (DROP|REJECT)|^-P [A-Z]+ DROP' <<< "$rules" && fw_drop+=(iptables)
  grep -Eq -- '--dport 4791 .*-j ACCEPT' <<< "$rules" && fw_allow+=(iptables)
fi
if [[ ${#fw_allow[@]} -gt 0 ]]; then
  report OK "UDP 4791 explicitly allowed (${fw_allow[*]})"
elif [[ ${#fw_drop[@]} -gt 0 ]]; then
  report WARN "firewall has DROP/REJECT rules (${fw_drop[*]}); RoCE v2 uses UDP 4791" \
    "allow it, e.g. iptables -I INPUT -p udp --dport 4791 -j ACCEPT, or an nft rule 'udp dport 4791 accept'"
elif [[ ${#fw_read[@]} -gt 0 ]]; then
  report OK "no firewall rules seen for UDP 4791 (${fw_read[*]}: no DROP/REJECT rules)"
elif command -v nft >/dev/null || command -v iptables >/dev/null; then
  report OK "no firewall rules seen for UDP 4791 (could not read them; run as root to check)"
else
  report OK "no firewall rules seen for UDP 4791 (neither nft nor iptables is installed)"
fi

# --- 7. the throwaway guest (scripts/rxe_vm.sh) -----------------------------------
# Where the kernel has no RDMA it is the only way to a device, so what it
# lacks is a failure there and a note elsewhere.
guest_level=INFO
[[ $kernel_rdma == 0 ]] && guest_level=FAIL
# Every kernel that can boot it (rdma_rxe.ko and a vmlinuz), the default
# first: scripts/rxe_vm.sh --kernel VERSION picks another.
guest_list=""
for k in $(guest_kernels); do
  if [[ $k == "$guest_kver" ]]; then
    guest_list="$k (default)${guest_list:+, $guest_list}"
  else
    guest_list="${guest_list:+$guest_list, }$k"
  fi
done
if [[ -n "$guest_problem" ]]; then
  report "$guest_level" "guest: $guest_problem" "$guest_fix"
else
  kvm="no usable /dev/kvm: emulated (TCG), slower but enough"
  [[ -w /dev/kvm ]] && kvm="/dev/kvm present (rxe_vm.sh uses it if a guest boots with it, else TCG)"
  report OK "guest: qemu and kernel $guest_kver with rdma_rxe; scripts/rxe_vm.sh can boot one; $kvm"
fi
[[ -n "$guest_list" ]] && report INFO "guest kernels with rdma_rxe: $guest_list"
# Soft-iWARP for the guests (rxe_vm.sh --provider siw): built from Debian's
# kernel source on first use; say for which kernels that can be had.
if [[ -z "$guest_problem" ]]; then
  siw_list="" siw_missing=""
  for k in $(guest_kernels); do
    if why=$(scripts/siw_module.sh --check "$k"); then siw_list="${siw_list:+$siw_list, }$k"
    else siw_missing="${siw_missing:+$siw_missing; }${why#siw for }"; fi
  done
  if [[ -n "$siw_list" ]]; then
    report INFO "Soft-iWARP (--provider siw) for: $siw_list (scripts/siw_module.sh builds it on first use)"
  fi
  [[ -z "$siw_missing" ]] || report INFO "no Soft-iWARP for $siw_missing (only --provider siw needs it)"
fi

# --- 8. the kernel's Soft-RoCE -------------------------------------------------------
# rxe changed between kernels; the chapters say which of the two tested
# here each Soft-RoCE fact was measured on (docs/00-setup.md, "Kernels").
if [[ $kernel_rdma == 1 ]]; then
  running=$(uname -r)
  case "$running" in
    6.1.*|6.12.*) report INFO "kernel $running: one of the two this tutorial is tested on (6.1, 6.12)" ;;
    *) report INFO "kernel $running: not one this tutorial is tested on (6.1, 6.12); docs/00-setup.md, Kernels, says what may read differently" ;;
  esac
fi

# --- 9. production note -----------------------------------------------------------
report INFO "RoCE v2 in production needs a fabric built for it (PFC against loss, ECN against congestion); Soft-RoCE is functionally complete but no performance reference"

# --- the verdict ----------------------------------------------------------------------
if [[ $kernel_rdma == 0 && -z "$guest_problem" && $fails == 0 ]]; then
  report OK "ready: this machine has no RDMA of its own, so the tutorial's commands (scripts/tour.sh, each stage's run.sh, scripts/check_exercise.sh, scripts/workshop.sh) run their device part in the Soft-RoCE guest; go on"
fi
[[ $fails -gt 0 ]] && exit 1
exit 0
