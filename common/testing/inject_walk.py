#!/usr/bin/env python3
"""The inject suite's walk: every verbs and rdma_cm call site of one program,
made to fail in turn (common/testing/inject.cpp, LD_PRELOADed).

A first run records the call sites each role reaches. Then, for each site,
the same scenario runs again with that site's first call failing (EIO unless
--errno), and the run of the role that failed is judged:

  clean exit    exit code 1 (the program's own failure exit; not a signal, a
                hang, a sanitizer's exit code, or 0)
  named call    a line of its stderr names the call and the errno (EIO)
  nothing leaked  LeakSanitizer found nothing (the program is the ASan twin),
                the shim saw every verbs/rdma_cm object the program made
                released before exit and no descriptor it opened (socket,
                event channel, completion channel, device) still open, and
                `rdma resource show` counts the same objects after the walk
                as before it

A failed release (destroy, dealloc, dereg, close) leaves its object
alive, as a real failure would: there the program must name the call and exit
1, and the report lists what stayed for the kernel to free at exit (that
object, and what it kept busy), with the leak checks off for that run.
ibv_poll_cq reports no errno (a negative count), so its line need only name
the call.

When the program registers memory, each role also runs twice without
CAP_IPC_LOCK (which lifts the limit, and root has it): with RLIMIT_MEMLOCK at
1 byte (less than a page: the first registration fails with ENOMEM) and at 0
(the kernel then refuses to pin at all: EPERM). Each time the program must
exit 1 naming the call, the errno and the memlock limit, nothing leaked.

A server (it serves several clients in 06 and 09) may take a failure for one
client's sake, name it, and go on (exit 0): the report says so ("went on").

A site the first run reached that --attempts reruns do not reach again is a
failure, unless the last rerun of that role ended well (exit 0, nothing left
behind) without it: then it is on a path only some timings take, and the
report says so instead of judging it.

Prints one report line per call site and a summary; exits 1 when a site
fails a check, 77 (skip) when there is no RDMA device.

  inject_walk.py --shim LIB --program EXE --alone 'ARGS'
  inject_walk.py --shim LIB --program EXE --server 'ARGS' --client 'ARGS' [--ready REGEX]

In ARGS, {ipv4} is the RDMA interface's address (RDMA_TUTORIAL_IPV4 or
RXE_VM_IPV4) and {port} a port of this walk's own.
"""

import argparse
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

# How a name in the shim's log appears in a program's message.
SPOKEN = {
    "ibv_reg_mr_iova2": "ibv_reg_mr",
    "_ibv_query_gid_ex": "ibv_query_gid",
}
# Calls that cannot fail for the arguments a correct program passes; failing
# them would test a failure that does not exist (read in rdma-core 44).
CANNOT_FAIL = {
    "rdma_ack_cm_event": "fails only for a NULL event: it frees the event and wakes rdma_destroy_id, "
                         "no kernel call (an unacked event makes rdma_destroy_id wait forever)",
}
RELEASES = re.compile(r"(destroy|dealloc|dereg|close_device)")


def left_behind(lines):
    """What the shim's exit report lists as still alive: objects ("ibv_create_qp 1a2b") and
    descriptors ("descriptor 5 socket:[1234]")."""
    return ([l[5:] for l in lines if l.startswith("leak ")] +
            ["descriptor " + l[3:] for l in lines if l.startswith("fd ")])
SANITIZER_EXITS = {86: "AddressSanitizer report", 87: "LeakSanitizer: leaks", 88: "UBSan report"}


def rdma_resources():
    """The kernel's object counts per device, from `rdma resource show`."""
    out = subprocess.run(["rdma", "resource", "show"], capture_output=True, text=True, check=False).stdout
    return " | ".join(line.strip() for line in out.splitlines() if line.strip())


def rdma_ipv4():
    """The RDMA interface's address: what scripts/run.sh and the guest export."""
    return os.environ.get("RDMA_TUTORIAL_IPV4") or os.environ.get("RXE_VM_IPV4") or "127.0.0.1"


def has_device():
    return os.path.isdir("/sys/class/infiniband") and len(os.listdir("/sys/class/infiniband")) > 0


class Role:
    def __init__(self, name, args):
        self.name = name
        self.args = args


def short_function(name):
    """A demangled name without its template arguments and parameters."""
    if name.startswith("rdma::detail::deleter<"):
        return "a handle's deleter"
    out, depth = "", 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
        elif ch == "(" and depth == 0:
            break
        elif depth == 0:
            out += ch
    return out.replace("{lambda", "(a lambda)").strip() or name


def describe_site(program, site, cache={}):
    """function (file:line) of a call site, from the program's debug info."""
    if site in cache:
        return cache[site]
    text = "0x" + site
    try:
        out = subprocess.run(["addr2line", "-f", "-C", "-i", "-s", "-e", program, hex(int(site, 16) - 1)],
                             capture_output=True, text=True, check=False, timeout=20).stdout.splitlines()
        frames = list(zip(out[0::2], out[1::2]))
        # The innermost frame may be an inline verb of verbs.h; name ours.
        ours = [f for f in frames if not f[1].startswith(("verbs.h", "rdma_cma.h"))]
        if ours:
            function, line = ours[0]
            function = short_function(function)
            text = f"{function} ({line.split(' ')[0]})"
    except (OSError, subprocess.SubprocessError):
        pass
    cache[site] = text
    return text


# The role not judged in a run waits this much longer than its ARGS say. It
# costs nothing (it is stopped once the judged role ends) and keeps a loaded
# machine from ending the run before the judged role reaches its site: its
# peer giving up on a slow ASan twin's handshake is not the judged role's fault.
PATIENCE = 5
BOUNDS = ("--wait-ms", "--accept-ms")


def patient(args):
    """`args` with every --wait-ms and --accept-ms value PATIENCE times larger."""
    out = list(args)
    for i, word in enumerate(out[:-1]):
        if word in BOUNDS and out[i + 1].isdigit():
            out[i + 1] = str(int(out[i + 1]) * PATIENCE)
    return out


def show_output(whose, stderr, stdout):
    """A run's first stderr lines and last stdout lines, indented under its report line."""
    print(f"    {whose} stderr: " + " / ".join(stderr.strip().splitlines()[:4]))
    print(f"    {whose} stdout ends: " + " / ".join(stdout.strip().splitlines()[-3:]))


def shim_env(shim, log, base=None, **extra):
    """The environment of a run with the injection shim preloaded (its log and exit report
    going to `log`), on top of `base` (this process's environment unless given) and `extra`."""
    env = dict(os.environ if base is None else base, LD_PRELOAD=shim, RDMA_INJECT_LOG=log, **extra)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"  # the shim comes first
    return env


class Walk:
    def __init__(self, opts):
        self.opts = opts
        self.dir = tempfile.mkdtemp(prefix="inject_walk.")
        fill = lambda s: shlex.split(s.format(ipv4=rdma_ipv4(), port=opts.port))
        if opts.alone is not None:
            self.roles = [Role("alone", fill(opts.alone))]
        else:
            self.roles = [Role("server", fill(opts.server)), Role("client", fill(opts.client))]

    def env_for(self, role, log, fail):
        env = shim_env(self.opts.shim, log, RDMA_INJECT_ERRNO=str(self.opts.errno))
        env.pop("RDMA_INJECT_FAIL", None)
        if fail is not None and fail[0] == role.name:
            env["RDMA_INJECT_FAIL"] = fail[1]
            if RELEASES.search(fail[1].split("@")[0]):
                env["ASAN_OPTIONS"] += ":detect_leaks=0"  # its object stays, by design
        return env

    def run(self, tag, fail=None, memlock=None, limit="1"):
        """One run of the scenario; per role: exit code, stderr, shim log lines."""
        procs, results = [], {}
        for i, role in enumerate(self.roles):
            prefix = []
            if memlock == role.name:
                prefix = ["setpriv", "--bounding-set=-ipc_lock", "--inh-caps=-ipc_lock",
                          "prlimit", f"--memlock={limit}:{limit}"]
                fail = (role.name, "none@0")
            log = os.path.join(self.dir, f"{tag}.{role.name}.log")
            err = open(os.path.join(self.dir, f"{tag}.{role.name}.err"), "w+")
            out = open(os.path.join(self.dir, f"{tag}.{role.name}.out"), "w+")
            # The role not judged in this run only has to play its part: the
            # plain build (--peer-program) starts faster than the ASan twin.
            program, args = self.opts.program, role.args
            if fail is not None and fail[0] != role.name:
                program = self.opts.peer_program or program
                args = patient(args)
            p = subprocess.Popen(prefix + [program] + args, stdout=out, stderr=err,
                                 env=self.env_for(role, log, fail), start_new_session=True)
            procs.append((role, p, log, out, err))
            if i == 0 and len(self.roles) > 1:
                self.wait_ready(p, out)
        deadline = time.monotonic() + self.opts.run_timeout
        # The role that failed is the one judged: once it has ended, its peer
        # (left waiting for it, up to its --accept-ms) is only stopped.
        judged = [x for x in procs if fail is not None and x[0].name == fail[0]]
        for role, p, log, out, err in judged + [x for x in procs if x not in judged]:
            if judged and role.name != fail[0] and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            try:
                code = p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                code = "hung (killed after %d s)" % self.opts.run_timeout
            err.seek(0)
            lines = open(log).read().splitlines() if os.path.exists(log) else []
            out.seek(0)
            results[role.name] = (code, err.read(), lines, out.read())
            out.close()
            err.close()
        return results

    def wait_ready(self, proc, out):
        """The server is ready when its output says so (or it ended)."""
        end = time.monotonic() + self.opts.ready_timeout
        while time.monotonic() < end and proc.poll() is None:
            out.seek(0)
            if re.search(self.opts.ready, out.read()):
                return
            time.sleep(0.05)

    def judge(self, role, name, site, result):
        code, stderr, lines = result[0], result[1] + result[3], result[2]
        problems = []
        if not any(l.startswith(f"inject {name} {site} ") for l in lines):
            return None  # not reached this time
        spoken = SPOKEN.get(name, name)
        release = RELEASES.search(name) is not None
        # Only a server (of several clients) may take a failure and go on.
        if code != 1 and not (code == 0 and role == "server" and not release):
            if isinstance(code, int) and code in SANITIZER_EXITS:
                problems.append(f"exit {code} ({SANITIZER_EXITS[code]})")
            elif isinstance(code, int) and code < 0:
                problems.append(f"killed by signal {-code}")
            else:
                problems.append(f"exit {code}")
        errno_name = "" if name == "ibv_poll_cq" else self.opts.errno_name
        if not any(spoken in l and errno_name in l for l in stderr.splitlines()):
            problems.append(f"no line names {spoken} and {errno_name}")
        leaks = left_behind(lines)
        if leaks and not release:
            problems.append("not released: " + ", ".join(leaks))
        if "end" not in lines:
            problems.append("the shim's exit report is missing (did the program end normally?)")
        if "ERROR: LeakSanitizer" in stderr or "ERROR: AddressSanitizer" in stderr:
            problems.append("sanitizer report")
        return problems

    def walk(self):
        before = rdma_resources()
        first = self.run("count")
        sites = []
        for role in self.roles:
            code, stderr, lines, _ = first[role.name]
            if code != 0:
                print(f"the {role.name}'s run without injection failed (exit {code}):\n{stderr}")
                return 1
            if left_behind(lines):
                print(f"the {role.name}'s run without injection left behind: {', '.join(left_behind(lines))}")
                return 1
            for l in lines:
                if l.startswith("call "):
                    _, name, site = l.split()
                    sites.append((role.name, name, site))
        failed = timing = 0
        for n, (role, name, site) in enumerate(sites):
            if name in CANNOT_FAIL:
                print(f"{role:6} {name} at {describe_site(self.opts.program, site)}: not failed: {CANNOT_FAIL[name]}")
                continue
            verdict = None
            for attempt in range(self.opts.attempts):
                result = self.run(f"site{n}.{attempt}", (role, f"{name}@{site}"))
                verdict = self.judge(role, name, site, result[role])
                if verdict is not None:
                    break
            where = describe_site(self.opts.program, site)
            label = f"{role:6} {SPOKEN.get(name, name)} at {where}"
            if verdict is None:
                code, _, lines, _ = result[role]
                if code == 0 and "end" in lines and not left_behind(lines):
                    # Every rerun went its whole way and ended well without
                    # this site: a path only some timings take (07's server
                    # seeing the client's DISCONNECTED before its notice's
                    # completion, on a loaded machine). Idle runs never list it.
                    print(f"{label}: reached in the first run only; {self.opts.attempts} more ended well without it "
                          "(a path only some timings take): not judged")
                    timing += 1
                else:
                    print(f"{label}: not reached again in {self.opts.attempts} runs, and the last one ended "
                          f"with exit {code}")
                    for other, (c, err_text, _, out_text) in result.items():
                        show_output(f"the {other}'s (exit {c})", err_text, out_text)
                    failed += 1
            elif verdict:
                print(f"{label}: FAILED: {'; '.join(verdict)}")
                show_output("its", result[role][1], result[role][3])
                failed += 1
            else:
                code = result[role][0]
                text = result[role][1] + result[role][3]
                line = next(l for l in text.splitlines() if SPOKEN.get(name, name) in l)
                left = [what if what.startswith("descriptor ") else what.split()[0]
                        for what in left_behind(result[role][2])]
                if RELEASES.search(name):
                    what = "left to the kernel at exit: " + (", ".join(left) or "nothing")
                    print(f"{label}: exit 1, named call; a failed release, {what} | {line.strip()[:150]}")
                elif code == 0:
                    print(f"{label}: named, and it went on (exit 0), nothing leaked | {line.strip()[:150]}")
                else:
                    print(f"{label}: clean exit, named call, nothing leaked | {line.strip()[:150]}")
            sys.stdout.flush()
        registers = any(name.startswith("ibv_reg_mr") for _, name, _ in sites)
        memlock_runs = [(r, l) for r in self.roles for l in (("1", "ENOMEM"), ("0", "EPERM"))] if registers else []
        memlock_failed = 0
        for role, (limit, errno_name) in memlock_runs:
            result = self.run(f"memlock{limit}.{role.name}", memlock=role.name, limit=limit)[role.name]
            code, stderr, lines = result[0], result[1] + result[3], result[2]
            problems = [] if code == 1 else [f"exit {code}"]
            if not any(errno_name in l for l in stderr.splitlines()):
                problems.append(f"no line names {errno_name}")
            if "memlock" not in stderr.lower():
                problems.append("no line names the memlock limit")
            leaks = left_behind(lines)
            if leaks or "end" not in lines:
                problems.append("not released: " + ", ".join(leaks) if leaks else "no exit report")
            label = f"{role.name:6} memlock limit {limit} byte{'s' if limit != '1' else ''}, no CAP_IPC_LOCK"
            if problems:
                memlock_failed += 1
                print(f"{label}: FAILED: {'; '.join(problems)}\n    its stderr: " +
                      " / ".join(stderr.strip().splitlines()[:4]))
            else:
                first = next(l for l in stderr.splitlines() if errno_name in l)
                print(f"{label}: clean exit, {errno_name} named, nothing leaked | {first.strip()[:150]}")
        after = rdma_resources()
        if after != before:
            print(f"rdma resource show differs after the walk:\n  before: {before}\n  after:  {after}")
            failed += 1
        else:
            print(f"rdma resource show, before and after the walk: {before}")
        skipped = sum(1 for _, name, _ in sites if name in CANNOT_FAIL)
        print(f"{len(sites)} call sites: {len(sites) - failed - skipped - timing} clean, {failed} not, "
              f"{skipped} not failed (they cannot fail)" +
              (f", {timing} reached only by the first run's timing" if timing else ""))
        if memlock_runs:
            print(f"{len(memlock_runs)} memlock runs: {len(memlock_runs) - memlock_failed} clean, {memlock_failed} not")
        return 1 if failed or memlock_failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shim", required=True)
    p.add_argument("--program", required=True)
    p.add_argument("--peer-program", help="the build the role not judged runs (default: --program)")
    p.add_argument("--alone")
    p.add_argument("--server")
    p.add_argument("--client")
    p.add_argument("--ready", default=r"waiting for|listening")
    p.add_argument("--port", type=int, default=18800)
    p.add_argument("--errno", type=int, default=5)
    p.add_argument("--run-timeout", type=float, default=60)
    p.add_argument("--ready-timeout", type=float, default=20)
    p.add_argument("--attempts", type=int, default=3)
    opts = p.parse_args()
    opts.errno_name = {5: "EIO"}.get(opts.errno, os.strerror(opts.errno))
    if (opts.alone is None) == (opts.server is None or opts.client is None):
        p.error("give --alone, or --server and --client")
    if not has_device():
        print("SKIP: no RDMA device (/sys/class/infiniband is empty); run inside scripts/rxe_vm.sh")
        return 77
    return Walk(opts).walk()


if __name__ == "__main__":
    sys.exit(main())
