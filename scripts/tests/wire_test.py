#!/usr/bin/env python3
"""scripts/wire.py's decoding and wire_check.py's logic on two captures
recorded across the pair (scripts/tests/data/: stage 04's 3000-byte write and
its notice; stage 05's first write answered by RNR NAKs, the no_recv_posted
server), no device needed. Exit 77 when tshark is not installed.

  wire_test.py SOURCE_ROOT
"""

import os
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
expect(wire_check.segments(0, 1024) == 1 and wire_check.segments(1024, 1024) == 1 and wire_check.segments(1025, 1024) == 2,
       "a message's packet count at a path MTU")

print("every check held" if checks.failed == 0 else f"{checks.failed} check(s) failed")
sys.exit(1 if checks.failed else 0)
