"""The workshop runner behind scripts/workshop.sh (its --help is the
usage text below). The pure logic lives in workshop_lib.py; this file runs
things: the checker (scripts/check_exercise.sh), git, the warm guest.

The warm guest: where this machine has no active RDMA port, one Soft-RoCE
guest (scripts/rxe_vm.sh) runs scripts/peer_agent.sh on a folder of the
workshop state (.workshop/guest). A check then hands its device run to that
agent (scripts/lib.sh's on_device, through scripts/on_peer.sh) instead of
booting a guest of its own: about 10 s saved per check. The guest ends with
the runner that started it, after --idle seconds without a check, or with
`guest stop`; one that died is noticed before the next check and booted
again.

Per learner (per checkout): the state folder .workshop/ (progress, the
guest, a build lock), the build folder (BUILD_DIR, default build) and the
TCP/rdma_cm port two-peer exercises use (RDMA_TUTORIAL_PORT, default one
derived from the checkout's path), so learners sharing one machine with
Soft-RoCE set up once do not meet each other's servers.
"""

import fcntl
import os
import select
import signal
import subprocess
import sys
import termios
import time
import tty

sys.dont_write_bytecode = True  # nothing written into the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workshop_lib as lib  # noqa: E402

USAGE = """usage: scripts/workshop.sh [VERB] [ARGS]

  (no verb), watch [--manual]   watch mode on the first unsolved exercise: every
                                save rebuilds and checks it; keys: n next, h hint,
                                l list, c check all, r reset, q quit. --manual:
                                Enter checks (for shares where saves go unseen)
  list                          every exercise by stage: fixed, still broken, not tried
  next                          the first unsolved exercise: file, symptom, chapter
  hint NAME [LEVEL]             the next hint level (or LEVEL): where to look first,
                                the chapter section last; never the fix
  check NAME                    build NAME alone and check it on a device
  verify [--reference|--both] [STAGE]
                                every exercise (or STAGE's) in one guest boot, a table:
                                as shipped each is still broken with its symptom;
                                --reference: the stages' own code passes each one;
                                --both: one, then the other
  reset NAME [--yes]            the shipped file back from git (asks first)
  solution NAME                 once NAME is fixed: your file beside the stage's own
  guest start|status|stop       the warm Soft-RoCE guest checks run in
  --bench                       time a save-to-verdict check, warm and cold

NAME is an exercise's name (port_zero), STAGE/NAME, or its file's path.
Environment: BUILD_DIR (default build), WORKSHOP_STATE (default .workshop),
RDMA_TUTORIAL_PORT (the port two-peer exercises use), WORKSHOP_IDLE (seconds
an unused guest lives, default 1800)."""

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATE = os.environ.get("WORKSHOP_STATE") or os.path.join(ROOT, ".workshop")
BUILD = os.environ.get("BUILD_DIR", "build")
GUEST_DIR = os.path.join(STATE, "guest")
GUEST_PID = os.path.join(STATE, "guest.pid")
GUEST_LOG = os.path.join(STATE, "guest.log")
IDLE = int(os.environ.get("WORKSHOP_IDLE", "1800"))
BOOT_WAIT = 120  # seconds a booting guest may take to say it is ready (TCG, a busy machine)


def say(text=""):
    print(text, flush=True)


def learner_port():
    """This checkout's port for two-peer exercises: RDMA_TUTORIAL_PORT, or one in 20000-39999 from
    the checkout's path (two checkouts on one machine, two ports)."""
    return os.environ.get("RDMA_TUTORIAL_PORT") or str(lib.port_for(ROOT))


_ACTIVE_PORT = None


def have_active_port():
    """scripts/lib.sh's have_active_port, asked once (a process start costs in a TCG guest)."""
    global _ACTIVE_PORT
    if _ACTIVE_PORT is None:
        _ACTIVE_PORT = subprocess.run(["bash", "-c", f"source {ROOT}/scripts/lib.sh; have_active_port"]).returncode == 0
    return _ACTIVE_PORT


# --- the warm guest --------------------------------------------------------------

GUEST_PROC = None  # the guest's rxe_vm.sh when this runner started it (reaped here, never a zombie)


def guest_pid():
    try:
        with open(GUEST_PID) as f:
            pid = int(f.read().strip())
        if GUEST_PROC is not None and GUEST_PROC.pid == pid:
            return pid if GUEST_PROC.poll() is None else None
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def guest_ready():
    return guest_pid() is not None and os.path.exists(os.path.join(GUEST_DIR, "ready"))


def guest_start(wait=True):
    """Boots the warm guest unless one runs; True once it is ready (or booting, with wait=False)."""
    if guest_pid() is not None:
        return wait_ready() if wait else True
    import shutil  # here, not at the top: each import costs at start-up in a TCG guest
    shutil.rmtree(GUEST_DIR, ignore_errors=True)
    os.makedirs(GUEST_DIR)
    command = [os.path.join(ROOT, "scripts", "rxe_vm.sh"), "--timeout", str(IDLE + 8 * 3600)]
    if not os.path.realpath(STATE).startswith(os.path.realpath(ROOT) + os.sep):
        command += ["--share", STATE]  # the agent's folder must be seen inside the guest
    command += ["--", os.path.join(ROOT, "scripts", "peer_agent.sh"), "--idle", str(IDLE), GUEST_DIR]
    global GUEST_PROC
    with open(GUEST_LOG, "w") as log:
        # A session of its own: Ctrl-C in the terminal reaches the runner, which ends the guest itself.
        GUEST_PROC = proc = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    with open(GUEST_PID, "w") as f:
        f.write(f"{proc.pid}\n")
    return wait_ready() if wait else True


def wait_ready():
    deadline = time.monotonic() + BOOT_WAIT
    while time.monotonic() < deadline:
        if guest_ready():
            return True
        if guest_pid() is None:
            break
        time.sleep(0.1)
    return False


def guest_failure():
    """Why the guest is not there: the tail of its log, and check_env.sh's line for the guest."""
    tail = ""
    if os.path.exists(GUEST_LOG):
        with open(GUEST_LOG, errors="replace") as f:
            tail = " / ".join(line.strip() for line in f.read().strip().splitlines()[-3:])
    env = subprocess.run([os.path.join(ROOT, "scripts", "check_env.sh")], capture_output=True, text=True)
    guest_lines = [line for line in env.stdout.splitlines() if "guest" in line.lower() or "qemu" in line.lower()]
    return (tail or "no output") + ("\n  check_env.sh: " + guest_lines[0].strip() if guest_lines else "")


def forget_guest():
    for path in (GUEST_PID, os.path.join(GUEST_DIR, "ready")):
        if os.path.exists(path):
            os.remove(path)


def guest_stop():
    pid = guest_pid()
    if pid is None:
        forget_guest()  # a guest that died leaves its files: they must not pass for a running one
        return False
    open(os.path.join(GUEST_DIR, "stop"), "w").close()  # the agent ends its jobs; the guest powers off
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and guest_pid() is not None:
        time.sleep(0.1)
    if guest_pid() is not None:
        os.killpg(pid, signal.SIGTERM)  # rxe_vm.sh's trap kills its qemu
        time.sleep(1)
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    if GUEST_PROC is not None:
        GUEST_PROC.poll()
    forget_guest()
    return True


def guest_status():
    pid = guest_pid()
    if have_active_port():
        say("this machine has an active RDMA port: checks run here, no guest is needed")
    elif pid is None:
        say("no warm guest: a check boots a guest of its own (scripts/workshop.sh guest start keeps one)")
    elif not guest_ready():
        say(f"the warm guest is booting (rxe_vm.sh pid {pid})")
    else:
        jobs = len([f for f in os.listdir(GUEST_DIR) if f.endswith(".status")])
        say(f"the warm guest is up (rxe_vm.sh pid {pid}): {jobs} check(s) run; it ends after {IDLE} s unused")


# --- checks ------------------------------------------------------------------------

class Runner:
    def __init__(self):
        self.exercises = lib.find_exercises(ROOT)
        self.progress = lib.Progress(os.path.join(STATE, "progress.json"))
        self.started_guest = False
        self.tree_built = False
        self.prebuilt = False  # every exercise built already (verify): the checker builds nothing
        self.child = None

    def find(self, text):
        return lib.find_exercise(self.exercises, text)

    def statuses(self):
        return lib.statuses(self.exercises, self.progress)

    def bar(self):
        s = self.statuses()
        return lib.progress_bar(sum(v == lib.FIXED for v in s.values()), len(self.exercises))

    def ensure_guest(self):
        """The warm guest where one is needed: booted if none runs (again if it died)."""
        if have_active_port() or guest_ready():
            return True
        if guest_pid() is None:
            self.started_guest = True
            say("booting the warm Soft-RoCE guest (once; later checks use it) ...")
        if guest_start():
            return True
        say("the warm guest did not come up: " + guest_failure())
        say("checks fall back to a guest of their own each (slower)")
        guest_stop()
        return False

    def run_checker(self, args, quiet=False):
        """scripts/check_exercise.sh ARGS, through the warm guest when one is up; (exit code, output).
        The tree itself is built once per run of the runner, not once per check (about a second
        each): after that the checker builds only the exercise, and what it reuses of the stage."""
        env = dict(os.environ, BUILD_DIR=BUILD, RDMA_TUTORIAL_PORT=learner_port())
        if not self.tree_built:
            built = subprocess.run(["bash", "-c", f'source {ROOT}/scripts/lib.sh; build_tree "$0"', BUILD], cwd=ROOT,
                                   capture_output=True, text=True)
            if built.returncode != 0:
                return 2, "check_exercise: the stages themselves do not build:\n" + built.stdout + built.stderr
            self.tree_built = True
        env["RDMA_TUTORIAL_BUILT"] = "exercises" if self.prebuilt else "1"
        if have_active_port() and not env.get("RDMA_TUTORIAL_IPV4") and not env.get("RXE_VM"):
            # A machine of its own with Soft-RoCE: rdma_cm exercises use its address, not the guest's.
            address = subprocess.run(["bash", "-c", f"source {ROOT}/scripts/lib.sh; rdma_ipv4"],
                                     capture_output=True, text=True).stdout.strip()
            if address:
                env["RDMA_TUTORIAL_IPV4"] = address
        pid = guest_pid()
        if guest_ready() and pid is not None:
            env.update(RDMA_TUTORIAL_GUEST=GUEST_DIR, RXE_VM_PEER_PID=str(pid))
        os.makedirs(STATE, exist_ok=True)
        with open(os.path.join(STATE, "build.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time in this checkout; gone with the process
            self.child = subprocess.Popen([os.path.join(ROOT, "scripts", "check_exercise.sh")] + args, cwd=ROOT, env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                          start_new_session=True)
            out = []
            for line in self.child.stdout:
                out.append(line)
                if not quiet:
                    sys.stdout.write(line)
                    sys.stdout.flush()
            code = self.child.wait()
            self.child = None
        return code, "".join(out)

    def check(self, e, quiet=False):
        """Checks one exercise, records its verdict; True fixed, False still broken, None no verdict."""
        os.makedirs(STATE, exist_ok=True)
        if self.started_guest and not guest_ready():
            say("the warm guest is gone (it crashed, or was stopped); booting it again")
            self.ensure_guest()
        file_hash = e.file_hash()
        code, out = self.run_checker([e.qualified], quiet)
        verdict = lib.verdict_of(out)
        if verdict is None and guest_pid() is None and self.started_guest:
            say("the warm guest stopped during the check; booting it again")
            if self.ensure_guest():
                code, out = self.run_checker([e.qualified], quiet)
                verdict = lib.verdict_of(out)
        if verdict is not None:
            self.progress = lib.Progress(self.progress.path)  # another terminal of this learner may have saved
            self.progress.record(e.qualified, file_hash, verdict)
            self.progress.save()
        return verdict, out

    def stop_child(self):
        if self.child is not None and self.child.poll() is None:
            try:
                os.killpg(self.child.pid, signal.SIGTERM)
            except OSError:
                pass

    def cleanup(self):
        self.stop_child()
        if self.started_guest:
            guest_stop()

    # --- verbs -----------------------------------------------------------------------

    def cmd_list(self):
        s = self.statuses()
        stage = None
        for e in self.exercises:
            if e.stage != stage:
                stage = e.stage
                say(stage)
            say(f"  {s[e.qualified]:<13} {e.name:<28} {e.title}")
        say(self.bar())

    def describe(self, e):
        levels = e.hints()
        section = lib.SECTION.search(levels[-1]) if levels else None
        lines = [f"{e.qualified}: {e.title}",
                 f"  file:     {e.path}",
                 f"  symptom:  {lib.readable_symptom(e.symptom)}"]
        if section:
            lines.append(f'  chapter:  docs/{section.group(1)}, section "{section.group(2)}"')
        return lines

    def cmd_next(self):
        e = lib.first_unsolved(self.exercises, self.statuses())
        if e is None:
            say("every exercise is fixed. " + self.bar())
            return 0
        say("next: " + "\n".join(self.describe(e)))
        say(f"  check it: scripts/workshop.sh check {e.name}, or scripts/workshop.sh and save the file")
        return 0

    def hint_lines(self, e, level):
        levels = e.hints()
        out = []
        for i in range(level):
            import textwrap
            text = textwrap.fill(levels[i], 76, initial_indent="    ", subsequent_indent="    ")
            out.append(f"  hint {i + 1} of {len(levels)}:\n{text}")
        if level == len(levels):
            out.append("  (that was the last hint: the chapter section has the rest)")
        return out

    def cmd_hint(self, name, level_text=None):
        e = self.find(name)
        count = len(e.hints())
        shown = self.progress.hints_shown(e.qualified)
        level = lib.wanted_hint_level(level_text, count) if level_text is not None else lib.next_hint_level(shown, count)
        self.progress.show_hints(e.qualified, level)
        self.progress.save()
        say("\n".join(self.hint_lines(e, level)))
        return 0

    def cmd_check(self, name):
        # The warm guest if one runs (watch mode's, or `guest start`'s); else the checker boots one.
        e = self.find(name)
        verdict, _ = self.check(e)
        return 0 if verdict else 1

    def cmd_verify_both(self, stage=None):
        """The day-before check in one run: every exercise as shipped, then the stages' own code."""
        shipped = self.cmd_verify(False, stage)
        return shipped if shipped == 2 else max(shipped, self.cmd_verify(True, stage))

    def cmd_verify(self, reference, stage=None):
        """Every exercise (or, with reference, the stages' own code against each) in one guest boot.
        Every exercise is built first, in one ninja run, and the checks then build nothing (in a TCG
        guest each ninja run costs seconds: verify took 10 minutes there building one at a time)."""
        if stage is not None:
            wanted = stage.rstrip("/")
            self.exercises = [e for e in self.exercises if e.stage == wanted]
            if not self.exercises:
                raise lib.UsageError(f"no exercises in a stage '{stage}' (scripts/workshop.sh list shows them)")
        targets = [f"subprojects/{e.stage}/exercises/{e.name}" for e in self.exercises]
        if os.environ.get("RDMA_TUTORIAL_BUILT") == "exercises":
            # The caller built the tree and every exercise (CI: ninja exercises, on the host).
            targets = None
        built = subprocess.CompletedProcess([], 0) if targets is None else subprocess.run(["bash", "-c", f'source {ROOT}/scripts/lib.sh; build_tree "$0" && ninja -C "$0" "$@" >/dev/null',
                                BUILD] + ([] if reference else targets), cwd=ROOT)
        if built.returncode != 0:
            say("verify: the stages, or an exercise, do not build (scripts/workshop.sh check NAME shows the compiler)")
            return 2
        self.tree_built = True
        self.prebuilt = True
        self.ensure_guest()
        rows, bad = [], 0
        for e in self.exercises:
            # As shipped, still broken *with its own symptom* (exercise_check --expect broken), as CI
            # proves; with --reference, the stage's own program passes the exercise's checks.
            if reference:
                code, out = self.run_checker(["--reference", e.qualified], quiet=True)
            else:
                code, out = self.run_checker(["--expect", "broken", e.qualified], quiet=True)
                if lib.verdict_of(out) is not None:
                    self.progress.record(e.qualified, e.file_hash(), lib.verdict_of(out))
                    self.progress.save()
            verdict = lib.verdict_of(out)
            ok = code == 0 and verdict is reference
            bad += not ok
            seen = {True: lib.FIXED, False: lib.BROKEN, None: "no verdict"}[verdict]
            rows.append(f"  {'ok' if ok else 'UNEXPECTED':<11}{seen:<14}{e.qualified}")
            say(rows[-1])
            if not ok:
                say("\n".join("      | " + line for line in out.rstrip().splitlines()[-12:]))
        what = "the stages' own code passes every exercise" if reference else "every exercise is still broken"
        say(f"{len(self.exercises) - bad} of {len(self.exercises)} as expected ({what})")
        return 0 if bad == 0 else 1

    def cmd_reset(self, name, yes):
        e = self.find(name)
        if not yes:
            if not sys.stdin.isatty():
                raise lib.UsageError(f"reset {e.name} would lose your changes to {e.path}: confirm with --yes")
            answer = input(f"put {e.path} back as shipped? your changes to it are lost [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                say("not reset")
                return 1
        shipped = subprocess.run(["git", "-C", ROOT, "show", f"HEAD:{e.path}"], capture_output=True)
        if shipped.returncode != 0:
            say(f"reset: git has no shipped {e.path}: {shipped.stderr.decode().strip()}")
            return 1
        with open(os.path.join(ROOT, e.path), "wb") as f:
            f.write(shipped.stdout)
        say(f"{e.path} is as shipped again")
        return 0

    def cmd_solution(self, name):
        e = self.find(name)
        if self.statuses()[e.qualified] != lib.FIXED:
            say(f"{e.qualified} is not fixed yet: the solution shows once it is "
                f"(scripts/workshop.sh hint {e.name} helps meanwhile)")
            return 1
        piece = e.piece
        with open(os.path.join(ROOT, piece), encoding="utf-8") as f:
            ours = lib.body_lines(f.read())
        with open(os.path.join(ROOT, e.path), encoding="utf-8") as f:
            yours = lib.body_lines(f.read())
        diff = list(lib.solution_diff(yours, ours, f"your {e.path}", f"{piece} (the stage's own)"))
        if not diff:
            say(f"your {e.path} is the stage's own {piece}, line for line (its header aside)")
        else:
            say("".join(diff).rstrip("\n"))
        return 0


# --- watch mode --------------------------------------------------------------------

class Watch:
    KEYS = "n next · h hint · l list · c check all · r reset · q quit"

    def __init__(self, runner, manual):
        self.r = runner
        self.manual = manual
        s = runner.statuses()
        self.current = lib.first_unsolved(runner.exercises, s) or runner.exercises[0]
        self.last = []      # the last check's lines
        self.hints = runner.progress.hints_shown(self.current.qualified)  # levels shown so far
        self.notice = ""

    def stamp(self):
        try:
            st = os.stat(os.path.join(ROOT, self.current.path))
            return (st.st_mtime_ns, st.st_size)
        except OSError:
            return None

    def render(self):
        out = ["\033[H\033[2J" if sys.stdout.isatty() else "", "rdma-tutorial workshop: watch mode   " + self.r.bar(), ""]
        out += self.r.describe(self.current)
        status = self.r.statuses()[self.current.qualified]
        out.append(f"  status:   {status}")
        if self.hints:
            out += self.r.hint_lines(self.current, self.hints)
        if self.last:
            out.append("")
            out += ["  " + line for line in self.last[-15:]]
        if status == lib.FIXED:
            out.append("")
            out.append("  fixed! press n for the next exercise")
        if self.notice:
            out += ["", "  " + self.notice]
        out += ["", ("Enter checks · " if self.manual else "save the file to check it · ") + self.KEYS]
        say("\n".join(out))

    def run_check(self):
        self.notice = ""
        say(f"\nchecking {self.current.qualified} ...")
        verdict, out = self.r.check(self.current, quiet=True)
        self.last = [line for line in out.rstrip("\n").splitlines()]
        if verdict is None and not self.last:
            self.last = ["the checker said nothing"]

    def next_exercise(self):
        s = self.r.statuses()
        ex = self.r.exercises
        i = ex.index(self.current)
        for step in range(1, len(ex) + 1):
            cand = ex[(i + step) % len(ex)]
            if s[cand.qualified] != lib.FIXED:
                return cand
        return None

    def key(self, k):
        if k == "q":
            return False
        if k == "n":
            nxt = self.next_exercise()
            if nxt is None:
                self.notice = "every exercise is fixed"
            else:
                self.current, self.last, self.hints = nxt, [], self.r.progress.hints_shown(nxt.qualified)
        elif k == "h":
            count = len(self.current.hints())
            self.hints = lib.next_hint_level(self.hints, count)
            self.r.progress.show_hints(self.current.qualified, self.hints)
            self.r.progress.save()
        elif k == "l":
            say("")
            self.r.cmd_list()
            say("(any key: back)")
            self.wait_key()
        elif k == "c":
            for e in self.r.exercises:
                verdict, _ = self.r.check(e, quiet=True)
                say(f"  {({True: lib.FIXED, False: lib.BROKEN, None: 'no verdict'})[verdict]:<13} {e.qualified}")
            self.notice = "checked every exercise"
        elif k == "r":
            say(f"\nput {self.current.path} back as shipped? your changes are lost [y/N] ")
            if self.wait_key() in ("y", "Y"):
                self.r.cmd_reset(self.current.qualified, yes=True)
                self.last = []
                self.notice = "reset to the shipped file"
            else:
                self.notice = "not reset"
        elif k in ("\n", "\r") and self.manual:
            self.run_check()
        return True

    def wait_key(self, timeout=None):
        ready, _, _ = select.select([sys.stdin], [], [], timeout)
        return sys.stdin.read(1) if ready else None

    def loop(self):
        if not have_active_port() and not guest_ready():
            self.r.ensure_guest()
        stamp = self.stamp()
        self.render()
        while True:
            k = self.wait_key(0.2)
            if k is not None:
                if not self.key(k):
                    return 0
                stamp = self.stamp()
                self.render()
                continue
            if not self.manual:
                now = self.stamp()
                if now != stamp:
                    time.sleep(0.1)  # an editor's save may come in more than one write
                    stamp = self.stamp()
                    self.run_check()
                    self.render()


def cmd_watch(runner, manual):
    if not sys.stdin.isatty():
        raise lib.UsageError("watch mode reads keys from a terminal; run it in one (or use list, next, check)")
    saved = termios.tcgetattr(sys.stdin)
    try:
        tty.setcbreak(sys.stdin.fileno())
        return Watch(runner, manual).loop()
    finally:
        termios.tcsetattr(sys.stdin, termios.TCSADRAIN, saved)


# --- the benchmark --------------------------------------------------------------------

def cmd_bench(runner):
    """From a saved file to the printed verdict (the recompile included), median of 5, warm; and
    the first check with no guest running (cold), for one one-peer and one two-peer exercise."""
    results = []
    if guest_pid() is not None:
        guest_stop()
    for name in ("port_zero", "no_recv_posted"):
        e = runner.find(name)
        path = os.path.join(ROOT, e.path)
        with open(path, "rb") as f:
            original = f.read()
        try:
            def saved_to_verdict(n):
                with open(path, "wb") as f:  # a save that changes the file: it must be rebuilt
                    f.write(original + f"// workshop bench {n}\n".encode())
                start = time.monotonic()
                verdict, _ = runner.check(e, quiet=True)
                if verdict is None:
                    raise RuntimeError(f"{name}: no verdict")
                return time.monotonic() - start
            cold = saved_to_verdict(0)
            runner.started_guest = True
            if not runner.ensure_guest():
                raise RuntimeError("the warm guest did not come up")
            saved_to_verdict(1)  # the guest's first check warms its caches
            warm = [saved_to_verdict(i) for i in range(2, 7)]
            guest_stop()
            runner.started_guest = False  # stopped on purpose: the next cold check boots its own
        finally:
            with open(path, "wb") as f:
                f.write(original)
        results.append((name, e.two_peers, cold, warm))
    import statistics
    say(f"{'exercise':<16} {'peers':<6} {'cold':>7} {'warm, median of 5':>18}   warm runs")
    for name, two, cold, warm in results:
        say(f"{name:<16} {'two' if two else 'one':<6} {cold:6.1f}s {statistics.median(warm):17.1f}s   "
            + " ".join(f"{w:.1f}" for w in warm))
    return 0


def main(argv):
    args = list(argv)
    if args and args[0] in ("-h", "--help"):
        say(USAGE)
        return 0
    runner = Runner()

    def interrupted(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupted)
    try:
        verb = args.pop(0) if args else "watch"
        need = {"hint": (1, 2), "check": (1, 1), "reset": (1, 2), "solution": (1, 1), "guest": (1, 1),
                "list": (0, 0), "next": (0, 0), "verify": (0, 2), "watch": (0, 1), "--bench": (0, 0)}
        if verb not in need:
            raise lib.UsageError(f"no verb '{verb}'")
        low, high = need[verb]
        if not low <= len(args) <= high:
            raise lib.UsageError(f"'{verb}' takes " + ("no argument" if high == 0 else
                                                       f"{low} to {high} argument(s)" if low != high else
                                                       f"{low} argument(s)"))
        if verb == "watch":
            if args and args[0] != "--manual":
                raise lib.UsageError(f"watch takes only --manual, not '{args[0]}'")
            return cmd_watch(runner, bool(args))
        if verb == "list":
            return runner.cmd_list() or 0
        if verb == "next":
            return runner.cmd_next()
        if verb == "hint":
            return runner.cmd_hint(*args)
        if verb == "check":
            return runner.cmd_check(args[0])
        if verb == "verify":
            modes = [a for a in args if a in ("--reference", "--both")]
            rest = [a for a in args if a not in modes]
            if len(modes) > 1 or len(rest) > 1 or any(a.startswith("-") for a in rest):
                raise lib.UsageError("verify takes --reference or --both, and one STAGE, all optional")
            stage = rest[0] if rest else None
            if modes == ["--both"]:
                return runner.cmd_verify_both(stage)
            return runner.cmd_verify(bool(modes), stage)
        if verb == "reset":
            yes = "--yes" in args
            names = [a for a in args if a != "--yes"]
            if len(names) != 1:
                raise lib.UsageError("reset takes one NAME, and --yes to skip the question")
            return runner.cmd_reset(names[0], yes)
        if verb == "solution":
            return runner.cmd_solution(args[0])
        if verb == "guest":
            action = args[0]
            if action == "start":
                if have_active_port():
                    say("this machine has an active RDMA port: checks run here, no guest is needed")
                    return 0
                if guest_start():
                    guest_status()
                    return 0
                say("the warm guest did not come up: " + guest_failure())
                guest_stop()
                return 1
            if action == "stop":
                say("the warm guest is stopped" if guest_stop() else "no warm guest runs")
                return 0
            if action == "status":
                guest_status()
                return 0
            raise lib.UsageError(f"guest takes start, status or stop, not '{action}'")
        if verb == "--bench":
            return cmd_bench(runner)
    except lib.UsageError as e:
        print(f"workshop: {e}\n\n{USAGE}" if "no verb" in str(e) or "takes" in str(e) else f"workshop: {e}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        say("\nworkshop: interrupted")
        return 130
    except BrokenPipeError:  # | head, say
        return 0
    finally:
        runner.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
