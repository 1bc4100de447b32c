"""The workshop runner's pure logic (scripts/workshop.sh): which exercises
there are and in what order, what each one's header and hints say, a
learner's progress, and the names a learner types. Nothing here runs a
program, builds or touches a device, so all of it is unit-tested on the host
(scripts/tests/workshop_test.py).

An exercise is NN_stage/exercises/NAME.cpp; its header carries its title
(EXERCISE:, what goes wrong, never what to change) and a TODO paragraph.
Beside it, NAME.hints holds its hints, one level per paragraph, the first
where to look, the last the chapter section; and checker/NAME.check what
the checker reads (common/tools/exercise_spec.hpp: SYMPTOM-SAYS:, PAIR:, ...),
out of the learner's way.
"""

import json
import os
import re
import zlib

STAGE_DIR = re.compile(r"^\d\d_[a-z0-9_]+$")
SECTION = re.compile(r'docs/(\d\d-[a-z0-9-]+\.md), section "([^"]+)"')


class UsageError(Exception):
    """A command line the runner cannot act on: exit 2 with this message."""


# --- the exercises -----------------------------------------------------------

class Exercise:
    """One exercise file and what its header says."""

    def __init__(self, root, stage, name):
        self.root = root
        self.stage = stage
        self.name = name
        self.path = os.path.join(stage, "exercises", name + ".cpp")
        self.hints_path = os.path.join(stage, "exercises", name + ".hints")
        self.checker_path = os.path.join(stage, "exercises", "checker", name + ".check")
        self.title = read_header(os.path.join(root, self.path)).get("EXERCISE", [""])[0]
        checker = read_checker(os.path.join(root, self.checker_path))
        self.symptom = checker.get("SYMPTOM-SAYS", [""])[0]  # in words: the regex may spell more than it should
        self.two_peers = "SERVER" in checker
        self.pair = "PAIR" in checker  # across the two guests of scripts/rxe_vm.sh --pair
        self.piece = piece_of(root, stage, name)

    @property
    def qualified(self):
        return f"{self.stage}/{self.name}"

    def file_hash(self):
        """The CRC-32 of the exercise file as it is now: its progress is keyed by it (a checksum, not a
        cryptographic hash: it only has to change when the file does; hashlib's import alone costs half
        a second in a TCG guest)."""
        with open(os.path.join(self.root, self.path), "rb") as f:
            return format(zlib.crc32(f.read()), "08x")

    def hints(self):
        with open(os.path.join(self.root, self.hints_path), encoding="utf-8") as f:
            return parse_hints(f.read())


def read_header(path):
    """The KEY: value lines of an exercise's leading comment, each key's values in order."""
    header = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("//"):
                break
            m = re.match(r"^// ([A-Z]+):(?: (.*))?$", line.rstrip("\n"))  # PAIR: may have no value
            if m:
                header.setdefault(m.group(1), []).append(m.group(2) or "")
    return header


def read_checker(path):
    """The KEY: value lines of an exercise's checker file (checker/NAME.check), each key's values in order."""
    checker = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^([A-Z-]+):(?: (.*))?$", line.rstrip("\n"))  # PAIR: may have no value
            if m:
                checker.setdefault(m.group(1), []).append(m.group(2) or "")
    return checker


def piece_of(root, stage, name):
    """The file the exercise replaces, from the stage's meson.build (exercises = {'NAME': 'PIECE'}),
    as a path from the checkout: 01_devices/ports.cpp, common/src/transitions.cpp."""
    with open(os.path.join(root, stage, "meson.build"), encoding="utf-8") as f:
        m = re.search(r"^\s*'" + re.escape(name) + r"'\s*:\s*'([^']+)'", f.read(), re.M)
    if not m:
        return None
    return m.group(1) if m.group(1).startswith("common/") else f"{stage}/{m.group(1)}"


def chapter_order(chapter_text):
    """Exercise names in the order the chapter first links them."""
    order = []
    for name in re.findall(r"exercises/([a-z0-9_]+)\.cpp", chapter_text):
        if name not in order:
            order.append(name)
    return order


def stages(root):
    """(folder, chapter) of every stage, in stages.txt's order."""
    result = []
    with open(os.path.join(root, "stages.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            fields = [x.strip() for x in line.split("|")]
            result.append((fields[0], fields[2]))
    return result


def find_exercises(root):
    """Every exercise, stage by stage, in each chapter's order (then any the chapter does not link)."""
    found = []
    for stage, chapter in stages(root):
        folder = os.path.join(root, stage, "exercises")
        if not os.path.isdir(folder):
            continue
        names = sorted(f[:-4] for f in os.listdir(folder) if f.endswith(".cpp"))
        with open(os.path.join(root, chapter), encoding="utf-8") as f:
            order = [n for n in chapter_order(f.read()) if n in names]
        order += [n for n in names if n not in order]
        found += [Exercise(root, stage, n) for n in order]
    return found


def port_for(checkout):
    """The TCP and rdma_cm port of a checkout's two-peer exercises, 20000-39999 from its path: two
    learners' checkouts on one machine, two ports (RDMA_TUTORIAL_PORT overrides it)."""
    return 20000 + zlib.crc32(os.path.realpath(checkout).encode()) % 20000


# --- names a learner types -----------------------------------------------------

def normalise_name(text):
    """NAME, STAGE/NAME or the file's path (tab completion) to what find_exercise compares: case and
    dashes do not count (No-Rearm is no_rearm)."""
    text = text.strip()
    if text.startswith("./"):
        text = text[2:]
    if text.endswith(".cpp") or text.endswith(".hints"):
        text = text.rsplit(".", 1)[0]
    return text.replace("/exercises/", "/").lower().replace("-", "_").replace(" ", "_")


def find_exercise(exercises, text):
    """The one exercise `text` names, or UsageError listing the close names."""
    wanted = normalise_name(text)
    matches = [e for e in exercises if wanted in (e.name, e.qualified)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise UsageError(f"'{text}' names several exercises ({', '.join(e.qualified for e in matches)}); "
                         "add the stage: STAGE/NAME")
    close = suggestions(wanted.split("/")[-1], [e.name for e in exercises])
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise UsageError(f"no exercise '{text}'{hint} (scripts/workshop.sh list shows them all)")


def suggestions(word, choices):
    """The choices close to a mistyped word, closest first (at most three)."""
    import difflib
    return difflib.get_close_matches(word, choices, n=3, cutoff=0.5)


# The verbs and how many arguments each takes (low, high): a NAME is optional for check, hint and
# solution (the current exercise then), required for reset, which loses a learner's changes.
VERBS = {"watch": (0, 2), "list": (0, 0), "next": (0, 0), "hint": (0, 2), "check": (0, 1),
         "verify": (0, 2), "reset": (1, 2), "solution": (0, 1), "guest": (1, 2), "--bench": (0, 0)}


def check_verb(verb, args):
    """UsageError unless VERB is one and takes len(args) arguments; a mistyped verb names the close
    ones ('chek': did you mean check?)."""
    if verb not in VERBS:
        close = suggestions(verb.lower(), list(VERBS)) or suggestions("--" + verb.lstrip("-").lower(), list(VERBS))
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise UsageError(f"no verb '{verb}'{hint}")
    low, high = VERBS[verb]
    if not low <= len(args) <= high:
        raise UsageError(f"'{verb}' takes " + ("no argument" if high == 0 else
                                               f"{low} to {high} argument(s)" if low != high else
                                               f"{low} argument(s)"))


def current_exercise(exercises, status_of, saved):
    """The exercise a verb without a NAME means: the one watch mode last showed (`saved`, kept in the
    progress file), else the first one not fixed; None when there is none of either."""
    for e in exercises:
        if e.qualified == saved:
            return e
    return first_unsolved(exercises, status_of)


def watch_opens_on(exercises, status_of, saved):
    """The exercise watch mode opens on: the one it last showed unless that is fixed now, else the
    first one not fixed, else the first."""
    e = current_exercise(exercises, status_of, saved)
    if e is not None and status_of[e.qualified] == FIXED:
        e = first_unsolved(exercises, status_of)
    return e or (exercises[0] if exercises else None)


def next_unsolved(exercises, status_of, current):
    """The next exercise after `current` (around the end) that is not fixed, or None."""
    i = exercises.index(current)
    for step in range(1, len(exercises) + 1):
        cand = exercises[(i + step) % len(exercises)]
        if status_of[cand.qualified] != FIXED:
            return cand
    return None


def list_choice(typed, count):
    """The index of the exercise a number typed in watch mode's list names (1..count), or None."""
    typed = typed.strip()
    if not re.fullmatch(r"\d+", typed):
        return None
    n = int(typed)
    return n - 1 if 1 <= n <= count else None


# --- what the checker printed ------------------------------------------------------

# A source file's path followed by ':', at the start of a word or after a colour escape (ninja has
# the compiler colour its messages: -fdiagnostics-color=always).
SOURCE_LOCATION = re.compile(r"(^|[^\w./-]|\x1b\[[0-9;]*[mK])([\w./+-]+\.(?:cpp|hpp|cc|hh|cxx|h|c|ipp|inl))(?=:)", re.M)


def learner_path(path, build, root, cwd, resolve=os.path.normpath):
    """A path the compiler printed from inside the build folder, as the learner finds it: relative to
    their directory when that is the checkout, inside it or above it; else relative to the checkout
    (as watch mode names every file). Paths outside the checkout stay as printed. `resolve` makes a
    path absolute and plain: the runner passes os.path.realpath, since meson compiles a stage through
    the checkout's subprojects/ links (../subprojects/01_devices/... is 01_devices/...)."""
    absolute = resolve(path if os.path.isabs(path) else os.path.join(build, path))
    if absolute != root and not absolute.startswith(root.rstrip(os.sep) + os.sep):
        return path
    inside = cwd == root or cwd.startswith(root.rstrip(os.sep) + os.sep)
    above = root.startswith(cwd.rstrip(os.sep) + os.sep)
    return os.path.relpath(absolute, cwd if inside or above else root)


def rewrite_locations(text, build, root, cwd, resolve=os.path.normpath):
    """Every source location in the checker's output (`../08_event_channel/exercises/x.cpp:12:5:`,
    ninja runs the compiler in the build folder) as learner_path gives it
    (`08_event_channel/exercises/x.cpp:12:5:`): what the terminal shows can be opened as shown."""
    return SOURCE_LOCATION.sub(lambda m: m.group(1) + learner_path(m.group(2), build, root, cwd, resolve), text)


OUTPUT_MARK = "--- the programs' whole output"


def split_output(check_output):
    """(the verdict and what the checker said, the programs' whole output or '') of a check's output:
    scripts/check_exercise.sh --show-output puts the programs' output after OUTPUT_MARK."""
    at = check_output.find(OUTPUT_MARK)
    return (check_output, "") if at < 0 else (check_output[:at], check_output[at:])


# --- hints ---------------------------------------------------------------------

def parse_hints(text):
    """The hint levels of a .hints file: its paragraphs, '#' comment lines left out."""
    levels, current = [], []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if line.strip():
            current.append(line.strip())
        elif current:
            levels.append(" ".join(current))
            current = []
    if current:
        levels.append(" ".join(current))
    return levels


def hint_problems(levels):
    """What is wrong with a hints file's levels ([] when nothing): at least three, the last naming
    a chapter section."""
    problems = []
    if len(levels) < 3:
        problems.append(f"{len(levels)} hint levels; at least 3 (where to look, what is wrong, what the fix must do)")
    if levels and not SECTION.search(levels[-1]):
        problems.append('the last level names no chapter section (docs/NN-name.md, section "Title")')
    return problems


def next_hint_level(shown, count):
    """The level a plain `hint NAME` reveals after `shown` levels were: the next, or the last again."""
    return min(shown + 1, count)


def wanted_hint_level(text, count):
    """A LEVEL typed after `hint NAME`: 1..count, else UsageError."""
    if not re.fullmatch(r"\d+", text or ""):
        raise UsageError(f"a hint level is a number from 1 to {count}, got '{text}'")
    level = int(text)
    if not 1 <= level <= count:
        raise UsageError(f"this exercise has hint levels 1 to {count}, not {level}")
    return level


# --- progress ------------------------------------------------------------------

NOT_TRIED, BROKEN, FIXED = "not tried", "still broken", "fixed"


class Progress:
    """A learner's progress, in a JSON file of the checkout's (git-ignored): for each exercise the
    verdict of its last check with the hash of the file it judged, and how many hint levels were
    shown; and the exercise watch mode last showed (the current one, which a verb without a NAME
    takes). A verdict counts only while the file is the one it judged: editing a fixed exercise
    reopens it, and an exercise new to the checkout is not tried yet."""

    def __init__(self, path):
        self.path = path
        self.data = {"verdicts": {}, "hints": {}, "current": None}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                try:
                    loaded = json.load(f)
                except ValueError:
                    loaded = {}
            if isinstance(loaded, dict):
                self.data["verdicts"] = dict(loaded.get("verdicts", {}))
                self.data["hints"] = dict(loaded.get("hints", {}))
                if isinstance(loaded.get("current"), str):
                    self.data["current"] = loaded["current"]

    def save(self):
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)  # whole or not at all: a Ctrl-C never leaves half a file

    def record(self, key, file_hash, fixed):
        self.data["verdicts"][key] = {"hash": file_hash, "verdict": FIXED if fixed else BROKEN}

    def status(self, key, file_hash):
        v = self.data["verdicts"].get(key)
        if not v or v.get("hash") != file_hash:
            return NOT_TRIED
        return v.get("verdict", NOT_TRIED)

    def hints_shown(self, key):
        return int(self.data["hints"].get(key, 0))

    def show_hints(self, key, level):
        self.data["hints"][key] = max(level, self.hints_shown(key))

    @property
    def current(self):
        return self.data["current"]

    @current.setter
    def current(self, key):
        self.data["current"] = key

    def forget(self, key):
        self.data["verdicts"].pop(key, None)


def statuses(exercises, progress):
    """{qualified name: status} for every exercise, from the files as they are now."""
    return {e.qualified: progress.status(e.qualified, e.file_hash()) for e in exercises}


def first_unsolved(exercises, status_of):
    """The first exercise not fixed, in order, or None when every one is."""
    for e in exercises:
        if status_of[e.qualified] != FIXED:
            return e
    return None


def progress_bar(fixed, total, width=21):
    """'[#######..............] 7 of 21 fixed'"""
    filled = round(width * fixed / total) if total else 0
    return f"[{'#' * filled}{'.' * (width - filled)}] {fixed} of {total} fixed"


def verdict_of(check_output):
    """True (fixed), False (still broken) or None (no verdict line) from the checker's output."""
    for line in check_output.splitlines():
        if line.startswith("fixed:"):
            return True
        if line.startswith("still broken"):
            return False
    return None


# --- the solution --------------------------------------------------------------

def body_lines(source):
    """A file's lines after its leading block of comments and blank lines (common/tools/drift.hpp's
    rule): an exercise and its piece differ in that header, and the body is what is compared."""
    lines = source.splitlines(keepends=True)
    i = 0
    while i < len(lines) and (lines[i].startswith("//") or not lines[i].strip()):
        i += 1
    return lines[i:]


def solution_diff(yours, ours, your_label, our_label):
    """unified diff lines from the learner's body to the stage's own."""
    import difflib
    return difflib.unified_diff(yours, ours, your_label, our_label, n=2)


# --- a build under way -------------------------------------------------------------

NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\] (.+)$")  # NINJA_STATUS "[%f/%t] ", which the runner sets


def build_step(line):
    """(done, total, what) when a line of ninja's output is one of its steps ("[37/212] Compiling C++
    object ..."), else None (the compiler's messages, ninja's own lines)."""
    m = NINJA_STEP.match(line.rstrip("\r"))
    return (int(m.group(1)), int(m.group(2)), m.group(3)) if m else None


def build_progress(what, step, seconds):
    """How far a build is, in one line: 'building the stages: 37 of 212 steps, 95 s (Compiling ...)'."""
    done, total, doing = step
    return f"building {what}: {done} of {total} steps, {seconds:.0f} s ({doing})"


def build_messages(output):
    """What a build said but its steps: the compiler's messages, and ninja's FAILED and its own lines."""
    return "\n".join(line for line in output.splitlines() if build_step(line) is None)


# --- watch mode's screen --------------------------------------------------------------

def screen_rows(lines):
    """Watch mode's lines as rows of the screen: a line with newlines inside (a hint, a notice that
    carries check_env.sh's line) is as many rows."""
    return [row for line in lines for row in line.split("\n")]


def screen_frame(lines):
    """What draws `lines` over the last screen without clearing it first (no flicker each second):
    every row cleared to its end after its text, and every row below the last one cleared, so that
    nothing of a longer screen before is left (a hint's rows once kept their tails: "hint 1 of
    4:ropped", issue 43)."""
    return "\033[H" + "".join(row + "\033[K\n" for row in screen_rows(lines)) + "\033[J"
