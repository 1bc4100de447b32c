#!/usr/bin/env python3
"""What a two-peer stage does when its peer fails it, on a real device.

  peer_faults.py --program TWIN --peer-program PLAIN --server 'ARGS'
                 --client 'ARGS' --stream 'ARGS' [--tcp-handshake]
                 [--shim librdma_inject.so] [--hostile 'SPEC|REGEX' ...]

TWIN is the stage's program under ASan+UBSan: it plays the role being
judged, so a leak or a bad access on the way out fails the run. PLAIN plays
the peer that misbehaves or dies. --server and --client are the two roles'
arguments ({port} and {ipv4} as in inject_walk.py); --stream is what the
client adds to stream until it is stopped.

  killed       the client streaming, both QPs in RTS: SIGKILL the server,
               then (another run) the client. The survivor must end within
               BOUND seconds of the kill, exit 1 with a line naming what went
               wrong (a server of several clients may instead say it let the
               client go and exit 0), and leave `rdma resource show` as it
               found it.
  unreachable  the client sent to 198.51.100.7 (off every subnet) and to
               203.0.113.99 (on the guest's dummy1 subnet, where nobody
               answers ARP): exit 1 within BOUND, the failed step named, with
               a likely fix.
  handshake    (--tcp-handshake: common's TCP endpoint exchange) a hostile
               peer on each side: silent, garbage, truncated, another
               protocol version. Each must be refused, exit 1, within BOUND,
               naming what was wrong, before any QP leaves INIT. A server of
               several clients names the one that could not join in its log
               and waits for the others until its --accept-ms.

  hostile      (--hostile, each) the real client with the injection shim
               in front: its first record leaves with the immediate or the
               length SPEC gives (RDMA_INJECT_WR, common/testing/inject.cpp).
               The server must refuse it with a line matching REGEX before
               it reads the slot: exit 1, or (several clients) drop that
               client; ended within BOUND, rdma resource show as before.

  lying peer   (--hostile-peer, each) a peer that connects as it should
               and then lies. 'run=HEX|REGEX': a fake client sends a valid
               endpoint, then the bytes HEX (stage 08's run: rounds, burst,
               size, solicited_every); the server must refuse them before it
               sizes anything by them. 'accept=OFFSET:HEX|REGEX': the real
               server with the injection shim in front accepts with those
               bytes written into its private data (RDMA_INJECT_PRIVATE:
               stage 09's grant); the client must refuse the grant before it
               allocates for it. 'endpoint=OFFSET:HEX|REGEX': a fake server
               answers the real client's endpoint with a valid one whose bytes
               at OFFSET are HEX (stage 06's window: the length at 44); the
               client must refuse it before it sizes anything by it. Each:
               exit 1 with a line matching REGEX, within BOUND, nothing left
               open, rdma resource show as before.

With --shim, the judged role also runs with the injection shim in front,
failing nothing: a role that ended on its own must have released every verbs
and rdma_cm object it made and closed every descriptor it opened (the
shim's exit report), besides LeakSanitizer's check of its memory.

Exit 0 when every case passed, 1 otherwise, 77 with no RDMA device.
"""

import argparse
import json
import os
import re
import shlex
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # the source tree is read-only in the guest
from inject_walk import SANITIZER_EXITS, has_device, left_behind, rdma_ipv4, rdma_resources, shim_env  # noqa: E402

BOUND = 30  # seconds from the fault to the judged role's exit
ENDPOINT = 52  # bytes of common's handshake message (common/include/rdma_tutorial/wire.hpp)
TIME_SCALE = float(os.environ.get("RDMA_TUTORIAL_TIME_SCALE", "1"))
OFF_SUBNET = "198.51.100.7"
SILENT_ON_SUBNET = "203.0.113.99"  # scripts/rxe_vm.sh's dummy1 is 203.0.113.1/24, ARP on


class Role:
    """One program run, its output in files (a pipe nobody reads would stall it). With `shim`
    (a judged role), the injection shim rides along without failing anything: its exit report
    lists any verbs object or descriptor the program left open."""

    def __init__(self, argv, tag, workdir, env=None, shim=None):
        self.out_path = os.path.join(workdir, tag + ".out")
        self.err_path = os.path.join(workdir, tag + ".err")
        self.report_path = None
        if shim is not None:
            self.report_path = os.path.join(workdir, tag + ".shim")
            env = shim_env(shim, self.report_path, env)
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=err, start_new_session=True, env=env)

    def left_open(self):
        """What the shim's exit report lists as never released, once the run ended on its own."""
        if self.report_path is None:
            return []
        lines = []
        if os.path.exists(self.report_path):
            with open(self.report_path) as report:
                lines = report.read().splitlines()
        if "end" not in lines:
            return ["the shim's exit report is missing (did the program end normally?)"]
        left = left_behind(lines)
        return ["not released: " + ", ".join(left)] if left else []

    def output(self):
        with open(self.out_path, errors="replace") as out, open(self.err_path, errors="replace") as err:
            return out.read(), err.read()

    def wait(self, seconds):
        try:
            return self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def receive_endpoint(conn):
    """What a connecting client sends first, its endpoint: up to ENDPOINT bytes, fewer if it closes first."""
    conn.settimeout(10 * TIME_SCALE)
    got = b""
    while len(got) < ENDPOINT:
        chunk = conn.recv(ENDPOINT - len(got))
        if not chunk:
            break
        got += chunk
    return got


def wait_until(condition, seconds, step=0.05):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(step)
    return condition()


def qps_in_rts(pids):
    """The pids among `pids` that own a QP in RTS (`rdma resource show qp`)."""
    out = subprocess.run(["rdma", "-j", "resource", "show", "qp"], capture_output=True, text=True).stdout
    try:
        qps = json.loads(out or "[]")
    except json.JSONDecodeError:
        return set()
    return {qp.get("pid") for qp in qps if qp.get("state") == "RTS" and qp.get("pid") in pids}


def error_lines(name, err):
    return [line for line in err.splitlines() if line.startswith(name + ": ")]


class Faults:
    def __init__(self, opts):
        self.opts = opts
        self.name = os.path.basename(opts.program).removesuffix("_sanitize")
        self.ipv4 = rdma_ipv4()
        self.port = 19000 + os.getpid() % 400 * 2
        self.failed = 0
        self.cases = 0
        self.workdir = tempfile.mkdtemp(prefix="peer_faults.")
        self.several = "--clients" in opts.server

    def args(self, template):
        return shlex.split(template.format(ipv4=self.ipv4, port=self.port))

    def verdict(self, what, problems, detail):
        self.cases += 1
        if problems:
            self.failed += 1
            print(f"FAILED: {what}: {'; '.join(problems)}\n    {detail}")
        else:
            print(f"ok: {what} | {detail}")

    def judge_exit(self, code, err, allowed=(1,), needs_fix=False):
        problems = []
        if code is None:
            problems.append(f"still running {BOUND} s after the fault")
        elif code in SANITIZER_EXITS:
            problems.append(f"{SANITIZER_EXITS[code]} reported (exit {code})")
        elif code not in allowed:
            problems.append(f"exit {code}, not {' or '.join(map(str, allowed))}")
        if code is not None and not error_lines(self.name, err) and code != 0:
            problems.append(f"no line '{self.name}: ...' names what happened")
        if needs_fix and code == 1 and "likely fix:" not in err:
            problems.append("no likely fix")
        return problems

    def resources_back(self, before):
        """The kernel frees a killed process's objects on its own time: poll."""
        ok = wait_until(lambda: rdma_resources() == before, 10 * TIME_SCALE, 0.2)
        return [] if ok else [f"rdma resource show: before {before}, after {rdma_resources()}"]

    def role(self, argv, tag, env=None):
        """A program run; the judged program (--program) with the shim's exit report (--shim)."""
        return Role(argv, tag, self.workdir, env, self.opts.shim if argv[0] == self.opts.program else None)

    def start_server(self, program, tag, extra=()):
        """The server on a port of its own, and the problem if it never said it listens."""
        self.port += 1
        server = self.role([program] + self.args(self.opts.server) + list(extra), tag + "_server")
        listening = wait_until(lambda: re.search(r"waiting for|listening", server.output()[0]) is not None,
                               20 * TIME_SCALE)
        return server, [] if listening else ["the server never said it was listening"]

    def conclude(self, what, problems, detail, before, roles):
        """Ends what still runs; a case that passed must also leave the kernel's objects as it found
        them, and a judged role that ended on its own nothing open."""
        for role in roles:
            if role is not None:
                if role.proc.poll() is not None:
                    problems += role.left_open()
                role.stop()
        if not problems:
            problems = self.resources_back(before)
        self.verdict(what, problems, detail)

    # --- a peer killed mid-stream -------------------------------------------
    def killed(self, victim):
        before = rdma_resources()
        o = self.opts
        server_program, client_program = (o.peer_program, o.program) if victim == "server" else (o.program, o.peer_program)
        # The client must be streaming before the kill, however long its
        # start takes on a loaded machine (the ASan twin's took more than the
        # 8 s the inject scenario's --accept-ms gives, in a run beside other
        # guests): a later --accept-ms wins.
        server, problems = self.start_server(server_program, f"killed_{victim}",
                                             ["--accept-ms", str(int(60000 * TIME_SCALE))])
        client, detail = None, ""
        try:
            if not problems:
                client = self.role([client_program] + self.args(o.client) + shlex.split(o.stream),
                                   f"killed_{victim}_client")
                pids = {server.proc.pid, client.proc.pid}
                streaming = wait_until(lambda: qps_in_rts(pids) == pids or client.proc.poll() is not None,
                                       30 * TIME_SCALE, 0.1)
                if not streaming or client.proc.poll() is not None:
                    problems.append("the two never both had a QP in RTS (or the client ended first): "
                                    + " / ".join(client.output()[1].strip().splitlines()[:3]))
            if not problems:
                dead, survivor = (server, client) if victim == "server" else (client, server)
                os.killpg(dead.proc.pid, signal.SIGKILL)
                killed_at = time.monotonic()
                code = survivor.wait(BOUND * TIME_SCALE)
                took = time.monotonic() - killed_at
                out, err = survivor.output()
                allowed = (0, 1) if victim == "client" and self.several else (1,)
                problems += self.judge_exit(code, err, allowed)
                let_go = [line for line in (out + err).splitlines() if re.search(r"let go|lost|gone", line)]
                if code == 0 and not let_go:  # a server of several clients: it must say whom it let go
                    problems.append("exit 0 without a line about the client it lost")
                named = error_lines(self.name, err) or let_go[:1]
                detail = f"exit {code} {took:.1f} s after the kill | " + " / ".join(named[:2])[:300]
        except OSError as e:
            problems.append(f"the harness: {e}")
        survivor_role = "client" if victim == "server" else "server"
        self.conclude(f"{self.name}: {victim} killed mid-stream, the {survivor_role} (ASan) should name it and end",
                      problems, detail, before, [server, client])

    # --- an address nobody answers ----------------------------------------
    def unreachable(self, address, why):
        self.port += 1
        before = rdma_resources()
        args = self.args(self.opts.client)
        args[args.index("-s") + 1] = address
        started = time.monotonic()
        client = self.role([self.opts.program] + args, "unreachable_" + address)
        code = client.wait(BOUND * TIME_SCALE)
        took = time.monotonic() - started
        out, err = client.output()
        problems = self.judge_exit(code, err, needs_fix=True)
        self.conclude(f"{self.name}: a client sent to {address} ({why}) should give up, naming the step", problems,
                      f"exit {code} after {took:.1f} s | " + " / ".join(err.strip().splitlines()[:2])[:300], before,
                      [client])

    # --- hostile handshakes (common's TCP endpoint exchange) --------------
    def hostile_messages(self, valid):
        version1 = bytearray(valid)
        version1[4:6] = struct.pack(">H", 1)  # the 48-byte handshake before the MTU joined it
        junk = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n0123456789abcdefghij0123"
        return [
            ("silent", None, r"sent 0 of \d+ bytes .* within"),
            ("garbage", junk[:len(valid)], r"handshake: bad magic 0x47455420"),
            # A peer that closes with our bytes unread sends a reset instead.
            ("truncated", valid[:20], r"(closed|reset) the connection after (12|0) of \d+ bytes"),
            ("version 1", bytes(version1), r"handshake: protocol version 1, this program speaks version 2"),
        ]

    def hostile_server(self):
        """A fake server for the real client: it takes the client's endpoint and answers badly."""
        valid = None
        listener = socket.create_server(("0.0.0.0", self.port + 1000))
        listener.settimeout(20 * TIME_SCALE)
        try:
            for case, message, expected in self.hostile_messages(bytes(ENDPOINT)):
                args = self.args(self.opts.client)
                args[args.index("-p") + 1] = str(self.port + 1000)
                before = rdma_resources()
                started = time.monotonic()
                client = self.role([self.opts.program] + args, "hostile_server_" + case.replace(" ", "_"))
                problems = []
                try:
                    conn, _ = listener.accept()
                    with conn:
                        got = receive_endpoint(conn)
                        valid = valid or (got if len(got) == ENDPOINT else None)
                        if message is not None and valid is not None:
                            message = [m for c, m, _ in self.hostile_messages(valid) if c == case][0]
                        if message is not None:
                            conn.sendall(message)
                        if case == "silent":
                            client.wait(BOUND * TIME_SCALE)
                except OSError as e:
                    problems.append(f"the fake server: {e}")
                self.refused(f"{self.name}: a server answering the handshake {case} should be refused by the client",
                             client, expected, problems, started, before)
        finally:
            listener.close()
        return valid

    def hostile_client(self, valid):
        """A fake client for the real server: a handshake that is wrong in one way each time."""
        for case, message, expected in self.hostile_messages(valid):
            before = rdma_resources()
            server, problems = self.start_server(self.opts.program, "hostile_client_" + case.replace(" ", "_"))
            started = time.monotonic()
            try:
                if not problems:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=10 * TIME_SCALE) as conn:
                        started = time.monotonic()
                        if message is not None:
                            conn.sendall(message)
                            conn.shutdown(socket.SHUT_WR)  # a truncated message then ends in EOF
                        server.wait(BOUND * TIME_SCALE)
            except OSError as e:
                problems.append(f"the fake client: {e}")
            # A server of several clients names the one that failed to join
            # in its log and waits for the others until --accept-ms.
            self.refused(f"{self.name}: a client whose handshake is {case} should be refused by the server",
                         server, expected, problems, started, before, in_log=self.several)

    # --- hostile immediates and lengths -------------------------------------
    def hostile(self, spec, expected):
        """The real client, its N-th record turned hostile in flight by the shim (RDMA_INJECT_WR)."""
        before = rdma_resources()
        tag = "hostile_" + re.sub(r"\W", "_", spec)
        log = os.path.join(self.workdir, tag + ".log")
        server, problems = self.start_server(self.opts.program, tag)
        client, detail = None, ""
        try:
            if not problems:
                env = shim_env(self.opts.shim, log, RDMA_INJECT_WR=spec)
                client = self.role([self.opts.peer_program] + self.args(self.opts.client), tag + "_client", env)
                started = time.monotonic()
                code = server.wait(BOUND * TIME_SCALE)
                took = time.monotonic() - started
                out, err = server.output()
                # A server of several clients drops the one that broke a rule.
                problems += self.judge_exit(code, err, (0, 1) if self.several else (1,))
                if not re.search(expected, out + err):
                    problems.append(f"no line matches /{expected}/")
                turned = open(log).read() if os.path.exists(log) else ""
                if "hostile " not in turned:
                    problems.append("the client never posted the record to turn hostile (no 'hostile' line in its log)")
                named = [line for line in (out + err).splitlines() if re.search(expected, line)]
                detail = f"exit {code} after {took:.1f} s | " + " / ".join(named[:1])[:300]
        except OSError as e:
            problems.append(f"the harness: {e}")
        self.conclude(f"{self.name}: a client whose first record leaves with {spec.split('@')[0]} should be refused "
                      "before the server reads it", problems, detail, before, [server, client])

    # --- a peer that connects, then lies --------------------------------------
    def lying_peer(self, spec, expected, valid):
        kind, _, value = spec.partition("=")
        before = rdma_resources()
        tag = "lying_" + re.sub(r"\W", "_", spec)
        if kind == "run":
            server, problems = self.start_server(self.opts.program, tag)
            started = time.monotonic()
            try:
                if not problems and valid is None:
                    problems.append("no valid endpoint to send first (the fake server never got the client's)")
                if not problems:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=10 * TIME_SCALE) as conn:
                        started = time.monotonic()
                        conn.sendall(valid + bytes.fromhex(value))
                        server.wait(BOUND * TIME_SCALE)
            except OSError as e:
                problems.append(f"the fake client: {e}")
            self.refused(f"{self.name}: a client asking for the run {value} should be refused by the server",
                         server, expected, problems, started, before, in_log=self.several)
            return
        if kind == "endpoint":
            offset, _, patch = value.partition(":")
            listener = socket.create_server(("0.0.0.0", self.port + 1001))
            listener.settimeout(20 * TIME_SCALE)
            args = self.args(self.opts.client)
            args[args.index("-p") + 1] = str(self.port + 1001)
            started = time.monotonic()
            client = self.role([self.opts.program] + args, tag + "_client")
            problems = []
            try:
                conn, _ = listener.accept()
                with conn:
                    got = receive_endpoint(conn)
                    if len(got) != ENDPOINT:
                        problems.append(f"the client sent {len(got)} bytes of its endpoint, not {ENDPOINT}")
                    else:
                        lie = bytearray(got)
                        at = int(offset)
                        lie[at:at + len(bytes.fromhex(patch))] = bytes.fromhex(patch)
                        conn.sendall(bytes(lie))
                        client.wait(BOUND * TIME_SCALE)
            except OSError as e:
                problems.append(f"the fake server: {e}")
            finally:
                listener.close()
            self.refused(f"{self.name}: a server whose endpoint carries {value} at its offset should be refused by the "
                         "client", client, expected, problems, started, before)
            return
        if kind != "accept":
            self.verdict(f"{self.name}: --hostile-peer {spec}", [f"unknown kind '{kind}' (run=, endpoint= or accept=)"], "")
            return
        log = os.path.join(self.workdir, tag + ".log")
        self.port += 1
        server = self.role([self.opts.peer_program] + self.args(self.opts.server), tag + "_server",
                           shim_env(self.opts.shim, log, RDMA_INJECT_PRIVATE=value))
        problems = [] if wait_until(lambda: re.search(r"waiting for|listening", server.output()[0]) is not None,
                                    20 * TIME_SCALE) else ["the server never said it was listening"]
        client, detail = None, ""
        try:
            if not problems:
                started = time.monotonic()
                client = self.role([self.opts.program] + self.args(self.opts.client), tag + "_client")
                code = client.wait(BOUND * TIME_SCALE)
                took = time.monotonic() - started
                out, err = client.output()
                problems += self.judge_exit(code, err)
                if not re.search(expected, err):
                    problems.append(f"no line matches /{expected}/")
                lied = open(log).read() if os.path.exists(log) else ""
                if "private " not in lied:
                    problems.append("the server never accepted with the lie (no 'private' line in its log)")
                detail = f"exit {code} after {took:.1f} s | " + " / ".join(error_lines(self.name, err)[:1])[:300]
        except OSError as e:
            problems.append(f"the harness: {e}")
        self.conclude(f"{self.name}: a server whose accept carries {value} should be refused by the client", problems,
                      detail, before, [client, server])

    def refused(self, what, role, expected, problems, started, before, in_log=False):
        """A hostile handshake's end: exit 1, the refusal named (on stderr, or in the log too when
        in_log), no QP past INIT (the handshake comes first)."""
        code = role.wait(BOUND * TIME_SCALE)
        took = time.monotonic() - started
        out, err = role.output()
        problems += self.judge_exit(code, err)
        report = out + err if in_log else err
        if not re.search(expected, report):
            problems.append(f"no line matches /{expected}/")
        if "-> RTR" in out or "-> RTS" in out:
            problems.append("a QP moved past INIT before the handshake was judged")
        named = [line for line in out.splitlines() if re.search(expected, line)] if in_log else []
        self.conclude(what, problems, f"exit {code} after {took:.1f} s | " +
                      " / ".join(named[:1] + error_lines(self.name, err)[:1])[:300], before, [role])

    def run(self):
        self.killed("server")
        self.killed("client")
        self.unreachable(OFF_SUBNET, "off every subnet")
        has_dummy1 = "203.0.113.1/" in subprocess.run(["ip", "-4", "-br", "addr"], capture_output=True, text=True).stdout
        if has_dummy1:
            self.unreachable(SILENT_ON_SUBNET, "on dummy1's subnet, nobody answers ARP")
        else:
            print(f"note: no 203.0.113.1/24 here (scripts/rxe_vm.sh's dummy1): {SILENT_ON_SUBNET} not tried")
        valid = None
        if self.opts.tcp_handshake:
            valid = self.hostile_server()
            if valid is None:
                self.verdict(f"{self.name}: the client's endpoint", ["never arrived at the fake server"], "")
            else:
                self.hostile_client(valid)
        for case in self.opts.hostile_peer:
            spec, expected = case.split("|", 1)
            self.lying_peer(spec, expected, valid)
        for case in self.opts.hostile:
            spec, expected = case.split("|", 1)
            self.hostile(spec, expected)
        print(f"{self.cases} faults, {self.cases - self.failed} handled as they should be, {self.failed} not")
        return 1 if self.failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--program", required=True)
    p.add_argument("--peer-program", required=True)
    p.add_argument("--server", required=True)
    p.add_argument("--client", required=True)
    p.add_argument("--stream", required=True)
    p.add_argument("--tcp-handshake", action="store_true")
    p.add_argument("--shim", help="librdma_inject.so: for --hostile, and on the judged role, for what it left open")
    p.add_argument("--hostile", action="append", default=[],
                   help="'SPEC|REGEX': the client's first record turned hostile by RDMA_INJECT_WR=SPEC; the server "
                        "must refuse it with a line matching REGEX")
    p.add_argument("--hostile-peer", action="append", default=[],
                   help="'run=HEX|REGEX', 'endpoint=OFFSET:HEX|REGEX' or 'accept=OFFSET:HEX|REGEX': a peer that "
                        "connects, then lies (see above)")
    opts = p.parse_args()
    if not has_device():
        print("SKIP: no RDMA device (/sys/class/infiniband is empty); run inside scripts/rxe_vm.sh")
        return 77
    return Faults(opts).run()


if __name__ == "__main__":
    sys.exit(main())
