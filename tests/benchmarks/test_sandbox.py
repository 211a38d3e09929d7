"""The code sandbox: hostile programs fail, are killed with all their children, and leave this process alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deliberation.benchmarks.helpers import sandbox
from deliberation.benchmarks.helpers.sandbox import Limits, SandboxResult, run_many, run_program

FAST = Limits(timeout_s=2.0, memory_mb=512)
# Programs first write "<pid> <pgid> <uid>" to a file the test reads, to look for survivors afterwards.
IDS = (
    "import os, sys\nwith open({path!r}, 'w') as f:\n"
    "    f.write(f'{{os.getpid()}} {{os.getpgid(0)}} {{os.getuid()}}')\n"
)


@pytest.fixture
def ids_file() -> Iterator[Path]:
    """A file in a fresh folder that the sandboxed program (maybe another uid) can write."""
    folder = Path(tempfile.mkdtemp(prefix="delib-test-ids-"))
    folder.chmod(0o777)
    yield folder / "ids"
    shutil.rmtree(folder)


def _ids(path: Path) -> tuple[int, int, int]:
    pid, pgid, uid = (int(x) for x in path.read_text().split())
    return pid, pgid, uid


def _alive(match: Callable[[int, int, int], bool]) -> list[int]:
    """Pids of live (not zombie) processes for which ``match(pid, pgid, uid)`` holds."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, _, pgid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
            uid_line = next(ln for ln in (entry / "status").read_text().splitlines() if ln.startswith("Uid:"))
        except (FileNotFoundError, ProcessLookupError):
            continue
        if state not in "ZX" and match(int(entry.name), int(pgid), int(uid_line.split()[1])):
            found.append(int(entry.name))
    return found


def _assert_all_gone(ids_file: Path) -> None:
    """No process of the run survives: same process group, or (as root) the run's own uid."""
    _, pgid, uid = _ids(ids_file)
    as_root = os.geteuid() == 0

    def of_run(pid: int, group: int, owner: int) -> bool:
        return group == pgid or (as_root and owner == uid)

    for _ in range(50):  # SIGKILL is delivered at once; give the dying processes a moment to be reaped
        if not _alive(of_run):
            return
        time.sleep(0.1)
    assert _alive(of_run) == []


HOSTILE = {
    "infinite loop": ("while True:\n    pass\n", "timeout"),
    "sleep": ("import time\ntime.sleep(10**6)\n", "timeout"),
    "64 GB allocation": ("x = bytearray(64 * 1024**3)\n", "failed"),
    "sys.exit(0)": ("sys.exit(0)\n", "failed"),
    "os._exit(0)": ("os._exit(0)\n", "failed"),
    "fork spam": ("while True:\n    os.fork()\n", None),
    "fork spam ignoring errors": ("while True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
                                  None),  # fmt: skip
    "stdout flood": ("while True:\n    print('x' * 100000)\n", "failed"),
    "escape with setsid": ("if os.fork() == 0:\n    os.setsid()\n    import time\n    time.sleep(10**6)\n"
                           "import time\ntime.sleep(10**6)\n", "timeout"),  # fmt: skip
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_program_fails_and_leaves_nothing_behind(name: str, ids_file: Path) -> None:
    code, status = HOSTILE[name]
    result = run_program(IDS.format(path=str(ids_file)) + code, FAST)
    assert not result.passed
    if status is not None:
        assert result.status == status
    _assert_all_gone(ids_file)


def test_memory_limit_raises_memory_error() -> None:
    assert "MemoryError" in run_program(HOSTILE["64 GB allocation"][0], FAST).output


def test_exit_zero_is_not_a_pass() -> None:
    result = run_program("import sys\nsys.exit(0)\n", FAST)
    assert result.exit_code == 0 and not result.passed


def test_killing_the_parent_spares_the_caller(ids_file: Path) -> None:
    code = IDS.format(path=str(ids_file)) + "print('parent', os.getppid(), flush=True)\nos.kill(os.getppid(), 9)\n"
    result = run_program(code, FAST)
    parent = int(next(ln for ln in result.output.splitlines() if ln.startswith("parent ")).split()[1])
    assert parent != os.getpid()  # the program's parent is the supervisor, not this process
    assert not result.passed
    if os.geteuid() == 0:  # the unprivileged uid may not signal root's supervisor
        assert "PermissionError" in result.output
    else:
        assert result.status == "crashed"
    _assert_all_gone(ids_file)


def test_killing_its_own_group_spares_the_caller(ids_file: Path) -> None:
    result = run_program(IDS.format(path=str(ids_file)) + "os.killpg(0, 9)\n", FAST)
    assert not result.passed and os.getpgid(0) != _ids(ids_file)[1]


def test_well_behaved_program_passes_in_its_own_directory() -> None:
    result = run_program("import os\nprint('cwd', os.getcwd())\nassert 1 + 1 == 2\n", FAST)
    assert result.passed and result.status == "passed" and result.exit_code == 0
    cwd = next(ln for ln in result.output.splitlines() if ln.startswith("cwd ")).split(maxsplit=1)[1]
    assert cwd != os.getcwd() and not Path(cwd).exists()  # its temporary directory is gone


def test_failing_assertion_fails() -> None:
    result = run_program("assert 1 + 1 == 3\n", FAST)
    assert not result.passed and result.status == "failed" and "AssertionError" in result.output


def test_runs_unprivileged_when_root(ids_file: Path) -> None:
    result = run_program(IDS.format(path=str(ids_file)) + "open('/etc/delib-sandbox-probe', 'w')\n", FAST)
    _, _, uid = _ids(ids_file)
    if os.geteuid() == 0:
        assert uid != 0 and "PermissionError" in result.output
        assert not Path("/etc/delib-sandbox-probe").exists()
    else:
        assert uid == os.getuid()
    assert not result.passed


def test_input_sees_end_of_file() -> None:
    result = run_program("input()\n", FAST)
    assert not result.passed and "EOFError" in result.output


def test_run_many_keeps_order() -> None:
    results = run_many(["assert True\n", "assert False\n", "x = 1\n"], FAST, workers=2)
    assert [r.passed for r in results] == [True, False, True]


def test_a_supervisor_that_dies_gives_a_failed_result() -> None:
    """If the supervisor is killed before reporting (possible when not root), the run fails cleanly."""
    dead = subprocess.Popen(
        [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    out, _ = dead.communicate(b"{}", timeout=60)
    result = sandbox._result(out, dead, None)
    assert result == SandboxResult(False, "crashed", None, "the sandbox supervisor died or hung")


def test_fresh_uids_are_unused_and_differ() -> None:
    uids = {sandbox._fresh_uid() for _ in range(5)}
    assert len(uids) == 5 and all(uid >= 20_000 and not sandbox._is_taken(uid) for uid in uids)
