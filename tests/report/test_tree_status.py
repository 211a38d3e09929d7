"""experiments/tree_status.py: the build's status line (questions built per test store, the block in
progress, hours left at the measured minutes a question), and its one-line refusals."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scripts import REPO, script


@pytest.fixture(scope="module")
def tree_status():
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(REPO / "experiments"))  # its sibling registered.py, as when run as a script
        with script("experiments/tree_status.py") as module:
            yield module


@pytest.mark.parametrize("built, block, left, total", [
    ((193, 50), 2, (7 * 2.4 + 50 * 5.5) / 60, (207 * 2.4 + 150 * 5.5) / 60),
    ((100, 49), 1, 5.5 / 60, (300 * 2.4 + 151 * 5.5) / 60),
    ((200, 100), 3, (100 * 2.4 + 50 * 5.5) / 60, (200 * 2.4 + 100 * 5.5) / 60),  # block 2 complete: the next
    ((300, 50), 2, 50 * 5.5 / 60, (100 * 2.4 + 150 * 5.5) / 60),  # a store ahead: the other's block
    ((400, 200), 4, 0.0, 0.0),
    ((450, 210), 4, 0.0, 0.0)])  # beyond the last block: nothing left
def test_the_block_in_progress_and_the_hours_left(tree_status, built, block, left, total):
    line = tree_status.status(built, (100, 50), (2.4, 5.5))
    assert line.startswith(f"built gsm8k-test {built[0]} of {100 * block}, math-test {built[1]} of {50 * block} "
                           f"(block {block}). Left at 2.4 minutes a GSM8K and 5.5 a MATH-500 question: ")
    assert line.endswith(f"block {block} about {left:.1f} h, through block 4 (n = 600) about {total:.1f} h.")


@pytest.mark.parametrize("args, message", [
    (["2.4", "0"], "minutes a question must be positive numbers"),
    (["nan", "5"], "minutes a question must be positive numbers"),
    (["--stores", "nowhere", "2", "5"], "tree store nowhere/gsm8k-test not found"),
    (["--registration", "nowhere.json", "2", "5"], "registration nowhere.json not found; pass --registration FILE")])
def test_bad_input_is_one_line_and_exit_status_2(args, message):
    done = subprocess.run([sys.executable, str(REPO / "experiments" / "tree_status.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr
