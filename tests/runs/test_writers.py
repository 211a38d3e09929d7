"""One writer at a time per run directory, tree store and rollout directory (``deliberation.outputs.lock``),
checked with real processes: while one process writes a directory a second writer is refused with one line
naming the first's pid and the fix, readers go on, and a writer killed with SIGKILL leaves no lock behind."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from deliberation.cli.main import main
from deliberation.errors import DelibError
from deliberation.outputs.lock import lock_directory
from deliberation.report.loading import load_run
from deliberation.runs.directory import RunDir
from deliberation.trees.store import TreeStore

HOLD = {
    "run": "from deliberation.runs.directory import RunDir\n"
           "held = RunDir.prepare(path, json.loads((path / 'config.json').read_text())).create()",
    "store": "from deliberation.trees.store import TreeStore\nheld = TreeStore.open(path)\nheld.lock()",
    "rollouts": "from deliberation.rl.collect import CollectSpec, manifest\n"
                "from deliberation.rl.rollout_files import open_collection\n"
                "held = open_collection(path, manifest(CollectSpec(backend='scripted'), 'scripted'))",
}
"""How each kind of writer takes its directory, as the commands do (``held`` keeps it until the process ends)."""


@contextmanager
def writer(kind: str, path: Path) -> Iterator[subprocess.Popen]:
    """Another process writing ``path`` as a ``kind`` writer does, until the block ends (or it is killed)."""
    code = f"import json, sys\nfrom pathlib import Path\npath = Path(sys.argv[1])\n{HOLD[kind]}\n" \
           "print('holding', flush=True)\nsys.stdin.read()\n"
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "holding\n", proc.stderr.read()
        yield proc
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        proc.stdin.close()


def refused(capsys, *argv: str) -> str:
    """The one-line error of a command that must be refused (exit 2)."""
    capsys.readouterr()
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("delib: error:"), err
    return err


def run_args(out: Path, limit: int) -> list[str]:
    return ["run", "--method", "cot", "--backend", "scripted", "--limit", str(limit), "--out", str(out), "--quiet"]


def test_a_second_delib_run_into_one_out_is_refused_while_the_first_writes(tmp_path, capsys):
    """Two runs into one --out each appended every question (n = 586 of 300); now the second is refused
    before it writes anything, a report reads the directory meanwhile, and the rerun after it finishes."""
    out = tmp_path / "run"
    assert main(run_args(out, 2)) == 0
    with writer("run", out) as first:
        err = refused(capsys, *run_args(out, 3))
        assert f"{out} is being written by another process (pid {first.pid})" in err and "another --out" in err
        assert len(RunDir(out).episodes()) == 2 and load_run(out).summary.n == 2  # readers need no lock
    assert main(run_args(out, 3)) == 0
    assert [e.example_id for e in RunDir(out).episodes()] == [f"gsm8k/test/{i}" for i in range(3)]


def test_a_writer_killed_with_sigkill_leaves_no_lock(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(run_args(out, 1)) == 0
    with writer("run", out) as first:
        assert f"pid {first.pid}" in refused(capsys, *run_args(out, 2))
        first.send_signal(signal.SIGKILL)
        assert first.wait() == -signal.SIGKILL
        assert main(run_args(out, 2)) == 0  # the kernel dropped the dead writer's lock
    assert len(RunDir(out).episodes()) == 2


def test_a_tree_store_has_one_writer_and_offline_replays_read_it_meanwhile(tmp_path, capsys):
    """A second build, and a replay that may add nodes (no --offline), are refused while a process writes the
    store; an offline replay only reads it and runs."""
    store = tmp_path / "store"
    build = ["tree", "--backend", "scripted", "--limit", "2", "--out", str(store), "--quiet"]
    assert main(build) == 0
    replay = ["evaluate", "--trees", str(store), "--method", "cot", "--rounds", "1", "--quiet"]
    with writer("store", store) as first:
        for argv in (build, [*replay, "--out", str(tmp_path / "grow")]):
            err = refused(capsys, *argv)
            assert f"{store} is being written by another process (pid {first.pid})" in err and "--offline" in err
        assert not (tmp_path / "grow").exists()
        assert main([*replay, "--offline", "--out", str(tmp_path / "offline")]) == 0
        assert len(TreeStore.open(store).built) == 2
    assert main([*replay, "--out", str(tmp_path / "grow")]) == 0


@pytest.mark.needs_split("gsm8k/train")
def test_a_rollout_directory_has_one_writer(tmp_path, capsys):
    out = tmp_path / "rollouts"
    out.mkdir()
    with writer("rollouts", out) as first:
        err = refused(capsys, "collect", "--backend", "scripted", "--limit", "1", "--joint-actions", "2",
                      "--out", str(out), "--quiet")
        assert f"pid {first.pid}" in err
    assert not (out / "rollouts.jsonl.gz").exists()


def test_the_lock_is_given_back_at_the_end_of_a_writer_and_refused_within_one_process(tmp_path):
    with lock_directory(tmp_path):
        with pytest.raises(DelibError, match=r"written by this very process \(pid \d+\)"):
            lock_directory(tmp_path)
    lock_directory(tmp_path).release()
    assert json.loads((tmp_path / ".writer.lock").read_text()) > 0  # the last holder's pid
