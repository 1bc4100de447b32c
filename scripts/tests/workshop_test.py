#!/usr/bin/env python3
"""Unit suite: the workshop runner's pure logic (scripts/workshop_lib.py), every
exercise's hints, and the runner's verbs that need no device.

  workshop_test.py SOURCE_ROOT

The device side (watch mode in tmux, two learners' checks at once, verify)
is scripts/tests/workshop_device.sh, in the exercise suite.
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import workshop_lib as lib  # noqa: E402

EXERCISES = lib.find_exercises(ROOT)


def headings(chapter):
    with open(os.path.join(ROOT, "docs", chapter), encoding="utf-8") as f:
        return [re.sub(r"^#+ ", "", line.strip()) for line in f if line.startswith("#")]


def normalised(line):
    return " ".join(line.split("//")[0].split())


class Exercises(unittest.TestCase):
    def test_every_exercise_file_should_be_found_in_its_chapters_order(self):
        on_disk = sorted(f for f in subprocess.run(["git", "-C", ROOT, "ls-files", "*/exercises/*.cpp"],
                                                    capture_output=True, text=True).stdout.split())
        self.assertEqual(sorted(e.path for e in EXERCISES), on_disk)
        self.assertGreaterEqual(len(EXERCISES), 21)
        names = [e.name for e in EXERCISES]
        # 03's chapter links stop_at_rtr, missing_mask_bit, psn_mismatch, in that order
        self.assertLess(names.index("stop_at_rtr"), names.index("missing_mask_bit"))
        self.assertLess(names.index("missing_mask_bit"), names.index("psn_mismatch"))
        self.assertEqual(names[0], "port_zero")
        for e in EXERCISES:
            self.assertTrue(e.title and e.symptom, e.path)
            self.assertTrue(e.piece and os.path.exists(os.path.join(ROOT, e.piece)), f"{e.path}: its piece {e.piece}")

    def test_every_exercise_should_have_at_least_three_hints_ending_in_a_real_chapter_section(self):
        chapters = dict(lib.stages(ROOT))
        for e in EXERCISES:
            with self.subTest(e.qualified):
                levels = e.hints()
                self.assertEqual(lib.hint_problems(levels), [])
                chapter, section = lib.SECTION.search(levels[-1]).groups()
                self.assertEqual("docs/" + chapter, chapters[e.stage], "the hint names another stage's chapter")
                self.assertTrue(any(h == section or h.startswith(section + " — ") for h in headings(chapter)),
                                f'docs/{chapter} has no section "{section}"')

    def test_no_hint_should_give_away_the_fixed_lines(self):
        for e in EXERCISES:
            with open(os.path.join(ROOT, e.piece), encoding="utf-8") as f:
                ours = {normalised(x) for x in lib.body_lines(f.read())}
            with open(os.path.join(ROOT, e.path), encoding="utf-8") as f:
                theirs = {normalised(x) for x in lib.body_lines(f.read())}
            fix = [x for x in ours - theirs if len(x) >= 12]
            text = " ".join(" ".join(h.split()) for h in e.hints())
            for line in fix:
                self.assertNotIn(line, text, f"{e.qualified}: a hint quotes the fixed line {line!r}")


class Ports(unittest.TestCase):
    def test_two_checkouts_should_get_two_ports_and_one_checkout_always_the_same(self):
        a, b = lib.port_for("/home/ada/rdma-tutorial"), lib.port_for("/home/grace/rdma-tutorial")
        self.assertNotEqual(a, b)
        self.assertEqual(a, lib.port_for("/home/ada/rdma-tutorial"))
        for p in (a, b, lib.port_for(ROOT)):
            self.assertTrue(20000 <= p < 40000)
            self.assertNotEqual(p, 18515)  # never the default a program uses by hand


class Names(unittest.TestCase):
    def test_a_name_the_stage_and_name_or_the_files_path_should_all_find_it(self):
        for text in ("port_zero", "01_devices/port_zero", "01_devices/exercises/port_zero.cpp",
                     "./01_devices/exercises/port_zero.cpp", "01_devices/exercises/port_zero.hints"):
            self.assertEqual(lib.find_exercise(EXERCISES, text).qualified, "01_devices/port_zero", text)

    def test_an_unknown_name_should_be_refused_with_the_close_ones(self):
        with self.assertRaises(lib.UsageError) as caught:
            lib.find_exercise(EXERCISES, "port_zer")
        self.assertIn("did you mean port_zero?", str(caught.exception))
        with self.assertRaises(lib.UsageError) as caught:
            lib.find_exercise(EXERCISES, "no_rcv_posted")
        self.assertIn("no_recv_posted", str(caught.exception))
        with self.assertRaises(lib.UsageError) as caught:
            lib.find_exercise(EXERCISES, "zzzzzz")
        self.assertNotIn("did you mean", str(caught.exception))

    def test_a_name_two_stages_share_should_ask_for_the_stage(self):
        twin = [EXERCISES[0], lib.Exercise(ROOT, EXERCISES[0].stage, EXERCISES[0].name)]
        twin[1].stage = "99_other"
        with self.assertRaises(lib.UsageError) as caught:
            lib.find_exercise(twin, "port_zero")
        self.assertIn("add the stage", str(caught.exception))


class Hints(unittest.TestCase):
    def test_hints_should_be_paragraphs_without_comments(self):
        text = "# a comment\n\nWhere to look:\nthe loop.\n\n\nWhat is wrong.\n\n" \
               'The chapter: docs/01-devices.md, section "Ports".\n'
        levels = lib.parse_hints(text)
        self.assertEqual(levels, ["Where to look: the loop.", "What is wrong.",
                                  'The chapter: docs/01-devices.md, section "Ports".'])
        self.assertEqual(lib.hint_problems(levels), [])
        self.assertTrue(lib.hint_problems(levels[:2]))
        self.assertTrue(lib.hint_problems(["a", "b", "no chapter"]))

    def test_levels_should_be_revealed_one_at_a_time_up_to_the_last(self):
        self.assertEqual(lib.next_hint_level(0, 4), 1)
        self.assertEqual(lib.next_hint_level(3, 4), 4)
        self.assertEqual(lib.next_hint_level(4, 4), 4)
        self.assertEqual(lib.wanted_hint_level("2", 4), 2)
        for bad in ("0", "5", "two", "", "-1"):
            with self.assertRaises(lib.UsageError):
                lib.wanted_hint_level(bad, 4)


class ProgressFile(unittest.TestCase):
    def test_a_verdict_should_count_only_for_the_file_it_judged(self):
        with tempfile.TemporaryDirectory() as d:
            p = lib.Progress(os.path.join(d, "state", "progress.json"))
            self.assertEqual(p.status("01_devices/port_zero", "aaa"), lib.NOT_TRIED)
            p.record("01_devices/port_zero", "aaa", True)
            p.record("02_pd_mr/wrong_pd", "bbb", False)
            p.show_hints("02_pd_mr/wrong_pd", 2)
            p.show_hints("02_pd_mr/wrong_pd", 1)  # never fewer than were shown
            p.save()
            q = lib.Progress(p.path)
            self.assertEqual(q.status("01_devices/port_zero", "aaa"), lib.FIXED)
            self.assertEqual(q.status("01_devices/port_zero", "edited"), lib.NOT_TRIED)  # edited: open again
            self.assertEqual(q.status("02_pd_mr/wrong_pd", "bbb"), lib.BROKEN)
            self.assertEqual(q.hints_shown("02_pd_mr/wrong_pd"), 2)
            self.assertEqual(q.hints_shown("03_qp_state/psn_mismatch"), 0)

    def test_a_damaged_progress_file_should_read_as_no_progress(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "progress.json")
            for junk in ("{not json", "[1, 2]", ""):
                with open(path, "w") as f:
                    f.write(junk)
                self.assertEqual(lib.Progress(path).status("01_devices/port_zero", "x"), lib.NOT_TRIED)

    def test_the_shipped_tree_should_start_with_nothing_tried_and_the_first_exercise_next(self):
        with tempfile.TemporaryDirectory() as d:
            p = lib.Progress(os.path.join(d, "progress.json"))
            s = lib.statuses(EXERCISES, p)
            self.assertEqual(set(s.values()), {lib.NOT_TRIED})
            self.assertEqual(lib.first_unsolved(EXERCISES, s), EXERCISES[0])
            p.record(EXERCISES[0].qualified, EXERCISES[0].file_hash(), True)
            self.assertEqual(lib.first_unsolved(EXERCISES, lib.statuses(EXERCISES, p)), EXERCISES[1])

    def test_the_bar_and_the_checkers_words(self):
        self.assertEqual(lib.progress_bar(7, 21), "[#######..............] 7 of 21 fixed")
        self.assertEqual(lib.progress_bar(0, 21), "[.....................] 0 of 21 fixed")
        self.assertEqual(lib.progress_bar(21, 21), "[#####################] 21 of 21 fixed")
        self.assertTrue(lib.verdict_of("fixed: ports are numbered from 1 (exit code 0)\n"))
        self.assertFalse(lib.verdict_of("building...\nstill broken: x (y)\n  likely fix: z\n"))
        self.assertIsNone(lib.verdict_of("rxe_vm: the guest did not finish\n"))
        self.assertEqual(lib.readable_symptom(r"ibv_query_port\(port 0\) failed \(EINVAL\)"),
                         "ibv_query_port(port 0) failed (EINVAL)")


class Verbs(unittest.TestCase):
    """The runner itself, for what needs no device, on a state folder of its own."""

    def run_workshop(self, *args, state):
        env = dict(os.environ, WORKSHOP_STATE=state)
        return subprocess.run([os.path.join(ROOT, "scripts", "workshop.sh")] + list(args), cwd=ROOT, env=env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)

    def test_a_bad_command_line_should_be_exit_2_with_what_was_wrong(self):
        with tempfile.TemporaryDirectory() as d:
            for args, says in ((["bogus"], "no verb 'bogus'"), (["hint"], "'hint' takes"),
                               (["check"], "'check' takes"), (["hint", "port_zer"], "did you mean port_zero?"),
                               (["hint", "port_zero", "9"], "hint levels 1 to 4"),
                               (["guest", "reboot"], "guest takes start, status or stop"),
                               (["reset", "port_zero"], "confirm with --yes")):
                r = self.run_workshop(*args, state=d)
                self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
                self.assertIn(says, r.stderr, args)

    def test_hint_should_reveal_one_more_level_each_time_and_remember_it(self):
        with tempfile.TemporaryDirectory() as d:
            first = self.run_workshop("hint", "port_zero", state=d)
            self.assertEqual(first.returncode, 0, first.stderr)
            self.assertIn("hint 1 of 4", first.stdout)
            self.assertNotIn("hint 2 of 4", first.stdout)
            second = self.run_workshop("hint", "port_zero", state=d)
            self.assertIn("hint 2 of 4", second.stdout)
            last = self.run_workshop("hint", "port_zero", "4", state=d)
            self.assertIn('section "Ports"', last.stdout)
            self.assertIn("that was the last hint", last.stdout)

    def test_list_and_next_should_start_from_nothing_tried(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.run_workshop("list", state=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(f"0 of {len(EXERCISES)} fixed", r.stdout)
            self.assertRegex(r.stdout, r"01_devices\n  not tried +port_zero +ports are numbered from 1\n")
            n = self.run_workshop("next", state=d)
            self.assertIn("next: 01_devices/port_zero", n.stdout)
            self.assertIn('chapter:  docs/01-devices.md, section "Ports"', n.stdout)

    def test_solution_should_wait_until_fixed_then_show_the_stages_own_lines(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.run_workshop("solution", "port_zero", state=d)
            self.assertEqual(r.returncode, 1)
            self.assertIn("not fixed yet", r.stdout)
            e = lib.find_exercise(EXERCISES, "port_zero")
            p = lib.Progress(os.path.join(d, "progress.json"))
            p.record(e.qualified, e.file_hash(), True)  # as a check that said "fixed" would
            p.save()
            r = self.run_workshop("solution", "port_zero", state=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("+++ 01_devices/ports.cpp (the stage's own)", r.stdout)
            self.assertIn("-  for (int port = 0; port < attr.phys_port_cnt; ++port) {  // TODO", r.stdout)

    def test_reset_should_put_the_shipped_file_back(self):
        # Not port_zero: the build suite's broken_exercise.sh reads that one, maybe at the same time.
        e = lib.find_exercise(EXERCISES, "no_drain")
        path = os.path.join(ROOT, e.path)
        with open(path, "rb") as f:
            before = f.read()
        shipped = subprocess.run(["git", "-C", ROOT, "show", f"HEAD:{e.path}"], capture_output=True).stdout
        try:
            with open(path, "ab") as f:
                f.write(b"// a learner's edit\n")
            with tempfile.TemporaryDirectory() as d:
                r = self.run_workshop("reset", "no_drain", "--yes", state=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(path, "rb") as f:
                self.assertEqual(f.read(), shipped)
        finally:
            with open(path, "wb") as f:
                f.write(before)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
