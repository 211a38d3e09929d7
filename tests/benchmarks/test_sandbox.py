"""The code sandbox: hostile programs fail, are killed with all their children, and leave this process alone."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from deliberation.benchmarks.sandbox import isolation
from deliberation.benchmarks.sandbox import run as sandbox
from deliberation.benchmarks.sandbox.run import Limits, SandboxResult, Checks, run_many, run_program, run_tests

FAST = Limits(timeout_s=2.0, memory_mb=512)


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The folder that holds this test's run folders: every process of a run has its HOME inside it (the
    programs cannot leave a note outside their run folder, /tmp included, so they are found this way)."""
    folder = Path(tempfile.mkdtemp(prefix="delib-test-runs-"))
    folder.chmod(0o755)  # the fresh uid of a run as root passes through it
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _of_runs(folder: Path) -> list[int]:
    """Pids of live (not zombie) processes started for a run in ``folder``: HOME in their environment."""
    home = f"HOME={folder}/".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] if entry.name.isdigit() else "X"
            environ = (entry / "environ").read_bytes() if state not in "ZX" else b""
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if any(variable.startswith(home) for variable in environ.split(b"\0")):
            found.append(int(entry.name))
    return found


def _assert_all_gone(folder: Path) -> None:
    """No process of a run in ``folder`` survives."""
    for _ in range(50):  # SIGKILL is delivered at once; give the dying processes a moment to be reaped
        if not _of_runs(folder):
            return
        time.sleep(0.1)
    assert _of_runs(folder) == []


def test_the_processes_of_a_run_are_found_while_it_runs(runs: Path) -> None:
    """The check of the tests below sees a running program (else it would prove nothing)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(run_program, "import time\ntime.sleep(10**6)\n", FAST)
        seen: list[int] = []
        while not seen and not pending.done():
            seen = _of_runs(runs)
            time.sleep(0.05)
        assert seen and pending.result().status == "timeout"
    _assert_all_gone(runs)


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
def test_hostile_program_fails_and_leaves_nothing_behind(name: str, runs: Path) -> None:
    code, status = HOSTILE[name]
    result = run_program("import os, sys\n" + code, FAST)
    assert not result.passed
    if status is not None:
        assert result.status == status
    _assert_all_gone(runs)


def test_memory_limit_raises_memory_error() -> None:
    assert "MemoryError" in run_program(HOSTILE["64 GB allocation"][0], FAST).output


def test_exit_zero_is_not_a_pass() -> None:
    result = run_program("import sys\nsys.exit(0)\n", FAST)
    assert result.exit_code == 0 and not result.passed


def test_killing_the_parent_spares_the_caller(runs: Path) -> None:
    code = "import os\nprint('parent', os.getppid(), flush=True)\nos.kill(os.getppid(), 9)\n"
    result = run_program(code, FAST)
    parent = int(next(ln for ln in result.output.splitlines() if ln.startswith("parent ")).split()[1])
    assert parent != os.getpid()  # the program's parent is the supervisor, not this process
    assert not result.passed
    if os.geteuid() == 0:  # the unprivileged uid may not signal root's supervisor
        assert "PermissionError" in result.output
    else:
        assert result.status == "crashed"
    _assert_all_gone(runs)


def test_killing_its_own_group_spares_the_caller(runs: Path) -> None:
    result = run_program("import os\nos.killpg(0, 9)\n", FAST)
    assert not result.passed  # and this process lives on to check it
    _assert_all_gone(runs)


def test_well_behaved_program_passes_in_its_own_directory() -> None:
    result = run_program("import os\nprint('cwd', os.getcwd())\nassert 1 + 1 == 2\n", FAST)
    assert result.passed and result.status == "passed" and result.exit_code == 0
    cwd = next(ln for ln in result.output.splitlines() if ln.startswith("cwd ")).split(maxsplit=1)[1]
    assert cwd != os.getcwd() and not Path(cwd).exists()  # its temporary directory is gone


def test_failing_assertion_fails() -> None:
    result = run_program("assert 1 + 1 == 3\n", FAST)
    assert not result.passed and result.status == "failed" and "AssertionError" in result.output


def test_runs_unprivileged_when_root() -> None:
    result = run_program("import os\nprint('uid', os.getuid())\nopen('/etc/delib-sandbox-probe', 'w')\n", FAST)
    uid = int(next(ln for ln in result.output.splitlines() if ln.startswith("uid ")).split()[1])
    if os.geteuid() == 0:
        assert uid != 0 and not Path("/etc/delib-sandbox-probe").exists()
    else:
        assert uid == os.getuid()
    # PermissionError without isolation, "Read-only file system" with it (the root file system is read-only)
    assert "PermissionError" in result.output or "Read-only file system" in result.output
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


# --- isolation (isolation.py): each of these ran on the sandbox before it had any ----------------------------


def test_files_in_tmp_and_dev_shm_do_not_outlive_the_run() -> None:
    names = [f"/tmp/delib-leak-{secrets.token_hex(8)}", f"/dev/shm/delib-leak-{secrets.token_hex(8)}"]
    try:
        code = "".join(f"open({n!r}, 'w').write('x')\nassert open({n!r}).read() == 'x'\n" for n in names)
        assert run_program(code, FAST).passed  # the program may use them: private, not forbidden
        assert [n for n in names if Path(n).exists()] == []
    finally:
        for name in names:
            Path(name).unlink(missing_ok=True)


def test_no_network_not_even_to_this_machine() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.setblocking(False)
        port = server.getsockname()[1]
        code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\nprint('connected')\n"
        result = run_program(code, FAST)
        assert not result.passed and "connected" not in result.output
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody knocked


def test_cannot_read_the_password_hashes() -> None:
    result = run_program("print(len(open('/etc/shadow').read()))\n", FAST)
    assert not result.passed and "PermissionError" in result.output


def test_the_rest_of_the_file_system_is_read_only() -> None:
    folder = Path(tempfile.mkdtemp(dir="/var/tmp"))  # a folder anyone may write: only a read-only mount stops it
    try:
        folder.chmod(0o777)
        result = run_program(f"open({str(folder / 'x')!r}, 'w').write('x')\n", FAST)
        assert not result.passed and "Read-only file system" in result.output and not (folder / "x").exists()
    finally:
        shutil.rmtree(folder)


def test_isolation_works_on_this_machine() -> None:
    """The guarantees above hold here: a bwrap that works (as the tests' CI runs them)."""
    probe = isolation.probe_bwrap(os.geteuid() == 0)
    assert probe.tool is not None, probe.problem


def test_the_program_runs_on_this_interpreter() -> None:
    """Not on another Python the sandbox happens to show (as root, bwrap made the way to a pyenv under /root
    0700, and the system's libpython and stdlib ran instead)."""
    result = run_program("import sys\nprint('version', sys.version)\nprint('base', sys.base_prefix)\n", FAST)
    assert f"version {sys.version}\n" in result.output and f"base {sys.base_prefix}\n" in result.output


# --- the unforgeable verdict of run_tests (calls.py) --------------------------------------------------------

SQUARE = Checks(setup="", code="assert f(3) == 9 and abs(f(0.5) - 0.25) < 1e-9 and f(-2) is not None\n", entry="f")
RIGHT = "def f(x):\n    return x * x\n"
CHEATS = {
    "__eq__ always True": "class Yes:\n    def __eq__(self, other):\n        return True\n"
                          "    def __sub__(self, other):\n        return 0\ndef f(x):\n    return Yes()\n",
    "int subclass with a lying __eq__": "class Int(int):\n    def __eq__(self, other):\n        return True\n"
                                        "def f(x):\n    return Int(0)\n",
    "replaced builtins": "import builtins\nbuiltins.abs = lambda x: 0\ndef f(x):\n    return 9\n",
    "writes a passing report": "import os, json\nfor fd in (1, 2, 3, 4):\n    try:\n        os.write(fd, b'"
                               "{\"passed\": true, \"status\": \"passed\", \"exit_code\": 0, \"output\": \"\"}\\n')\n"
                               "    except OSError:\n        pass\nos._exit(0)\n",
}


def test_tests_pass_a_right_function() -> None:
    result = run_tests(RIGHT, SQUARE, FAST)
    assert result.passed and result.status == "passed"


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_a_program_cannot_forge_the_verdict(name: str) -> None:
    result = run_tests(CHEATS[name], SQUARE, FAST)
    assert not result.passed and result.status == "failed"


def test_tests_see_exceptions_timeouts_and_load_errors() -> None:
    assert "the function raised ZeroDivisionError" in run_tests("def f(x):\n    1 / 0\n", SQUARE, FAST).output
    assert run_tests("def f(x):\n    while True:\n        pass\n", SQUARE, FAST).status == "timeout"
    assert "did not load: SyntaxError" in run_tests("def f(x) return x\n", SQUARE, FAST).output


@pytest.fixture
def without_bwrap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No bwrap, and running code unisolated accepted (else it is refused: test_isolation.py)."""
    monkeypatch.setattr(isolation, "find_bwrap", lambda: None)
    monkeypatch.setenv(isolation.ALLOW_UNISOLATED, "1")
    isolation.probe_bwrap.cache_clear()
    isolation._warn_unisolated.cache_clear()
    yield
    isolation.probe_bwrap.cache_clear()
    isolation._warn_unisolated.cache_clear()


def test_without_bwrap_a_warning_and_what_remains(without_bwrap: None, caplog: pytest.LogCaptureFixture) -> None:
    """The accepted fallback: one warning; the verdict of run_tests, the limits and the final kill still hold."""
    assert run_tests(RIGHT, SQUARE, FAST).passed
    assert "WITHOUT isolation" in caplog.text
    assert not run_tests(CHEATS["__eq__ always True"], SQUARE, FAST).passed
    assert run_program("while True:\n    pass\n", FAST).status == "timeout"
