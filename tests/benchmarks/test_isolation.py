"""Isolation (isolation.py) wherever the project lives, and the refusal to run code where it cannot isolate.

A venv under /tmp is hidden by the sandbox's private /tmp unless its folders are bound back: before that,
the probe failed there and model-written code ran with no isolation at all.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from deliberation.benchmarks.sandbox import isolation
from deliberation.benchmarks.humaneval import HumanEval
from deliberation.errors import DelibError
from deliberation.types import Example

# Run by the venv's interpreter: this package from the test's own paths, one program in the sandbox.
DRIVER = """
import json, sys
sys.path[:0] = json.loads(sys.argv[1])
from deliberation.benchmarks.sandbox.run import Limits, run_program
result = run_program(sys.stdin.read(), Limits(timeout_s=5.0))
print(json.dumps({"passed": result.passed, "output": result.output}))
"""
# The sandboxed program: imports a module only the venv has, then tries to get out; prints what it got.
ESCAPES = """
import socket, sys
import delib_only_in_this_venv
print("prefix", sys.prefix)
print("version", sys.version)
try:
    print("shadow read", len(open("/etc/shadow").read()))
except OSError as err:
    print("shadow refused", type(err).__name__)
for name in {leaks!r}:
    open(name, "w").write("x")
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2)
    print("connected")
except OSError as err:
    print("network refused", type(err).__name__)
"""


@pytest.fixture
def venv_in_tmp() -> Iterator[Path]:
    """The interpreter of a fresh venv in a new folder under /tmp (a symlink to the base interpreter), with
    a module of its own in its site-packages."""
    folder = Path(tempfile.mkdtemp(prefix="delib-venv-", dir="/tmp"))
    folder.chmod(0o755)  # an ordinary folder, as a clone makes (as root a closed one was covered before)
    try:
        venv.EnvBuilder(system_site_packages=True, symlinks=True).create(folder / "venv")
        site = next((folder / "venv" / "lib").glob("python3*/site-packages"))
        (site / "delib_only_in_this_venv.py").write_text("HERE = True\n")
        yield folder / "venv" / "bin" / "python"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_code_runs_isolated_from_an_interpreter_under_tmp(venv_in_tmp: Path) -> None:
    leaks = [f"/tmp/delib-leak-{secrets.token_hex(8)}", f"/dev/shm/delib-leak-{secrets.token_hex(8)}"]
    env = {k: v for k, v in os.environ.items() if k != isolation.ALLOW_UNISOLATED}
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.setblocking(False)
        program = ESCAPES.format(leaks=leaks, port=server.getsockname()[1])
        try:
            done = subprocess.run([str(venv_in_tmp), "-c", DRIVER, json.dumps(sys.path)], input=program, env=env,
                                  capture_output=True, text=True, timeout=120)  # fmt: skip
            assert done.returncode == 0, done.stderr[-2000:]
            result = json.loads(done.stdout.splitlines()[-1])
            assert result["passed"], result["output"]
            assert f"prefix {venv_in_tmp.parent.parent}\n" in result["output"]  # it ran in the venv,
            assert f"version {sys.version}\n" in result["output"]  # on its own interpreter
            assert "shadow refused" in result["output"] and "network refused" in result["output"]
            assert [name for name in leaks if Path(name).exists()] == []  # private /tmp and /dev/shm
            with pytest.raises(BlockingIOError):
                server.accept()  # nobody knocked
        finally:
            for name in leaks:
                Path(name).unlink(missing_ok=True)


HUMANEVAL = Example(id="t/0", question='def f(x):\n    """Return x."""\n', answer="    return x\n",
                    meta={"entry_point": "f", "test": "def check(candidate):\n    assert candidate(2) == 2\n"})
REASON = "bwrap: setting up uid map: Permission denied"


@pytest.fixture
def broken_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A bwrap that fails the probe as a real one does where it cannot isolate: one line on stderr."""
    tool = tmp_path / "bwrap"
    tool.write_text(f"#!/bin/sh\necho '{REASON}' >&2\nexit 1\n")
    tool.chmod(0o755)
    monkeypatch.setattr(isolation, "find_bwrap", lambda: str(tool))
    monkeypatch.delenv(isolation.ALLOW_UNISOLATED, raising=False)
    isolation.probe_bwrap.cache_clear()
    isolation._warn_unisolated.cache_clear()
    yield
    isolation.probe_bwrap.cache_clear()
    isolation._warn_unisolated.cache_clear()


def test_code_is_refused_where_it_cannot_run_isolated_unless_accepted(
    broken_bwrap: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Refused with bwrap's own reason and the opt-out in one line; with the opt-out it runs, warned."""
    right, wrong = "```python\ndef f(x):\n    return x\n```", "```python\ndef f(x):\n    return 3\n```"
    with pytest.raises(DelibError) as refused:
        HumanEval().score(HUMANEVAL, right)
    message = str(refused.value)
    assert "\n" not in message and REASON in message and f"{isolation.ALLOW_UNISOLATED}=1" in message
    monkeypatch.setenv(isolation.ALLOW_UNISOLATED, "1")
    assert HumanEval().score(HUMANEVAL, right) and not HumanEval().score(HUMANEVAL, wrong)
    assert REASON in caplog.text and "WITHOUT isolation" in caplog.text
