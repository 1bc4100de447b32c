#!/usr/bin/env bash
# Run one command inside a throwaway qemu guest that has a Soft-RoCE device.
#
#   scripts/rxe_vm.sh [--timeout SECONDS] [--share DIR]... -- COMMAND [ARGS...]
#
# For machines whose kernel has no RDMA support at all (containers, CI, most
# cloud VMs): the guest boots an installed Debian kernel package that ships
# rdma_rxe.ko, sees the host's root file system read-only and this checkout
# (plus any --share DIR) writable at the same paths, so binaries built on the
# host run unchanged inside. The guest has no network card: rxe0 sits on a
# dummy0 interface holding 192.0.2.1/24 (a documentation address that exists
# only inside the guest; rdma_cm needs a routable address, 127.x is not enough),
# beside dummy1 (203.0.113.1/24, ARP on, no RDMA device): a subnet where
# nobody answers, for stage 07's unreachable addresses.
#
# The command runs in the current directory, its output streams back, and its
# exit status becomes this script's. A guest that does not finish within the
# time limit is killed and the script exits 124.
#
# Inside the guest RXE_VM=1 is set; running this script there again just runs
# the command, so chapters and tests can use the same command line everywhere.
#
# With --provider siw, the device is Soft-iWARP instead: siw0 on the same
# netdev, no rxe0 (siw is built once from Debian's kernel source by
# scripts/siw_module.sh). iWARP carries RDMA over TCP: its QPs are connected
# by rdma_cm only, and the stages say what they do there.
#
# With --pair, two guests boot, joined by a virtual wire (a qemu socket
# netdev on this machine's loopback): each has its own rxe0 on its eth0, so
# RoCE v2 packets really cross a link, as between two hosts. The command runs
# on the first (192.0.2.1); the second (192.0.2.2) runs whatever the command
# hands it with scripts/on_peer.sh, and powers off when the command is done.
set -euo pipefail

usage() {
  awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"
  cat <<'EOF'

Options:
  --timeout SECONDS   kill the guest after this long (default 600, env RXE_VM_TIMEOUT)
  --share DIR         also make DIR writable inside the guest (repeatable)
  --memory MIB        guest memory (default 2048)
  --cpus N            guest CPUs (default: this machine's, at most 4; 1 for
                      a guest that runs beside another); with --pair, the
                      first guest's (default 1; the peer always has 1)
  --kernel VERSION    kernel to boot (default: \$RXE_VM_KERNEL, else the one the
                      distribution's kernel meta-package (linux-image-amd64)
                      installs, else the newest installed one with rdma_rxe.ko)
  --no-rxe            boot with dummy0 (192.0.2.1/24) but no rxe0 link: for testing
                      what programs and scripts do when there is no RDMA device
  --provider rxe|siw  the RDMA device: rxe0 (Soft-RoCE, the default) or siw0
                      (Soft-iWARP, built for the kernel by scripts/siw_module.sh)
  --pair              two guests on a wire: the command on 192.0.2.1, a peer at
                      192.0.2.2 that scripts/on_peer.sh runs commands on
  --verbose           show the guest's console (kernel messages) at the end
Environment: RXE_VM_ACCEL=kvm|tcg forces the accelerator (default: probe KVM once).
             RXE_VM_CPU=MODEL the CPU qemu emulates under TCG (default qemu64: AVX2 paths
             are slow to emulate; see below)
EOF
}

if [[ "${RXE_VM:-}" == 1 ]]; then
  # Already inside the guest: the device is here, just run the command.
  while [[ $# -gt 0 && "$1" != "--" ]]; do
    case "$1" in
      --timeout|--share|--memory|--kernel) shift 2 ;;
      --provider)
        # The guest has the device it was booted with; another is a new guest.
        if [[ "${2:-}" != "${RXE_VM_PROVIDER:-rxe}" ]]; then
          echo "rxe_vm: this guest's device is ${RXE_VM_PROVIDER:-rxe}'s; --provider ${2:-} boots a guest from the host" >&2
          exit 2
        fi
        shift 2 ;;
      --pair)
        [[ -n "${RXE_VM_PEER_DIR:-}" ]] || { echo "rxe_vm: --pair starts from the host; this guest has no peer" >&2; exit 2; }
        shift ;;
      *) shift ;;
    esac
  done
  [[ "${1:-}" == "--" ]] && shift
  exec "$@"
fi

timeout_s="${RXE_VM_TIMEOUT:-600}"
memory=2048
cpus=""
kver=""
verbose=0
with_rxe=1
pair=0
provider=rxe
shares=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --timeout) timeout_s="$2"; shift 2 ;;
    --share) shares+=("$(cd "$2" && pwd -P)"); shift 2 ;;
    --memory) memory="$2"; shift 2 ;;
    --cpus) cpus="$2"; shift 2 ;;
    --kernel) kver="$2"; shift 2 ;;
    --verbose) verbose=1; shift ;;
    --no-rxe) with_rxe=0; shift ;;
    --pair) pair=1; shift ;;
    --provider) provider="${2:-}"; shift 2 || shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) echo "rxe_vm: unknown option '$1' (the command goes after --)" >&2; exit 2 ;;
  esac
done
if [[ $# -eq 0 ]]; then
  echo "rxe_vm: no command given; example: scripts/rxe_vm.sh -- ibv_devinfo" >&2
  exit 2
fi
if [[ $pair == 1 && $with_rxe == 0 ]]; then
  echo "rxe_vm: --pair and --no-rxe do not go together" >&2
  exit 2
fi
case "$provider" in
  rxe) device=rxe0 ;;
  siw) device=siw0
       [[ $with_rxe == 1 ]] || { echo "rxe_vm: --provider siw and --no-rxe do not go together" >&2; exit 2; } ;;
  *) echo "rxe_vm: --provider takes rxe (Soft-RoCE) or siw (Soft-iWARP), got '$provider'" >&2; exit 2 ;;
esac

die() { echo "rxe_vm: $*" >&2; exit 2; }

checkout="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
shares=("$checkout" "${shares[@]}")

qemu=$(command -v qemu-system-x86_64 || true)
[[ -n "$qemu" ]] || die "qemu-system-x86_64 not found; install it with scripts/install_deps.sh"
busybox=$(command -v busybox || true)
[[ -n "$busybox" ]] && file -L "$busybox" 2>/dev/null | grep -q 'statically linked' \
  || busybox=/bin/busybox
[[ -x "$busybox" ]] || die "a static busybox is needed for the guest's init (package busybox-static)"

# --- the kernel: any installed one whose modules include rdma_rxe -----------
find_rxe_module() { find "/lib/modules/$1/kernel/drivers/infiniband/sw/rxe" -name 'rdma_rxe.ko*' 2>/dev/null | head -n1; }
# The default is the distribution's own kernel (Debian 12: 6.1), even when
# a newer one (6.12, scripts/install_deps.sh installs it for the tests) sits
# beside it: the chapters' outputs were measured there (lib.sh says how).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[[ -n "$kver" ]] || kver=$(default_guest_kernel)
[[ -z "$kver" || -n "$(find_rxe_module "$kver")" ]] || die "kernel $kver has no rdma_rxe.ko (installed kernels with it: $(guest_kernels | xargs))"
[[ -n "$kver" ]] || die "no installed kernel ships rdma_rxe.ko; install one: apt-get install linux-image-amd64"
[[ -e "/boot/vmlinuz-$kver" ]] || die "/boot/vmlinuz-$kver is missing; install the matching kernel package"
[[ -r "/boot/vmlinuz-$kver" ]] || die "/boot/vmlinuz-$kver is readable by root only (Ubuntu does that); make it readable: sudo chmod 0644 /boot/vmlinuz-$kver"

work=$(mktemp -d "${TMPDIR:-/tmp}/rxe_vm.XXXXXX")
qemu_pid=""
peer_pid=""
cleanup() {
  [[ -n "$qemu_pid" ]] && kill -9 "$qemu_pid" 2>/dev/null || true
  [[ -n "$peer_pid" ]] && kill -9 "$peer_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the initramfs: busybox, the modules in dependency order, an init --------
root="$work/initramfs"
mkdir -p "$root"/{bin,dev,proc,sys,mnt/host,modules}
cp "$busybox" "$root/bin/busybox"
for applet in sh mount umount mkdir ln insmod chroot poweroff cat echo sleep stty; do
  ln -s busybox "$root/bin/$applet"
done

# modprobe knows the order (and the parameters from modprobe.d). rdma_rxe asks
# the crypto API for "crc32" at "rdma link add" (rxe_icrc.c, 6.1 and 6.12); no
# module dependency names crc32_generic and the guest has no modprobe to load it
# on demand, so without it the link fails with ENOENT.
modules=(rdma_rxe rdma_ucm ib_umad crc32_generic dummy 9p 9pnet_virtio virtio_pci)
# The wire between the two guests, and what scripts/impair.sh needs to lose
# packets on it: nftables to count and mark them, a prio qdisc whose fw
# filter drops the marked ones, netem for random loss, delay and reordering.
[[ $pair == 1 ]] && modules+=(virtio_net nf_tables nft_numgen sch_prio cls_fw act_gact sch_netem)
: > "$root/modules/load"
declare -A seen=()
# add_module MODULE: MODULE and what it depends on, in modprobe's order,
# each once, uncompressed into the initramfs and listed for the init.
add_module() {
  local verb path params base
  while read -r verb path params; do
    [[ "$verb" == insmod && -z "${seen[$path]:-}" ]] || continue
    seen[$path]=1
    base=$(basename "$path")
    case "$base" in
      *.ko.xz) xz -dc "$path" > "$root/modules/${base%.xz}"; base=${base%.xz} ;;
      *.ko.zst) zstd -qdc "$path" > "$root/modules/${base%.zst}"; base=${base%.zst} ;;
      *.ko.gz) gzip -dc "$path" > "$root/modules/${base%.gz}"; base=${base%.gz} ;;
      *) cp "$path" "$root/modules/$base" ;;
    esac
    echo "/modules/$base $params" >> "$root/modules/load"
  done < <(modprobe --show-depends -S "$kver" "$1" 2>/dev/null || true)
}
for m in "${modules[@]}"; do add_module "$m"; done
grep -q rdma_rxe "$root/modules/load" || die "modprobe could not resolve rdma_rxe for $kver (run depmod $kver)"
# Soft-iWARP: the module built for this kernel (scripts/siw_module.sh),
# after what it depends on (ib_core, libcrc32c and, on 6.12, ib_uverbs).
# libcrc32c needs a crc32c: crc32c-intel fails to load on the emulated CPU
# (no SSE 4.2; the init says so on the console only), crc32c_generic,
# listed by modprobe beside it, serves.
if [[ $provider == siw ]]; then
  siw_ko=$("$(dirname "${BASH_SOURCE[0]}")/siw_module.sh" "$kver") || die "no siw.ko for $kver (the line above says why)"
  for m in $(modinfo -F depends "$siw_ko" | tr ',' ' '); do add_module "$m"; done
  cp "$siw_ko" "$root/modules/siw.ko"
  echo "/modules/siw.ko" >> "$root/modules/load"
fi

# The jobs: each runs in the host's root (read-only) with the writable shares
# on top. write_job NAME STATUS_FILE NETDEV ADDRESS PEER_ADDRESS COMMAND...
# (NETDEV dummy0 is created here; eth0 is the pair's wire.)
write_job() {
  local name=$1 status=$2 netdev=$3 address=$4 peer_address=$5
  shift 5
  {
    echo '#!/bin/bash'
    # The status goes to the host through the job share, whatever path ends the job.
    printf 'trap '"'"'echo $? > %q'"'"' EXIT\n' "$work/$status"
    printf 'export RXE_VM=1 RXE_VM_IPV4=%s RXE_VM_PROVIDER=%s HOME=/tmp/home LANG=C.UTF-8\n' "$address" "$provider"
    if [[ -n "$peer_address" ]]; then
      printf 'export RXE_VM_PEER_IPV4=%s RXE_VM_PEER_DIR=%q\n' "$peer_address" "$work/peer"
    fi
    echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    # The environment does not cross into the guest by itself: these do (the
    # sanitizer and test-harness settings too, for a command run by hand).
    for v in TERM CI MESON_TESTTHREADS ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS VALGRIND_OPTS $(compgen -v RDMA_TUTORIAL_); do
      [[ -n "${!v:-}" ]] && printf 'export %s=%q\n' "$v" "${!v}"
    done
    echo 'mkdir -p "$HOME"'
    echo 'ip link set lo up'
    if [[ $netdev == dummy0 ]]; then
      echo 'ip link add dummy0 type dummy || { echo "rxe_vm: could not create dummy0" >&2; exit 125; }'
    fi
    printf 'ip addr add %s/24 dev %s && ip link set %s up || { echo "rxe_vm: could not set up %s" >&2; exit 125; }\n' \
      "$address" "$netdev" "$netdev" "$netdev"
    if [[ $netdev == dummy0 ]]; then
      # A subnet where ARP is asked and nobody answers, as on a real LAN
      # (dummy0 has no ARP at all): stage 07's address nobody owns,
      # 203.0.113.99, ends in ADDR_ERROR there. No RDMA device on it.
      echo 'ip link add dummy1 type dummy && ip link set dummy1 arp on && ip addr add 203.0.113.1/24 dev dummy1 && ip link set dummy1 up || { echo "rxe_vm: could not set up dummy1" >&2; exit 125; }'
    fi
    if [[ $with_rxe == 1 ]]; then
      printf 'rdma link add %s type %s netdev %s || { echo "rxe_vm: rdma link add %s failed" >&2; exit 125; }\n' \
        "$device" "$provider" "$netdev" "$device"
      echo 'i=0; until grep -qs ACTIVE /sys/class/infiniband/'"$device"'/ports/1/state; do'
      echo '  i=$((i+1)); [ $i -gt 50 ] && { echo "rxe_vm: '"$device"' port 1 never became ACTIVE" >&2; exit 125; }; sleep 0.1; done'
    fi
    printf 'cd %q || exit 125\n' "$PWD"
    printf '%q ' "$@"; echo
  } > "$work/$name"
}
if [[ $pair == 1 ]]; then
  mkdir -p "$work/peer"
  write_job job.sh status eth0 192.0.2.1 192.0.2.2 "$@"
  write_job peer_job.sh peer_status eth0 192.0.2.2 192.0.2.1 "$checkout/scripts/peer_agent.sh" "$work/peer"
else
  write_job job.sh status dummy0 192.0.2.1 "" "$@"
fi

shares_list=""
for i in "${!shares[@]}"; do shares_list+="share$i=${shares[$i]} "; done

cat > "$root/init" <<EOF
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo $([[ $verbose == 1 ]] && echo 7 || echo 1) > /proc/sys/kernel/printk
while read -r mod params; do insmod "\$mod" \$params || echo "rxe_vm: insmod \$mod failed" >&2; done < /modules/load
stty -F /dev/ttyS1 raw -echo -onlcr 2>/dev/null
fail() { echo "rxe_vm: \$*" >&2; poweroff -f; }
R=/mnt/host
# The host root is read-only here and nothing changes it while a guest runs,
# so its files and lookups are cached (cache=loose): measured in a one-CPU
# guest, python3 -c pass 5.8-7.1 s -> 1.6-1.7 s, a server's start 1.35 ->
# 0.85 s, 04's inject walk 181 -> 128 s. The writable shares below stay
# uncached: the host changes them while a guest runs (a learner's rebuilt
# exercise in the workshop's warm guest, the file test.sh starts a phase with).
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 hostroot \$R || fail "cannot mount the host root over 9p"
mount -t proc proc \$R/proc
mount -t sysfs sysfs \$R/sys
mount -t devtmpfs devtmpfs \$R/dev
mkdir -p \$R/dev/pts \$R/dev/shm
mount -t devpts devpts \$R/dev/pts
# devtmpfs lacks these; bash's <(...) and /dev/stdout need them
ln -sf /proc/self/fd \$R/dev/fd
ln -sf /proc/self/fd/0 \$R/dev/stdin
ln -sf /proc/self/fd/1 \$R/dev/stdout
ln -sf /proc/self/fd/2 \$R/dev/stderr
for d in tmp run dev/shm var/tmp; do mount -t tmpfs -o mode=1777 tmpfs \$R/\$d 2>/dev/null; done
for s in $shares_list job=$work; do
  tag=\${s%%=*}; path=\${s#*=}
  mkdir -p "\$R\$path" && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 "\$tag" "\$R\$path" \
    || fail "cannot mount \$path"
done
# Through a pipe, not the serial tty: programs see what they would see under
# CI or a redirect (no progress bars, no colours), and the host gets plain text.
job=job.sh
for arg in \$(cat /proc/cmdline); do case "\$arg" in rxe_vm.job=*) job=\${arg#rxe_vm.job=} ;; esac; done
chroot \$R /bin/bash $work/\$job < /dev/null 2>&1 | cat > /dev/ttyS1
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initramfs.gz"

# --- accelerator: KVM only where it really boots a guest --------------------
probe_kvm() {
  [[ -w /dev/kvm ]] || return 1
  local cache="${XDG_CACHE_HOME:-$HOME/.cache}/rdma-tutorial/kvm-works-$(uname -r)-$kver"
  if [[ -f "$cache" ]]; then [[ "$(cat "$cache")" == yes ]]; return; fi
  mkdir -p "$(dirname "$cache")"
  local answer=no
  if timeout 20 "$qemu" -accel kvm -cpu host -m 256 -nographic -no-reboot -nic none \
      -kernel "/boot/vmlinuz-$kver" -initrd "$work/initramfs.gz" \
      -append "console=ttyS0 panic=-1 rdinit=/bin/poweroff -- -f" </dev/null 2>/dev/null \
      | grep -q 'Linux version'; then
    answer=yes
  fi
  echo "$answer" > "$cache"
  [[ "$answer" == yes ]]
}
# TCG: the baseline x86-64 CPU. With -cpu max (or Haswell) glibc and the
# programs take AVX2 paths, which TCG emulates slowly: measured in this
# guest, a sanitize test took 22-26 s under max or Haswell and 15 s under
# qemu64; valgrind, which translates the code itself, 94 s and 87 s.
tcg_cpu=${RXE_VM_CPU:-qemu64}
case "${RXE_VM_ACCEL:-}" in
  kvm) accel=(-accel kvm -cpu host) ;;
  tcg) accel=(-accel tcg,thread=multi -cpu "$tcg_cpu") ;;
  "") if probe_kvm; then accel=(-accel kvm -cpu host); else accel=(-accel tcg,thread=multi -cpu "$tcg_cpu"); fi ;;
  *) die "RXE_VM_ACCEL must be kvm or tcg" ;;
esac

fsdev=(-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap")
for i in "${!shares[@]}"; do
  fsdev+=(-virtfs "local,path=${shares[$i]},mount_tag=share$i,security_model=none,multidevs=remap")
done
fsdev+=(-virtfs "local,path=$work,mount_tag=job,security_model=none,multidevs=remap")

quiet="quiet loglevel=1"
# tsc=unstable: the clock source is the HPET from the start. Under TCG the
# vCPUs' TSCs drift apart; 6.1 notices at boot and never uses the TSC, 6.12
# trusts it at first and its watchdog gives up on it seconds later, and
# switching the scheduler's clock then (a code patch through int3 while
# other vCPUs run it) crashed 3 of 5 6.12 guests running stage 06
# (2026-12-03: "Oops: int3" in sched_clock_cpu, a kernel panic).
# no_timer_check: the boot's check that the IO-APIC timer ticks, which a
# guest whose vCPU is starved of host CPU fails (6.1 panicked "IO-APIC +
# timer doesn't work!" with four other guests booting beside it on two
# cores, 2026-12-05); the timer works, the check's window is too short.
[[ $verbose == 1 ]] && quiet=""
quiet="tsc=unstable no_timer_check $quiet"
# start_guest JOB CONSOLE OUTPUT CPUS NET...: one guest in the background.
start_guest() {
  local job=$1 console=$2 output=$3 cpus=$4
  shift 4
  "$qemu" "${accel[@]}" -smp "$cpus" -m "$memory" \
    -display none -no-reboot -monitor none "$@" \
    -serial "file:$console" -serial "$output" \
    -kernel "/boot/vmlinuz-$kver" -initrd "$work/initramfs.gz" \
    -append "console=ttyS0 panic=-1 $quiet rxe_vm.job=$job" "${fsdev[@]}" </dev/null &
}
if [[ $pair == 1 ]]; then
  # The peer listens on a free loopback port, the main guest connects to it
  # once it is listening: the wire exists only on this machine.
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') \
    || die "could not find a free port on 127.0.0.1 for the wire between the guests"
  start_guest peer_job.sh "$work/peer_console.log" "file:$work/peer_output.log" 1 \
    -netdev "socket,id=wire,listen=127.0.0.1:$port" -device "virtio-net-pci,netdev=wire,mac=52:54:00:00:00:02"
  peer_pid=$!
  for _ in $(seq 100); do   # 10 s at most
    python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()' "$port" \
      2>/dev/null && break
    kill -0 "$peer_pid" 2>/dev/null || die "the peer guest stopped before its end of the wire was up; its console said: $(tail -n 5 "$work/peer_console.log" 2>/dev/null)"
    sleep 0.1
  done
  start_guest job.sh "$work/console.log" stdio "${cpus:-1}" \
    -netdev "socket,id=wire,connect=127.0.0.1:$port" -device "virtio-net-pci,netdev=wire,mac=52:54:00:00:00:01"
else
  start_guest job.sh "$work/console.log" stdio "${cpus:-$(nproc | awk '{print ($1 > 4) ? 4 : $1}')}" -nic none
fi
qemu_pid=$!

deadline=$((SECONDS + timeout_s))
while kill -0 "$qemu_pid" 2>/dev/null; do
  if (( SECONDS >= deadline )); then
    kill -9 "$qemu_pid" 2>/dev/null || true
    wait "$qemu_pid" 2>/dev/null || true
    qemu_pid=""
    echo "rxe_vm: the guest did not finish within ${timeout_s}s and was killed (a hung command? raise --timeout)" >&2
    [[ $verbose == 1 ]] && tail -n 20 "$work/console.log" >&2
    exit 124
  fi
  sleep 0.2
done
wait "$qemu_pid" || true
qemu_pid=""
if [[ $pair == 1 ]]; then
  # The command is done: the peer's agent ends its jobs and powers off.
  touch "$work/peer/stop"
  for _ in $(seq 150); do kill -0 "$peer_pid" 2>/dev/null || break; sleep 0.2; done
  kill -9 "$peer_pid" 2>/dev/null || true
  wait "$peer_pid" 2>/dev/null || true
  peer_pid=""
fi
[[ $verbose == 1 ]] && { echo "--- guest console ---"; cat "$work/console.log"; } >&2
[[ $verbose == 1 && $pair == 1 ]] && { echo "--- peer guest console ---"; cat "$work/peer_console.log";
                                       echo "--- peer agent ---"; cat "$work/peer_output.log"; } >&2

if [[ ! -s "$work/status" ]]; then
  echo "rxe_vm: the guest stopped without reporting an exit status (kernel panic or boot failure); its console said:" >&2
  tail -n 20 "$work/console.log" >&2 || true
  exit 125
fi
exit "$(cat "$work/status")"
