#!/usr/bin/env python3
"""A program on a device smaller than the one it runs on: each request checked first.

  small_device.py --program PROG --shim librdma_inject.so --case 'ATTR|ARGS|EXIT|REGEX' ...

Each case runs PROG with ARGS ({ipv4} and {port} as in inject_walk.py) and
the injection shim in front, which tells the program (and only the program)
smaller limits than the device's: ATTR is RDMA_INJECT_ATTR
('device.max_qp_wr=256', 'port.link_layer=1', ...). The program must end
within BOUND seconds with exit EXIT (2: an option asked too much, named;
1: the program itself needs more than the device has), a line on stderr
matching REGEX, and nothing left open (the shim's exit report).

Exit 0 when every case passed, 1 otherwise, 77 with no RDMA device.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # the source tree is read-only in the guest
from inject_walk import has_device, left_behind, rdma_ipv4, shim_env  # noqa: E402

BOUND = 60 * float(os.environ.get("RDMA_TUTORIAL_TIME_SCALE", "1"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--program", required=True)
    p.add_argument("--shim", required=True)
    p.add_argument("--case", action="append", default=[], help="'ATTR|ARGS|EXIT|REGEX'")
    opts = p.parse_args()
    if not has_device():
        print("SKIP: no RDMA device (/sys/class/infiniband is empty); run inside scripts/rxe_vm.sh")
        return 77
    name = os.path.basename(opts.program)
    workdir = tempfile.mkdtemp(prefix="small_device.")
    port = 19800 + os.getpid() % 100
    failed = 0
    for n, case in enumerate(opts.case):
        attr, args, code, expected = case.split("|", 3)
        argv = [opts.program] + shlex.split(args.format(ipv4=rdma_ipv4(), port=port + n))
        log = os.path.join(workdir, f"case{n}.log")
        problems = []
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=BOUND,
                               env=shim_env(opts.shim, log, RDMA_INJECT_ATTR=attr))
            rc, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired:
            rc, err = None, ""
            problems.append(f"still running after {BOUND:.0f} s")
        if rc is not None and rc != int(code):
            problems.append(f"exit {rc}, not {code}")
        line = next((l for l in err.splitlines() if re.search(expected, l)), None)
        if rc is not None and line is None:
            problems.append(f"no line on stderr matches /{expected}/: " + " / ".join(err.strip().splitlines()[:3]))
        lines = open(log).read().splitlines() if os.path.exists(log) else []
        if rc is not None and "end" not in lines:
            problems.append("the shim's exit report is missing")
        elif left_behind(lines):
            problems.append("not released: " + ", ".join(left_behind(lines)))
        what = " ".join([name] + argv[1:]) + f" on a device with {attr}"
        if problems:
            failed += 1
            print(f"FAILED: {what}: {'; '.join(problems)}")
        else:
            print(f"ok: {what} | exit {rc} | {line}")
    print(f"{len(opts.case)} cases, {len(opts.case) - failed} refused as they should be, {failed} not")
    return 1 if failed or not opts.case else 0


if __name__ == "__main__":
    sys.exit(main())
