"""The sandbox's supervisor: run as ``python -I -S supervisor.py`` by sandbox.py with one run's config (JSON)
on stdin, it starts the program confined, waits for it or judges it, reports one JSON line on stdout and
then SIGKILLs its whole process group, itself included. Standard library only: it runs outside the package.

Config: dir (the run folder, the program's cwd/HOME/TMPDIR), uid (the fresh uid as root, else None),
wrapped (whether ``command`` starts with the isolation tool, which then drops to the uid itself), command
(the program's argv), token (the random end-of-run marker of ``run_program``), tests (None, or the trusted
tests of ``run_tests``, judged here through calls.py), limits (sandbox.Limits as a dict).
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO

_CAP_DAC_READ_SEARCH = 2
_PR_SET_KEEPCAPS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE = 8, 47, 2
_CAP_VERSION_3 = 0x20080522
_MB = 1024 * 1024


def supervise() -> None:
    """Run the program, report one JSON line, then SIGKILL the whole process group (itself included)."""
    config = json.loads(sys.stdin.read())
    report = run_confined(config)
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()
    os.killpg(0, signal.SIGKILL)


def run_confined(config: dict[str, Any]) -> dict[str, Any]:
    folder, uid, limits = Path(config["dir"]), config["uid"], config["limits"]
    confine = _confiner(limits, None if config["wrapped"] else uid, fresh_uid=uid is not None)
    judged = config["tests"] is not None
    # The files stay open and are read back through these handles: the program owns the folder and could
    # swap the paths for links to files it wants the (root) supervisor to read.
    with open(folder / "stdout", "w+b") as out, open(folder / "stderr", "w+b") as err:
        program = subprocess.Popen(
            config["command"], cwd=folder, stdin=subprocess.PIPE, stdout=subprocess.PIPE if judged else out,
            stderr=err, env={"PATH": "/usr/bin:/bin", "HOME": str(folder), "TMPDIR": str(folder),
                             "LANG": "C.UTF-8"}, preexec_fn=confine,
        )  # fmt: skip
        if judged:
            status, note = _judge(program, config["tests"], limits["timeout_s"])
        else:
            status, note = _await(program, config["token"], limits["timeout_s"]), ""
        if isinstance(uid, int):
            _kill_uid(uid)
        stdout = _tail(out)
        if status == "exited":
            ended = program.returncode == 0 and stdout.rstrip("\n").endswith("\n" + config["token"])
            status = "passed" if ended else "failed"
        output = (stdout + _tail(err) + note)[-2000:]
    return {"passed": status == "passed", "status": status, "exit_code": program.returncode, "output": output}


def _await(program: subprocess.Popen[bytes], token: str, timeout_s: float) -> str:
    """Send the end-of-run marker and wait: "exited" or "timeout"."""
    _send(program, token)
    try:
        program.wait(timeout_s)
    except subprocess.TimeoutExpired:
        return "timeout"
    return "exited"


def _judge(program: subprocess.Popen[bytes], tests: dict[str, str], timeout_s: float) -> tuple[str, str]:
    """The trusted tests judge the program's function here, outside the sandbox (calls.py)."""
    assert program.stdin is not None and program.stdout is not None
    calls = _load_calls()
    proxy = calls.Proxy(program.stdin.fileno(), program.stdout.fileno(), time.monotonic() + timeout_s)
    status, message = calls.judge(tests, proxy)
    program.kill()
    program.wait()
    return status, f"\n{message}\n" if message else ""


def _load_calls() -> ModuleType:
    """calls.py, beside this file, imported by path (this script runs without the package)."""
    spec = importlib.util.spec_from_file_location("delib_sandbox_calls", Path(__file__).with_name("calls.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _send(program: subprocess.Popen[bytes], token: str) -> None:
    assert program.stdin is not None
    try:
        program.stdin.write(token.encode() + b"\n")
        program.stdin.close()
    except BrokenPipeError:  # the interpreter died before reading: the run fails on its exit code
        pass


def _tail(handle: BinaryIO, size: int = 4096) -> str:
    handle.seek(max(0, os.fstat(handle.fileno()).st_size - size))
    return handle.read().decode("utf-8", "replace")


def _kill_uid(uid: int) -> None:
    """SIGKILL every process of ``uid``: a child that becomes ``uid`` and signals -1 (all it may signal)."""
    pid = os.fork()
    if pid == 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        os.kill(-1, signal.SIGKILL)
        os._exit(0)
    os.waitpid(pid, 0)


def _confiner(limits: dict[str, Any], drop_to: int | None, fresh_uid: bool) -> Callable[[], None]:
    """What the program's process runs between fork and exec: drop to ``drop_to`` (unless the isolation
    tool does it later), set the limits. RLIMIT_NPROC counts every process of the uid it applies to."""
    libc = ctypes.CDLL(None, use_errno=True)
    keep_read = drop_to is not None and not _world_reachable(Path(sys.executable).resolve())
    nproc = limits["max_processes"] + (0 if fresh_uid else _tasks_of(os.getuid()))
    rlimits = [(resource.RLIMIT_AS, limits["memory_mb"] * _MB), (resource.RLIMIT_CPU, int(limits["timeout_s"]) + 2),
               (resource.RLIMIT_FSIZE, limits["max_file_mb"] * _MB), (resource.RLIMIT_NOFILE, 256),
               (resource.RLIMIT_CORE, 0), (resource.RLIMIT_NPROC, nproc)]  # fmt: skip

    def confine() -> None:
        os.umask(0o077)
        if drop_to is not None:
            _drop_privileges(libc, drop_to, keep_read)
        for kind, value in rlimits:
            hard = resource.getrlimit(kind)[1]
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(kind, (value, value))

    return confine


def _drop_privileges(libc: ctypes.CDLL, uid: int, keep_read: bool) -> None:
    """Become ``uid``/``uid`` with no groups; keep only CAP_DAC_READ_SEARCH (as an ambient cap) if asked."""
    if keep_read:
        _check(libc.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0))
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if keep_read:
        bit = 1 << _CAP_DAC_READ_SEARCH
        header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
        data = (ctypes.c_uint32 * 6)(bit, bit, bit, 0, 0, 0)  # effective, permitted, inheritable; caps 0-31, 32-63
        _check(libc.capset(header, data))
        _check(libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, _CAP_DAC_READ_SEARCH, 0, 0))


def _check(result: int) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _world_reachable(path: Path) -> bool:
    """Whether any user can reach ``path``: every folder above it searchable by others."""
    return all(p.stat().st_mode & stat.S_IXOTH for p in path.parents)


def _tasks_of(uid: int) -> int:
    """Threads currently owned by ``uid`` (RLIMIT_NPROC counts them all)."""
    count = 0
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                count += len(os.listdir(entry / "task"))
        except (FileNotFoundError, PermissionError, ProcessLookupError):
            continue
    return count


if __name__ == "__main__":
    supervise()
