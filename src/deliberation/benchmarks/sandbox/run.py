"""Run untrusted Python (model-written HumanEval code) in a separate, limited, isolated, killable process.

!!! WARNING: no sandbox is a perfect security boundary. !!! This one stops accidents and the usual hostile
tricks (list below); a kernel exploit still escapes it. For code you expect to be malicious, add a
disposable container or VM (the advice of OpenAI's human-eval ``execution.py``).

Linux only. Two ways to run code:
- ``run_tests(solution, tests)``: the verdict of unit tests that the program cannot forge. The program runs
  in the sandbox as a server of its function; the trusted tests run in the supervisor, outside it, and get
  the function's answers as plain values (calls.py). An ``__eq__`` that always says True, a replaced
  ``abs``, a printed success marker: none reach the tests.
- ``run_program(program)``: runs a whole program; it passes when it exits 0 *and* then prints a random
  marker (so ``sys.exit(0)`` before the end fails). The program judges itself here: code written to cheat
  can find the marker through introspection. Use it for programs you trust to report honestly.

What every run gets:
- A supervisor process (supervisor.py) starts the program, never the caller: a program that kills its
  parent kills at most the supervisor. Afterwards every process of the run is SIGKILLed.
- Isolation by bubblewrap (isolation.py): no network, private /tmp and /dev/shm, its own PID namespace,
  the file system read-only except its run folder, no capabilities.
- Own temporary run folder as working directory, HOME and TMPDIR, deleted afterwards; stdin closed (or the
  call channel).
- Limits: wall time, CPU time, address space (memory), written file size, open files, no core dumps,
  number of processes (RLIMIT_NPROC).
- As root (tests and CI) the program runs under a fresh, random unprivileged uid/gid: it cannot read root's
  files (/etc/shadow), signal root's processes or write root's files, and RLIMIT_NPROC is enforced.

Without isolation (bwrap missing or not working) code is refused with a DelibError that says why, unless
``DELIB_ALLOW_UNISOLATED_CODE=1`` accepts running it unisolated (isolation.py; a warning says so once). What
then remains is the unforgeable verdict of ``run_tests``, the limits, the supervisor and, as root, the fresh
uid. Then the program CAN use the network, write /tmp and /dev/shm (files stay), and read what its uid may
read: as root with an interpreter only root can reach (e.g. under /root) it keeps CAP_DAC_READ_SEARCH to
start it and so reads any file; not as root it runs as *your* user and can delete your files, kill your
processes and escape the final kill with ``setsid``.
What it never protects against: kernel exploits, side channels, using CPU and memory up to the limits on
every core, reading the world-readable files of the machine (the benchmark's own data included).
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import random
import secrets
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

SUPERVISOR_GRACE_S = 10.0  # time the supervisor gets beyond the program's limit to set up and report
SUPERVISOR = Path(__file__).with_name("supervisor.py")
CALLS = Path(__file__).with_name("calls.py")
# Executed as the program's interpreter: read the marker, run the program as a module that is not
# __main__ (so its demo ``if __name__ == "__main__":`` block stays quiet), print the marker via fd 1.
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
class Checks:
    """Trusted unit tests of one function of an untrusted program (``run_tests``)."""

    setup: str  # trusted code run first, e.g. HumanEval's prompt for the helpers its tests call
    code: str  # the tests: statements that call ``entry`` (a HumanEval ``check`` and its call)
    entry: str  # the function's name; in the tests it is bound to the program's function


@dataclass(frozen=True)
class SandboxResult:
    """How a run ended. ``status``: passed, failed, timeout, or crashed (the supervisor died)."""

    passed: bool
    status: str
    exit_code: int | None
    output: str  # the tail of stdout and stderr (and the tests' failure), for debugging


def run_program(program: str, limits: Limits = Limits()) -> SandboxResult:
    """Run ``program`` (Python source) under ``limits``; passed when it exits 0 after running to the end."""
    return _run(program, ["-I", "-c", _RUNNER, "program.py"], None, limits)


def run_tests(solution: str, tests: Checks, limits: Limits = Limits()) -> SandboxResult:
    """Load ``solution`` in the sandbox and run ``tests`` on its function outside it (module docstring);
    passed when the tests run to the end within ``limits.timeout_s``."""
    serve = ["-I", "-c", CALLS.read_text(encoding="utf-8"), "program.py", tests.entry]
    return _run(solution, serve, tests, limits)


def run_many(programs: list[str], limits: Limits = Limits(), workers: int = 2) -> list[SandboxResult]:
    """``run_program`` for each program, ``workers`` at a time, results in order."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(lambda p: run_program(p, limits), programs))


def run_many_tests(jobs: list[tuple[str, Checks]], limits: Limits = Limits(), workers: int = 2) -> list[SandboxResult]:
    """``run_tests`` for each (solution, tests), ``workers`` at a time, results in order."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(lambda job: run_tests(*job, limits), jobs))


def _run(source: str, interpreter_args: list[str], tests: Checks | None, limits: Limits) -> SandboxResult:
    from deliberation.benchmarks.sandbox import isolation  # here: this file's siblings need no package

    uid = _fresh_uid() if os.geteuid() == 0 else None
    with tempfile.TemporaryDirectory(prefix="delib-sandbox-") as tmp:
        Path(tmp, "program.py").write_text(source, encoding="utf-8")
        if uid is not None:
            os.chown(tmp, uid, uid)
        wrap = isolation.wrapper(tmp, uid)
        config = {"dir": tmp, "uid": uid, "wrapped": bool(wrap), "command": [*wrap, sys.executable, *interpreter_args],
                  "token": secrets.token_hex(16), "tests": asdict(tests) if tests else None, "limits": asdict(limits)}
        supervisor = subprocess.Popen(
            [sys.executable, "-I", "-S", str(SUPERVISOR)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        try:
            out, _ = supervisor.communicate(json.dumps(config).encode(), timeout=limits.timeout_s + SUPERVISOR_GRACE_S)
        except subprocess.TimeoutExpired:
            out = b""
        return _result(out, supervisor, uid)


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
