"""Run untrusted Python (model-written HumanEval code) in a separate, limited, killable process.

!!! WARNING: THIS IS NOT A SECURITY BOUNDARY. !!!
It stops accidents: infinite loops, sleeps, huge allocations, ``sys.exit``/``os._exit``, killing its parent,
fork spam. It does NOT stop code written to do harm. Run model-generated code only inside a disposable
container or VM (the advice of OpenAI's human-eval ``execution.py``, whose warning this repeats).

Linux only (resource limits, /proc, capabilities). What it does:
- The program runs in a fresh interpreter (``python -I``) started by an intermediate supervisor process
  (this file run as a script), never by the caller: a program that kills its parent kills the supervisor.
- Own temporary directory as working directory, HOME and TMPDIR, deleted afterwards; stdin is closed.
- Limits: wall time, CPU time, address space (memory), written file size, open files, no core dumps,
  number of processes (RLIMIT_NPROC).
- Run as root (tests and CI), the program runs under a fresh, random unprivileged uid/gid: RLIMIT_NPROC is
  enforced, it cannot signal root's processes or write root's files. When the interpreter lives where that
  uid cannot reach it (e.g. under /root), the uid keeps CAP_DAC_READ_SEARCH (read any file) to start it.
- Afterwards every process of the run is SIGKILLed: its process group and, as root, every process of its
  uid (which catches forks that left the group with ``setsid``).
- It passes only when the program exits 0 *and* then prints a random sentinel, so ``sys.exit(0)`` or
  ``os._exit(0)`` before the checks have run is a failure.

What it does NOT protect against:
- the network (sockets work), reading files (any file, as root with CAP_DAC_READ_SEARCH), writing
  world-writable places (/tmp, /dev/shm), using CPU and memory up to the limits on every core;
- not as root: the program runs as *your* user, so it can delete your files, kill your processes
  (``os.kill(-1, 9)``) and escape the kill with ``setsid``; RLIMIT_NPROC then counts all your processes;
- code that reads the sentinel through interpreter introspection, kernel exploits, side channels.
"""

from __future__ import annotations

# Standard library only: the supervisor runs this file with ``python -I -S``, outside the package.
import ctypes
import grp
import json
import os
import pwd
import random
import resource
import secrets
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO

SUPERVISOR_GRACE_S = 10.0  # time the supervisor gets beyond the program's limit to set up and report
_CAP_DAC_READ_SEARCH = 2
_PR_SET_KEEPCAPS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE = 8, 47, 2
_CAP_VERSION_3 = 0x20080522
# Executed as the program's interpreter: read the sentinel, run the program as a module that is not
# __main__ (so its demo ``if __name__ == "__main__":`` block stays quiet), print the sentinel via fd 1.
_RUNNER = """
def _run(sys, os):
    token = sys.stdin.readline().strip()
    with open(sys.argv[1]) as handle:
        code = compile(handle.read(), sys.argv[1], "exec")
    exec(code, {"__name__": "__sandbox__", "__builtins__": __builtins__})
    sys.stdout.flush()
    os.write(1, ("\\n" + token + "\\n").encode())
_run(__import__("sys"), __import__("os"))
"""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run."""

    timeout_s: float = 10.0  # wall-clock time of the program
    memory_mb: int = 1024  # address space (RLIMIT_AS)
    max_processes: int = 32  # processes and threads of the run (RLIMIT_NPROC, on top of yours when not root)
    max_file_mb: int = 64  # largest file it may write (RLIMIT_FSIZE)


@dataclass(frozen=True)
class SandboxResult:
    """How a run ended. ``status``: passed, failed, timeout, or crashed (the supervisor died)."""

    passed: bool
    status: str
    exit_code: int | None
    output: str  # the tail of stdout and stderr, for debugging


def run_program(program: str, limits: Limits = Limits()) -> SandboxResult:
    """Run ``program`` (Python source) under ``limits``; passed when it exits 0 after running to the end."""
    uid = _fresh_uid() if os.geteuid() == 0 else None
    with tempfile.TemporaryDirectory(prefix="delib-sandbox-") as tmp:
        Path(tmp, "program.py").write_text(program, encoding="utf-8")
        if uid is not None:
            os.chown(tmp, uid, uid)
        config = {"dir": tmp, "uid": uid, "token": secrets.token_hex(16), "limits": asdict(limits)}
        supervisor = subprocess.Popen(
            [sys.executable, "-I", "-S", str(Path(__file__).resolve())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        try:
            deadline = limits.timeout_s + SUPERVISOR_GRACE_S
            out, _ = supervisor.communicate(json.dumps(config).encode(), timeout=deadline)
        except subprocess.TimeoutExpired:
            out = b""
        return _result(out, supervisor, uid)


def run_many(programs: list[str], limits: Limits = Limits(), workers: int = 2) -> list[SandboxResult]:
    """``run_program`` for each program, ``workers`` at a time, results in order."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(lambda p: run_program(p, limits), programs))


def _result(out: bytes, supervisor: subprocess.Popen[bytes], uid: int | None) -> SandboxResult:
    lines = out.decode("utf-8", "replace").strip().splitlines()
    if lines and lines[-1].startswith("{"):
        supervisor.wait()
        return SandboxResult(**json.loads(lines[-1]))
    # The supervisor hung or was killed: kill its group (the program is in it) and, as root, the uid.
    _signal_group(supervisor.pid)
    if uid is not None:
        _kill_uid_from_caller(uid)
    supervisor.communicate()
    return SandboxResult(False, "crashed", None, "the sandbox supervisor died or hung")


def _kill_uid_from_caller(uid: int) -> None:
    """``kill -1`` run as ``uid`` kills every process of it; the caller may have threads, so no bare fork."""
    try:
        subprocess.run(["kill", "-s", "KILL", "--", "-1"], user=uid, group=uid, extra_groups=[], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    except FileNotFoundError:  # no kill(1) binary: the process group was killed, escapees may survive
        pass


def _signal_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _fresh_uid() -> int:
    """A random uid/gid that no account uses and this user namespace maps (so setresuid accepts it)."""
    maps = [_id_ranges(f"/proc/self/{kind}_map") for kind in ("uid", "gid")]
    for low, high in ((100_000, 2**31), (20_000, 60_000)):
        spans = [(max(a, low), min(b, high)) for a, b in maps[0] if max(a, low) < min(b, high)]
        spans = [(a, b) for a, b in spans if any(c <= a and b <= d for c, d in maps[1])]
        picks = (random.randrange(a, b) for a, b in random.choices(spans, k=100)) if spans else ()
        for uid in picks:
            if not _is_taken(uid):
                return uid
    from deliberation.errors import DelibError  # here, not at the top: the supervisor runs outside the package

    raise DelibError("no unused uid is mapped in this user namespace; run as a normal user to execute code")


def _is_taken(uid: int) -> bool:
    """Whether a user or a group already has this id."""
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(uid)
            return True
        except KeyError:
            continue
    return False


def _id_ranges(path: str) -> list[tuple[int, int]]:
    """[start, end) id ranges of a /proc uid_map or gid_map (all ids when the file is missing)."""
    try:
        rows = [line.split() for line in Path(path).read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return [(0, 2**32 - 1)]
    return [(int(inside), int(inside) + int(count)) for inside, _, count in rows]


# --- the supervisor (runs as ``python -I -S sandbox.py`` with the run's config on stdin) -------------------


def _supervise() -> None:
    """Run the program, report one JSON line, then SIGKILL the whole process group (itself included)."""
    config = json.loads(sys.stdin.read())
    report = _run_confined(config)
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()
    os.killpg(0, signal.SIGKILL)


def _run_confined(config: dict[str, object]) -> dict[str, object]:
    folder, uid, token = Path(str(config["dir"])), config["uid"], str(config["token"])
    limits = Limits(**config["limits"])  # type: ignore[arg-type]
    confine = _confiner(limits, uid if isinstance(uid, int) else None)
    # The files stay open and are read back through these handles: the program owns the folder and could
    # swap the paths for links to files it wants the (root) supervisor to read.
    with open(folder / "stdout", "w+b") as out, open(folder / "stderr", "w+b") as err:
        program = subprocess.Popen(
            [sys.executable, "-I", "-c", _RUNNER, "program.py"], cwd=folder, stdin=subprocess.PIPE, stdout=out,
            stderr=err, env={"PATH": "/usr/bin:/bin", "HOME": str(folder), "TMPDIR": str(folder),
                             "LANG": "C.UTF-8"}, preexec_fn=confine,
        )  # fmt: skip
        _send(program, token)
        try:
            code: int | None = program.wait(limits.timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        if isinstance(uid, int):
            _kill_uid(uid)
        stdout, stderr = _tail(out), _tail(err)
    passed = code == 0 and stdout.rstrip("\n").endswith("\n" + token)
    status = "passed" if passed else "timeout" if code is None else "failed"
    return {"passed": passed, "status": status, "exit_code": code, "output": (stdout + stderr)[-2000:]}


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


def _confiner(limits: Limits, uid: int | None) -> Callable[[], None]:
    """The function the program's process runs between fork and exec: drop to ``uid``, set the limits."""
    libc = ctypes.CDLL(None, use_errno=True)
    keep_read = uid is not None and not _world_reachable(Path(sys.executable).resolve())
    nproc = limits.max_processes + (0 if uid is not None else _tasks_of(os.getuid()))
    mb = 1024 * 1024
    rlimits = [(resource.RLIMIT_AS, limits.memory_mb * mb), (resource.RLIMIT_CPU, int(limits.timeout_s) + 2),
               (resource.RLIMIT_FSIZE, limits.max_file_mb * mb), (resource.RLIMIT_NOFILE, 256),
               (resource.RLIMIT_CORE, 0), (resource.RLIMIT_NPROC, nproc)]  # fmt: skip

    def confine() -> None:
        os.umask(0o077)
        if uid is not None:
            _drop_privileges(libc, uid, keep_read)
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
    _supervise()
