"""The one exception type users see: a one-line message that names the problem and the fix; and the checks
of user input every command shares, so each kind of bad input reads the same everywhere: counts, numbers,
text files the user wrote (UTF-8, a byte order mark allowed) and paths to write to."""

import math
import os
import sys
from pathlib import Path
from typing import Callable


class DelibError(Exception):
    """A user-facing error. ``str(err)`` is one line; the CLI prints it and exits non-zero."""


class Interrupted(DelibError):
    """A backend call stopped early because the run was interrupted (``backends.base.interrupt``)."""

    def __init__(self) -> None:
        super().__init__("this backend was interrupted (Ctrl-C); create a new one to generate again")


def exit_status(script: Callable[[], None]) -> int:
    """Run a script beside the CLI (the experiments' helpers): 0, or 2 with a DelibError's one line on stderr,
    so such a script refuses bad input as ``delib`` does."""
    try:
        script()
    except DelibError as err:
        print(err, file=sys.stderr)
        return 2
    return 0


def install_hint(package: str, extra: str) -> str:
    """The message for a missing optional dependency."""
    return f"{package} is not installed; install it with: pip install 'deliberation[{extra}]'"


def require_at_least(name: str, value: int, minimum: int = 1, why: str = "") -> None:
    """Refuse a count below ``minimum``: the one wording of every "how many" check (agents, workers,
    concurrency, ...), so the CLI's messages read alike. ``why`` is appended after the bound."""
    if value < minimum:
        reason = f" {why}" if why else ""
        raise DelibError(f"{name} must be at least {minimum}{reason} (got {value})")


def require_number(name: str, value: float, low: float, high: float | None = None, why: str = "") -> None:
    """Refuse a value that is not a finite number from ``low`` to ``high`` (None: no upper bound): the one
    check of every float setting. NaN passes any range check written as ``value < low`` (every comparison
    with NaN is False) and strict JSON (config.json) cannot hold NaN or infinity, so both are refused here."""
    if not (math.isfinite(value) and low <= value and (high is None or value <= high)):
        bounds = f", at least {low}" if high is None else f", from {low} to {high}"
        reason = f" {why}" if why else ""
        raise DelibError(f"{name} must be a finite number{bounds}{reason} (got {value})")


def decode_text(data: bytes, origin: str) -> str:
    """The UTF-8 text of a file the user wrote (``origin``: its name, or ``file:line``), a leading byte order
    mark dropped (editors on Windows write one); other bytes are a DelibError naming where they are."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DelibError(f"{origin} is not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start}); "
                         "save it as UTF-8 (e.g. iconv -f latin1 -t utf-8) and rerun") from err


def read_user_text(path: Path, what: str) -> str:
    """The text of the file ``path`` the user named as ``what`` (``experiment file``), as ``decode_text``
    reads it; one that cannot be read is a DelibError naming it."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise DelibError(f"cannot read {what} {path}: {err.strerror or err}") from err
    return decode_text(data, str(path))


def writable_folder(path: str | os.PathLike, flag: str) -> Path:
    """``path`` if a folder can be written there (it exists as a folder or can be made), else a DelibError
    naming the flag, before anything is written: an empty path would write into the current folder."""
    target = _named(path, flag, "folder")
    if os.path.exists(target) and not os.path.isdir(target):
        raise DelibError(f"{flag} {target} is a file; name a folder (a new one, or one to resume)")
    _check_writable(target, flag)
    return target


def writable_file(path: str | os.PathLike, flag: str, example: str) -> Path:
    """``path`` if a file can be written there (``example``: a file name the message suggests in a folder)."""
    target = _named(path, flag, "file")
    if os.path.isdir(target):
        raise DelibError(f"{flag} {target} is a folder; name a file, e.g. {target / example}")
    _check_writable(target, flag)
    return target


def _named(path: str | os.PathLike, flag: str, kind: str) -> Path:
    if not os.fspath(path).strip():
        raise DelibError(f"{flag} is empty; name a {kind} to write to")
    return Path(path)


def _check_writable(target: Path, flag: str) -> None:
    """Refuse a path below a file, or whose nearest existing folder (the file and its folder, when the
    target exists as a file) this process may not write in."""
    existing = next(p for p in (target, *target.parents) if os.path.exists(p))
    if existing != target and not os.path.isdir(existing):
        raise DelibError(f"{flag} {target} lies below {existing}, which is a file; choose a path outside it")
    needed = [existing] if os.path.isdir(existing) else [existing, existing.parent]
    denied = next((p for p in needed if not os.access(p, os.W_OK)), None)
    if denied is not None:
        raise DelibError(f"{flag} {target}: {denied} is not writable (read-only or another user's); choose a "
                         "place you can write to")
