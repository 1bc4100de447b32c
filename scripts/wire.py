#!/usr/bin/env python3
"""The RoCE v2 packets of a capture, one line each, decoded by tshark's own
InfiniBand dissector (Debian's tshark decodes UDP port 4791 as RoCE v2;
its RPC-over-RDMA heuristic, which takes a short Send's payload for NFS and
calls it malformed, is turned off). A capture with no RoCE v2 in it is
read as iWARP (run.sh --provider siw): its TCP segments, decoded by
tshark's MPA, DDP and RDMAP dissectors, one line per iWARP message part.

  scripts/wire.py FILE.pcap [--client ADDR] [--json] [--lossy]

Each line: the time since the first packet, the direction (c>s from the
client's address, default 192.0.2.1, the first guest of rxe_vm.sh --pair;
s>c back), the opcode, the PSN, the destination QPN, A when the AckReq bit
is set and S for the Solicited Event bit, the payload length, then what the
packet carries: the RETH (virtual address, rkey, length), the ImmDt, the
AETH (ACK, RNR NAK with its timer code, NAK with its reason, and the MSN),
or, for a connection manager MAD on QP 1, its message (REQ, REP, RTU, DREQ,
DREP, REJ, MRA). --json prints the same as one JSON object per packet, the
form the tests read.

A request whose PSN skips ahead of the one its QP's packets have reached
(the packet before it lost, as run.sh --pair --drop arranges) is preceded
by a line of its own for each PSN never seen, "(not on this wire)": the
responder's NAK names the first of them. With --lossy (run.sh passes it
when it lost packets on purpose), so is a resend that goes back while the
message before it stopped short (its last packet, First or Middle, not a
Last or Only): the PSN after it never came; and a capture that ends inside
a message is followed by such a line. Without it these two are not marked:
on a wire that loses nothing, an early retry of Soft-RoCE's own can go back
while a message is still being sent.
"""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

# The AETH syndrome's top bits (InfiniBand Architecture Specification, 9.7.5.1:
# 0 ACK, 1 RNR NAK, 3 NAK) and a NAK's code; tshark shows them as numbers.
NAK_REASONS = {0: "PSN sequence error", 1: "invalid request", 2: "remote access error",
               3: "remote operational error", 4: "invalid RD request"}
# The connection manager's messages by MAD attribute ID (the kernel's
# drivers/infiniband/core/cm_msgs.h; ClassPortInfo is the MAD classes' own).
CM_MESSAGES = {0x0001: "ClassPortInfo", 0x0010: "REQ", 0x0011: "MRA", 0x0012: "REJ", 0x0013: "REP",
               0x0014: "RTU", 0x0015: "DREQ", 0x0016: "DREP", 0x0017: "SIDR_REQ", 0x0018: "SIDR_REP",
               0x0019: "LAP", 0x001a: "APR"}
# A REJ's reason (enum ib_cm_rej_reason, include/rdma/ib_cm.h), the two rdma_cm sends.
CM_REJ_REASONS = {8: "invalid service ID: nobody listens", 28: "consumer defined: rdma_reject"}


class WireError(Exception):
    pass


def _fields(proto):
    """name -> (show, showname) of every field under one proto element, nested ones included."""
    out = {}
    for f in proto.iter("field"):
        name = f.get("name")
        if name and name not in out:
            out[name] = (f.get("show", ""), f.get("showname", ""))
    return out


HEADERS = {"infiniband.bth", "infiniband.reth", "infiniband.immdt", "infiniband.aeth", "infiniband.ieth",
           "infiniband.deth", "infiniband.atomiceth", "infiniband.atomicacketh"}


def _payload_length(proto, ib):
    """The bytes between the transport headers and the ICRC, less the pad (the dissector names no
    payload field for RC data packets, but places each header and the ICRC)."""
    end, crc = None, None
    for f in proto.findall("field"):
        name, pos, size = f.get("name"), f.get("pos"), f.get("size")
        if pos is None or size is None:
            continue
        if name in HEADERS:
            end = max(end or 0, int(pos) + int(size))
        elif name == "infiniband.invariant.crc":
            crc = int(pos)
    if end is None or crc is None:
        return 0
    pad = int(ib.get("infiniband.bth.padcnt", ("0", ""))[0] or 0)
    return max(crc - end - pad, 0)


def _number(text):
    text = text.strip()
    return int(text, 16) if text.lower().startswith("0x") else int(text)


def _opcode_name(showname):
    # "Opcode: Reliable Connection (RC) - RDMA WRITE Only Immediate (11)" -> "RDMA WRITE Only Immediate"
    name = showname.split(" - ", 1)[-1] if " - " in showname else showname.split(":", 1)[-1]
    if name.endswith(")") and "(" in name:
        name = name[:name.rindex("(")]
    name = name.strip()
    if "(UD)" in showname:
        # "SEND only" of Unreliable Datagram: QP 1's MADs (the connection manager's).
        name = "UD " + name.replace(" only", " Only")
    return name


def _pdml_packets(path, display_filter):
    """The packets of the capture at PATH that tshark's DISPLAY_FILTER keeps, as its PDML elements."""
    if not os.path.exists(path):
        raise WireError(f"no capture at {path}")
    try:
        run = subprocess.run(["tshark", "-r", path, "--disable-protocol", "rpcordma", "-Y", display_filter, "-T", "pdml"],
                             capture_output=True, text=True, env=dict(os.environ, LANG="C"))
    except FileNotFoundError:
        raise WireError("tshark not found: scripts/install_deps.sh installs it (Debian package tshark)")
    if run.returncode != 0:
        # tshark warns about running as root on stderr; anything else is the reason.
        reason = [l for l in run.stderr.splitlines() if l.strip() and "could be dangerous" not in l]
        raise WireError(f"tshark -r {path} failed: {' '.join(reason) or 'exit ' + str(run.returncode)}")
    return ET.fromstring(run.stdout).iter("packet")


def decode(path, client="192.0.2.1"):
    """The capture's RoCE v2 packets as dicts, in capture order."""
    packets = []
    start = None
    for pkt in _pdml_packets(path, "infiniband"):
        protos = {p.get("name"): p for p in pkt.findall("proto")}
        if "infiniband" not in protos:
            continue
        ib = _fields(protos["infiniband"])
        frame = _fields(protos["frame"]) if "frame" in protos else {}
        ip = _fields(protos["ip"]) if "ip" in protos else {}
        t = float(frame.get("frame.time_epoch", ("0", ""))[0] or 0)
        start = t if start is None else start
        src = ip.get("ip.src", ("", ""))[0]
        p = {
            "time": round(t - start, 6),
            "dir": "c>s" if src == client else "s>c",
            "src": src,
            "opcode": _opcode_name(ib["infiniband.bth.opcode"][1]) if "infiniband.bth.opcode" in ib else "?",
            "opcode_number": _number(ib["infiniband.bth.opcode"][0]) if "infiniband.bth.opcode" in ib else None,
            "psn": _number(ib["infiniband.bth.psn"][0]) if "infiniband.bth.psn" in ib else None,
            "dqpn": _number(ib["infiniband.bth.destqp"][0]) if "infiniband.bth.destqp" in ib else None,
            "ackreq": ib.get("infiniband.bth.a", ("0", ""))[0] in ("1", "True"),
            "solicited": ib.get("infiniband.bth.se", ("0", ""))[0] in ("1", "True"),
            "payload": 0,
            "tos": _number(ip.get("ip.dsfield", ("0", ""))[0] or "0"),
        }
        p["payload"] = _payload_length(protos["infiniband"], ib)
        if "infiniband.reth.va" in ib:
            p["reth"] = {"va": _number(ib["infiniband.reth.va"][0]), "rkey": _number(ib["infiniband.reth.r_key"][0]),
                         "length": _number(ib["infiniband.reth.dmalen"][0])}
        if "infiniband.immdt" in ib:
            p["immdt"] = ib["infiniband.immdt"][0].replace(":", "").lower()
        if "infiniband.aeth.syndrome" in ib:
            syndrome = _number(ib["infiniband.aeth.syndrome"][0])
            kind, value = syndrome >> 5, syndrome & 0x1F
            if kind == 0:
                aeth = {"kind": "ACK", "credits": value}
            elif kind == 1:
                aeth = {"kind": "RNR NAK", "timer": value}
            elif kind == 3:
                aeth = {"kind": "NAK", "reason": NAK_REASONS.get(value, f"code {value}")}
            else:
                aeth = {"kind": f"syndrome 0x{syndrome:02x}"}
            aeth["msn"] = _number(ib["infiniband.aeth.msn"][0]) if "infiniband.aeth.msn" in ib else None
            p["aeth"] = aeth
        if p["dqpn"] == 1 and "infiniband.mad.attributeid" in ib:
            attribute = _number(ib["infiniband.mad.attributeid"][0])
            p["cm"] = CM_MESSAGES.get(attribute, f"attribute 0x{attribute:04x}")
            # What REQ and REP say of the QP they connect (its QPN; the starting
            # PSN, where the *peer* sends from: cm.c makes the REP's the client's
            # sq_psn; the RDMA Reads it serves and makes at once), the REQ's path
            # MTU, and a REJ's reason.
            cm = {}
            for key, field in (("qpn", "localqpn"), ("psn", "startpsn"), ("responder_resources", "responderres"),
                               ("responder_resources", "respres"), ("initiator_depth", "initdepth")):
                name = f"infiniband.cm.{p['cm'].lower()}.{field}"
                if name in ib:
                    cm[key] = _number(ib[name][0])
            if "infiniband.cm.req.pppmtu" in ib:
                cm["path_mtu"] = 128 << _number(ib["infiniband.cm.req.pppmtu"][0])
            if "infiniband.cm.rej.reason" in ib:
                cm["reason"] = _number(ib["infiniband.cm.rej.reason"][0])
            if cm:
                p["cm_fields"] = cm
        packets.append(p)
    return packets


PSN_SPACE = 1 << 24
# Packets that carry the requester's PSNs but are not requests: the responder
# answers with the PSN it acknowledges or the read response's own.
NOT_REQUESTS = ("Acknowledge", "RDMA READ Response", "Atomic Acknowledge")


def missing_psns(packets, tails=False):
    """(index, direction, dqpn, psn) for each PSN a request stream skipped, before packet `index`.

    Each direction's requests to one QP count up by one a packet; a resend
    goes back (go-back-N) and is no gap. An RDMA Read request takes as many
    PSNs as its response has packets, which the listing cannot know (the
    path MTU is the QPs'), so the count starts again at the next request. TAILS: also a message cut short before
    a resend or the capture's end (a lost last packet: only on a wire known to lose)."""
    expected, last, marked = {}, {}, set()
    naked = set()  # directions whose requests a NAK answered since their last request
    out = []
    for i, p in enumerate(packets):
        if p.get("aeth", {}).get("kind") == "NAK":
            naked.add("c>s" if p["dir"] == "s>c" else "s>c")
        if p["psn"] is None or p["dqpn"] in (None, 0, 1) or p["opcode"].startswith(NOT_REQUESTS):
            continue
        key = (p["dir"], p["dqpn"])
        want = expected.get(key)
        if want is not None:
            ahead = (p["psn"] - want) % PSN_SPACE
            if 0 < ahead < PSN_SPACE // 2:
                out.extend((i, p["dir"], p["dqpn"], (want + k) % PSN_SPACE) for k in range(ahead))
            elif ahead != 0:
                # Behind: a resend; the stream has already gone further. If
                # it had stopped inside a message, the packet after is lost,
                # unless a NAK sent it back: then the requester may simply
                # not have sent the rest yet (seen on 6.1: a NAK 1.5 ms after
                # the packet past the gap, before the message's Last left).
                if (tails and last.get(key, "").endswith(("First", "Middle")) and (key, want) not in marked
                        and p["dir"] not in naked):
                    out.append((i, p["dir"], p["dqpn"], want))
                    marked.add((key, want))
                continue
        expected[key] = None if p["opcode"].startswith("RDMA READ Request") else (p["psn"] + 1) % PSN_SPACE
        last[key] = p["opcode"]
        naked.discard(p["dir"])
    # A capture that ends inside a message: its next packet never came either.
    for key, opcode in last.items():
        if tails and opcode.endswith(("First", "Middle")) and (key, expected[key]) not in marked:
            out.append((len(packets), key[0], key[1], expected[key]))
    return out


def listing(packets, lossy=False):
    """The lines run.sh prints: each packet's, with a line before it for each PSN missing there."""
    gaps = {}
    for i, direction, dqpn, psn in missing_psns(packets, tails=lossy):
        gaps.setdefault(i, []).append((direction, dqpn, psn))
    lines = []
    for i, p in enumerate(packets):
        lines.extend(missing_line(*gap) for gap in gaps.get(i, []))
        lines.append(line(p))
    lines.extend(missing_line(*gap) for gap in gaps.get(len(packets), []))
    return lines


def missing_line(direction, dqpn, psn):
    return f"{'':9} {direction} {'(not on this wire)':<30} psn=0x{psn:06x} qp=0x{dqpn:<3x}    lost on the way"


def line(p):
    flags = ("A" if p["ackreq"] else "-") + ("S" if p["solicited"] else "-")
    psn = "-" if p["psn"] is None else f"0x{p['psn']:06x}"
    qpn = "-" if p["dqpn"] is None else f"0x{p['dqpn']:x}"
    what = []
    if "cm" in p:
        f = p.get("cm_fields", {})
        cm = [f"CM {p['cm']}"]
        if "qpn" in f:
            cm.append(f"qpn=0x{f['qpn']:x} psn=0x{f['psn']:06x} resp_res={f.get('responder_resources')} "
                      f"init_depth={f.get('initiator_depth')}" + (f" mtu={f['path_mtu']}" if "path_mtu" in f else ""))
        if "reason" in f:
            cm.append(f"({CM_REJ_REASONS.get(f['reason'], 'reason ' + str(f['reason']))})")
        what.append(" ".join(cm))
    if "reth" in p:
        r = p["reth"]
        what.append(f"RETH va=0x{r['va']:x} rkey=0x{r['rkey']:x} len={r['length']}")
    if "immdt" in p:
        what.append(f"ImmDt={p['immdt']}")
    if "aeth" in p:
        a = p["aeth"]
        detail = {"ACK": lambda: f"credits {a['credits']}", "RNR NAK": lambda: f"timer {a['timer']}",
                  "NAK": lambda: a["reason"]}.get(a["kind"], lambda: "")()
        what.append(f"{a['kind']} ({detail}) MSN={a['msn']}" if detail else f"{a['kind']} MSN={a['msn']}")
    return (f"{p['time']:9.6f} {p['dir']} {p['opcode']:<30} psn={psn:<8} qp={qpn:<5} {flags} "
            f"len={p['payload']:<5} {' '.join(what)}").rstrip() + tos_text(p)


# iWARP (RFC 5040 RDMAP over RFC 5041 DDP over RFC 5044 MPA, in TCP).
# RDMAP's opcodes (RFC 5040, 4.3), tshark shows the number.
RDMAP_OPCODES = {0: "RDMA Write", 1: "RDMA Read Request", 2: "RDMA Read Response", 3: "Send",
                 4: "Send with Invalidate", 5: "Send with SE", 6: "Send with SE and Invalidate", 7: "Terminate"}
# The bytes of a DDP segment before its payload (RFC 5041, 5.1 and 5.2, with
# RDMAP's control bits in the reserved byte): 14 tagged (control, STag,
# tagged offset), 18 untagged (control, queue number, MSN, message offset).
DDP_TAGGED_HEADER, DDP_UNTAGGED_HEADER = 14, 18
# A Read Request's own header after DDP's (RFC 5040, 4.4): sink STag and
# offset, size, source STag and offset.
READ_REQUEST_HEADER = 28


def _tcp_flags(fields):
    bits = _number(fields.get("tcp.flags", ("0", ""))[0] or "0")
    names = [name for bit, name in ((0x02, "SYN"), (0x01, "FIN"), (0x04, "RST")) if bits & bit]
    if names and bits & 0x10 and "FIN" not in names:
        names.append("ACK")  # SYN ACK, RST ACK: the answer to a SYN
    return " ".join(names)


def decode_iwarp(path, client="192.0.2.1"):
    """The capture's iWARP traffic as dicts, in order: the TCP connections' opening and closing segments
    (SYN, RST, FIN), the MPA Request and Reply that start iWARP on a connection, and each DDP segment (one
    FPDU; a TCP segment may carry several). TCP's own ACKs and its resends are left out: they carry no
    RDMA message (a resend's bytes were listed where they first went)."""
    out, start = [], None
    for pkt in _pdml_packets(path, "tcp.flags.syn == 1 || tcp.flags.fin == 1 || tcp.flags.reset == 1 || iwarp_mpa"):
        protos = pkt.findall("proto")
        named = {p.get("name"): p for p in protos}
        if "tcp" not in named:
            continue
        tcp = _fields(named["tcp"])
        if "tcp.analysis.retransmission" in tcp or "tcp.analysis.fast_retransmission" in tcp:
            continue
        frame = _fields(named["frame"]) if "frame" in named else {}
        ip = _fields(named["ip"]) if "ip" in named else {}
        t = float(frame.get("frame.time_epoch", ("0", ""))[0] or 0)
        start = t if start is None else start
        src = ip.get("ip.src", ("", ""))[0]
        base = {"time": round(t - start, 6), "dir": "c>s" if src == client else "s>c", "src": src,
                "tos": _number(ip.get("ip.dsfield", ("0", ""))[0] or "0")}
        flags = _tcp_flags(tcp)
        if flags:
            out.append(dict(base, opcode="TCP " + flags, ports=(_number(tcp["tcp.srcport"][0]),
                                                                _number(tcp["tcp.dstport"][0])),
                            dst=ip.get("ip.dst", ("", ""))[0]))
        ulpdu = None
        for proto in protos:
            name = proto.get("name")
            f = _fields(proto)
            if name == "iwarp_mpa":
                if "iwarp_mpa.req" in f or "iwarp_mpa.rep" in f:
                    pd = bytes.fromhex(f.get("iwarp_mpa.privatedata", ("", ""))[0].replace(":", ""))
                    mpa = {"rev": _number(f["iwarp_mpa.rev"][0]), "crc": f["iwarp_mpa.crc_flag"][0] in ("1", "True"),
                           "markers": f["iwarp_mpa.marker_flag"][0] in ("1", "True"),
                           "rejected": f["iwarp_mpa.rej_flag"][0] in ("1", "True"), "private_data": pd.hex()}
                    # MPA revision 2 (RFC 6581): the first 4 bytes of private data
                    # are the sender's IRD and ORD (14 bits each, 2 flag bits), the
                    # ULP's bytes follow.
                    if mpa["rev"] == 2 and len(pd) >= 4:
                        mpa["ird"] = int.from_bytes(pd[0:2], "big") & 0x3FFF
                        mpa["ord"] = int.from_bytes(pd[2:4], "big") & 0x3FFF
                        mpa["private_data"] = pd[4:].hex()
                    out.append(dict(base, opcode="MPA " + ("Request" if "iwarp_mpa.req" in f else "Reply"), mpa=mpa))
                else:
                    ulpdu = _number(f["iwarp_mpa.ulpdulength"][0]) if "iwarp_mpa.ulpdulength" in f else None
            elif name == "iwarp_ddp_rdmap" and "iwarp_rdma.opcode" in f:
                number = _number(f["iwarp_rdma.opcode"][0])
                tagged = f.get("iwarp_ddp.tagged_flag", ("0", ""))[0] in ("1", "True")
                d = dict(base, opcode=RDMAP_OPCODES.get(number, f"RDMAP opcode {number}"), opcode_number=number,
                         tagged=tagged, last=f.get("iwarp_ddp.last_flag", ("0", ""))[0] in ("1", "True"))
                if tagged:
                    d["stag"] = _number(f["iwarp_ddp.stag"][0])
                    d["to"] = _number(f["iwarp_ddp.tagged_offset"][0])
                else:
                    d["qn"], d["msn"], d["mo"] = (_number(f[k][0]) for k in ("iwarp_ddp.qn", "iwarp_ddp.msn", "iwarp_ddp.mo"))
                header = DDP_TAGGED_HEADER if tagged else DDP_UNTAGGED_HEADER
                if "iwarp_rdma.sinkstag" in f:
                    d["read"] = {"sink_stag": _number(f["iwarp_rdma.sinkstag"][0]),
                                 "sink_to": _number(f["iwarp_rdma.sinkto"][0]),
                                 "size": _number(f["iwarp_rdma.rdmardsz"][0]),
                                 "source_stag": _number(f["iwarp_rdma.srcstag"][0]),
                                 "source_to": _number(f["iwarp_rdma.srcto"][0])}
                    header += READ_REQUEST_HEADER
                d["payload"] = max((ulpdu or header) - header, 0)
                out.append(d)
                ulpdu = None
    return out


def tos_text(p):
    """The IP header's type of service, when a program set one (run.sh --tos): its DSCP and ECN bits."""
    tos = p.get("tos", 0)
    return f" TOS 0x{tos:02x} (DSCP {tos >> 2}, ECN {tos & 3})" if tos else ""


def iwarp_line(p):
    """One iWARP entry as run.sh lists it: time, direction, what it is, then its fields."""
    head = f"{p['time']:9.6f} {p['dir']} {p['opcode']:<30}"
    if p["opcode"].startswith("TCP"):
        return f"{head} {p['src']}:{p['ports'][0]} > {p.get('dst', '?')}:{p['ports'][1]}{tos_text(p)}"
    if "mpa" in p:
        m = p["mpa"]
        what = [f"rev {m['rev']}", "CRC" if m["crc"] else "no CRC", "markers" if m["markers"] else "no markers"]
        if "ird" in m:
            what.append(f"IRD {m['ird']} ORD {m['ord']}")
        what.append(f"private data {len(m['private_data']) // 2} bytes")
        if m["rejected"]:
            what.append("REJECTED")
        return f"{head} {', '.join(what)}{tos_text(p)}"
    where = (f"tagged stag=0x{p['stag']:x} to=0x{p['to']:x}" if p["tagged"] else
             f"untagged qn={p['qn']} msn={p['msn']} mo={p['mo']}")
    line = f"{head} {'L' if p['last'] else '-'} len={p['payload']:<5} {where}"
    if "read" in p:
        r = p["read"]
        line += (f" sink stag=0x{r['sink_stag']:x} to=0x{r['sink_to']:x} size={r['size']}"
                 f" source stag=0x{r['source_stag']:x} to=0x{r['source_to']:x}")
    return line + tos_text(p)


def main(argv):
    args = list(argv)
    client, as_json, lossy = "192.0.2.1", False, False
    if "--lossy" in args:
        args.remove("--lossy")
        lossy = True
    if "--json" in args:
        args.remove("--json")
        as_json = True
    if "--client" in args:
        i = args.index("--client")
        if i + 1 >= len(args):
            print("wire: --client needs an address", file=sys.stderr)
            return 2
        client = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1 or args[0].startswith("-"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        packets = decode(args[0], client)
        iwarp = [] if packets else decode_iwarp(args[0], client)
    except WireError as e:
        print(f"wire: {e}", file=sys.stderr)
        return 1
    if iwarp:
        for text in ([json.dumps(p, sort_keys=True) for p in iwarp] if as_json else map(iwarp_line, iwarp)):
            print(text)
        return 0
    for text in ([json.dumps(p, sort_keys=True) for p in packets] if as_json else listing(packets, lossy)):
        print(text)
    if not packets:
        print(f"wire: no RoCE v2 packet and no iWARP in {args[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.dont_write_bytecode = True
    sys.exit(main(sys.argv[1:]))
