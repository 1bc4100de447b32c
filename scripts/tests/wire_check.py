#!/usr/bin/env python3
"""The chapters' "On the wire" runs across the pair, captured, their listings
compared with the chapters' blocks and their packets checked against what the
programs printed (the vm suite's wire check: it boots the pair from this host).

  wire_check.py [--second-kernel] [--keep DIR | --from DIR] SOURCE_ROOT BUILD_DIR [STAGE|docs/CHAPTER.md:LINE...]
                 (default: every run the chapters show; --keep DIR keeps the
                 captures and outputs, --from DIR checks kept ones again, no pair;
                 --second-kernel boots the pair with the second guest kernel,
                 Debian 12's 6.12 beside 6.1)

One pair of guests (scripts/rxe_vm.sh --pair) runs each stage's run.sh with
--pair --capture (tcpdump on the first guest's eth0); the captures are
decoded here, on the host, by scripts/wire.py (tshark: in a TCG guest its
start-up alone took a minute). Each check compares the packets with what
the two programs printed: opcodes in order, PSNs one past the last from the
client's sq_psn, the destination QPN, the RETH's address, rkey and length,
the ImmDt, the AckReq bit, payload lengths by the path MTU, and the ACKs
that come back. A packet sent again (a PSN already seen) is listed, not
failed: RC retransmits when an ACK comes late, and the responder answers
the copy with the same ACK again (seen on Soft-RoCE (Linux 6.1): 05's END
sent twice 9 ms apart, its ACK, PSN and MSN 5, twice), or with an ACK that
completes nothing new (its MSN the last one's).
The chapters' listings come from the guest's default kernel (Linux 6.1);
on another, the differences the chapters name (KERNEL_READS) are applied to
a block's lines before the comparison.
Exit 0 when every check holds, 1 otherwise, 77 where no pair can boot (or,
with --second-kernel, where no second guest kernel is installed).
"""

import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True


class Checks:
    def __init__(self, quiet=False):
        self.quiet = quiet  # a test of these checks themselves, expecting some to fail
        self.where = ""  # the run being checked, named again in the recap of what failed
        self.failures = []

    @property
    def failed(self):
        return len(self.failures)

    def expect(self, ok, what):
        if not self.quiet:
            print(("ok: " if ok else "FAILED: ") + what)
        if not ok:
            self.failures.append(f"{self.where}: {what}" if self.where else what)
        return ok


def decoded(capture, out_path, lossy=False, iwarp=False):
    """What the programs printed, and the capture's packets, listed as run.sh lists them."""
    import wire
    with open(out_path, encoding="utf-8", errors="replace") as f:
        out = f.read()
    print(out, end="")
    if iwarp:
        packets = wire.decode_iwarp(capture) if os.path.exists(capture) else []
        lines = [wire.iwarp_line(p) for p in packets]
    else:
        packets = wire.decode(capture) if os.path.exists(capture) else []
        lines = wire.listing(packets, lossy)
    for text in lines:
        print("  " + text)
    return out, packets, lines


def field(pattern, text, what, base=16):
    m = re.search(pattern, text, re.M)
    if not m:
        raise SystemExit(f"FAILED: the programs' output has no {what} (/{pattern}/)")
    return int(m.group(1), base)


def sent_again(psn, highest):
    """Whether a request with PSN, after one with HIGHEST (or None), is one sent again: no higher, in 24-bit PSN
    arithmetic (a step of 0, or of half the space or more, is behind)."""
    step = None if highest is None or psn is None else (psn - highest) % (1 << 24)
    return step is not None and (step == 0 or step >= 1 << 23)


def first_copies(packets):
    """One side's packets with those sent again left out (a PSN no higher than one before), and those."""
    kept, again, highest = [], [], None
    for p in packets:
        if sent_again(p["psn"], highest):
            again.append(p)
            continue
        kept.append(p)
        highest = p["psn"]
    return kept, again


def segments(length, mtu):
    """How many packets a message of LENGTH bytes takes at path MTU MTU (one for 0 bytes)."""
    return max(1, -(-length // mtu))


def is_request(p):
    """A packet of a connection's data: not an ACK, not a connection manager MAD on QP 1."""
    return p["opcode"] != "Acknowledge" and "cm" not in p and not p["opcode"].startswith("RDMA READ response")


def check_message_packets(c, packets, messages, first_psn, dqpn, mtu, side="c>s"):
    """messages: (kind, length, va, rkey, imm or None) in posting order; kind 'write', 'send' or 'read'.
    Checks SIDE's requests against them; returns the last PSN they take (a Read's response takes one per packet)."""
    who = "client" if side == "c>s" else "server"
    data, again = first_copies([p for p in packets if p["dir"] == side and is_request(p)])
    for p in again:
        print(f"  (sent again: {p['opcode']} psn=0x{p['psn']:06x}, {p['time']:.6f} s)")
    expected = []  # (opcode, payload, va, rkey, length, imm, ackreq, psns it takes)
    for kind, length, va, rkey, imm in messages:
        if kind == "read":
            expected.append(("RDMA READ Request", 0, va, rkey, length, None, True, segments(length, mtu)))
            continue
        name = "RDMA WRITE" if kind == "write" else "SEND"
        n = segments(length, mtu)
        tail = " with Immediate" if imm is not None else ""
        if n == 1:
            expected.append((f"{name} Only{tail}", length, va, rkey, length, imm, True, 1))
        else:
            for i in range(n):
                part = "First" if i == 0 else ("Last" + tail if i == n - 1 else "Middle")
                size = mtu if i < n - 1 else length - mtu * (n - 1)
                expected.append((f"{name} {part}", size, va if i == 0 else None, rkey if i == 0 else None,
                                 length if i == 0 else None, imm if i == n - 1 else None, i == n - 1, 1))
    c.expect([p["opcode"] for p in data] == [e[0] for e in expected],
             f"the {who}'s requests, in order: {', '.join(e[0] for e in expected)} "
             f"(seen: {', '.join(p['opcode'] for p in data) or 'none'})")
    want, psn = [], first_psn
    for e in expected:
        want.append(psn)
        psn = (psn + e[7]) % (1 << 24)
    c.expect([p["psn"] for p in data] == want[:len(data)],
             f"their PSNs count packets from the {who}'s first PSN 0x{first_psn:06x}")
    c.expect(all(p["dqpn"] == dqpn for p in data), f"each goes to the peer's QP 0x{dqpn:x}")
    for p, (opcode, size, va, rkey, length, imm, ackreq, _) in zip(data, expected):
        where = f"{opcode} psn 0x{p['psn']:06x}"
        c.expect(p["payload"] == size, f"{where}: {size} payload bytes (seen {p['payload']})")
        if va is not None and opcode.startswith("RDMA"):
            r = p.get("reth")
            c.expect(r is not None and (r["va"], r["rkey"], r["length"]) == (va, rkey, length),
                     f"{where}: RETH va 0x{va:x}, rkey 0x{rkey:x}, length {length}" +
                     ("" if r is None else f" (seen 0x{r['va']:x}, 0x{r['rkey']:x}, {r['length']})"))
        elif "reth" in p:
            c.expect(False, f"{where}: no RETH (only a write's first or only packet, or a Read, has one)")
        if imm is not None:
            c.expect(p.get("immdt") == f"{imm:08x}", f"{where}: ImmDt {imm:08x} (seen {p.get('immdt')})")
        else:
            c.expect("immdt" not in p, f"{where}: no ImmDt")
        c.expect(p["ackreq"] == ackreq, f"{where}: AckReq {'set' if ackreq else 'clear'}, on a message's last packet only")
    return (psn - 1) % (1 << 24) if data else None


def check_acks(c, packets, last_psn, messages, side="s>c"):
    """SIDE's ACKs (for the other side's requests): ACKs only, the last covering LAST_PSN and MESSAGES."""
    back = [p for p in packets if p["dir"] == side and p["opcode"] == "Acknowledge"]
    c.expect(bool(back) and all(p.get("aeth", {}).get("kind") == "ACK" for p in back),
             f"the {side} acknowledgements are ACKs ({len(back)}: "
             f"{', '.join(sorted(set(p.get('aeth', {}).get('kind', '?') for p in back)))})")
    if back and last_psn is not None:
        c.expect(back[-1]["psn"] == last_psn and back[-1]["aeth"]["msn"] == messages,
                 f"the last covers the last packet (psn 0x{last_psn:06x}) and all {messages} messages (MSN "
                 f"{back[-1]['aeth']['msn']})")


def check_nak(c, packets, kind, psn, msn, side="s>c"):
    """The connection's one answer after its ACKs: KIND ("NAK remote access error", "RNR NAK") at PSN, MSN."""
    naks = [p for p in packets if p["dir"] == side and p.get("aeth", {}).get("kind", "ACK") != "ACK"]
    c.expect(bool(naks) and all(f"{p['aeth']['kind']} {p['aeth'].get('reason', '')}".strip() == kind and
                                p["psn"] == psn and p["aeth"]["msn"] == msn for p in naks),
             f"{kind} at psn 0x{psn:06x}, MSN {msn} (seen: " +
             ", ".join(f"{p['aeth']['kind']} {p['aeth'].get('reason', p['aeth'].get('timer', ''))} "
                       f"0x{p['psn']:06x} MSN {p['aeth']['msn']}" for p in naks) + ")")
    return naks


def check_cm(c, packets, ending):
    """rdma_cm's MADs on QP 1: REQs refused while nobody listened, then REQ, REP, RTU, and ENDING."""
    seen = [(p["dir"], p["cm"]) for p in packets if "cm" in p]
    refused = 0
    while seen[2 * refused:2 * refused + 2] == [("c>s", "REQ"), ("s>c", "REJ")]:
        refused += 1
    c.expect(seen[2 * refused:] == [("c>s", "REQ"), ("s>c", "REP"), ("c>s", "RTU")] + ending,
             f"the CM MADs: a REQ and a REJ for each try before the server listened ({refused}), then REQ, REP, "
             f"RTU, {', '.join(d + ' ' + m for d, m in ending)} (seen: {', '.join(d + ' ' + m for d, m in seen)})")
    rejs = [p for p in packets if p.get("cm") == "REJ"]
    c.expect(all(p.get("cm_fields", {}).get("reason") == 8 for p in rejs), "every REJ says invalid service ID (8): nobody listened")
    req = [p.get("cm_fields", {}) for p in packets if p.get("cm") == "REQ"]
    rep = [p.get("cm_fields", {}) for p in packets if p.get("cm") == "REP"]
    if not c.expect(bool(req) and bool(rep) and "qpn" in req[-1] and "qpn" in rep[-1],
                    "the last REQ and the REP name their QPs and first PSNs"):
        return None
    return req[-1], rep[-1]


def tcp_endpoints(out):
    """What a TCP-handshake stage's client (04, 05) printed of its connection: path MTU, the server's QPN, its sq_psn."""
    return (field(r"^\[client\].*path_mtu (\d+)", out, "client path_mtu", 10),
            field(r"^\[client\] server .*qp_num 0x([0-9a-f]+)", out, "server QPN"),
            field(r"^\[client\] QP .*sq_psn 0x([0-9a-f]+)", out, "client sq_psn"))


def stage_05(out, packets, c):
    slots = field(r"^\[server\] landing region: .*: (\d+) slots of \d+ bytes", out, "server's slot count", 10)
    size = field(r"^\[server\] landing region: .*: \d+ slots of (\d+) bytes", out, "server's slot size", 10)
    mtu, dqpn, psn = tcp_endpoints(out)
    base = field(r"^\[client\] server .* bytes at 0x([0-9a-f]+)", out, "region address")
    rkey = field(r"^\[client\] server .*rkey 0x([0-9a-f]+)", out, "rkey")
    messages = []
    for m in re.finditer(r"^\[client\] Write with Immediate: (\d+) bytes(?: into slot (\d+))?, imm 0x([0-9a-f]+)", out, re.M):
        length, slot, imm = int(m.group(1)), int(m.group(2) or 0), int(m.group(3), 16)
        messages.append(("write", length, base + slot * size, rkey, imm))
    c.expect(len(messages) == slots + 3, f"the client printed {slots + 3} Writes with Immediate (2 self-tests, "
             f"{slots} DATA, END): {len(messages)}")
    last = check_message_packets(c, packets, messages, psn, dqpn, mtu)
    check_acks(c, packets, last, len(messages))


def stage_04(out, packets, c):
    mtu, dqpn, psn = tcp_endpoints(out)
    va = field(r"^\[client\] RDMA Write: \d+ bytes to 0x([0-9a-f]+)", out, "write address")
    rkey = field(r"^\[client\] RDMA Write: .*rkey 0x([0-9a-f]+)", out, "rkey")
    length = field(r"^\[client\] RDMA Write: (\d+) bytes", out, "write length", 10)
    notice = field(r"^\[server\]   completion: wr_id \d+: IBV_WC_RECV, (\d+) bytes", out, "server's notice Recv", 10)
    messages = [("write", length, va, rkey, None), ("send", notice, None, None, None)]
    last = check_message_packets(c, packets, messages, psn, dqpn, mtu)
    check_acks(c, packets, last, len(messages))


def stage_06(out, packets, c):
    records = field(r"^\[client 1\] sent (\d+) records and END", out, "client's record count", 10)
    window = field(r"^\[client 1\] server .*window (\d+) slots of \d+ bytes", out, "window", 10)
    size = field(r"^\[client 1\] server .*window \d+ slots of (\d+) bytes", out, "record size", 10)
    dqpn = field(r"^\[server\] client 1 .*: QP 0x([0-9a-f]+) on the SRQ", out, "server's QP")
    cqpn = field(r"^\[server\] client 1 .*on the SRQ <-> QP 0x([0-9a-f]+)", out, "client's QP")
    rkey = field(r"^\[server\] client 1 .*\(rkey 0x([0-9a-f]+)\)", out, "window rkey")
    credit = field(r"^\[server\] client 1 .*credit word at 0x([0-9a-f]+)", out, "credit word")
    mtu = field(r"^\[client 1\].*path_mtu (\d+)", out, "path_mtu", 10)
    writes = [p for p in packets if p["dir"] == "c>s" and is_request(p)]
    if not c.expect(bool(writes) and "reth" in writes[0], "the client's first write is on the wire, with its RETH"):
        return
    base, psn = writes[0]["reth"]["va"], writes[0]["psn"]
    messages = [("write", size, base + (n % window) * size, rkey, 0x01000000 | (n % window)) for n in range(records)]
    messages.append(("write", 0, base + (records % window) * size, rkey, 0x02000000 | records))
    last = check_message_packets(c, packets, messages, psn, dqpn, mtu)
    check_acks(c, packets, last, len(messages))
    credits, _ = first_copies([p for p in packets if p["dir"] == "s>c" and is_request(p)])
    c.expect(len(credits) >= 2 and all(p["opcode"] == "RDMA WRITE Only" and p["payload"] == 8 and p["dqpn"] == cqpn and
                                       p["reth"]["va"] == credit for p in credits),
             f"the server's requests are credit returns: RDMA WRITE Only, 8 bytes, to the credit word 0x{credit:x} "
             f"on the client's QP 0x{cqpn:x}, at least 2 ({len(credits)})")
    window_end = next((p["time"] for p in writes if p["immdt"] == f"{0x01000000:08x}" and p is not writes[0]), None)
    c.expect(window_end is None or any(p["time"] < window_end for p in credits),
             f"the client's record {window} (slot 0 again) goes out only after a credit return came in")
    c.expect(credits and credits[-1]["time"] > writes[-1]["time"], "the last credit return comes after END")
    if credits:
        check_acks(c, packets, credits[-1]["psn"], len(credits), side="c>s")


def stage_07(out, packets, c):
    size = field(r"^\[client\] RDMA Write: (\d+) bytes to", out, "write size", 10)
    va = field(r"^\[client\] ESTABLISHED: .*region: \d+ bytes at 0x([0-9a-f]+)", out, "region address")
    rkey = field(r"^\[client\] ESTABLISHED: .*rkey 0x([0-9a-f]+)", out, "rkey")
    cm = check_cm(c, packets, [("c>s", "DREQ"), ("s>c", "DREP")])
    if cm is None:
        return
    req, rep = cm
    c.expect(rep["responder_resources"] == 1 and req["initiator_depth"] == 1,
             "the REQ asks for one RDMA Read at once (initiator depth 1) and the REP grants it (responder resources 1)")
    mtu = req["path_mtu"]
    messages = [("write", size, va, rkey, None), ("read", size, va, rkey, None), ("send", 8, None, None, None)]
    # Each side's message carries the PSN it will receive from: the client sends from the REP's.
    last = check_message_packets(c, packets, messages, rep["psn"], rep["qpn"], mtu)
    read = next((p for p in packets if p["opcode"] == "RDMA READ Request"), None)
    responses = [p for p in packets if p["opcode"].startswith("RDMA READ response")]
    n = segments(size, mtu)
    names = ["RDMA READ response Only"] if n == 1 else \
        ["RDMA READ response First"] + ["RDMA READ response Middle"] * (n - 2) + ["RDMA READ response Last"]
    c.expect([p["opcode"] for p in responses] == names and read is not None and
             [p["psn"] for p in responses] == [(read["psn"] + i) % (1 << 24) for i in range(n)] and
             sum(p["payload"] for p in responses) == size and all(p["dir"] == "s>c" and p["dqpn"] == req["qpn"] for p in responses),
             f"the Read is answered by {', '.join(names)}: {size} bytes, one PSN each from the Request's, to the client's QP")
    check_acks(c, packets, last, 3)


def stage_08(out, packets, c):
    m = re.search(r"^\[client\] rounds: (\d+) after a warm-up, (\d+) x (\d+) bytes each way, 1 Send in (\d+) solicited", out, re.M)
    if not c.expect(m is not None, "the client printed its rounds with --solicited-every"):
        return
    rounds, burst, size, every = (int(g) for g in m.groups())
    mtu = field(r"^\[client\].*path_mtu (\d+)", out, "client path_mtu", 10)
    for side, who, peer in (("c>s", "client", "server"), ("s>c", "server", "client")):
        psn = field(rf"^\[{who}\] QP .*sq_psn 0x([0-9a-f]+)", out, f"{who}'s sq_psn")
        dqpn = field(rf"^\[{peer}\] QP 0x([0-9a-f]+):", out, f"{peer}'s QP")
        sends = (rounds + 1) * burst
        last = check_message_packets(c, packets, [("send", size, None, None, None)] * sends, psn, dqpn, mtu, side)
        data, _ = first_copies([p for p in packets if p["dir"] == side and is_request(p)])
        c.expect([p["solicited"] for p in data] == [i % burst % every == every - 1 for i in range(sends)],
                 f"the {who}'s Sends carry the Solicited Event bit on every {every}th of each burst of {burst}, none other")
        check_acks(c, packets, last, sends, side="s>c" if side == "c>s" else "c>s")


def stage_09(out, packets, c):
    records = field(r"^\[client 1\] sent (\d+) records and END", out, "client's record count", 10)
    cm = check_cm(c, packets, [("c>s", "DREQ"), ("s>c", "DREP")])
    if cm is None:
        return
    req, rep = cm
    first = field(r"^\[client 1\] ESTABLISHED: .*granted slots (\d+)\.\.", out, "granted slots", 10)
    last_slot = field(r"^\[client 1\] ESTABLISHED: .*granted slots \d+\.\.(\d+)", out, "granted slots", 10)
    size = field(r"^\[client 1\] ESTABLISHED: .*\(\d+ of (\d+) bytes\)", out, "slot size", 10)
    base = field(r"^\[client 1\] ESTABLISHED: .* at 0x([0-9a-f]+), window rkey", out, "granted address")
    rkey = field(r"^\[client 1\] ESTABLISHED: .*window rkey 0x([0-9a-f]+)", out, "window rkey")
    slots = last_slot - first + 1
    messages = [("write", size, base + (n % slots) * size, rkey, 0x01000000 | (first + n % slots)) for n in range(records)]
    messages.append(("write", 0, base + (records % slots) * size, rkey, 0x02000000 | records))
    # Each side's message carries the PSN it will receive from: the client sends from the REP's, the server from the REQ's.
    last = check_message_packets(c, packets, messages, rep["psn"], rep["qpn"], req["path_mtu"])
    check_acks(c, packets, last, len(messages))
    writes = [p for p in packets if p["dir"] == "c>s" and is_request(p)]
    edges, _ = first_copies([p for p in packets if p["dir"] == "s>c" and is_request(p)])
    c.expect([p["psn"] for p in edges] == [(req["psn"] + i) % (1 << 24) for i in range(len(edges))],
             f"the server's PSNs count from the REQ's starting PSN 0x{req['psn']:06x}")
    c.expect(len(edges) >= 2 and all(p["opcode"] == "RDMA WRITE Only" and p["payload"] == 8 and p["dqpn"] == req["qpn"] and
                                     p["reth"]["va"] == edges[0]["reth"]["va"] for p in edges),
             f"the server's requests are credit edges: RDMA WRITE Only, 8 bytes, one address, on the client's QP ({len(edges)})")
    c.expect(bool(edges) and bool(writes) and edges[0]["time"] < writes[0]["time"],
             "the first edge comes before the client's first write: the window is bound before the client may use it")
    c.expect(rkey >> 8 != edges[0]["reth"]["rkey"] >> 8 if edges else False,
             f"the client's writes carry the memory window's rkey 0x{rkey:x}, not a region's")


def stage_07_iwarp(out, packets, c):
    """07 over Soft-iWARP (docs/07-cm-events.md, "On iWARP"): the TCP connection, refused while nobody listened;
    MPA's Request and Reply with the IRD and ORD and the private data; the Write as tagged DDP segments under
    the server's rkey; the Read Request naming both buffers; the Read Response tagged into the client's copy;
    the notice as an untagged Send; the FINs."""
    size = field(r"^\[client\] RDMA Write: (\d+) bytes to", out, "write size", 10)
    va = field(r"^\[client\] ESTABLISHED: .*region: \d+ bytes at 0x([0-9a-f]+)", out, "region address")
    rkey = field(r"^\[client\] ESTABLISHED: .*rkey 0x([0-9a-f]+)", out, "rkey")
    sink = field(r"^\[client\] RDMA Read: .* into our copy at 0x([0-9a-f]+)", out, "the client's copy")
    sink_key = field(r"^\[client\] RDMA Read: .* into our copy at 0x[0-9a-f]+, key 0x([0-9a-f]+)", out, "its key")
    setup = [(p["dir"], p["opcode"]) for p in packets if p["opcode"].startswith(("TCP", "MPA"))]
    refused = 0
    while setup[2 * refused:2 * refused + 2] == [("c>s", "TCP SYN"), ("s>c", "TCP RST ACK")]:
        refused += 1
    want = [("c>s", "TCP SYN"), ("s>c", "TCP SYN ACK"), ("c>s", "MPA Request"), ("s>c", "MPA Reply")]
    c.expect(setup[2 * refused:2 * refused + 4] == want,
             f"a SYN refused by a RST for each try before the server listened ({refused}), then SYN, SYN ACK, "
             f"MPA Request, MPA Reply (seen: {', '.join(d + ' ' + o for d, o in setup)})")
    fins = [d for d, o in setup if o == "TCP FIN"]
    c.expect(sorted(fins) == ["c>s", "s>c"], f"each side closes the connection once, FIN (seen {len(fins)})")
    mpa = {p["opcode"]: p["mpa"] for p in packets if "mpa" in p}
    req, rep = mpa.get("MPA Request", {}), mpa.get("MPA Reply", {})
    c.expect(req.get("rev") == 2 and req.get("ird") == 0 and req.get("ord") == 1 and rep.get("ird") == 1 and
             rep.get("ord") == 0 and not rep.get("rejected"),
             "MPA revision 2 carries the Reads: the client's request ORD 1 (it reads one at a time), IRD 0; the "
             "server's reply IRD 1 (it answers one), ORD 0")
    c.expect(req.get("private_data", "")[:8] == b"cm07".hex() and int(req.get("private_data", "0" * 16)[8:16], 16) == size,
             f"the request's private data is the hello, exactly as sent: \"cm07\", size {size}")
    c.expect(rep.get("private_data", "")[:16] == b"cm07".hex() + f"{rkey:08x}",
             f"the reply's private data is the region: \"cm07\", rkey 0x{rkey:x}, ...")
    data = [p for p in packets if "tagged" in p]
    writes = [p for p in data if p["dir"] == "c>s" and p["opcode"] == "RDMA Write"]
    c.expect(bool(writes) and all(p["tagged"] and p["stag"] == rkey for p in writes) and
             [p["to"] for p in writes] == [va + sum(q["payload"] for q in writes[:i]) for i in range(len(writes))] and
             sum(p["payload"] for p in writes) == size and [p["last"] for p in writes] == [False] * (len(writes) - 1) + [True],
             f"the Write: tagged DDP segments under the server's rkey 0x{rkey:x}, offsets from 0x{va:x} one after "
             f"another, {size} bytes, the Last flag on the last ({len(writes)} segments)")
    reads = [p for p in data if p["opcode"] == "RDMA Read Request"]
    r = reads[0].get("read", {}) if reads else {}
    c.expect(len(reads) == 1 and reads[0]["dir"] == "c>s" and not reads[0]["tagged"] and reads[0]["qn"] == 1 and
             (r.get("source_stag"), r.get("source_to"), r.get("size"), r.get("sink_stag"), r.get("sink_to")) ==
             (rkey, va, size, sink_key, sink),
             f"one Read Request, untagged on queue 1: {size} bytes from the region (0x{rkey:x} at 0x{va:x}) into the "
             f"client's copy (0x{sink_key:x} at 0x{sink:x})")
    responses = [p for p in data if p["opcode"] == "RDMA Read Response"]
    c.expect(bool(responses) and all(p["dir"] == "s>c" and p["tagged"] and p["stag"] == sink_key for p in responses) and
             [p["to"] for p in responses] == [sink + sum(q["payload"] for q in responses[:i]) for i in range(len(responses))] and
             sum(p["payload"] for p in responses) == size and responses[-1]["last"],
             f"the Read Response: tagged DDP segments under the client's copy's key 0x{sink_key:x}, {size} bytes, "
             f"written by the server's device")
    sends = [p for p in data if p["opcode"] == "Send"]
    c.expect(len(sends) == 1 and sends[0]["dir"] == "c>s" and not sends[0]["tagged"] and sends[0]["qn"] == 0 and
             sends[0]["msn"] == 1 and sends[0]["payload"] == 8 and sends[0]["last"],
             "the notice: one untagged Send of 8 bytes, queue 0, message 1")
    order = [p["opcode"] for p in data if p["dir"] == "c>s"]
    c.expect(order == ["RDMA Write"] * len(writes) + ["RDMA Read Request", "Send"],
             "the client's messages in order: the Write, the Read Request, the Send")


def check_tos(args, packets, c, iwarp):
    """A run with --tos N (docs/07-cm-events.md, "The traffic class"): on RoCE every packet of the connection carries
    it in its IP header, the server's too (its path comes from the REQ), but the REJs of the tries nobody listened to;
    on iWARP siw sets none, and every header carries 0."""
    tos = option(args, "--tos", 0)
    if iwarp:
        seen = sorted({p.get("tos", 0) for p in packets})
        c.expect(seen == [0], f"on iWARP the type of service stays 0 in every IP header (seen: {seen})")
        return
    rejected = [p for p in packets if p.get("cm") == "REJ"]
    carried = [p for p in packets if p.get("cm") != "REJ"]
    c.expect(bool(carried) and all(p.get("tos") == tos for p in carried),
             f"every packet of the connection, both sides', carries TOS {tos} (DSCP {tos >> 2}, ECN {tos & 3}) "
             f"(seen: {sorted({p.get('tos') for p in carried})})")
    c.expect(all(p.get("tos") == 0 for p in rejected),
             f"the REJs of the tries nobody listened to carry none ({len(rejected)})")


def exercise_no_remote_write(out, packets, c):
    mtu, dqpn, psn = tcp_endpoints(out)
    length = field(r"^\[client\] RDMA Write: (\d+) bytes", out, "write length", 10)
    va = field(r"^\[client\] RDMA Write: \d+ bytes to 0x([0-9a-f]+)", out, "write address")
    rkey = field(r"^\[client\] RDMA Write: .*rkey 0x([0-9a-f]+)", out, "rkey")
    # The packets that leave before the NAK is back: the First, and as many of the rest as the requester sent
    # by then (all four, or only the First, in runs here).
    data, _ = first_copies([p for p in packets if p["dir"] == "c>s" and is_request(p)])
    n = segments(length, mtu)
    names = ["RDMA WRITE First"] + ["RDMA WRITE Middle"] * (n - 2) + ["RDMA WRITE Last"]
    c.expect(bool(data) and [p["opcode"] for p in data] == names[:len(data)] and
             [p["psn"] for p in data] == [(psn + i) % (1 << 24) for i in range(len(data))] and
             all(p["dqpn"] == dqpn for p in data),
             f"the client's packets are the write's first {len(data)} of {n}, from its sq_psn 0x{psn:06x}, to QP 0x{dqpn:x}")
    r = data[0].get("reth") if data else None
    c.expect(r is not None and (r["va"], r["rkey"], r["length"]) == (va, rkey, length),
             f"the First's RETH: va 0x{va:x}, the rkey the server printed (0x{rkey:x}), length {length}")
    naks = check_nak(c, packets, "NAK remote access error", psn, 0)
    c.expect(len([p for p in packets if p["dir"] == "s>c"]) == len(naks) == 1,
             "the server answers the whole write with one NAK, at its first packet's PSN, and nothing else")


def exercise_flag_past_the_end(out, packets, c):
    base = field(r"^\[server\] landing region: \d+ bytes at 0x([0-9a-f]+)", out, "landing region")
    region = field(r"^\[server\] landing region: (\d+) bytes", out, "region size", 10)
    writes = [p for p in packets if p["dir"] == "c>s" and is_request(p)]
    flag = writes[-1] if writes else None
    c.expect(flag is not None and flag["reth"]["length"] == 8 and flag["reth"]["va"] == base + region,
             f"the flag write's RETH names the 8 bytes after the region's {region} (0x{base + region:x})")
    if flag:
        check_nak(c, packets, "NAK remote access error", flag["psn"], len(writes) - 1)


def exercise_no_recv_posted(out, packets, c):
    psn = field(r"^\[client\] QP .*sq_psn 0x([0-9a-f]+)", out, "client sq_psn")
    retries = field(r"^\[client\] QP .*rnr_retry (\d+)", out, "client rnr_retry", 10)
    writes = [p for p in packets if p["dir"] == "c>s"]
    # rnr_retry + 1 sends, and one more for each time the ACK timeout ran out before an RNR NAK came back:
    # a clean-clone CI run on a loaded host (6.1) sent the write again at 69 ms, its first RNR NAK came at
    # 85 ms, and all five sends were NAKed (that resend spends one of retry_cnt's, not of rnr_retry's).
    c.expect(len(writes) >= retries + 1 and all(p["psn"] == psn and p.get("immdt") == "12345678" for p in writes),
             f"the first Write with Immediate, sent at least {retries + 1} times (rnr_retry {retries}; seen "
             f"{len(writes)}), one PSN, ImmDt 12345678")
    naks = [p for p in packets if p["dir"] == "s>c"]
    c.expect(len(naks) == len(writes) and all(p.get("aeth") == {"kind": "RNR NAK", "timer": 12, "msn": 0} for p in naks),
             "each answered by an RNR NAK with the server's min_rnr_timer 12, MSN 0")


def exercise_no_responder_resources(out, packets, c):
    cm = check_cm(c, packets, [("s>c", "DREQ"), ("c>s", "DREP")])
    c.expect(cm is not None and cm[1]["responder_resources"] == 0, "the REP grants responder resources 0")
    c.expect(not any(p["opcode"] == "RDMA READ Request" for p in packets),
             "no RDMA Read Request goes out: the client's QP may have none outstanding (max_rd_atomic 0)")
    writes = [p for p in packets if p["dir"] == "c>s" and is_request(p)]
    if writes:
        check_acks(c, packets, writes[-1]["psn"], 1)


def exercise_window_without_remote_write(out, packets, c):
    rkey = field(r"^\[client 1\] ESTABLISHED: .*window rkey 0x([0-9a-f]+)", out, "window rkey")
    writes = [p for p in packets if p["dir"] == "c>s" and is_request(p)]
    c.expect(bool(writes) and all(p["reth"]["rkey"] == rkey for p in writes), f"the client's writes carry the window's rkey 0x{rkey:x}")
    if writes:
        check_nak(c, packets, "NAK remote access error", writes[0]["psn"], 0)


# The chapters' "On the wire" runs: a ```text block whose first line is
# "$ NN_stage/run.sh --pair --capture FILE ARGS...", then what the run printed
# and its packets, as run.sh lists them ("..." for lines left out). An
# <!-- exit: N --> line before it gives the run's status (default 0).
BLOCK = re.compile(r"(?:<!-- exit: (\d+) -->\n)?```text\n\$ (\d\d_\w+)/run\.sh --pair(?: --provider (\w+))? --capture \S+"
                   r"((?: \S+)*)\n(.*?)```", re.S)
# A packet's line, or the line wire.py puts where a PSN never came ("(not on this wire)").
PACKET = re.compile(r"^\s*(?:\d+\.\d{6} )?(c>s|s>c) (\S+)")
LABEL = re.compile(r"^\[([^\]]+)\] ")


def chapter_runs(root):
    """Every "On the wire" run of the chapters: dicts of stage, args, exit, expected lines, chapter:line."""
    runs = []
    for name in sorted(os.listdir(os.path.join(root, "docs"))):
        if not re.match(r"\d\d-.*\.md$", name):
            continue
        text = open(os.path.join(root, "docs", name), encoding="utf-8").read()
        for m in BLOCK.finditer(text):
            runs.append({"stage": m.group(2), "provider": m.group(3) or "rxe", "args": m.group(4).split(),
                         "exit": int(m.group(1) or 0), "expected": m.group(5).rstrip("\n").split("\n"),
                         "where": f"docs/{name}:{text.count(chr(10), 0, m.start()) + 1}"})
    return runs


def mask(line):
    """A line with what differs from run to run masked, as the docs suite masks console output: hex numbers
    (addresses, rkeys, QPNs, PSNs), the listing's times, durations, TCP ports; runs of spaces as one."""
    line = re.sub(r"^\s*\d+\.\d{6} (c>s|s>c)", r"<t> \1", line)
    line = re.sub(r"fe80::[0-9a-f:]+", "fe80::<id>", line)
    line = re.sub(r"0x[0-9a-f]+", "<hex>", line)
    line = re.sub(r"\d+(\.\d+)? ?(ns|us|µs|ms|s)\b", "<time>", line)
    line = re.sub(r"(\d+\.\d+\.\d+\.\d+):\d+\b", r"\1:<port>", line)
    return re.sub(r"\s+", " ", line).strip()


def stream(line):
    """Which of a run's independent sequences a line belongs to. Within one, lines keep their order from run to
    run; between two they interleave as timing has it (the server's lines and a client's, a direction's requests
    and the ACKs going the same way)."""
    m = PACKET.match(line)
    if m:
        # iWARP's connection set-up (TCP's SYNs and FINs, MPA) reads as rdma_cm's MADs do on RoCE.
        kind = "cm" if " CM " in line or m.group(2) in ("TCP", "MPA") else (
            "ack" if m.group(2) == "Acknowledge" else "request")
        return f"{m.group(1)} {kind}"
    m = LABEL.match(line)
    if m:
        return m.group(1)
    return "run" if line.startswith("run: ") else "other"


def matches(expected, actual, optional):
    """docs_check's comparison ("..." a gap that may take any lines, backtracking over its length), where an
    actual line in OPTIONAL (a packet sent again) may also be passed over. Returns None, or why not. A copy
    reads, masked, as the next message's packet does (a Write of 3000 bytes sent again, then the next one:
    seen on Soft-RoCE (Linux 6.1), 05's first DATA sent again 5 ms after its first copies): taken for the
    block's next line, it leaves that message short; so the copies are also tried passed over first."""
    why = match_from(expected, actual, optional, False)
    return why if why is None or not optional or match_from(expected, actual, optional, True) is not None else None


def match_from(expected, actual, optional, skip_first):
    """matches' walk; SKIP_FIRST: an OPTIONAL line is passed over before it is compared."""
    e = a = 0
    gaps = []
    while e < len(expected) or a < len(actual):
        if e < len(expected) and expected[e] == "...":
            gaps.append([e + 1, a])
            e += 1
            continue
        if skip_first and a in optional:
            a += 1
            continue
        if e < len(expected) and a < len(actual) and expected[e] == actual[a]:
            e, a = e + 1, a + 1
            continue
        if a < len(actual) and a in optional:
            a += 1
            continue
        if e == len(expected) and gaps and gaps[-1][0] == e:
            return None
        while gaps and gaps[-1][1] >= len(actual):
            gaps.pop()
        if gaps:
            gaps[-1][1] += 1
            e, a = gaps[-1]
            continue
        if e < len(expected):
            return f"expected '{expected[e]}'" + (f", got '{actual[a]}'" if a < len(actual) else ", but the lines ended")
        return f"unexpected '{actual[a]}'"
    return None


# What the chapters' listings (Linux 6.1) read as on another kernel, by its
# major.minor: (pattern, replacement) on a block's lines. Each is a
# difference a chapter names and shows, measured in the guest.
KERNEL_READS = {
    "rxe": {
        # rdma_cm's default ACK timeout, CMA_IBOE_PACKET_LIFETIME + 1 (cma.c):
        # 19 on 6.1, 17 on 6.12 (docs/07-cm-events.md).
        "6.12": [(r"as rdma_cm left it: RTS, timeout 19 \(2147 ms\)", "as rdma_cm left it: RTS, timeout 17 (537 ms)")],
    },
    "siw": {
        # siw's ibv_query_qp fills no state on 6.1 (the zeroed RESET) and the
        # QP's on 6.12 (siw_verbs.c, siw_query_qp; docs/07-cm-events.md, "On iWARP").
        "6.12": [(r"as rdma_cm left it: RESET,", "as rdma_cm left it: RTS,")],
    },
}


def as_on(kernel, lines, provider="rxe"):
    """A block's LINES as they read on KERNEL (a release, '6.12.118+deb12-amd64'; None: as written) with
    PROVIDER's device."""
    minor = re.match(r"\d+\.\d+", kernel or "")
    for pattern, replacement in KERNEL_READS.get(provider, {}).get(minor.group(0) if minor else "", []):
        lines = [re.sub(pattern, replacement, l) for l in lines]
    return lines


def check_listing(c, expected, actual, where):
    """The chapter's block against the run: each stream in order (masked), "..." a gap in every stream."""
    keys = {stream(l) for l in expected if l != "..."} | {stream(l) for l in actual}
    want = {k: [] for k in keys}
    for l in expected:
        for k in (keys if l == "..." else [stream(l)]):
            if l != "..." or not want[k] or want[k][-1] != "...":
                want[k].append("..." if l == "..." else mask(l))
    have = {k: [] for k in keys}
    again = {k: set() for k in keys}
    highest, last_ack, resent = {}, {}, set()
    for l in actual:
        k = stream(l)
        m = re.search(r"psn=0x([0-9a-f]+)", l) if k.endswith("request") else None
        if m:
            psn = int(m.group(1), 16)
            if sent_again(psn, highest.get(k)):
                again[k].add(len(have[k]))
                resent.add(k.split()[0])
            else:
                highest[k] = psn
        # The responder answers a request sent again with the same ACK
        # (PSN and MSN) once more: passed over like the request. So is an
        # ACK that completes nothing new (its MSN the last one's) once a
        # request going the other way was sent again: the responder's
        # answer to the copies (seen on Soft-RoCE (Linux 6.1): 05's two
        # packets of a Write sent again 3 ms after the first copies, when
        # the retransmit timer armed 67 ms earlier by another packet ran
        # out, and two ACKs of the second's PSN, MSN 3, came back).
        ack = re.search(r"psn=0x([0-9a-f]+).*MSN=(\d+)", l) if k.endswith(" ack") else None
        if ack:
            towards = "c>s" if k.startswith("s>c") else "s>c"
            last = last_ack.get(k)
            if last == ack.groups() or (towards in resent and last is not None and last[1] == ack.group(2)):
                again[k].add(len(have[k]))
            last_ack[k] = ack.groups()
        have[k].append(mask(l))
    for k in sorted(keys):
        why = matches(want[k], have[k], again[k])
        c.expect(why is None, f"{where}: the block's {k} lines, masked, are the run's" + ("" if why is None else f": {why}"))


# run.sh's impairments (scripts/impair.sh): a run with any of them is checked by check_loss.
IMPAIRMENTS = ("--drop", "--drop-from", "--drop-every", "--server-drop", "--server-drop-from", "--server-drop-every",
               "--netem")


def option(args, name, default=None):
    return int(args[args.index(name) + 1]) if name in args else default


def check_loss(args, out, packets, c):
    """04 across a wire that lost chosen packets (docs/10-lossy-wire.md): where the gap is, the NAK or the timeout
    that finds it, what is sent again, and how the write ends, from run.sh's options and what the programs printed."""
    import wire
    mtu, dqpn, first = tcp_endpoints(out)
    length = field(r"^\[client\] RDMA Write: (\d+) bytes", out, "write length", 10)
    n = segments(length, mtu)
    last = (first + n - 1) % (1 << 24)
    drop, server_drop, server_from = option(args, "--drop"), option(args, "--server-drop"), option(args, "--server-drop-from")
    retries, ack_timeout = option(args, "--retry-cnt", 3), option(args, "--ack-timeout", 14)
    timeout_s = 4.096e-6 * 2 ** ack_timeout
    sent = [p for p in packets if p["dir"] == "c>s" and is_request(p)]
    back = [p for p in packets if p["dir"] == "s>c"]
    naks = [p for p in back if p.get("aeth", {}).get("kind") == "NAK"]
    gaps = [psn for _, d, _, psn in wire.missing_psns(packets, tails=True) if d == "c>s"]
    write = [p for p in sent if (p["psn"] - first) % (1 << 24) < n]
    completed = re.search(r"^\[client\]   completion: wr_id 1: IBV_WC_RDMA_WRITE$", out, re.M) is not None
    if drop is not None and drop <= n:
        lost = (first + drop - 1) % (1 << 24)
        c.expect(gaps == [lost], f"the listing marks the write's packet {drop}, psn 0x{lost:06x}, as never on the wire "
                                 f"(marked: {', '.join(f'0x{g:06x}' for g in gaps) or 'none'})")
        if retries == 0 or ack_timeout == 0:
            c.expect(all(p["psn"] != lost for p in write), "and it is never sent again")
        elif drop < n:
            # A later packet shows the gap: one NAK names the PSN the responder expected.
            c.expect(len(naks) == 1 and naks[0]["aeth"]["reason"] == "PSN sequence error" and naks[0]["psn"] == lost,
                     f"one NAK, PSN sequence error, at psn 0x{lost:06x} (seen: " +
                     ", ".join(f"{p['aeth']['reason']} 0x{p['psn']:06x}" for p in naks) + ")")
            # Each PSN once, in the order it was first sent again: an early retry of Soft-RoCE's own may
            # send one twice (seen on 6.12: the lost Middle twice, 4 ms apart).
            after = []
            for p in write:
                if naks and p["time"] > naks[0]["time"] and p["psn"] not in after:
                    after.append(p["psn"])
            want = [(lost + k) % (1 << 24) for k in range((last - lost) % (1 << 24) + 1)]
            seen = ", ".join(f"0x{psn:06x}" for psn in after) or "nothing"
            c.expect(after[:len(want)] == want,
                     f"after it the write is sent again from psn 0x{lost:06x} to its last, 0x{last:06x}: go-back-N "
                     f"(seen: {seen})")
        else:
            # The last packet: nothing after it shows the gap. The timeout does.
            c.expect(not naks, "no NAK: no later packet showed the responder a gap")
            again = [p for p in write[n - 1:] if p["psn"] == first]
            c.expect(bool(again) and again[0]["time"] - write[0]["time"] >= 0.75 * timeout_s,
                     f"the whole write sent again, from its first PSN, an ACK timeout ({timeout_s * 1000:.0f} ms) after "
                     f"its first packet" + (f" ({(again[0]['time'] - write[0]['time']) * 1000:.1f} ms)" if again else
                                            " (never sent again)"))
    if server_drop is not None or server_from is not None:
        c.expect(not gaps, "every request reached the wire: the losses are the server's")
        tries = sum(p["psn"] == first for p in write)
        if server_from == 1:
            # Every try spends one of retry_cnt's, early ones too: exactly retry_cnt + 1.
            c.expect(tries == retries + 1, f"the write's first packet sent {retries + 1} times (seen {tries})")
        else:
            # Twice at least: an early retry of Soft-RoCE's own may add a copy.
            c.expect(tries >= 2, f"the write's first packet sent again (seen {tries} times)")
        starts = [p["time"] for p in write if p["psn"] == first][:2 if server_from != 1 else None]
        c.expect(all(b - a >= 0.75 * timeout_s for a, b in zip(starts, starts[1:])),
                 f"each try an ACK timeout ({timeout_s * 1000:.0f} ms) after the one before (seen: " +
                 ", ".join(f"{(b - a) * 1000:.1f} ms" for a, b in zip(starts, starts[1:])) + ")")
        if server_from == 1:
            c.expect(not back, f"nothing comes back from the server (seen {len(back)} packets)")
        else:
            c.expect(re.search(r"^  rxe0 port 1  duplicate_request +\+\d+$", out, re.M) is not None,
                     "the server's device counted the copies as duplicate_request")
            c.expect(any(p.get("aeth", {}).get("kind") == "ACK" and p["psn"] == last for p in back),
                     f"and acknowledged the write again (an ACK of psn 0x{last:06x})")
    fails = (retries == 0 and drop is not None) or server_from == 1
    if ack_timeout == 0:
        c.expect(re.search(r"^\[client\] rdma_write: no completion within \d+ ms", out, re.M) is not None,
                 "with timeout 0 the client waits in vain: no completion within its --wait-ms")
    elif fails:
        c.expect(re.search(r"^\[client\]   completion: wr_id 1: IBV_WC_RETRY_EXC_ERR ", out, re.M) is not None,
                 "the write completes with IBV_WC_RETRY_EXC_ERR: the retries ran out")
    else:
        c.expect(completed, "the write completes, IBV_WC_RDMA_WRITE: the loss was repaired")
        c.expect(re.search(r"^\[server\] the client wrote \d+ bytes", out, re.M) is not None,
                 "and the server reads what the client wrote")


def check_gid_family(out, packets, c):
    """04 with one side on its fe80:: GID entry (-g 0), the other on its IPv4 one (docs/10-lossy-wire.md, "The wrong
    GID"): the server's RTR refused with EINVAL, the client told the server left, and no RoCE packet on the wire."""
    c.expect(re.search(r"^\[server\] rdma_write: ibv_modify_qp\(our QP, INIT -> RTR\) failed \(EINVAL\)", out, re.M)
             is not None, "the server's INIT -> RTR fails with EINVAL: a source and a destination of two address families")
    c.expect(re.search(r"^\[server\] client .* gid fe80::", out, re.M) is not None,
             "the server was told the client's link-local GID")
    c.expect(not packets, f"no RoCE packet crossed the wire (seen {len(packets)})")


# Each stage's main run and its check; an exercise's run (--exercise NAME) is checked by EXERCISES.
STAGES = {"04_rdma_write": stage_04, "05_write_imm": stage_05, "06_srq_credits": stage_06, "07_cm_events": stage_07,
          "08_event_channel": stage_08, "09_mempool": stage_09}
IWARP_STAGES = {"07_cm_events": stage_07_iwarp}
EXERCISES = {"no_remote_write": exercise_no_remote_write, "flag_past_the_end": exercise_flag_past_the_end,
             "no_recv_posted": exercise_no_recv_posted, "no_responder_resources": exercise_no_responder_resources,
             "window_without_remote_write": exercise_window_without_remote_write}


def check_runs(c, runs, work):
    """Each run's status, its listing against the chapter's block, and its packets against its stage's check."""
    kernel = open(os.path.join(work, "kernel")).read().strip() if os.path.exists(os.path.join(work, "kernel")) else None
    if kernel:
        print(f"(the pair ran Linux {kernel})")
    for i, r in enumerate(runs):
        print(f"== {r['where']}: {r['stage']}/run.sh --pair --capture F {' '.join(r['args'])}")
        c.where = r["where"]
        base = os.path.join(work, str(i))
        status = open(base + ".status").read().strip() if os.path.exists(base + ".status") else "none"
        ran = c.expect(status == str(r["exit"]), f"the run should exit {r['exit']} (exit {status})")
        if not os.path.exists(base + ".out"):
            continue
        lossy = any(a in IMPAIRMENTS for a in r["args"])
        iwarp = r["provider"] == "siw"
        out, packets, lines = decoded(base + ".pcap", base + ".out", lossy, iwarp)
        check_listing(c, as_on(kernel, r["expected"], r["provider"]), out.rstrip("\n").split("\n") + lines, r["where"])
        if not ran:
            continue
        if "--tos" in r["args"]:
            check_tos(r["args"], packets, c, iwarp)
        if iwarp:
            if c.expect(r["stage"] in IWARP_STAGES, f"wire_check knows what {r['stage']}'s iWARP traffic should show"):
                IWARP_STAGES[r["stage"]](out, packets, c)
        elif any(a in IMPAIRMENTS for a in r["args"]):
            if c.expect(r["stage"] == "04_rdma_write", "wire_check knows what a lossy wire does to 04's packets"):
                check_loss(r["args"], out, packets, c)
        elif "-g" in r["args"]:
            if c.expect(r["stage"] == "04_rdma_write", "wire_check knows what a GID of another family does to 04"):
                check_gid_family(out, packets, c)
        elif "--exercise" in r["args"]:
            name = r["args"][r["args"].index("--exercise") + 1]
            if c.expect(name in EXERCISES, f"wire_check knows what {name}'s packets should show"):
                EXERCISES[name](out, packets, c)
        elif c.expect(r["stage"] in STAGES, f"wire_check knows what {r['stage']}'s packets should show"):
            STAGES[r["stage"]](out, packets, c)


def report(c):
    # Named again last: a log cut to its tail (CI shows the end) still says which checks failed, and in which run.
    for what in c.failures:
        print(f"FAILED: {what}")
    print(f"{'every check held' if c.failed == 0 else f'{c.failed} check(s) failed'}")
    return 0 if c.failed == 0 else 1


def main(argv):
    if len(argv) < 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    keep = again = None
    second = "--second-kernel" in argv
    if second:
        argv.remove("--second-kernel")
    if "--from" in argv:
        # Check the runs kept by an earlier --keep again, without a pair (the chapters' blocks, the checks).
        i = argv.index("--from")
        again = os.path.abspath(argv[i + 1])
        del argv[i:i + 2]
    if "--keep" in argv:
        # Keep the captures and outputs (to look at them, or to record a unit test's capture).
        i = argv.index("--keep")
        keep = os.path.abspath(argv[i + 1])
        del argv[i:i + 2]
    root, build = os.path.abspath(argv[0]), os.path.abspath(argv[1])
    sys.path.insert(0, os.path.join(root, "scripts"))
    runs = [r for r in chapter_runs(root) if not argv[2:] or r["stage"] in argv[2:] or r["where"] in argv[2:]]
    if not runs:
        print(f"FAILED: no chapter has an On the wire run{' of ' + ', '.join(argv[2:]) if argv[2:] else ''}")
        return 1
    if again:
        c = Checks()
        check_runs(c, runs, again)
        return report(c)
    if os.environ.get("RXE_VM"):
        print("skip: this boots its own pair of guests from the host; it runs in the vm suite")
        return 77
    lib = f"source {root}/scripts/lib.sh"
    if subprocess.run(["bash", "-c", f"{lib}; guest_available"]).returncode != 0:
        print("skip: no guest can boot here (qemu and a kernel with rdma_rxe: scripts/install_deps.sh)")
        return 77
    # Bad input first, refused before any guest boots: a capture nobody can write.
    refused = subprocess.run([os.path.join(root, "04_rdma_write", "run.sh"), "--pair", "--capture", "/proc/no/such.pcap"],
                             capture_output=True, text=True, env=dict(os.environ, BUILD_DIR=build, RDMA_TUTORIAL_BUILT="1"))
    if refused.returncode != 2 or "cannot write the capture to /proc/no/such.pcap" not in refused.stderr:
        print(f"FAILED: run.sh --pair --capture into /proc should exit 2 and say why (exit {refused.returncode}: "
              f"{refused.stderr.strip()})")
        return 1
    print("ok: run.sh refuses a capture it cannot write, before booting anything")
    env = dict(os.environ, BUILD_DIR=build, RDMA_TUTORIAL_BUILT="exercises")
    if second:
        k2 = subprocess.run(["bash", "-c", f"{lib}; second_guest_kernel"], capture_output=True, text=True).stdout.strip()
        if not k2:
            print("skip: no second guest kernel is installed (scripts/install_deps.sh installs Debian 12's 6.12)")
            return 77
        env["RXE_VM_KERNEL"] = k2
    # The exercises' programs are built on demand (ninja exercises builds them all); here, those the runs use.
    targets = [f"subprojects/{r['stage']}/exercises/{r['args'][r['args'].index('--exercise') + 1]}"
               for r in runs if "--exercise" in r["args"]]
    if targets:
        built = subprocess.run(["ninja", "-C", build] + targets, capture_output=True, text=True)
        if built.returncode != 0:
            print(built.stdout + built.stderr + "FAILED: the exercises the chapters' runs use do not build")
            return 1
    work = keep or tempfile.mkdtemp(prefix="wire_check.")
    os.makedirs(work, exist_ok=True)
    c = Checks()
    try:
        # One pair of guests for every run of a provider: each boot costs half a minute under TCG.
        for provider in sorted({r["provider"] for r in runs}):
            script = f"uname -r > {work}/kernel; " + "; ".join(
                f"{r['stage']}/run.sh --pair --provider {provider} --capture {work}/{i}.pcap {' '.join(r['args'])} "
                f"> {work}/{i}.out 2>&1; echo $? > {work}/{i}.status" for i, r in enumerate(runs)
                if r["provider"] == provider)
            print(f"$ scripts/rxe_vm.sh --pair --provider {provider} --share {work} -- bash -c '{script}'")
            booted = subprocess.run([os.path.join(root, "scripts", "rxe_vm.sh"), "--pair", "--provider", provider,
                                     "--timeout", "900", "--share", work, "--", "bash", "-c", script], cwd=root, env=env)
            c.expect(booted.returncode == 0,
                     f"the {provider} pair should boot and run every run (rxe_vm.sh exit {booted.returncode})")
        check_runs(c, runs, work)
    finally:
        import shutil
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return report(c)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
