"""One writer at a time for a directory that commands append to: run directories (``delib run``, ``evaluate``,
``experiment``), tree stores (``delib tree``, replays that add nodes) and rollout directories (``delib collect``).

Two writers at once would each append the work the other also does (two ``delib run``s into one ``--out``
wrote most episodes twice). A writer holds an exclusive ``fcntl.flock`` on ``LOCK_FILE`` inside the directory
for its lifetime, with its pid written in the file for the refusal message. The kernel drops the lock when
the process ends, however it ends (``kill -9`` included), so a dead writer never leaves a stale lock behind
and no cleanup is needed: the file stays, and the next writer takes the lock and writes its own pid.
Readers (reports, offline replays) take no lock. The lock file is not inherited by programs the writer
starts (``open`` makes it close-on-exec). POSIX systems only (``fcntl``).

It lives in ``outputs``, the layer that writes resumable outputs, below every package that writes them.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from deliberation.errors import DelibError, write_error

LOCK_FILE = ".writer.lock"
FIX = "wait for it to finish (or stop it), or use another --out"
"""What to do about a directory another process writes (the refusal's fix, unless a writer names its own)."""


class DirectoryLock:
    """This process's hold on a directory as its only writer; ``release`` (or the end of a ``with`` block, of
    the process, or of the last reference to it: its file closes) gives it up."""

    def __init__(self, file: IO[str]) -> None:
        self._file = file

    def release(self) -> None:
        """Give the directory up (closing the file drops the flock); releasing twice does nothing."""
        self._file.close()

    def __enter__(self) -> "DirectoryLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_directory(directory: Path, fix: str = FIX) -> DirectoryLock:
    """Become the only writer of ``directory`` (an existing folder), or a DelibError naming the process that is
    (its pid) and ``fix``; a lock file that cannot be written (a folder in its place, a full disk) is a
    DelibError naming the cause (``_refused``)."""
    try:
        file = open(directory / LOCK_FILE, "a+")
    except OSError as err:
        raise _refused(directory, err) from err
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        file.truncate(0)
        file.write(f"{os.getpid()}\n")
        file.flush()
    except BlockingIOError:
        file.close()
        raise _busy(directory, fix) from None
    except OSError as err:
        file.close()
        raise _refused(directory, err) from err
    return DirectoryLock(file)


def refuse_if_locked(directory: Path, fix: str = FIX) -> None:
    """A DelibError when another process writes ``directory``, writing nothing: a writer checks this before its
    slow start (loading a model), then takes the lock itself with ``lock_directory``."""
    try:
        file = open(directory / LOCK_FILE)
    except (FileNotFoundError, NotADirectoryError):  # never written with a lock (or not a folder: checked later)
        return
    except OSError as err:  # a folder in its place, a name too long
        raise _refused(directory, err) from err
    with file:
        try:  # shared: two writers checking at once do not refuse each other
            fcntl.flock(file.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _busy(directory, fix) from None


def _refused(directory: Path, err: OSError) -> DelibError:
    """The one line for a lock file the file system refuses: a folder where it goes needs removing by hand
    (it holds no lock); any other cause is named by ``errors.write_error``."""
    if isinstance(err, IsADirectoryError):
        return DelibError(f"{directory / LOCK_FILE} is a folder, so no writer can lock {directory}; remove it "
                          f"(rmdir {directory / LOCK_FILE}: a writer lock is a file) and rerun")
    return write_error(err, directory / LOCK_FILE)


def _busy(directory: Path, fix: str) -> DelibError:
    pid = _holder(directory)
    who = "this very process" if pid == str(os.getpid()) else "another process"
    return DelibError(f"{directory} is being written by {who} (pid {pid or 'unknown'}); {fix}")


def _holder(directory: Path) -> str:
    """The pid the lock's holder wrote in its file ("" for the instant between its lock and its write)."""
    try:
        pid = (directory / LOCK_FILE).read_bytes().strip()
    except OSError:
        pid = b""
    return pid.decode() if pid.isdigit() else ""  # ASCII digits, or nothing (a damaged file holds anything)
