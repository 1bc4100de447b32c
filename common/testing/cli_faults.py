#!/usr/bin/env python3
"""Bad command lines and a taken port, for one stage program.

  cli_faults.py usage PROGRAM
      Every option --help lists that takes a number (N, MS, BYTES, US) is
      given values no option accepts: a word, a negative number, one past
      any integer, a fraction, nothing. Then an unknown option and a stray
      argument. Each must be a usage error: exit 2, a line naming the option
      (or the argument), and "see PROGRAM --help"; never a crash, a hang or
      a sanitizer's report. Needs no device.

  cli_faults.py device PROGRAM [--server 'ARGS']
      With a device: -d naming no device is a usage error too (exit 2, the
      name and the devices present). With --server (a two-peer stage): a
      second server on the first one's port ends at once, exit 1, naming the
      call that found the port taken (EADDRINUSE; rdma_cm says EADDRNOTAVAIL)
      and the -p fix; the first
      server is unharmed and stopped by this script. {port} and {ipv4} in
      ARGS as in inject_walk.py.
"""

import os
import re
import shlex
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # the source tree is read-only in the guest
from inject_walk import has_device, rdma_ipv4  # noqa: E402

NUMBER_VALUES = ["many", "-1", "99999999999999999999", "1.5", ""]
OPTION_LINE = re.compile(r"^\s+(?:-\w, )?(--[a-z][\w-]*)\s+([A-Z]+)\s+(.*)$")


def run(argv, timeout=20, env=None):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return "hung", "", ""


def usage(program):
    name = os.path.basename(program).removesuffix("_sanitize")
    code, help_text, _ = run([program, "--help"])
    if code != 0:
        print(f"{name} --help exited {code}")
        return 1
    cases = []
    for line in help_text.splitlines():
        m = OPTION_LINE.match(line)
        if not m or m.group(2) not in ("N", "MS", "BYTES", "US"):
            continue
        option, rest = m.group(1), m.group(3)
        # A client's option is judged with -s: alone it is refused for the role.
        role = ["-s", "192.0.2.1"] if rest.startswith("client") or "client:" in rest.split(";")[0] else []
        for value in NUMBER_VALUES:
            cases.append((role + [option, value], option))
    cases.append((["--no-such-option"], "--no-such-option"))
    cases.append((["stray"], "stray"))
    failed = 0
    for args, named in cases:
        code, out, err = run([program] + args)
        shown = " ".join(shlex.quote(a) for a in args)
        problems = []
        if code != 2:
            problems.append(f"exit {code}")
        if named not in err:
            problems.append(f"no line names {named}")
        if f"see {name} --help" not in err:
            problems.append("no pointer to --help")
        if problems:
            failed += 1
            print(f"FAILED: {name} {shown}: {'; '.join(problems)}\n    stderr: {err.strip()[:300]}")
        else:
            print(f"ok: {name} {shown}: exit 2 | {err.splitlines()[0][:120]}")
    print(f"{len(cases)} bad command lines, {len(cases) - failed} refused as usage errors, {failed} not")
    return 1 if failed else 0


def device(program, server_args):
    name = os.path.basename(program).removesuffix("_sanitize")
    if not has_device():
        print("SKIP: no RDMA device (/sys/class/infiniband is empty); run inside scripts/rxe_vm.sh")
        return 77
    failed = 0
    code, help_text, _ = run([program, "--help"])
    if "--ib-dev" in help_text:
        code, out, err = run([program, "-d", "no_such_device"])
        # Where to look: the devices present (01 lists them itself: it says to run it without -d).
        ok = code == 2 and "no RDMA device named 'no_such_device'" in err and (
            "devices present:" in err or "without -d" in err)
        failed += 0 if ok else 1
        print(f"{'ok' if ok else 'FAILED'}: {name} -d no_such_device: exit {code} | {err.strip()[:200]}")
    if server_args is not None:
        args = shlex.split(server_args.format(ipv4=rdma_ipv4(), port=18870))
        first = subprocess.Popen([program] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        try:
            ready = wait_for_line(first, re.compile(r"waiting for|listening"), 20)
            start = time.monotonic()
            code, out, err = run([program] + args, timeout=20)
            took = time.monotonic() - start
            # rdma_cm says EADDRNOTAVAIL for a port another listener holds.
            taken = "EADDRINUSE" in err or "EADDRNOTAVAIL" in err
            ok = ready and code == 1 and taken and "-p on both sides" in err and took < 10
            failed += 0 if ok else 1
            print(f"{'ok' if ok else 'FAILED'}: a second {name} server on the first one's port: exit {code} in "
                  f"{took:.1f} s | {' / '.join(err.strip().splitlines())[:250]}")
            if first.poll() is not None:
                failed += 1
                print(f"FAILED: the first server ended (exit {first.returncode}) when the second one tried its port")
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    return 1 if failed else 0


def wait_for_line(proc, pattern, seconds):
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    seen, end = "", time.monotonic() + seconds
    while time.monotonic() < end and proc.poll() is None:
        try:
            seen += os.read(fd, 65536).decode(errors="replace")
        except BlockingIOError:
            pass
        if pattern.search(seen):
            return True
        time.sleep(0.05)
    print(f"the first server did not say it was listening within {seconds} s: {seen.strip()[:300]}")
    return False


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "usage":
        return usage(sys.argv[2])
    if len(sys.argv) >= 3 and sys.argv[1] == "device":
        server = sys.argv[4] if len(sys.argv) >= 5 and sys.argv[3] == "--server" else None
        return device(sys.argv[2], server)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
