"""The workshop runner behind scripts/workshop.sh (its --help is the
usage text below). The pure logic lives in workshop_lib.py; this file runs
things: the checker (scripts/check_exercise.sh), git, the warm guest.

The warm guest: where this machine has no active RDMA port, one Soft-RoCE
guest (scripts/rxe_vm.sh) runs scripts/peer_agent.sh on a folder of the
workshop state (.workshop/guest). A check then hands its device run to that
agent (scripts/lib.sh's on_device, through scripts/on_peer.sh) instead of
booting a guest of its own: about 10 s saved per check. The guest ends with
the runner that started it, after --idle seconds without a check, or with
`guest stop`. A guest is alive while a process of its group runs (its
rxe_vm.sh, or its qemu): one whose qemu is gone is dead even while its
rxe_vm.sh is a zombie nobody collected. A check watches it twice a second
and ends at once when it dies (on_peer.sh too, by the qemu's pid); watch
mode looks once a second between checks, says so, and boots it again. A
guest told to stop, or whose agent has ended, is waited for before the next
one boots (a lock per guest: one boot or stop at a time, in any terminal).

The warm pair: the exercises across two hosts (a PAIR line in their checker
file) run in two guests on a wire (rxe_vm.sh --pair), which the runner keeps
as it keeps the one-host guest: booted for the first such check (or by
`guest start --pair`), its first guest running the agent on .workshop/pair,
where the check's exercise_check reaches the second through on_peer.sh. A
check then costs seconds, not a pair's boot (22-48 s).

Watch mode runs each check (and a guest's boot) in a thread of its own, so
keys work while it runs: q stops it and quits, n and p leave it for
another exercise, a save starts it again.

Per learner (per checkout): the state folder .workshop/ (progress, the
guests, a build lock), the build folder (BUILD_DIR, default build) and the
TCP/rdma_cm port two-peer exercises use (RDMA_TUTORIAL_PORT, default one
derived from the checkout's path), so learners sharing one machine with
Soft-RoCE set up once do not meet each other's servers.
"""

import fcntl
import os
import queue
import select
import signal
import subprocess
import sys
import termios
import threading
import time
import tty

sys.dont_write_bytecode = True  # nothing written into the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workshop_lib as lib  # noqa: E402

USAGE = """usage: scripts/workshop.sh [VERB] [ARGS]

  (no verb), watch [NAME] [--manual]
                                watch mode on NAME, or on the current exercise
                                (the one it last showed, unless fixed; else the
                                first unsolved): it checks it at once, and again
                                on every save. Keys: n next unsolved, p back,
                                l list (type its number to open one), h hint,
                                o the last check's whole output (both programs),
                                c check all, r reset, q quit (a running check
                                is stopped). --manual: Enter checks (for shares
                                where saves go unseen)
  list                          every exercise by stage: fixed, still broken, not tried
  next                          the first unsolved exercise: file, symptom, chapter
  hint [NAME] [LEVEL]           the next hint level (or LEVEL): where to look first,
                                the chapter section last; never the fix
  check [NAME]                  build NAME alone and check it on a device
  verify [--reference|--both] [STAGE]
                                every exercise (or STAGE's) in one guest boot, a table:
                                as shipped each is still broken with its symptom;
                                --reference: the stages' own code passes each one;
                                --both: one, then the other
  reset NAME [--yes]            the shipped file back from git (asks first)
  solution [NAME]               once NAME is fixed: your file beside the stage's own
  guest start [--pair]|status|stop
                                the warm Soft-RoCE guest checks run in; --pair:
                                and the warm pair, for the exercises across two
                                hosts (watch mode boots it for the first of them)
  --bench                       time a save-to-verdict check, warm and cold

NAME is an exercise's name (port_zero; case and dashes do not count: Port-Zero),
STAGE/NAME, or its file's path. Without NAME, check, hint and solution take the
current exercise: the one watch mode last showed, else the first unsolved.
Environment: BUILD_DIR (default build), WORKSHOP_STATE (default .workshop),
RDMA_TUTORIAL_PORT (the port two-peer exercises use), WORKSHOP_IDLE (seconds
an unused guest, or pair, lives, default 1800)."""

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATE = os.environ.get("WORKSHOP_STATE") or os.path.join(ROOT, ".workshop")
BUILD = os.environ.get("BUILD_DIR", "build")
IDLE = int(os.environ.get("WORKSHOP_IDLE", "1800"))
BOOT_WAIT = 120  # seconds a booting guest may take to say it is ready (TCG, a busy machine)
PROBE = 0.5      # seconds between looks at the guest while a check runs in it


def learner_dir():
    """The learner's directory, which compiler locations are given relative to (lib.learner_path):
    where they ran scripts/workshop.sh, if it still exists."""
    try:
        return os.path.realpath(os.getcwd())
    except OSError:
        return os.path.realpath(ROOT)


CWD = learner_dir()


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


def learner_text(text):
    """The checker's output with every source location as the learner finds it (lib.rewrite_locations)."""
    return lib.rewrite_locations(text, os.path.realpath(os.path.join(ROOT, BUILD)), os.path.realpath(ROOT), CWD,
                                 os.path.realpath)


# --- the warm guests -------------------------------------------------------------

def proc_stat(pid):
    """(state, process group) of a process from /proc, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[2])
    except (OSError, IndexError, ValueError):
        return None


_QEMUS = {}  # process group -> the qemus found in it so far, the first guest's first (None: one of them has ended)


def runs_the_command(qemu):
    """True for the qemu of the guest that runs rxe_vm.sh's command (job.sh), False for a pair's peer."""
    try:
        with open(f"/proc/{qemu}/cmdline", "rb") as f:
            return b"rxe_vm.job=job.sh" in f.read()
    except OSError:
        return False


def guest_qemus(pgid, count):
    """The qemus of a guest's process group (its rxe_vm.sh's), the one that runs the command first:
    fewer than `count` while they start, None once one that ran has ended (a guest's qemu runs once:
    when it ends the guest, or the pair, is gone, even before its rxe_vm.sh notices)."""
    found = _QEMUS.get(pgid, [])
    if found is None:
        return None
    for pid in found:
        stat = proc_stat(pid)
        if not stat or stat[0] == "Z" or stat[1] != pgid:
            _QEMUS[pgid] = None
            return None
    if len(found) < count:
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in found:
                continue
            stat = proc_stat(entry)
            if stat and stat[1] == pgid and stat[0] != "Z":
                try:
                    with open(f"/proc/{entry}/comm") as f:
                        comm = f.read().strip()
                except OSError:
                    continue
                if comm.startswith("qemu"):
                    found = found + [int(entry)]
        found.sort(key=lambda pid: not runs_the_command(pid))
        if found:
            _QEMUS[pgid] = found
    return found


def group_alive(pgid, count=1):
    """True while the guest runs: its `count` qemus once all were seen (a rxe_vm.sh killed with SIGKILL
    leaves them running; a qemu that ended is the guest's end, even before its rxe_vm.sh notices), else
    its rxe_vm.sh, booting. A zombie is dead: kill -0 succeeds on one, which is why a check once waited
    10 minutes on a guest whose qemu was gone (issue 34)."""
    qemus = guest_qemus(pgid, count)
    if qemus is None:
        return False
    if len(qemus) == count:
        return True
    stat = proc_stat(pgid)
    return bool(stat and stat[0] != "Z")


class Guest:
    """A warm guest the runner keeps: scripts/rxe_vm.sh with scripts/peer_agent.sh running on a folder
    of the workshop state (STATE/NAME), its process group named in NAME.pid, its output in NAME.log.
    The one-host guest serves every exercise but those across two hosts; the pair (rxe_vm.sh --pair)
    serves those: its agent runs in the pair's first guest, where a check's exercise_check reaches
    the second guest through scripts/on_peer.sh, as in a pair booted for one check."""

    def __init__(self, name, pair, what, title, own, start):
        self.pair = pair
        self.qemus = 2 if pair else 1
        self.what = what    # in what the runner says: "the warm guest stopped ..."
        self.title = title  # "booting the warm Soft-RoCE guest ..."
        self.own = own      # what a check boots without it: "a guest of its own"
        self.start_command = start  # how a learner keeps one: "scripts/workshop.sh guest start"
        self.dir = os.path.join(STATE, name)
        self.pid_file = os.path.join(STATE, name + ".pid")
        self.log = os.path.join(STATE, name + ".log")
        self.lock_file = os.path.join(STATE, name + ".lock")
        self.proc = None      # its rxe_vm.sh when this runner started it (reaped here, never a zombie)
        self.started = False  # this runner booted it, and stops it when it ends
        self.seen = False     # one ran while this runner did: a boot now is one "again"
        self.used = None      # the process group of the warm guest the last check ran in

    def marker(self, name):
        return os.path.join(self.dir, name)

    def recorded(self):
        """The process group named in NAME.pid (alive or not), or None."""
        try:
            with open(self.pid_file) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def pid(self):
        """The running guest's rxe_vm.sh pid (its process group), or None when none runs."""
        pid = self.recorded()
        if pid is None:
            return None
        if self.proc is not None and self.proc.pid == pid:
            self.proc.poll()  # collect our rxe_vm.sh if it ended
        return pid if group_alive(pid, self.qemus) else None

    def qemu(self):
        """The qemu of the guest its agent runs in (the pair's first), or None."""
        pid = self.pid()
        qemus = guest_qemus(pid, self.qemus) if pid is not None else None
        return qemus[0] if qemus else None

    def ready(self):
        return self.pid() is not None and os.path.exists(self.marker("ready")) and not os.path.exists(self.marker("stop"))

    def log_tail(self):
        if not os.path.exists(self.log):
            return ""
        with open(self.log, errors="replace") as f:
            return f.read()[-300:]

    def going_down(self):
        """True once it was told to stop (DIR/stop) or its agent ended (idle, or told): it powers off in
        a moment, and a new one waits for its end. Booted beside it, the new one's agent would find the
        stop marker, or the old one's end would read as the new one's: after `guest stop` during a
        check, the reboot failed at once ("peer agent: stopped", issue 43)."""
        return os.path.exists(self.marker("stop")) or "peer agent: stopped" in self.log_tail()

    def gone_reason(self):
        """Why a guest that ran is gone: (kind, in the words a learner needs), kind "stopped" (asked to),
        "idle" (unused for WORKSHOP_IDLE) or "died" (a qemu of it is gone)."""
        if os.path.exists(self.marker("stop")):
            return "stopped", "it was stopped: scripts/workshop.sh guest stop, or the runner that booted it ended"
        if "idle for" in self.log_tail():
            return "idle", f"it stopped after {IDLE} s unused (WORKSHOP_IDLE)"
        if self.pair:
            return "died", "a qemu of the two is gone: it crashed, or was killed"
        return "died", "its qemu is gone: it crashed, or was killed"

    def lock(self, cancel=None, wait=True):
        """This guest's lock (an open file, held until closed), or None when `cancel` was set first or,
        without wait, another holds it. One boot or stop at a time, from any terminal of this learner:
        a `guest stop` holds it until its guest is gone, so a runner booting the next one waits for
        that, and the stop, done, cannot forget the new guest's pid file."""
        os.makedirs(STATE, exist_ok=True)
        f = open(self.lock_file, "w")
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return f
            except BlockingIOError:
                if not wait or (cancel is not None and cancel.is_set()):
                    f.close()
                    return None
                time.sleep(0.1)

    def start(self, wait=True, cancel=None):
        """Boots it unless one runs; True once it is ready (or booting, with wait=False). One going down
        is waited for (ended, after a moment) first."""
        lock = self.lock(cancel)
        if lock is None:
            return False
        with lock:
            pid = self.pid()
            if pid is not None and self.going_down():
                self.end(pid)
                pid = None
            if pid is None:
                self.boot()
        return self.wait_ready(cancel) if wait else True

    def boot(self):
        """A new guest, booting in the background (holding the lock)."""
        self.end_leftover()
        import shutil  # here, not at the top: each import costs at start-up in a TCG guest
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        command = [os.path.join(ROOT, "scripts", "rxe_vm.sh")] + (["--pair"] if self.pair else [])
        command += ["--timeout", str(IDLE + 8 * 3600)]
        if not os.path.realpath(STATE).startswith(os.path.realpath(ROOT) + os.sep):
            command += ["--share", STATE]  # the agent's folder must be seen inside the guest
        command += ["--", os.path.join(ROOT, "scripts", "peer_agent.sh"), "--idle", str(IDLE), self.dir]
        with open(self.log, "w") as log:
            # A session of its own: Ctrl-C in the terminal reaches the runner, which ends the guest itself.
            self.proc = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        _QEMUS.pop(self.proc.pid, None)  # a process group of an earlier guest, with the same number
        with open(self.pid_file, "w") as f:
            f.write(f"{self.proc.pid}\n")

    def end_leftover(self):
        """The rxe_vm.sh of a guest whose qemu is gone ends within 0.2 s; a new guest waits for it, or it
        would still write into the new guest's log (its file offset past the truncation)."""
        old = self.recorded()
        if old is None:
            return
        try:
            with open(f"/proc/{old}/cmdline", "rb") as f:
                if b"rxe_vm.sh" not in f.read():
                    return  # that process id is some other program's by now
        except OSError:
            return
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and (proc_stat(old) or ("Z",))[0] != "Z":
            time.sleep(0.05)
        if (proc_stat(old) or ("Z",))[0] != "Z":
            try:
                os.killpg(old, signal.SIGKILL)
            except OSError:
                pass
        if self.proc is not None and self.proc.pid == old:
            self.proc.poll()

    def wait_ready(self, cancel=None):
        """True once the guest is ready; False if it died, was told to stop, took BOOT_WAIT, or `cancel`
        was set (a guest left booting is used by the next check)."""
        deadline = time.monotonic() + BOOT_WAIT
        while time.monotonic() < deadline:
            if self.ready():
                return True
            if self.pid() is None or self.going_down() or (cancel is not None and cancel.is_set()):
                break
            time.sleep(0.1)
        return False

    def failure(self):
        """Why the guest is not there: the tail of its log, and check_env.sh's line for the guest."""
        tail = ""
        if os.path.exists(self.log):
            with open(self.log, errors="replace") as f:
                tail = " / ".join(line.strip() for line in f.read().strip().splitlines()[-3:])
        env = subprocess.run([os.path.join(ROOT, "scripts", "check_env.sh")], capture_output=True, text=True)
        # Its guest line ("OK   guest: ..." or "FAIL guest: ..."), not the lines that mention the guest in passing.
        guest_lines = [line for line in env.stdout.splitlines() if line[5:].startswith("guest:")]
        return (tail or "no output") + ("\n  check_env.sh: " + guest_lines[0].strip() if guest_lines else "")

    def forget(self):
        """A guest that is gone leaves its files: they must not pass for a running one. Left alone while
        another holds the lock (a boot or a stop, which see to them), and once they name a new guest."""
        lock = self.lock(wait=False)
        if lock is None:
            return
        with lock:
            if self.pid() is None:
                self.remove_files()

    def remove_files(self):
        for path in (self.pid_file, self.marker("ready")):
            if os.path.exists(path):
                os.remove(path)

    def stop(self):
        """Stops it; False when none ran."""
        with self.lock():
            pid = self.pid()
            if pid is None:
                self.remove_files()
                return False
            self.end(pid)
            return True

    def end(self, pid):
        """Ends the guest of process group `pid` (holding the lock): its agent told to stop (it ends its
        jobs, and the guest powers off), then what is left of it ended by signals; its files removed."""
        open(self.marker("stop"), "w").close()
        # A guest still booting has no agent to read that yet, one whose agent has ended none any
        # more: each is ended at once.
        deadline = time.monotonic() + (15 if os.path.exists(self.marker("ready")) else 0)
        while time.monotonic() < deadline and self.pid() is not None:
            time.sleep(0.1)
        if self.pid() is not None:
            for sig in (signal.SIGTERM, signal.SIGKILL):  # rxe_vm.sh's trap kills its qemus
                try:
                    os.killpg(pid, sig)
                except OSError:
                    break
                for _ in range(10):
                    if self.pid() is None:
                        break
                    time.sleep(0.1)
        if self.proc is not None:
            self.proc.poll()
        self.remove_files()

    def clear_wire(self):
        """The pair's wire whole again, before the next check, after one that did not run to its end
        (DIR/dirty): exercise_check clears the impairment it set as it ends, but one ended early did
        not, and the next exercise's run would lose a packet it did not ask to lose."""
        env = dict(os.environ, RXE_VM_PEER_DIR=self.dir, RXE_VM_PEER_PID=str(self.qemu() or ""))
        both = "scripts/impair.sh --clear && scripts/on_peer.sh --timeout 30 -- scripts/impair.sh --clear"
        done = subprocess.run([os.path.join(ROOT, "scripts", "on_peer.sh"), "--timeout", "60", "--", "bash", "-c", both],
                              cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        if done.returncode == 0:
            os.remove(self.marker("dirty"))

    def status(self):
        """One line: whether it runs, and how it serves the checks."""
        pid = self.pid()
        if pid is None:
            return ("no warm pair: a check across two hosts boots a pair of its own (watch mode keeps one, "
                    f"and {self.start_command})" if self.pair else
                    f"no warm guest: a check boots a guest of its own ({self.start_command} keeps one)")
        if not self.ready():
            return f"{self.what} is booting (rxe_vm.sh pid {pid})"
        jobs = len([f for f in os.listdir(self.dir) if f.endswith(".status")])
        qemus = " and ".join(str(q) for q in guest_qemus(pid, self.qemus) or [])
        return (f"{self.what} is up (rxe_vm.sh pid {pid}, qemu pid{'s' if self.pair else ''} {qemus}): "
                f"{jobs} check(s) run; it ends after {IDLE} s unused")


GUEST = Guest("guest", False, "the warm guest", "the warm Soft-RoCE guest", "a guest of its own",
              "scripts/workshop.sh guest start")
PAIR = Guest("pair", True, "the warm pair", "the warm pair of Soft-RoCE guests", "a pair of its own",
             "scripts/workshop.sh guest start --pair")
GUESTS = (GUEST, PAIR)


def guest_status():
    if have_active_port():
        say("this machine has an active RDMA port: checks run here, no guest is needed "
            "(but for those across two hosts)")
    else:
        say(GUEST.status())
    say(PAIR.status())


# --- checks ------------------------------------------------------------------------

class Stop:
    """How one job (a check, a boot) is ended early: set() stops the process group it runs now, and
    whatever it would do next sees is_set(). Each of watch mode's jobs has its own, so one that is
    slow to end can never run on under the next one's."""

    def __init__(self):
        self.event = threading.Event()
        self.child = None

    def is_set(self):
        return self.event.is_set()

    def set(self):
        self.event.set()
        self.kill(signal.SIGTERM)

    def kill(self, sig):
        child = self.child
        if child is not None and child.poll() is None:
            try:
                os.killpg(child.pid, sig)  # on_peer.sh, ended so, has the agent end the job in the guest
            except OSError:
                pass


class Result:
    """One check: its verdict (True fixed, False still broken, None no verdict), what the checker
    printed (locations as the learner finds them), when and how long, the file's hash it judged, and
    whether it was stopped before its end or kept both programs' whole output (--show-output)."""

    def __init__(self, exercise, verdict, out, file_hash, started, seconds, cancelled=False, kept_output=False):
        self.exercise = exercise
        self.verdict = verdict
        self.out = out
        self.file_hash = file_hash
        self.started = started
        self.seconds = seconds
        self.cancelled = cancelled
        self.kept_output = kept_output

    def __iter__(self):  # verdict, out = runner.check(e)
        return iter((self.verdict, self.out))


class Runner:
    def __init__(self):
        self.exercises = lib.find_exercises(ROOT)
        self.progress = lib.Progress(os.path.join(STATE, "progress.json"))
        self.progress_lock = threading.Lock()
        self.keep_guest = False     # warm guests are wanted (watch, verify, bench): booted when first needed, again if they died
        self.tree_built = False
        self.prebuilt = False  # every exercise built already (verify): the checker builds nothing
        self.main_stop = Stop()          # the command line's; a watch mode job brings its own (Job)
        self.local = threading.local()
        self.report = say                # what a check has to say about the guest (watch mode: its screen)

    @property
    def stop(self):
        """This thread's Stop: its job's, or the command line's."""
        return getattr(self.local, "stop", None) or self.main_stop

    def find(self, text):
        return lib.find_exercise(self.exercises, text)

    def named_or_current(self, name, verb):
        """The exercise NAME names, or without one the current exercise (said first, so that nobody
        wonders which one was taken)."""
        if name is not None:
            return self.find(name)
        e = lib.current_exercise(self.exercises, self.statuses(), self.progress.current)
        if e is None:
            raise lib.UsageError(f"every exercise is fixed: name one (scripts/workshop.sh {verb} NAME; list shows them)")
        say(f"{e.qualified} (the current exercise; scripts/workshop.sh {verb} NAME for another)")
        return e

    def update_progress(self, change):
        """Reads the progress file again (another terminal of this learner may have saved it), changes
        it and saves it, one thread at a time."""
        with self.progress_lock:
            self.progress = lib.Progress(self.progress.path)
            change(self.progress)
            self.progress.save()

    def statuses(self):
        return lib.statuses(self.exercises, self.progress)

    def bar(self):
        s = self.statuses()
        return lib.progress_bar(sum(v == lib.FIXED for v in s.values()), len(self.exercises))

    def guest_for(self, e):
        """The warm guest a check of e would run in: the pair for an exercise across two hosts, else the
        one-host guest, or None where this machine's own RDMA port serves."""
        if e.pair:
            return PAIR
        return None if have_active_port() else GUEST

    def ensure_guest(self, guest):
        """A warm guest: booted if none runs (again if it died or went down). False when it did not come
        up, or the boot was cancelled (a guest left booting serves the next check)."""
        if guest.ready():
            guest.used = guest.pid()
            guest.seen = True
            return True
        if guest.pid() is None or guest.going_down():
            self.report(f"booting {guest.title} again ..." if guest.seen else
                        f"booting {guest.title} (once; later checks use it) ...")
            guest.started = guest.seen = True
        if guest.start(cancel=self.stop.event):
            guest.used = guest.pid()
            return True
        if self.stop.is_set():
            return False
        self.report(f"{guest.what} did not come up: " + guest.failure())
        self.report(f"checks fall back to {guest.own} each (slower)")
        guest.stop()
        return False

    def build(self, command, what):
        """Runs a build, COMMAND printing ninja's output as it comes, and shows how far it is: (exit
        code, what it said but its steps). Nothing is shown when nothing needs building; a first build
        of the tree takes minutes, which once passed for a check that said nothing (issue 43)."""
        started = time.monotonic()
        steps = []

        def step(s):
            steps.append(s)
            self.show_progress(lib.build_progress(what, s, time.monotonic() - started), first=len(steps) == 1)
        code, out, _ = self.run_watched(command, dict(os.environ, NINJA_STATUS="[%f/%t] "), progress=step)
        if steps:
            self.show_progress(None)
            if code == 0:
                self.report(f"built {what}: {len(steps)} steps in {time.monotonic() - started:.0f} s")
        return code, lib.build_messages(out)

    def show_progress(self, text, first=False):
        """A build's line (None: it is over): on watch mode's screen under its job's line; on a terminal
        its last line, drawn over; in a log once, the first."""
        job = getattr(self.local, "job", None)
        if job is not None:
            job.progress = text
        elif sys.stdout.isatty():
            width = os.get_terminal_size(sys.stdout.fileno()).columns or 80  # 0: a terminal that tells no size
            sys.stdout.write("\r" + (text or "")[:width - 1] + "\033[K")
            sys.stdout.flush()
        elif first and text:
            say(text)

    def run_watched(self, command, env, guest=None, stream=False, progress=None):
        """COMMAND's exit code and output, read as it comes (and shown, with stream; each of ninja's
        steps in it handed to progress, a build's, lib.build_step's (done, total, what)). It ends early,
        its whole process group stopped, when this thread's Stop is set or the warm guest it runs in
        (`guest`, a (Guest, process group)) dies or is told to stop: (code, output, lost), lost True in
        that second case."""
        stop = self.stop
        stop.child = proc = subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        fd = proc.stdout.fileno()
        out, pending, lost, stopped = bytearray(), b"", False, None
        probed = time.monotonic()
        try:
            while True:
                ready, _, _ = select.select([fd], [], [], PROBE)
                if ready:
                    data = os.read(fd, 65536)
                    if not data:
                        break
                    out += data
                    if stream or progress:
                        *lines, pending = (pending + data).split(b"\n")
                        for line in lines:
                            text = line.decode(errors="replace")
                            step = lib.build_step(text) if progress else None
                            if step is not None:
                                progress(step)
                            elif stream:
                                sys.stdout.write(learner_text(text) + "\n")
                        sys.stdout.flush()
                now = time.monotonic()
                if stopped is None and stop.is_set():
                    stopped = now
                    stop.kill(signal.SIGTERM)
                if guest is not None and stopped is None and now - probed >= PROBE:
                    probed = now
                    if not group_alive(guest[1], guest[0].qemus) or guest[0].going_down():
                        lost, stopped = True, now
                        stop.kill(signal.SIGTERM)
                if stopped is not None and now - stopped > 3:
                    stop.kill(signal.SIGKILL)  # what ignored SIGTERM; the pipe may stay open: done
                    break
        except BaseException:  # Ctrl-C, or the runner told to end: the check goes first
            stop.kill(signal.SIGTERM)
            raise
        finally:
            proc.stdout.close()
            try:
                code = proc.wait(10)
            except subprocess.TimeoutExpired:
                stop.kill(signal.SIGKILL)
                code = proc.wait()
            stop.child = None
        if stream and pending:
            sys.stdout.write(learner_text(pending.decode(errors="replace")) + "\n")
        return code, out.decode(errors="replace"), lost

    def run_checker(self, args, guest, stream=False):
        """scripts/check_exercise.sh ARGS, through the warm guest `guest` when it is up: (exit code,
        output, lost), lost when the guest died under it. The tree itself is built once per run of the
        runner, not once per check (about a second each): after that the checker builds only the
        exercise, and what it reuses of the stage."""
        env = dict(os.environ, BUILD_DIR=BUILD, RDMA_TUTORIAL_PORT=learner_port())
        if not self.tree_built:
            code, said = self.build(["bash", "-c", f'source {ROOT}/scripts/lib.sh; build_tree "$0" -', BUILD], "the stages")
            if code != 0:
                return 2, "check_exercise: the stages themselves do not build:\n" + said, False
            self.tree_built = True
        env["RDMA_TUTORIAL_BUILT"] = "exercises" if self.prebuilt else "1"
        if have_active_port() and guest is None and not env.get("RDMA_TUTORIAL_IPV4") and not env.get("RXE_VM"):
            # A machine of its own with Soft-RoCE: rdma_cm exercises use its address, not the guest's.
            address = subprocess.run(["bash", "-c", f"source {ROOT}/scripts/lib.sh; rdma_ipv4"],
                                     capture_output=True, text=True).stdout.strip()
            if address:
                env["RDMA_TUTORIAL_IPV4"] = address
        watched = None
        if guest is not None and guest.ready():
            pid = guest.used = guest.pid()
            # lib.sh's on_device, or check_exercise.sh's where() for the pair, hands the run to its agent.
            env["RDMA_TUTORIAL_PAIR" if guest.pair else "RDMA_TUTORIAL_GUEST"] = guest.dir
            # on_peer.sh watches the qemu: when it dies its rxe_vm.sh ends, a zombie until collected.
            env["RXE_VM_PEER_PID"] = str(guest.qemu() or pid)
            watched = (guest, pid)
        os.makedirs(STATE, exist_ok=True)
        with open(os.path.join(STATE, "build.lock"), "w") as lock:
            while True:  # one build at a time in this checkout; the lock goes with the process
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if self.stop.is_set():
                        return None, "", False
                    time.sleep(0.1)
            dirty = guest.marker("dirty") if watched is not None and guest.pair else None
            if dirty is not None:
                # Marked while a check runs in the pair, unmarked when it ran to its end: see clear_wire.
                if os.path.exists(dirty):
                    guest.clear_wire()
                open(dirty, "w").close()
            code, out, lost = self.run_watched([os.path.join(ROOT, "scripts", "check_exercise.sh")] + args, env,
                                               watched, stream)
        if watched is not None and not lost:
            # on_peer.sh may have seen it first (exit 125): the check ended, and the guest is gone.
            lost = not group_alive(watched[1], guest.qemus) or guest.going_down()
            if dirty is not None and not self.stop.is_set() and not lost:
                os.remove(dirty)
        return code, out, lost

    def guest_gone_before(self, guest):
        """Before a check: the warm guest it would have used is gone. Say so (why, and what happens now)
        rather than let the check boot a guest of its own in silence, and boot it again where a warm
        guest is wanted."""
        if guest is None or guest.ready():
            return
        if guest.used is not None or (guest.recorded() is not None and guest.pid() is None):
            kind, why = guest.gone_reason()
            then = "booting it again" if self.keep_guest else \
                f"this check boots {guest.own} (slower; {guest.start_command} keeps a warm one)"
            self.report(f"{guest.what} is gone ({why}); {then}")
            guest.used = None
            guest.forget()
        if self.keep_guest:
            self.ensure_guest(guest)

    def check(self, e, stream=False, show_output=False):
        """Checks one exercise and records its verdict: a Result."""
        os.makedirs(STATE, exist_ok=True)
        started, clock = time.time(), time.monotonic()
        file_hash = e.file_hash()
        guest = self.guest_for(e)
        self.guest_gone_before(guest)
        args = (["--show-output"] if show_output else []) + [e.qualified]
        code, out, lost = self.run_checker(args, guest, stream)
        if lost and not self.stop.is_set():
            _, why = guest.gone_reason()
            self.report(f"{guest.what} stopped during the check of {e.qualified} ({why}); "
                        + ("booting it again, then checking again" if self.keep_guest else
                           f"checking again in {guest.own} (slower; {guest.start_command} keeps a warm one)"))
            guest.used = None
            guest.forget()
            if self.keep_guest:
                self.ensure_guest(guest)
            if not self.stop.is_set():
                code, out, lost = self.run_checker(args, guest, stream)
        cancelled = self.stop.is_set()
        verdict = None if cancelled else lib.verdict_of(out)
        if verdict is not None:
            self.update_progress(lambda p: p.record(e.qualified, file_hash, verdict))
        return Result(e, verdict, learner_text(out), file_hash, started, time.monotonic() - clock, cancelled, show_output)

    def cleanup(self):
        self.main_stop.set()
        for guest in GUESTS:
            if guest.started:
                guest.stop()

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
                 f"  symptom:  {e.symptom}"]
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

    def cmd_hint(self, args):
        """hint [NAME] [LEVEL]: a number alone is a LEVEL of the current exercise (no name is a number)."""
        name, level_text = (args + [None, None])[:2]
        if len(args) == 1 and args[0].strip().isdigit():
            name, level_text = None, args[0]
        e = self.named_or_current(name, "hint")
        count = len(e.hints())
        shown = self.progress.hints_shown(e.qualified)
        level = lib.wanted_hint_level(level_text, count) if level_text is not None else lib.next_hint_level(shown, count)
        self.update_progress(lambda p: p.show_hints(e.qualified, level))
        say("\n".join(self.hint_lines(e, level)))
        return 0

    def cmd_check(self, name):
        # The warm guest if one runs (watch mode's, or `guest start`'s); else the checker boots one.
        e = self.named_or_current(name, "check")
        verdict, _ = self.check(e, stream=True)
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
        if targets is not None:
            code, said = self.build(["bash", "-c", f'source {ROOT}/scripts/lib.sh; build_tree "$0" - && ninja -C "$0" "$@"',
                                     BUILD] + ([] if reference else targets),
                                    "the stages" if reference else "the stages and every exercise")
            if code != 0:
                say(said)
                say("verify: the stages, or an exercise, do not build (scripts/workshop.sh check NAME shows the compiler)")
                return 2
        self.tree_built = True
        self.prebuilt = True
        self.keep_guest = True
        rows, bad = [], 0
        # In a guest that has no second one (CI's device guest), an exercise across two hosts cannot
        # run: the pair suite checks those (common/stage_rules.build). Anywhere else they run in the
        # warm pair, booted for the first of them.
        alone = os.environ.get("RXE_VM") == "1" and not os.environ.get("RXE_VM_PEER_DIR")
        skipped = [e for e in self.exercises if alone and e.pair]
        for e in skipped:
            say(f"  {'skipped':<11}{'(two hosts)':<14}{e.qualified}")
        for e in [e for e in self.exercises if e not in skipped]:
            # As shipped, still broken *with its own symptom* (exercise_check --expect broken), as CI
            # proves; with --reference, the stage's own program passes the exercise's checks.
            guest = self.guest_for(e)
            if guest is not None:
                self.ensure_guest(guest)
            if reference:
                code, out, _ = self.run_checker(["--reference", e.qualified], guest)
            else:
                code, out, _ = self.run_checker(["--expect", "broken", e.qualified], guest)
                if lib.verdict_of(out) is not None:
                    self.update_progress(lambda p: p.record(e.qualified, e.file_hash(), lib.verdict_of(out)))
            verdict = lib.verdict_of(out)
            ok = code == 0 and verdict is reference
            bad += not ok
            seen = {True: lib.FIXED, False: lib.BROKEN, None: "no verdict"}[verdict]
            rows.append(f"  {'ok' if ok else 'UNEXPECTED':<11}{seen:<14}{e.qualified}")
            say(rows[-1])
            if not ok:
                say("\n".join("      | " + line for line in learner_text(out).rstrip().splitlines()[-12:]))
        what = "the stages' own code passes every exercise" if reference else "every exercise is still broken"
        checked = len(self.exercises) - len(skipped)
        say(f"{checked - bad} of {checked} as expected ({what})" +
            (f"; {len(skipped)} across two hosts not checked in this guest (the pair suite checks them)" if skipped else ""))
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
        problem = self.reset_file(e)
        say(problem or f"{e.path} is as shipped again")
        return 1 if problem else 0

    def reset_file(self, e):
        """Puts the exercise's shipped file back; what went wrong, or None."""
        shipped = subprocess.run(["git", "-C", ROOT, "show", f"HEAD:{e.path}"], capture_output=True)
        if shipped.returncode != 0:
            return f"reset: git has no shipped {e.path}: {shipped.stderr.decode().strip()}"
        with open(os.path.join(ROOT, e.path), "wb") as f:
            f.write(shipped.stdout)
        return None

    def cmd_solution(self, name):
        e = self.named_or_current(name, "solution")
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

KEEP_OUTPUT = True  # watch mode's checks keep both programs' whole output, for o (measured: --bench)


class Job(threading.Thread):
    """What watch mode waits for (a check, every check, a boot), run beside the key loop, with a
    Stop of its own."""

    def __init__(self, runner, label, work, exercise=None):
        super().__init__(daemon=True)
        self.runner, self.label, self.work, self.exercise = runner, label, work, exercise
        self.stop = Stop()
        self.started = time.monotonic()
        self.progress = None  # a build's line while one runs (Runner.show_progress)
        self.result = None
        self.error = None

    def run(self):
        self.runner.local.stop = self.stop
        self.runner.local.job = self
        try:
            self.result = self.work()
        except Exception as e:  # shown on the screen; the key loop goes on
            self.error = e


class Watch:
    KEYS = "n next · p back · l list · h hint · o output · c check all · r reset · q quit"
    SHOWN = 14  # lines of the last check on the main screen (o shows them all)

    def __init__(self, runner, manual, name=None):
        self.r = runner
        runner.keep_guest = True
        self.messages = queue.Queue()
        runner.report = self.messages.put  # from the check's thread to this screen
        self.manual = manual
        s = runner.statuses()
        self.current = runner.find(name) if name else lib.watch_opens_on(runner.exercises, s, runner.progress.current)
        self.history = []     # the exercises shown before, for p
        self.view = "main"    # or "list", "output", "reset"
        self.typed = ""       # the number typed in the list
        self.results = {}     # qualified name -> its last Result in this session
        self.counts = {}      # qualified name -> how many checks of it ran in this session
        self.all_lines = []   # check all's table
        self.job = None
        self.notices = []     # (time, text), the newest last
        self.output_wanted = False  # o asked for the whole output of a check still to end
        self.hints = runner.progress.hints_shown(self.current.qualified)
        self.seen = self.stamp()
        self.last_probe = time.monotonic()
        self.drawn = 0.0

    # --- state ------------------------------------------------------------------------

    def stamp(self):
        try:
            st = os.stat(os.path.join(ROOT, self.current.path))
            return (st.st_mtime_ns, st.st_size)
        except OSError:
            return None

    def notice(self, text):
        self.notices = (self.notices + [(time.strftime("%H:%M:%S"), text)])[-4:]

    def running(self):
        return self.job is not None and self.job.is_alive()

    def stop_job(self):
        """Ends the running job (its check's processes, in the guest too) and waits for its thread."""
        if self.job is None:
            return
        if self.job.is_alive():
            self.job.stop.set()
            self.job.join(10)  # one that takes longer ends on its own: its Stop stays set
        self.job = None

    def start(self, job):
        self.stop_job()
        self.job = job
        job.start()

    def start_check(self, e, show_output=KEEP_OUTPUT):
        label = f"checking {e.qualified}"
        self.start(Job(self.r, label, lambda: self.r.check(e, show_output=show_output), e))

    def start_check_all(self):
        def every():
            self.all_lines = []
            fixed = 0
            for e in self.r.exercises:
                if self.r.stop.is_set():
                    break
                result = self.r.check(e, show_output=KEEP_OUTPUT)
                if result.cancelled:
                    break
                self.took(result)
                fixed += bool(result.verdict)
                word = {True: lib.FIXED, False: lib.BROKEN, None: "no verdict"}[result.verdict]
                self.all_lines.append(f"  {word:<13} {e.qualified}")
            return fixed
        self.start(Job(self.r, "checking every exercise", every))

    def took(self, result):
        """A check's result becomes the exercise's last one."""
        q = result.exercise.qualified
        self.results[q] = result
        self.counts[q] = self.counts.get(q, 0) + 1

    def finished(self):
        """What a job that ended leaves on the screen."""
        job, self.job = self.job, None
        if job.error is not None:
            self.notice(f"{job.label} failed: {job.error}")
            return
        result = job.result
        if isinstance(result, Result):
            if result.cancelled:
                return
            self.took(result)
            if self.output_wanted and result.exercise is self.current:
                self.output_wanted = False
                self.view = "output"
        elif job.label == "checking every exercise":
            self.notice(f"checked every exercise: {result} of {len(self.r.exercises)} fixed")

    def show(self, e, back=False):
        """Watch mode moves to exercise e and checks it at once: its symptom is on the screen before
        the learner edits anything. back: p, which returns along the way it came."""
        if e is not self.current and not back:
            self.history.append(self.current)
        self.current, self.view, self.output_wanted = e, "main", False
        self.hints = self.r.progress.hints_shown(e.qualified)
        self.notices, self.all_lines = [], []
        self.r.update_progress(lambda p: setattr(p, "current", e.qualified))
        self.seen = self.stamp()
        self.start_check(e)

    def look_at_guest(self):
        """Between checks, once a second: a warm guest the last checks ran in (the one-host guest, the
        pair) is gone. Say so at once; boot it again if it crashed (if it was stopped, or stopped itself
        unused, the next check that needs it does)."""
        if self.running():
            return
        for guest in GUESTS:
            if guest.used is None or guest.ready():
                continue
            if guest.pid() is not None and not guest.going_down():
                continue  # booting (another terminal's check booted it again)
            kind, why = guest.gone_reason()
            guest.used = None
            guest.forget()
            if kind == "died":
                self.notice(f"{guest.what} stopped ({why}); booting it again")
                self.start(Job(self.r, f"booting {guest.title} again", lambda g=guest: self.r.ensure_guest(g)))
                return
            self.notice(f"{guest.what} stopped ({why}); the next check {'across two hosts ' if guest.pair else ''}"
                        "boots it again")

    # --- the screen ---------------------------------------------------------------------

    def verdict_lines(self, result):
        text, _ = lib.split_output(result.out)
        lines = text.rstrip("\n").splitlines() or ["the checker said nothing"]
        if len(lines) > self.SHOWN:
            lines = lines[:self.SHOWN] + [f"... ({len(lines) - self.SHOWN} more lines: o shows them all)"]
        return lines

    def main_lines(self):
        out = ["rdma-tutorial workshop: watch mode   " + self.r.bar(), ""]
        out += self.r.describe(self.current)
        status = self.r.statuses()[self.current.qualified]
        out.append(f"  status:   {status}")
        result = self.results.get(self.current.qualified)
        if result is not None:
            count = self.counts.get(self.current.qualified, 0)
            out.append(f"  checked:  {time.strftime('%H:%M:%S', time.localtime(result.started))}, "
                       f"check {count} of it here, {result.seconds:.1f} s")
        if self.hints:
            out += self.r.hint_lines(self.current, self.hints)
        if result is not None:
            out.append("")
            out += ["  " + line for line in self.verdict_lines(result)]
        if status == lib.FIXED:
            out += ["", "  fixed! n: the next exercise (scripts/workshop.sh solution: yours beside the stage's own)"]
        if self.all_lines:
            out += ["", "  check all:"] + self.all_lines
        if self.notices:
            out.append("")
            out += [f"  {when} {text}" for when, text in self.notices]
        if self.running():
            seconds = int(time.monotonic() - self.job.started)
            out += ["", f"{self.job.label} ... {seconds} s   (keys work: q quits and stops it)"]
            if self.job.progress:
                out.append("  " + self.job.progress)
        out += ["", ("Enter checks · " if self.manual else "save the file to check it · ") + self.KEYS]
        return out

    def list_lines(self):
        s = self.r.statuses()
        out = ["rdma-tutorial workshop: every exercise   " + self.r.bar(), ""]
        stage = None
        for i, e in enumerate(self.r.exercises, 1):
            if e.stage != stage:
                stage = e.stage
                out.append(stage)
            mark = ">" if e is self.current else " "
            out.append(f" {mark}{i:>3}  {s[e.qualified]:<13} {e.name:<28} {e.title}")
        out += ["", "type its number and Enter to open one · Esc, l or q: back", "> " + self.typed]
        return out

    def output_lines(self):
        result = self.results.get(self.current.qualified)
        if result is None:
            return ["no check of this exercise yet", "", "any key: back"]
        when = time.strftime("%H:%M:%S", time.localtime(result.started))
        out = [f"the whole output of the check of {self.current.qualified} at {when}:", ""]
        out += result.out.rstrip("\n").splitlines()
        return out + ["", "any key: back"]

    def render(self):
        if self.view == "list":
            lines = self.list_lines()
        elif self.view == "output":
            lines = self.output_lines()
        elif self.view == "reset":
            lines = self.main_lines()[:-1] + [f"put {self.current.path} back as shipped? your changes are lost [y/N]"]
        else:
            lines = self.main_lines()
        if sys.stdout.isatty():
            sys.stdout.write(lib.screen_frame(lines))
            sys.stdout.flush()
        else:
            say("\n".join(lines))
        self.drawn = time.monotonic()

    # --- keys -------------------------------------------------------------------------------

    def key(self, k):
        """Acts on one key; False to quit."""
        if self.view == "list":
            return self.list_key(k)
        if self.view == "output":
            self.view = "main"
            return True
        if self.view == "reset":
            self.view = "main"
            if k in ("y", "Y"):
                self.stop_job()
                problem = self.r.reset_file(self.current)
                self.notice(problem or f"{self.current.path} is as shipped again")
                self.seen = self.stamp()
                self.start_check(self.current)
            else:
                self.notice("not reset")
            return True
        if k == "q":
            self.stop_job()
            return False
        if k == "n":
            nxt = lib.next_unsolved(self.r.exercises, self.r.statuses(), self.current)
            if nxt is None:
                self.notice("every exercise is fixed (p goes back, l lists them)")
            else:
                self.show(nxt)
        elif k == "p":
            if self.history:
                self.show(self.history.pop(), back=True)
            else:
                i = self.r.exercises.index(self.current)  # opened here: p walks back in the order
                self.show(self.r.exercises[i - 1], back=True)
        elif k == "l":
            self.view, self.typed = "list", ""
        elif k == "h":
            count = len(self.current.hints())
            self.hints = lib.next_hint_level(self.hints, count)
            self.r.update_progress(lambda p: p.show_hints(self.current.qualified, self.hints))
        elif k == "o":
            result = self.results.get(self.current.qualified)
            if result is not None and result.kept_output and result.file_hash == self.current.file_hash() \
                    and not (self.running() and self.job.exercise is self.current):
                self.view = "output"
            else:
                # Not kept, or the file changed since: the check again, keeping both programs' output.
                self.output_wanted = True
                if not (self.running() and self.job.exercise is self.current and KEEP_OUTPUT):
                    self.start_check(self.current, show_output=True)
        elif k == "c":
            if self.running() and self.job.label == "checking every exercise":
                self.notice("every exercise is being checked already")
            else:
                self.start_check_all()
        elif k == "r":
            self.view = "reset"
        elif k in ("\n", "\r") and self.manual:
            self.start_check(self.current)
        elif k not in ("\n", "\r", "esc"):
            self.notice(f"no key '{k}' here: " + self.KEYS)
        return True

    def list_key(self, k):
        if k.isdigit():
            self.typed += k
        elif k in ("\x7f", "\b"):
            self.typed = self.typed[:-1]
        elif k in ("\n", "\r"):
            i = lib.list_choice(self.typed, len(self.r.exercises))
            self.view, self.typed = "main", ""
            if i is not None:
                self.show(self.r.exercises[i])
        elif k in ("esc", "l", "q"):
            self.view, self.typed = "main", ""
        return True

    def read_keys(self, timeout):
        """The keys pressed within `timeout` seconds: characters, "esc" for Escape alone; the escape
        sequences of arrow and function keys are passed over."""
        ready, _, _ = select.select([sys.stdin], [], [], timeout)
        if not ready:
            return []
        data = os.read(sys.stdin.fileno(), 64).decode(errors="replace")
        keys, i = [], 0
        while i < len(data):
            if data[i] == "\x1b":
                if i + 1 < len(data) and data[i + 1] in "[O":
                    j = i + 2
                    while j < len(data) and not (data[j].isalpha() or data[j] == "~"):
                        j += 1
                    i = j + 1
                    continue
                keys.append("esc")
            else:
                keys.append(data[i])
            i += 1
        return keys

    def loop(self):
        self.r.update_progress(lambda p: setattr(p, "current", self.current.qualified))
        self.start_check(self.current)  # the symptom first, before any edit (boots the guest if needed)
        self.render()
        while True:
            dirty = False
            for k in self.read_keys(0.1):
                if not self.key(k):
                    return 0
                dirty = True
            while not self.messages.empty():
                self.notice(self.messages.get())
                dirty = True
            if self.job is not None and not self.job.is_alive():
                self.finished()
                dirty = True
            if not self.manual and self.view != "reset":
                now = self.stamp()
                if now != self.seen:
                    time.sleep(0.1)  # an editor's save may come in more than one write
                    self.seen = self.stamp()
                    self.notices = []
                    self.start_check(self.current)
                    dirty = True
            if time.monotonic() - self.last_probe >= 1:
                self.last_probe = time.monotonic()
                before = len(self.notices)
                self.look_at_guest()
                dirty = dirty or len(self.notices) != before
            if self.running() and time.monotonic() - self.drawn >= 1 and self.view == "main":
                dirty = True  # the seconds the check has taken
            if dirty:
                self.render()


def cmd_watch(runner, args):
    manual = "--manual" in args
    names = [a for a in args if a != "--manual"]
    if len(names) > 1 or any(n.startswith("-") for n in names):
        raise lib.UsageError("watch takes one NAME and --manual, both optional")
    if names:
        runner.find(names[0])  # a wrong name is said before the screen is taken
    if not sys.stdin.isatty():
        raise lib.UsageError("watch mode reads keys from a terminal; run it in one (or use list, next, check)")
    saved = termios.tcgetattr(sys.stdin)
    try:
        tty.setcbreak(sys.stdin.fileno())
        watch = Watch(runner, manual, names[0] if names else None)
        try:
            return watch.loop()
        finally:
            watch.stop_job()
    finally:
        termios.tcsetattr(sys.stdin, termios.TCSADRAIN, saved)


def cmd_guest(action, option=None):
    """guest start [--pair], status, stop: the warm guests by hand. They outlive this command (until
    WORKSHOP_IDLE, or `guest stop`)."""
    if action not in ("start", "status", "stop"):
        close = lib.suggestions(action, ["start", "status", "stop"])
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise lib.UsageError(f"guest takes start, status or stop, not '{action}'{hint}")
    if option not in (None, "--pair") or (option and action != "start"):
        raise lib.UsageError("guest takes --pair after start only: guest start --pair boots the warm pair too")
    if action == "stop":
        stopped = [guest.what for guest in GUESTS if guest.stop()]
        say(f"{' and '.join(stopped)} {'are' if len(stopped) > 1 else 'is'} stopped" if stopped else "no warm guest runs")
        return 0
    if action == "status":
        guest_status()
        return 0
    wanted = ([] if have_active_port() else [GUEST]) + ([PAIR] if option else [])
    if not wanted:
        say("this machine has an active RDMA port: checks run here, no guest is needed "
            "(guest start --pair boots the pair for the exercises across two hosts)")
        return 0
    for guest in wanted:
        guest.start(wait=False)  # booting side by side
    failed = [guest for guest in wanted if not guest.wait_ready()]
    for guest in failed:
        say(f"{guest.what} did not come up: " + guest.failure())
        guest.stop()
    guest_status()
    return 1 if failed else 0


# --- the benchmark --------------------------------------------------------------------

def cmd_bench(runner):
    """From a saved file to the verdict (the recompile included), median of 5, warm: as watch mode
    checks (both programs' output kept for o, KEEP_OUTPUT) and as `check` does (not kept); and the
    first check with no guest running (cold), for one one-peer and one two-peer exercise."""
    results = []
    for guest in GUESTS:
        guest.stop()
    for name in ("port_zero", "no_recv_posted"):
        e = runner.find(name)
        path = os.path.join(ROOT, e.path)

        def saved_to_verdict(show_output=False):
            # A save as ninja sees it: the file newer than what was built from it. Its content is left
            # alone (a checkout others work in must not get an old copy written back).
            os.utime(path)
            start = time.monotonic()
            verdict, _ = runner.check(e, show_output=show_output)
            if verdict is None:
                raise RuntimeError(f"{name}: no verdict")
            return time.monotonic() - start
        cold = saved_to_verdict()
        guest = runner.guest_for(e)
        if guest is not None:
            guest.started = True
            if not runner.ensure_guest(guest):
                raise RuntimeError(f"{guest.what} did not come up")
        saved_to_verdict()  # the guest's first check warms its caches
        watch = [saved_to_verdict(KEEP_OUTPUT) for _ in range(5)]
        check = [saved_to_verdict() for _ in range(5)]
        if guest is not None:
            guest.stop()
            guest.started = False  # stopped on purpose: the next cold check boots its own
            guest.used = None
        results.append((name, e.two_peers, cold, watch, check))
    import statistics
    say(f"{'exercise':<16} {'peers':<6} {'cold':>6}  {'warm, median of 5: watch':>24} {'check':>6}   runs (watch; check)")
    for name, two, cold, watch, check in results:
        say(f"{name:<16} {'two' if two else 'one':<6} {cold:5.1f}s  {statistics.median(watch):23.1f}s "
            f"{statistics.median(check):5.1f}s   " + " ".join(f"{w:.1f}" for w in watch) + "; "
            + " ".join(f"{w:.1f}" for w in check))
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
    signal.signal(signal.SIGHUP, interrupted)  # the terminal closed: the guest goes too
    try:
        verb = args.pop(0) if args else "watch"
        lib.check_verb(verb, args)
        if verb == "watch":
            return cmd_watch(runner, args)
        if verb == "list":
            return runner.cmd_list() or 0
        if verb == "next":
            return runner.cmd_next()
        if verb == "hint":
            return runner.cmd_hint(args)
        if verb == "check":
            return runner.cmd_check(args[0] if args else None)
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
            return runner.cmd_solution(args[0] if args else None)
        if verb == "guest":
            return cmd_guest(*args)
        if verb == "--bench":
            return cmd_bench(runner)
    except lib.UsageError as e:
        whole = ("no verb" in str(e) or "takes" in str(e)) and "did you mean" not in str(e)
        print(f"workshop: {e}\n\n{USAGE}" if whole else f"workshop: {e}", file=sys.stderr)
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
