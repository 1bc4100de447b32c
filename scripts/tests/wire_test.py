#!/usr/bin/env python3
"""scripts/wire.py's decoding and wire_check.py's logic on captures recorded
across the pair (scripts/tests/data/: stage 04's 3000-byte write and its
notice; stage 05's first write answered by RNR NAKs, the no_recv_posted
server; stage 07's connection with the no_responder_resources server, its
CM MADs; 07 with --tos 104; 07 over Soft-iWARP, TCP, MPA, DDP and RDMAP),
and the comparison of a chapter's listing with a run, no device needed.
Exit 77 when tshark is not installed.

  wire_test.py SOURCE_ROOT
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(root, "scripts"))
sys.path.insert(0, os.path.join(root, "scripts", "tests"))
import wire  # noqa: E402
import wire_check  # noqa: E402

checks = wire_check.Checks()
expect = checks.expect

if shutil.which("tshark") is None:
    print("skip: tshark is not installed (scripts/install_deps.sh installs it with the guest's packages)")
    sys.exit(77)

data = os.path.join(root, "scripts", "tests", "data")

# Stage 04: Write First/Middle/Last at path MTU 1024, one ACK, the notice, its ACK.
p = wire.decode(os.path.join(data, "04_write_send.pcap"))
expect([x["opcode"] for x in p] == ["RDMA WRITE First", "RDMA WRITE Middle", "RDMA WRITE Last", "Acknowledge",
                                    "SEND Only", "Acknowledge"], "04: the opcodes in capture order")
expect([x["dir"] for x in p] == ["c>s", "c>s", "c>s", "s>c", "c>s", "s>c"], "04: the directions by the client's address")
expect([x["payload"] for x in p] == [1024, 1024, 952, 0, 8, 0],
       "04: payload lengths from the headers and the ICRC (the Send's 8 bytes too: the RPC-over-RDMA heuristic is off)")
expect(p[0]["reth"] == {"va": 0x55f221bb5000, "rkey": 0x230, "length": 3000} and all("reth" not in x for x in p[1:]),
       "04: the RETH on the First only")
expect([x["psn"] for x in p] == [0x3db1de, 0x3db1df, 0x3db1e0, 0x3db1e0, 0x3db1e1, 0x3db1e1], "04: the PSNs")
expect([x["ackreq"] for x in p if x["dir"] == "c>s"] == [False, False, True, True], "04: AckReq on a message's last packet")
expect([(x["aeth"]["kind"], x["aeth"]["msn"]) for x in p if "aeth" in x] == [("ACK", 1), ("ACK", 2)], "04: two ACKs, MSN 1 and 2")
expect(wire.line(p[0]).split()[1:5] == ["c>s", "RDMA", "WRITE", "First"] and "RETH va=0x55f221bb5000 rkey=0x230 len=3000" in wire.line(p[0]),
       "04: the listing's line for the First")

# wire_check's comparison against what the programs printed, on the same packets.
c = wire_check.Checks(quiet=True)
messages = [("write", 3000, 0x55f221bb5000, 0x230, None), ("send", 8, None, None, None)]
last = wire_check.check_message_packets(c, p, messages, 0x3db1de, 0x11, 1024)
wire_check.check_acks(c, p, last, 2)
expect(c.failed == 0 and last == 0x3db1e1, "wire_check accepts 04's capture against its printed values")
c = wire_check.Checks(quiet=True)
wire_check.check_message_packets(c, p, [("write", 3000, 0x55f221bb5000, 0x231, None), ("send", 8, None, None, None)],
                                 0x3db1de, 0x11, 1024)
expect(c.failed == 1, "wire_check names a wrong rkey (one check fails)")
c = wire_check.Checks(quiet=True)
wire_check.check_message_packets(c, p, messages, 0x3db1de, 0x11, 4096)
expect(c.failed > 0, "wire_check refuses the capture for a path MTU it was not sent at")

# Stage 05 against a server with no Recv: the same PSN four times, four RNR NAKs.
p = wire.decode(os.path.join(data, "05_rnr_nak.pcap"))
writes = [x for x in p if x["dir"] == "c>s"]
naks = [x for x in p if x["dir"] == "s>c"]
expect(len(writes) == 4 and all(x["opcode"] == "RDMA WRITE Only with Immediate" and x["immdt"] == "12345678" and
                                x["psn"] == 0x994c57 for x in writes),
       "05: the first write sent four times (rnr_retry 3), same PSN, ImmDt 12345678")
expect(len(naks) == 4 and all(x["aeth"] == {"kind": "RNR NAK", "timer": 12, "msn": 0} for x in naks),
       "05: each answered by an RNR NAK with the server's min_rnr_timer, code 12, MSN 0")
kept, again = wire_check.first_copies(writes)
expect(len(kept) == 1 and len(again) == 3, "wire_check tells the resends from the first copy")
expect("RNR NAK (timer 12) MSN=0" in wire.line(naks[0]), "05: the listing's line for an RNR NAK")

# Stage 07 against the no_responder_resources server: rdma_cm's MADs on QP 1, by name, with what REQ and REP carry.
p = wire.decode(os.path.join(data, "07_no_responder_resources.pcap"))
cm = [(x["dir"], x["cm"]) for x in p if "cm" in x]
expect(cm[-5:] == [("c>s", "REQ"), ("s>c", "REP"), ("c>s", "RTU"), ("s>c", "DREQ"), ("c>s", "DREP")] and
       cm[:-5] == [("c>s", "REQ"), ("s>c", "REJ")] * ((len(cm) - 5) // 2),
       "07: REQ/REJ while nobody listened, then REQ, REP, RTU, the server's DREQ, the client's DREP (cm_msgs.h's IDs)")
req = [x for x in p if x.get("cm") == "REQ"][-1]["cm_fields"]
rep = [x for x in p if x.get("cm") == "REP"][-1]["cm_fields"]
expect(req["initiator_depth"] == 1 and req["path_mtu"] == 1024 and rep["responder_resources"] == 0,
       "07: the REQ asks for one Read at once at path MTU 1024, the REP grants none")
expect(all(x["cm_fields"]["reason"] == 8 for x in p if x.get("cm") == "REJ") and
       all(x["opcode"] == "UD SEND Only" and x["payload"] == 256 and x["dqpn"] == 1 for x in p if "cm" in x),
       "07: every REJ says invalid service ID; each MAD is a 256-byte UD Send to QP 1")
first_write = next(x for x in p if x["opcode"] == "RDMA WRITE First")
expect(first_write["psn"] == rep["psn"] and first_write["dqpn"] == rep["qpn"],
       "07: the client's data starts at the REP's PSN, to the REP's QP")
c = wire_check.Checks(quiet=True)
wire_check.exercise_no_responder_resources("", p, c)
expect(c.failed == 0, "wire_check's no_responder_resources check holds on it")
expect("CM REP qpn=0x18 psn=0x86ce9f resp_res=0 init_depth=0" in wire.line([x for x in p if x.get("cm") == "REP"][-1]),
       "07: the listing's line for the REP")

# Stage 07 with --tos 104 across the pair (Soft-RoCE): the IP header's type of service on every packet of the
# connection, the server's too, but not on the REJs of the tries nobody listened to.
p = wire.decode(os.path.join(data, "07_tos.pcap"))
expect(all(x["tos"] == 104 for x in p if x.get("cm") != "REJ") and all(x["tos"] == 0 for x in p if x.get("cm") == "REJ"),
       "07 --tos 104: TOS 104 (DSCP 26) on everything but the REJs, which carry 0")
expect(wire.line(p[-1]).endswith("TOS 0x68 (DSCP 26, ECN 0)"), "07 --tos: the listing's line names the DSCP and ECN")
expect(not wire.line(wire.decode(os.path.join(data, "04_write_send.pcap"))[0]).count("TOS"), "no TOS on a line of TOS 0")
c = wire_check.Checks(quiet=True)
wire_check.check_tos(["--tos", "104"], p, c, iwarp=False)
expect(c.failed == 0, "wire_check's TOS check holds on it")
c = wire_check.Checks(quiet=True)
wire_check.check_tos(["--tos", "96"], p, c, iwarp=False)
expect(c.failed == 1, "wire_check names another TOS than the run's")

# Stage 07 over Soft-iWARP across the pair, 3000 bytes: TCP, MPA, and DDP segments with their RDMAP opcodes.
p = wire.decode_iwarp(os.path.join(data, "07_siw.pcap"))
expect(wire.decode(os.path.join(data, "07_siw.pcap")) == [], "07 over siw: no RoCE v2 in it")
setup = [(x["dir"], x["opcode"]) for x in p if x["opcode"].startswith(("TCP", "MPA"))]
expect(setup[-6:] == [("c>s", "TCP SYN"), ("s>c", "TCP SYN ACK"), ("c>s", "MPA Request"), ("s>c", "MPA Reply"),
                      ("c>s", "TCP FIN"), ("s>c", "TCP FIN")] and
       setup[:-6] == [("c>s", "TCP SYN"), ("s>c", "TCP RST ACK")] * ((len(setup) - 6) // 2),
       "07 over siw: SYN refused by RST while nobody listened, then SYN, SYN ACK, MPA Request and Reply, FIN each way")
mpa = {x["opcode"]: x["mpa"] for x in p if "mpa" in x}
expect(mpa["MPA Request"]["rev"] == 2 and (mpa["MPA Request"]["ird"], mpa["MPA Request"]["ord"]) == (0, 1) and
       (mpa["MPA Reply"]["ird"], mpa["MPA Reply"]["ord"]) == (1, 0) and not mpa["MPA Reply"]["rejected"],
       "07 over siw: MPA revision 2, the client's ORD 1 and the server's IRD 1")
expect(mpa["MPA Request"]["private_data"] == b"cm07".hex() + "00000bb8" and len(mpa["MPA Reply"]["private_data"]) == 40,
       "07 over siw: the private data as sent, the hello's 8 bytes (size 3000) and the region's 20")
ddp = [x for x in p if "tagged" in x]
expect([x["opcode"] for x in ddp] == ["RDMA Write"] * 3 + ["RDMA Read Request"] + ["RDMA Read Response"] * 3 + ["Send"],
       "07 over siw: three Write segments, the Read Request, three Response segments, the Send")
expect([x["payload"] for x in ddp] == [1428, 1428, 144, 0, 1428, 1428, 144, 8] and [x["last"] for x in ddp] ==
       [False, False, True, True, False, False, True, True], "07 over siw: payload lengths from MPA's ULPDU, the Last flags")
expect([x["to"] for x in ddp[:3]] == [0x55ff4dbc7000, 0x55ff4dbc7594, 0x55ff4dbc7b28] and
       all(x["stag"] == 0xbfd86800 for x in ddp[:3]), "07 over siw: the Write's tagged offsets, one after another, under the rkey")
expect(ddp[3]["read"] == {"sink_stag": 0x331c1800, "sink_to": 0x55bb434f4000, "size": 3000, "source_stag": 0xbfd86800,
                          "source_to": 0x55ff4dbc7000} and (ddp[3]["qn"], ddp[3]["msn"]) == (1, 1),
       "07 over siw: the Read Request, untagged on queue 1, naming the sink and the source")
expect(ddp[7]["tagged"] is False and (ddp[7]["qn"], ddp[7]["msn"], ddp[7]["mo"]) == (0, 1, 0), "07 over siw: the Send, untagged on queue 0")
expect("untagged qn=1 msn=1 mo=0 sink stag=0x331c1800 to=0x55bb434f4000 size=3000" in wire.iwarp_line(ddp[3]) and
       "192.0.2.1:34489 > 192.0.2.2:18515" in wire.iwarp_line(next(x for x in p if x["opcode"] == "TCP FIN")),
       "07 over siw: the listing's lines for the Read Request and a FIN")
printed = ("[client] ESTABLISHED: siw0 port 1, 192.0.2.1:34489 -> 192.0.2.2:18515; the server's region: 4096 bytes at "
           "0x55ff4dbc7000, rkey 0xbfd86800\n[client] RDMA Write: 3000 bytes to 0x55ff4dbc7000\n"
           "[client] RDMA Read: 3000 bytes back from 0x55ff4dbc7000 into our copy at 0x55bb434f4000, key 0x331c1800\n")
c = wire_check.Checks(quiet=True)
wire_check.stage_07_iwarp(printed, p, c)
expect(c.failed == 0, "wire_check's iWARP check of 07 holds on it")
c = wire_check.Checks(quiet=True)
wire_check.stage_07_iwarp(printed.replace("key 0x331c1800", "key 0x331c1801"), p, c)
expect(c.failed == 2, f"wire_check names a sink key the Read Request and its Response do not carry ({c.failed} checks)")

# A chapter's listing against a run: masked, stream by stream, "..." a gap, a packet sent again passed over.
run = ["[client] QP 0x11: sq_psn 0xaa",
       " 0.000000 c>s RDMA WRITE Only                psn=0x000010 qp=0x11  A- len=8",
       " 0.000100 s>c Acknowledge                    psn=0x000010 qp=0x11  -- len=0     ACK (credits 31) MSN=1",
       "[server] done",
       " 0.000200 c>s SEND Only                      psn=0x000011 qp=0x11  A- len=8",
       " 0.000300 c>s SEND Only                      psn=0x000011 qp=0x11  A- len=8",
       " 0.000400 s>c Acknowledge                    psn=0x000011 qp=0x11  -- len=0     ACK (credits 31) MSN=2"]
block = ["[client] QP 0x12: sq_psn 0xbb", "[server] done",
         " 1.000000 s>c Acknowledge psn=0x000020 qp=0x12 -- len=0 ACK (credits 31) MSN=1",
         " 2.000000 c>s RDMA WRITE Only psn=0x000020 qp=0x12 A- len=8",
         " 3.000000 c>s SEND Only psn=0x000021 qp=0x12 A- len=8",
         " 4.000000 s>c Acknowledge psn=0x000021 qp=0x12 -- len=0 ACK (credits 31) MSN=2"]
c = wire_check.Checks(quiet=True)
wire_check.check_listing(c, block, run, "t")
expect(c.failed == 0, "a listing matches a run with other numbers, other times, the two directions interleaved otherwise, "
                      "and a Send sent again")
for wrong, what in ((block[:3] + [block[3].replace("len=8", "len=9")] + block[4:], "another length"),
                    (block[:4] + block[5:], "a packet left out without a '...'"),
                    (block[:5], "the last ACK left out without a '...'"),
                    (block[:4] + [block[4].replace("SEND", "RDMA WRITE")] + block[5:], "another opcode")):
    c = wire_check.Checks(quiet=True)
    wire_check.check_listing(c, wrong, run, "t")
    expect(c.failed > 0, f"a listing with {what} does not match")
c = wire_check.Checks(quiet=True)
wire_check.check_listing(c, ["..."] + block[3:4] + ["..."], run, "t")
expect(c.failed == 0, "'...' takes any lines of every stream")
# The copy's answer: the same ACK again passes; an ACK the block lacks does not.
again = run + [" 0.000500 s>c Acknowledge                    psn=0x000011 qp=0x11  -- len=0     ACK (credits 31) MSN=2"]
c = wire_check.Checks(quiet=True)
wire_check.check_listing(c, block, again, "t")
expect(c.failed == 0, "a listing matches a run whose responder answered a request sent again with the same ACK")
other = run + [" 0.000500 s>c Acknowledge                    psn=0x000012 qp=0x11  -- len=0     ACK (credits 31) MSN=3"]
c = wire_check.Checks(quiet=True)
wire_check.check_listing(c, block, other, "t")
expect(c.failed > 0, "a listing without an ACK the run has (another PSN and MSN) does not match")
# The answer to copies of a message's first packets: an ACK of their PSN that completes nothing new (the last
# MSN) passes once a request was sent again; without a request sent again, the same ACK does not.
middle = " 0.000350 s>c Acknowledge                    psn=0x000011 qp=0x11  -- len=0     ACK (credits 31) MSN=1"
c = wire_check.Checks(quiet=True)
wire_check.check_listing(c, block, run[:6] + [middle] + run[6:], "t")
expect(c.failed == 0, "an ACK that completes nothing new, after a request sent again, is passed over")
c = wire_check.Checks(quiet=True)
wire_check.check_listing(c, block, run[:5] + [middle] + run[6:], "t")
expect(c.failed > 0, "the same ACK with no request sent again does not match")

# A whole message sent again (05's first DATA, 3000 bytes, on Soft-RoCE (Linux 6.1), in a CI run of 2026-12-07):
# its copies read, masked, as the next message's packets do, and must not be taken for them.
def write_packets(t, psn, imm):
    return [f" {t}.000000 c>s RDMA WRITE First               psn=0x{psn:06x} qp=0x11  -- len=1024  RETH va=0x1 rkey=0x2 len=3000",
            f" {t}.000100 c>s RDMA WRITE Middle              psn=0x{psn + 1:06x} qp=0x11  -- len=1024",
            f" {t}.000200 c>s RDMA WRITE Last with Immediate psn=0x{psn + 2:06x} qp=0x11  A- len=952   ImmDt={imm}"]


block = write_packets(1, 0x20, "01000000") + write_packets(2, 0x23, "01000001")
copied = write_packets(0, 0x10, "01000000") + write_packets(0, 0x10, "01000000") + write_packets(0, 0x13, "01000001")
c = wire_check.Checks(quiet=True)
wire_check.check_listing(c, block, copied, "t")
expect(c.failed == 0, "a listing matches a run that sent a whole message again before the next like it")
c = wire_check.Checks(quiet=True)
wire_check.check_listing(c, block, copied[:-1] + [copied[-1].replace("01000001", "01000002")], "t")
expect(c.failed > 0, "...and not one whose next message differs")

# run.sh's --exercise and --capture refuse what cannot work, before building or booting anything.
for args, code, said in ((["--exercise", "no_such_thing"], 2, "04_rdma_write has no exercise 'no_such_thing'"),
                         (["--exercise"], 2, "--exercise takes an exercise's name"),
                         (["--capture", "/tmp/x.pcap"], 2, "--capture FILE goes with --pair")):
    run = subprocess.run([os.path.join(root, "04_rdma_write", "run.sh")] + args, capture_output=True, text=True,
                         env=dict(os.environ, RDMA_TUTORIAL_BUILT="1", BUILD_DIR="/nonexistent"))
    expect(run.returncode == code and said in run.stderr, f"run.sh {' '.join(args)}: exit {code}, '{said}' ({run.returncode}: {run.stderr.strip()})")

# A hint that points at packets names a run the chapters show (and wire_check runs).
shown = {m.group(0) for name in glob.glob(os.path.join(root, "docs", "0*.md"))
         for m in re.finditer(r"(?<=\$ )\d\d_\w+/run\.sh --pair --capture .*", open(name, encoding="utf-8").read())}
pointed = [(os.path.relpath(h, root), m.group(0)) for h in sorted(glob.glob(os.path.join(root, "0*", "exercises", "*.hints")))
           for m in re.finditer(r"^\d\d_\w+/run\.sh --pair --capture .*", open(h, encoding="utf-8").read(), re.M)]
expect(len(pointed) >= 5 and all(cmd in shown for _, cmd in pointed),
       f"every capture a hint suggests is one a chapter shows ({len(pointed)} hints; not shown: " +
       (", ".join(h for h, cmd in pointed if cmd not in shown) or "none") + ")")

# The command line: a listing, JSON, and the errors.
run = subprocess.run([sys.executable, os.path.join(root, "scripts", "wire.py"), os.path.join(data, "05_rnr_nak.pcap"), "--json"],
                     capture_output=True, text=True)
expect(run.returncode == 0 and len(run.stdout.splitlines()) == 8 and run.stdout.startswith("{"), "wire.py --json: one object per packet")
run = subprocess.run([sys.executable, os.path.join(root, "scripts", "wire.py"), "/nonexistent.pcap"], capture_output=True, text=True)
expect(run.returncode == 1 and "no capture at /nonexistent.pcap" in run.stderr, "wire.py names a missing capture")
with tempfile.NamedTemporaryFile(suffix=".pcap") as junk:
    junk.write(b"not a capture\n")
    junk.flush()
    run = subprocess.run([sys.executable, os.path.join(root, "scripts", "wire.py"), junk.name], capture_output=True, text=True)
    expect(run.returncode == 1 and "tshark -r" in run.stderr and "could be dangerous" not in run.stderr,
           "wire.py passes tshark's reason for a file that is no capture, without its root warning")
# A chapter's listing (Linux 6.1) as it reads on 6.12, and as written elsewhere.
qp_line = ["[client] QP 0x15 as rdma_cm left it: RTS, timeout 19 (2147 ms), retry_cnt 3", "[client] other"]
expect(wire_check.as_on("6.12.118+deb12-amd64", qp_line)[0].endswith("timeout 17 (537 ms), retry_cnt 3")
       and wire_check.as_on("6.12.118+deb12-amd64", qp_line)[1] == "[client] other",
       "a 6.1 listing's rdma_cm ACK timeout reads 17 on 6.12, the other lines as written")
expect(wire_check.as_on("6.1.0-57-amd64", qp_line) == qp_line and wire_check.as_on(None, qp_line) == qp_line,
       "on 6.1 (or an unknown kernel) a listing reads as written")
expect(wire_check.segments(0, 1024) == 1 and wire_check.segments(1024, 1024) == 1 and wire_check.segments(1025, 1024) == 2,
       "a message's packet count at a path MTU")

# The PSNs that never crossed the wire (wire.missing_psns), on made-up streams.
def pkt(opcode, psn, direction="c>s"):
    return {"opcode": opcode, "psn": psn, "dqpn": 0x11, "dir": direction}


W = "RDMA WRITE "
middle_lost = [pkt(W + "First", 0xfffffe), pkt(W + "Middle", 0), pkt(W + "Last", 1),
               pkt("Acknowledge", 0xffffff, "s>c"), pkt(W + "Middle", 0xffffff), pkt(W + "Middle", 0), pkt(W + "Last", 1)]
expect([m[3] for m in wire.missing_psns(middle_lost)] == [0xffffff],
       "a stream that skips a PSN (across the 24-bit wrap) marks it once, not its resend")
last_lost = [pkt(W + "First", 10), pkt(W + "Middle", 11), pkt(W + "First", 10), pkt(W + "Middle", 11), pkt(W + "Last", 12)]
expect(wire.missing_psns(last_lost) == [] and [m[3] for m in wire.missing_psns(last_lost, tails=True)] == [12],
       "a message cut short before a resend is marked only on a wire known to lose (tails)")
nak = {"opcode": "Acknowledge", "psn": 11, "dqpn": 0x12, "dir": "s>c", "aeth": {"kind": "NAK"}}
sent_back = [pkt(W + "First", 10), pkt(W + "Middle", 12), nak, pkt(W + "Middle", 11), pkt(W + "Middle", 12), pkt(W + "Last", 13)]
expect([m[3] for m in wire.missing_psns(sent_back, tails=True)] == [11],
       "a message a NAK sent back before its Last left is not cut short: only the skipped PSN is marked")
expect([(m[0], m[3]) for m in wire.missing_psns(last_lost[:2], tails=True)] == [(2, 12)],
       "a capture that ends inside a message marks the next PSN after its last packet")
read = [pkt("RDMA READ Request", 5), pkt("RDMA READ Response First", 5, "s>c"), pkt("SEND Only", 9)]
expect(wire.missing_psns(read) == [], "no gap after an RDMA Read request, whose response takes PSNs the listing cannot count")
expect(len(wire.listing([])) == 0, "an empty capture lists nothing")

print("every check held" if checks.failed == 0 else f"{checks.failed} check(s) failed")
sys.exit(1 if checks.failed else 0)
