#!/usr/bin/env python3
"""Stages' main runs across the pair, captured, and their packets checked
against what their chapters say goes over the wire (the vm suite's wire
check: it boots the pair from this host).

  wire_check.py SOURCE_ROOT BUILD_DIR [STAGE...]   (default: every stage below)

One pair of guests (scripts/rxe_vm.sh --pair) runs each stage's run.sh with
--pair --capture (tcpdump on the first guest's eth0); the captures are
decoded here, on the host, by scripts/wire.py (tshark: in a TCG guest its
start-up alone took a minute). Each check compares the packets with what
the two programs printed: opcodes in order, PSNs one past the last from the
client's sq_psn, the destination QPN, the RETH's address, rkey and length,
the ImmDt, the AckReq bit, payload lengths by the path MTU, and the ACKs
that come back. A packet sent again (a PSN already seen) is listed, not
failed: RC retransmits when an ACK comes late.
Exit 0 when every check holds, 1 otherwise, 77 where no pair can boot.
"""

import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True


class Checks:
    def __init__(self, quiet=False):
        self.failed = 0
        self.quiet = quiet  # a test of these checks themselves, expecting some to fail

    def expect(self, ok, what):
        if not self.quiet:
            print(("ok: " if ok else "FAILED: ") + what)
        self.failed += not ok
        return ok


def decoded(capture, out_path):
    """What the programs printed, and the capture's packets, listed as run.sh lists them."""
    import wire
    with open(out_path, encoding="utf-8", errors="replace") as f:
        out = f.read()
    print(out, end="")
    packets = wire.decode(capture) if os.path.exists(capture) else []
    for p in packets:
        print("  " + wire.line(p))
    return out, packets


def field(pattern, text, what, base=16):
    m = re.search(pattern, text, re.M)
    if not m:
        raise SystemExit(f"FAILED: the programs' output has no {what} (/{pattern}/)")
    return int(m.group(1), base)


def first_copies(packets):
    """One side's packets with those sent again left out (a PSN no higher than one before), and those."""
    kept, again, highest = [], [], None
    for p in packets:
        step = None if highest is None or p["psn"] is None else (p["psn"] - highest) % (1 << 24)
        if step is not None and (step == 0 or step >= 1 << 23):
            again.append(p)
            continue
        kept.append(p)
        highest = p["psn"]
    return kept, again


def segments(length, mtu):
    """How many packets a message of LENGTH bytes takes at path MTU MTU (one for 0 bytes)."""
    return max(1, -(-length // mtu))


def check_message_packets(c, packets, messages, first_psn, dqpn, mtu):
    """messages: (kind, length, va, rkey, imm or None) in posting order; kind 'write' or 'send'.
    Checks the client's packets against them; returns the last PSN."""
    data, again = first_copies([p for p in packets if p["dir"] == "c>s"])
    for p in again:
        print(f"  (sent again: {p['opcode']} psn=0x{p['psn']:06x}, {p['time']:.6f} s)")
    expected = []
    for kind, length, va, rkey, imm in messages:
        name = "RDMA WRITE" if kind == "write" else "SEND"
        n = segments(length, mtu)
        tail = " with Immediate" if imm is not None else ""
        if n == 1:
            expected.append((f"{name} Only{tail}", length, va, rkey, length, imm, True))
        else:
            for i in range(n):
                part = "First" if i == 0 else ("Last" + tail if i == n - 1 else "Middle")
                size = mtu if i < n - 1 else length - mtu * (n - 1)
                expected.append((f"{name} {part}", size, va if i == 0 else None, rkey if i == 0 else None,
                                 length if i == 0 else None, imm if i == n - 1 else None, i == n - 1))
    c.expect([p["opcode"] for p in data] == [e[0] for e in expected],
             f"the client's packets, in order: {', '.join(e[0] for e in expected)} "
             f"(seen: {', '.join(p['opcode'] for p in data) or 'none'})")
    psns = [p["psn"] for p in data]
    c.expect(psns == [(first_psn + i) % (1 << 24) for i in range(len(psns))],
             f"their PSNs count up by one from the client's sq_psn 0x{first_psn:06x}")
    c.expect(all(p["dqpn"] == dqpn for p in data), f"each goes to the server's QP 0x{dqpn:x}")
    for p, (opcode, size, va, rkey, length, imm, ackreq) in zip(data, expected):
        where = f"{opcode} psn 0x{p['psn']:06x}"
        c.expect(p["payload"] == size, f"{where}: {size} payload bytes (seen {p['payload']})")
        if va is not None and opcode.startswith("RDMA WRITE"):
            r = p.get("reth")
            c.expect(r is not None and (r["va"], r["rkey"], r["length"]) == (va, rkey, length),
                     f"{where}: RETH va 0x{va:x}, rkey 0x{rkey:x}, length {length}" +
                     ("" if r is None else f" (seen 0x{r['va']:x}, 0x{r['rkey']:x}, {r['length']})"))
        elif "reth" in p:
            c.expect(False, f"{where}: no RETH (only a write's first or only packet has one)")
        if imm is not None:
            c.expect(p.get("immdt") == f"{imm:08x}", f"{where}: ImmDt {imm:08x} (seen {p.get('immdt')})")
        else:
            c.expect("immdt" not in p, f"{where}: no ImmDt")
        c.expect(p["ackreq"] == ackreq, f"{where}: AckReq {'set' if ackreq else 'clear'}, on a message's last packet only")
    return psns[-1] if psns else None


def check_acks(c, packets, last_psn, messages):
    back = [p for p in packets if p["dir"] == "s>c"]
    c.expect(bool(back) and all(p["opcode"] == "Acknowledge" and p.get("aeth", {}).get("kind") == "ACK" for p in back),
             f"what comes back is ACKs only ({len(back)}: {', '.join(sorted(set(p['opcode'] for p in back)))})")
    if back and last_psn is not None:
        c.expect(back[-1]["psn"] == last_psn and back[-1]["aeth"]["msn"] == messages,
                 f"the last ACK covers the last packet (psn 0x{last_psn:06x}) and all {messages} messages (MSN)")


def stage_05(out, packets, c):
    slots = field(r"^\[server\] landing region: .*: (\d+) slots of \d+ bytes", out, "server's slot count", 10)
    size = field(r"^\[server\] landing region: .*: \d+ slots of (\d+) bytes", out, "server's slot size", 10)
    mtu = field(r"^\[client\].*path_mtu (\d+)", out, "client path_mtu", 10)
    base = field(r"^\[client\] server .* bytes at 0x([0-9a-f]+)", out, "region address")
    rkey = field(r"^\[client\] server .*rkey 0x([0-9a-f]+)", out, "rkey")
    dqpn = field(r"^\[client\] server .*qp_num 0x([0-9a-f]+)", out, "server QPN")
    psn = field(r"^\[client\] QP .*sq_psn 0x([0-9a-f]+)", out, "client sq_psn")
    messages = []
    for m in re.finditer(r"^\[client\] Write with Immediate: (\d+) bytes(?: into slot (\d+))?, imm 0x([0-9a-f]+)", out, re.M):
        length, slot, imm = int(m.group(1)), int(m.group(2) or 0), int(m.group(3), 16)
        messages.append(("write", length, base + slot * size, rkey, imm))
    c.expect(len(messages) == slots + 3, f"the client printed {slots + 3} Writes with Immediate (2 self-tests, "
             f"{slots} DATA, END): {len(messages)}")
    last = check_message_packets(c, packets, messages, psn, dqpn, mtu)
    check_acks(c, packets, last, len(messages))


def stage_04(out, packets, c):
    mtu = field(r"^\[client\].*path_mtu (\d+)", out, "client path_mtu", 10)
    dqpn = field(r"^\[client\] server .*qp_num 0x([0-9a-f]+)", out, "server QPN")
    psn = field(r"^\[client\] QP .*sq_psn 0x([0-9a-f]+)", out, "client sq_psn")
    va = field(r"^\[client\] RDMA Write: \d+ bytes to 0x([0-9a-f]+)", out, "write address")
    rkey = field(r"^\[client\] RDMA Write: .*rkey 0x([0-9a-f]+)", out, "rkey")
    length = field(r"^\[client\] RDMA Write: (\d+) bytes", out, "write length", 10)
    notice = field(r"^\[server\]   completion: wr_id \d+: IBV_WC_RECV, (\d+) bytes", out, "server's notice Recv", 10)
    messages = [("write", length, va, rkey, None), ("send", notice, None, None, None)]
    last = check_message_packets(c, packets, messages, psn, dqpn, mtu)
    check_acks(c, packets, last, len(messages))


# Each stage's main run as its chapter's "On the wire" shows it, and its check.
STAGES = {"04_rdma_write": (["--size", "3000"], stage_04),
          "05_write_imm": (["--size", "3000", "--slots", "2"], stage_05)}


def main(argv):
    if len(argv) < 2 or any(a not in STAGES for a in argv[2:]):
        print(f"usage: wire_check.py SOURCE_ROOT BUILD_DIR [STAGE...] ({', '.join(STAGES)})", file=sys.stderr)
        return 2
    root, build = os.path.abspath(argv[0]), os.path.abspath(argv[1])
    stages = argv[2:] or list(STAGES)
    sys.path.insert(0, os.path.join(root, "scripts"))
    if os.environ.get("RXE_VM"):
        print("skip: this boots its own pair of guests from the host; it runs in the vm suite")
        return 77
    lib = f"source {root}/scripts/lib.sh"
    if subprocess.run(["bash", "-c", f"{lib}; guest_available"]).returncode != 0:
        print("skip: no guest can boot here (qemu and a kernel with rdma_rxe: scripts/install_deps.sh)")
        return 77
    work = tempfile.mkdtemp(prefix="wire_check.")
    try:
        # One pair of guests for every stage: each boot costs half a minute under TCG.
        script = "; ".join(
            f"{stage}/run.sh --pair --capture {work}/{stage}.pcap {' '.join(STAGES[stage][0])} "
            f"> {work}/{stage}.out 2>&1; echo $? > {work}/{stage}.status" for stage in stages)
        print(f"$ scripts/rxe_vm.sh --pair --share {work} -- bash -c '{script}'")
        booted = subprocess.run([os.path.join(root, "scripts", "rxe_vm.sh"), "--pair", "--timeout", "600", "--share", work,
                                 "--", "bash", "-c", script], cwd=root,
                                env=dict(os.environ, BUILD_DIR=build, RDMA_TUTORIAL_BUILT="1"))
        c = Checks()
        c.expect(booted.returncode == 0, f"the pair should boot and run every stage (rxe_vm.sh exit {booted.returncode})")
        for stage in stages:
            print(f"== {stage}")
            base = os.path.join(work, stage)
            status = open(base + ".status").read().strip() if os.path.exists(base + ".status") else "none"
            ran = c.expect(status == "0", f"{stage}'s run across the pair should succeed (exit {status})")
            if os.path.exists(base + ".out"):
                out, packets = decoded(base + ".pcap", base + ".out")
                if ran:
                    STAGES[stage][1](out, packets, c)
    finally:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'every check held' if c.failed == 0 else f'{c.failed} check(s) failed'}")
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
