"""Writing files so that nothing is half-written: atomic JSON and text (a temporary file and a rename),
durable appends (fsync, cut back on a failed write), and append-only gzip JSON lines, the format of rollout
files and tree stores, read back with a torn last record cut off or refused.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import zlib
from pathlib import Path
from typing import Any, Callable, Iterator

from deliberation.errors import BadText, DelibError, make_folder, parse_json, utf8, write_error
from deliberation.types import json_type, strict_json


@contextlib.contextmanager
def setting_up(folder: Path) -> Iterator[Path]:
    """``folder`` made for a job that keeps its state there (a response cache), around the job's setup: when
    the setup fails (a backend refused before any call), the folders this made go again (the highest of them
    with what is below), so a refused command leaves nothing behind. Only the setup belongs inside: a job that
    fails later keeps what it wrote."""
    made = next((p for p in reversed((folder, *folder.parents)) if not p.exists()), None)  # the highest new
    make_folder(folder)
    try:
        yield folder
    except BaseException:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON through a temporary file and a rename, so readers never see half a file."""
    write_text_atomic(path, strict_json(data, indent=2, sort_keys=True) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) through a temporary file and a rename, so readers never see half a file; a
    write the file system refuses (a full disk) leaves the old file and no temporary one, and is a DelibError
    naming the cause (``errors.write_error``)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as err:
        with contextlib.suppress(OSError):  # nothing of ours to remove (a name too long, a folder)
            tmp.unlink(missing_ok=True)
        raise write_error(err, path) from err


def append_durably(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path`` (made if missing) and fsync it, so a killed writer tears at most this
    append. A write the file system refuses (a full disk) is cut off again, so the file ends where it ended,
    and is a DelibError naming the cause (``errors.write_error``)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    except OSError as err:
        raise write_error(err, path) from err
    try:
        size = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError as err:
            os.ftruncate(fd, size)
            raise write_error(err, path) from err
    finally:
        os.close(fd)


# --- append-only gzip JSONL (rollout files, deliberation trees) --------------------------------------


def _members(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(end offset, decompressed bytes) of each complete gzip member of ``data``; stops at a torn last one
    (a writer killed mid-append: the stream just ends) and raises zlib.error where the bytes are not gzip."""
    pos = 0
    while pos < len(data):
        d = zlib.decompressobj(wbits=31)
        chunk = d.decompress(data[pos:])
        if not d.eof:
            return
        pos = len(data) - len(d.unused_data)
        yield pos, chunk


def gzip_members(path: Path) -> Iterator[tuple[int, bytes]]:
    """(end offset, decompressed bytes) of each complete gzip member; stops at a torn or corrupt one."""
    try:
        yield from _members(path.read_bytes())
    except zlib.error:
        return


def read_gzip_lines(path: Path, command: str, repair: bool = False,
                    parse: Callable[[dict[str, Any]], Any] | None = None) -> list[Any]:
    """Every line of every gzip member of an append-only file that ``command`` writes, each a JSON object, as
    ``parse`` (a record's reader) makes it. A torn last member (a killed writer's) is cut off with ``repair``,
    else refused; bytes that are not gzip JSON lines are always refused, and so is JSON of another shape (not
    an object, or ``parse`` raising KeyError, TypeError or ValueError), by line number. Each refusal is a
    DelibError naming the file, where in it and the fix: nothing is read partially."""
    if not path.exists():
        return []
    if path.is_dir():
        raise DelibError(f"{path} is a folder, not the file `{command}` writes; restore the file from a copy or "
                         f"rerun `{command}` into a new --out")
    rows: list[tuple[int, Any]] = []  # (line number, its JSON)
    good = seen = 0  # end of the last member read whole, lines read
    try:
        for end, chunk in _members(path.read_bytes()):
            lines = utf8(chunk).splitlines()
            rows += [(seen + n, parse_json(line)) for n, line in enumerate(lines, start=1) if line.strip()]
            good, seen = end, seen + len(lines)
    except (zlib.error, BadText) as err:
        raise DelibError(f"{path} is corrupt after byte {good} ({' '.join(str(err).split())}: not what "
                         f"`{command}` writes); restore it from a copy or rerun `{command}` into a new --out") from err
    size = path.stat().st_size
    if good < size and not repair:
        raise DelibError(f"{path} ends in an incomplete record (bytes {good}-{size}: `{command}` killed while "
                         f"writing, or still running); rerun that `{command}` command to cut it off and finish")
    if good < size:
        with open(path, "r+b") as f:
            f.truncate(good)
    return [_gzip_record(path, command, number, row, parse) for number, row in rows]


def _gzip_record(path: Path, command: str, number: int, row: Any,
                 parse: Callable[[dict[str, Any]], Any] | None) -> Any:
    try:
        if not isinstance(row, dict):
            raise TypeError(f"a JSON {json_type(row)}, not an object")
        return row if parse is None else parse(row)
    except (KeyError, TypeError, ValueError) as err:
        why = f"no field {err.args[0]!r}" if isinstance(err, KeyError) else " ".join(str(err).split())
        raise DelibError(f"{path} line {number} is not a record `{command}` writes ({why}); restore the file "
                         f"from a copy or rerun `{command}` into a new --out") from err


def append_gzip_line(path: Path, row: dict[str, Any]) -> None:
    """Append one JSON line as its own gzip member, durably (``append_durably``: a killed writer tears at most
    that member, a full disk none)."""
    append_durably(path, gzip.compress((strict_json(row, separators=(",", ":")) + "\n").encode()))
