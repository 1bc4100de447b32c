#!/usr/bin/env python3
"""A stage that cannot run on iWARP, on an iWARP device (Soft-iWARP, siw): it must
refuse in one line that says why, before it creates anything.

  iwarp_refusal.py --program PROG --shim librdma_inject.so --case 'ARGS|EXIT|REGEX' ...

Each case runs PROG with ARGS ({ipv4} and {port} as in inject_walk.py) and
the injection shim in front, whose log lists every verbs and rdma_cm call
the program made. The program must end within BOUND seconds with exit
EXIT, print exactly one line on stderr, that line matching REGEX and
naming iWARP, say nothing of a GID anywhere (an iWARP peer is reached by
its IP address; a GID fix would send the reader the wrong way), call none
of the verbs that create something (a PD, an MR, a CQ, a QP...), and leave
nothing open (the shim's exit report).

Exit 0 when every case passed, 1 otherwise, 77 when this machine's RDMA
device is not iWARP (the siw suite runs it in scripts/rxe_vm.sh --provider siw).
"""

import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # the source tree is read-only in the guest
from inject_walk import left_behind, rdma_ipv4, shim_env  # noqa: E402

BOUND = 60 * float(os.environ.get("RDMA_TUTORIAL_TIME_SCALE", "1"))
# The calls that make an object a program must release; any of them in the
# log means the refusal came too late.
CREATES = re.compile(r"^call (ibv_alloc_pd|ibv_reg_mr\w*|ibv_create_\w+|ibv_alloc_mw|rdma_create_qp|rdma_create_srq) ")


def iwarp_devices():
    """The devices whose node type is an RNIC (iWARP): sysfs says '4: RNIC'."""
    found = []
    for path in glob.glob("/sys/class/infiniband/*/node_type"):
        with open(path) as f:
            if "RNIC" in f.read():
                found.append(path.split("/")[-2])
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--program", required=True)
    p.add_argument("--shim", required=True)
    p.add_argument("--case", action="append", default=[], help="'ARGS|EXIT|REGEX'")
    opts = p.parse_args()
    if not iwarp_devices():
        print("SKIP: no iWARP device here; the siw suite runs this in scripts/rxe_vm.sh --provider siw")
        return 77
    name = os.path.basename(opts.program)
    workdir = tempfile.mkdtemp(prefix="iwarp_refusal.")
    port = 19900 + os.getpid() % 50
    failed = 0
    for n, case in enumerate(opts.case):
        args, code, expected = case.split("|", 2)
        argv = [opts.program] + shlex.split(args.format(ipv4=rdma_ipv4(), port=port + n))
        log = os.path.join(workdir, f"case{n}.log")
        problems = []
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=BOUND, env=shim_env(opts.shim, log))
            rc, out, err = r.returncode, r.stdout, r.stderr
        except subprocess.TimeoutExpired:
            rc, out, err = None, "", ""
            problems.append(f"still running after {BOUND:.0f} s")
        lines = [l for l in err.splitlines() if l.strip()]
        if rc is not None:
            if rc != int(code):
                problems.append(f"exit {rc}, not {code}")
            if len(lines) != 1:
                problems.append(f"{len(lines)} lines on stderr, not one: " + " / ".join(lines[:4]))
            elif not re.search(expected, lines[0]) or "iWARP" not in lines[0]:
                problems.append(f"its line does not match /{expected}/ and name iWARP: {lines[0]}")
            if re.search(r"\bGID\b", out + err):
                problems.append("it speaks of a GID: " + next(l for l in (out + err).splitlines() if "GID" in l))
        log_lines = open(log).read().splitlines() if os.path.exists(log) else []
        made = sorted({l.split()[1] for l in log_lines if CREATES.match(l)})
        if made:
            problems.append("it created something before refusing: " + ", ".join(made))
        if rc is not None and "end" not in log_lines:
            problems.append("the shim's exit report is missing")
        elif left_behind(log_lines):
            problems.append("not released: " + ", ".join(left_behind(log_lines)))
        what = " ".join([name] + argv[1:])
        if problems:
            failed += 1
            print(f"FAILED: {what}: {'; '.join(problems)}")
        else:
            print(f"ok: {what} | exit {rc}, nothing created | {lines[0]}")
    print(f"{len(opts.case)} cases on {', '.join(iwarp_devices())}, {len(opts.case) - failed} refused as they should be, "
          f"{failed} not")
    return 1 if failed or not opts.case else 0


if __name__ == "__main__":
    sys.exit(main())
