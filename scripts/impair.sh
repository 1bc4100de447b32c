#!/usr/bin/env bash
# Makes this guest's end of the pair's wire lose packets, on purpose: run
# inside a guest of scripts/rxe_vm.sh --pair (run.sh --pair calls it with
# its --drop, --drop-from, --drop-every, --server-drop and --netem options).
#
#   impair.sh [--drop N] [--drop-from N] [--drop-every N] [--netem 'ARGS']
#         from now on, of the RoCE v2 packets (UDP port 4791) this guest
#         sends: the Nth is lost, once (--drop); the Nth and every one
#         after it (--drop-from: the wire goes dead); every Nth
#         (--drop-every); and tc netem's impairments on eth0, e.g.
#         'loss 2%', 'delay 5ms 1ms', 'reorder 25% delay 2ms'
#   impair.sh --report     what was lost: one line, for run.sh to print
#   impair.sh --clear      the wire as it was
#
# How a chosen packet is lost without the sender knowing: nftables counts
# this guest's RoCE packets as they leave (numgen inc, in the output hook)
# and marks the chosen ones; the root qdisc of eth0 (prio) drops marked
# packets with a fw filter. Dropping in nftables itself would not do: rxe
# sends with ip_local_out, and a netfilter drop comes back to it as an error
# (EPERM). Linux 6.1's rxe then rolls the packet back and sends it again at
# once (rxe_net.c makes the error -EAGAIN, rxe_req.c retries): nothing lost.
# 6.12's fails the work request (IB_WC_LOC_QP_OP_ERR) and moves the QP to
# the error state (rxe_req.c): the connection lost, not a packet. A packet
# a qdisc drops is reported as sent (NET_XMIT_SUCCESS with
# __NET_XMIT_BYPASS, as netem's own losses are), so rxe learns of the loss
# as from a real wire: by a NAK or a timeout. tcpdump taps eth0 after the
# qdisc: a dropped packet is not in a capture taken here.
set -euo pipefail

usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }
die() { echo "impair: $*" >&2; exit 2; }

dev=eth0
mark=0x4791            # the mark nftables puts on a packet to lose
table=rdma_tutorial_wire
drop="" drop_from="" drop_every="" netem="" action=set
while [[ $# -gt 0 ]]; do
  case "$1" in
    --drop|--drop-from|--drop-every)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || die "$1 needs a packet number, 1 or more"
      case "$1" in --drop) drop=$2 ;; --drop-from) drop_from=$2 ;; *) drop_every=$2 ;; esac
      shift 2 ;;
    --netem) [[ $# -ge 2 && -n "$2" ]] || die "--netem needs tc netem's arguments, e.g. 'loss 2%'"; netem=$2; shift 2 ;;
    --report) action=report; shift ;;
    --clear) action=clear; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (try --help)" ;;
  esac
done
[[ "${RXE_VM:-}" == 1 ]] || die "this changes eth0's queueing and firewall: run it inside a guest of scripts/rxe_vm.sh --pair"
ip link show "$dev" >/dev/null 2>&1 || die "no $dev here: impairments need the wire of scripts/rxe_vm.sh --pair"

clear() {
  nft delete table ip "$table" 2>/dev/null || true
  tc qdisc del dev "$dev" root 2>/dev/null || true
}

if [[ $action == clear ]]; then clear; exit 0; fi

if [[ $action == report ]]; then
  # "N of M RoCE packets this guest sent were dropped (RULES)"
  counts=$(nft list table ip "$table" 2>/dev/null) || { echo "no impairment set"; exit 0; }
  sent=$(awk '/comment "all"/ { for (i = 1; i < NF; i++) if ($i == "packets") print $(i + 1) }' <<<"$counts")
  lost=$(awk '/comment "lose"/ { for (i = 1; i < NF; i++) if ($i == "packets") n += $(i + 1) } END { print n + 0 }' <<<"$counts")
  what=$(sed -n 's/^# rules: //p' /run/rdma_tutorial_impair 2>/dev/null || true)
  netem_lost=$(tc -s qdisc show dev "$dev" 2>/dev/null | awk '/^qdisc netem/ { n = 1; next } n && /dropped/ { sub(/.*dropped /, ""); sub(/,.*/, ""); s += $0; n = 0 } END { print s + 0 }')
  line="${lost} of ${sent:-0} RoCE packets this guest sent were dropped on purpose (${what})"
  [[ -n "$(sed -n 's/^# netem: //p' /run/rdma_tutorial_impair 2>/dev/null)" ]] && line+="; netem dropped ${netem_lost} packets"
  echo "$line"
  exit 0
fi

[[ -n "$drop$drop_from$drop_every$netem" ]] || die "nothing to do: give --drop, --drop-from, --drop-every or --netem"
command -v nft >/dev/null || die "nft not found: install nftables (scripts/install_deps.sh does)"
clear

# numgen inc counts the packets that reach it (the RoCE ones: it comes after
# the port match), from 0. 4294967295 is the largest modulus: "once".
rules=() what=()
once=4294967295
if [[ -n "$drop" ]]; then
  rules+=("udp dport 4791 numgen inc mod $once $((drop - 1)) meta mark set $mark counter comment \"lose\"")
  what+=("packet $drop")
fi
if [[ -n "$drop_from" ]]; then
  rules+=("udp dport 4791 numgen inc mod $once >= $((drop_from - 1)) meta mark set $mark counter comment \"lose\"")
  what+=("packet $drop_from and all after it")
fi
if [[ -n "$drop_every" ]]; then
  rules+=("udp dport 4791 numgen inc mod $drop_every $((drop_every - 1)) meta mark set $mark counter comment \"lose\"")
  what+=("every ${drop_every}th packet")
fi
{
  echo "table ip $table {"
  echo "  chain out {"
  echo "    type filter hook output priority 0; policy accept;"
  echo "    udp dport 4791 counter comment \"all\""
  for r in "${rules[@]}"; do echo "    $r"; done
  echo "  }"
  echo "}"
} > /run/rdma_tutorial_impair.nft
nft -f /run/rdma_tutorial_impair.nft || die "nft refused the rules in /run/rdma_tutorial_impair.nft (are nf_tables and nft_numgen loaded? lsmod)"

# The qdisc: prio (three bands, as pfifo_fast has), each band with netem
# when asked; the fw filter drops what nftables marked, before any band.
tc qdisc add dev "$dev" root handle 1: prio || die "tc could not put a prio qdisc on $dev (is sch_prio loaded?)"
if [[ ${#rules[@]} -gt 0 ]]; then
  tc filter add dev "$dev" parent 1: protocol ip prio 1 handle "$mark" fw action drop \
    || die "tc could not add the fw filter that drops marked packets (cls_fw and act_gact loaded?)"
fi
if [[ -n "$netem" ]]; then
  for band in 1 2 3; do
    # shellcheck disable=SC2086 # netem's arguments are words
    tc qdisc add dev "$dev" parent "1:$band" handle "$((band + 10)):" netem $netem \
      || die "tc netem refused '$netem' (tc-netem(8) lists what it takes)"
  done
fi
{
  echo "# rules: $(IFS=,; echo "${what[*]:-none}" | sed 's/,/, /g')"
  [[ -z "$netem" ]] || echo "# netem: $netem"
} > /run/rdma_tutorial_impair
