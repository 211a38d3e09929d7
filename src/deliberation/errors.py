"""The one exception type users see: a one-line message that names the problem and the fix; and the checks
of user input every command shares, so each kind of bad input reads the same everywhere: counts, numbers,
text and JSON (the project's one policy for text that is not clean UTF-8, below), paths to write to and
writes the file system refuses."""

import errno
import functools
import json
import math
import numbers
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Sequence


class DelibError(Exception):
    """A user-facing error. ``str(err)`` is one line; the CLI prints it and exits non-zero.

    It pickles as it was made (its constructor's arguments, not its message), so a refusal whose constructor
    takes fields or nothing (``Interrupted``) reaches a Ray driver from its worker whole, not as a TypeError."""

    def __new__(cls, *args: Any, **kwargs: Any) -> "DelibError":
        made = super().__new__(cls, *args)
        made._made_with = (args, kwargs)
        return made

    def __reduce__(self) -> tuple:
        args, kwargs = self._made_with
        return (functools.partial(type(self), **kwargs) if kwargs else type(self)), args


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
    return f"{package} is not installed; install it from the repository with: pip install -e '.[{extra}]'"


def require_at_least(name: str, value: int, minimum: int = 1, why: str = "", maximum: int | None = None) -> None:
    """Refuse a count below ``minimum`` (or above ``maximum``), or one that is no whole number (a Python
    caller's or an experiment file's 3.5, or "3"): the one wording of every "how many" check (agents, workers,
    concurrency, a cap on calls, ...), so the CLI's messages read alike. ``why`` is appended after the bound."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise DelibError(f"{name} must be a whole number (got {value!r})")
    if value < minimum or (maximum is not None and value > maximum):
        reason = f" {why}" if why else ""
        bound = f"at least {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise DelibError(f"{name} must be {bound}{reason} (got {value})")


def repeated(items: Sequence[Any], key: Callable[[Any], Any] = lambda item: item) -> Any:
    """The first of ``items`` whose ``key`` an earlier one has (a name given twice), or None."""
    seen = []
    for item in items:
        if key(item) in seen:
            return item
        seen.append(key(item))
    return None


def require_number(name: str, value: float, low: float, high: float | None = None, why: str = "") -> None:
    """Refuse a value that is not a finite number from ``low`` to ``high`` (None: no upper bound): the one
    check of every float setting. NaN passes any range check written as ``value < low`` (every comparison
    with NaN is False) and strict JSON (config.json) cannot hold NaN or infinity, so both are refused here, as
    is a value that is no number (a Python caller's "0.7")."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DelibError(f"{name} must be a number (got {value!r})")
    if not (math.isfinite(value) and low <= value and (high is None or value <= high)):
        bounds = f", at least {low}" if high is None else f", from {low} to {high}"
        reason = f" {why}" if why else ""
        raise DelibError(f"{name} must be a finite number{bounds}{reason} (got {value})")


# --- text: what the project does with text that is not clean UTF-8 ----------------------------------------
# One policy for every reader and writer: such text (bytes that do not decode as UTF-8; a lone surrogate,
# which is half of a character: a JSON escape such as \ud83d from an emoji cut in two, or a byte that a
# terminal or a file name holds and UTF-8 does not decode, which Python carries as \udce9) is refused where
# it enters, naming where it is and the fix. It is never replaced: a replaced character would change a
# question, an answer or a path silently, and what is written from it would no longer match its source.
# JSON is read strictly by the same rule (``parse_json``).

_SURROGATE = re.compile("[\ud800-\udfff]")
_MAYBE_SURROGATE = re.compile("[\ud800-\udfff]|\\\\u[dD][89a-fA-F]")
"""A surrogate, or a JSON escape that may spell one: only then is parsed JSON checked for one."""
USER_JSON_DEPTH = 32
"""How deep the JSON of a file a user writes may nest (a benchmark record nests 3 levels): its values are
kept as they are, and code that walks them must not run out of stack."""


class BadText(DelibError, ValueError):
    """Text or JSON refused by the policy above. Its message says what is wrong and reads after "is" (``not
    UTF-8 text (byte 0xe9 at offset 3)``); a reader that knows where the text came from catches it (a
    ValueError, as a reader catches json's errors) and names the file, line and fix."""


def printable(text: str) -> str:
    """``text`` for a message: a byte that is not UTF-8 written ``\\xe9``, a lone surrogate ``\\ud83d``, so the
    message itself can always be printed."""
    return _SURROGATE.sub(lambda m: _escape(ord(m.group())), text)


def _escape(code: int) -> str:
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def _unclean(code: int, where: str = "", escaped: bool = False) -> str:
    """What the surrogate ``code`` in a text is, in words (``where``: e.g. " at character 3"; ``escaped``: it
    was spelled as a JSON escape, so it is no byte that failed to decode)."""
    if 0xDC80 <= code <= 0xDCFF and not escaped:  # how Python carries a byte that did not decode (surrogateescape)
        return f"not UTF-8 text (byte 0x{code - 0xDC00:02x}{where})"
    return f"not valid Unicode (a lone surrogate \\u{code:04x}{where}: half of a character, e.g. an emoji cut in two)"


def utf8(data: bytes, bom: bool = False) -> str:
    """``data`` as UTF-8 text (``bom``: a leading byte order mark dropped, for files a user wrote: editors on
    Windows write one); BadText naming the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as err:
        at = err.start + len(data) - len(err.object)  # utf-8-sig reports offsets after the mark
        raise BadText(f"not UTF-8 text (byte 0x{data[at]:02x} at offset {at})") from None


def clean_text(text: str) -> str:
    """``text`` when it holds no surrogate (see above), else BadText naming the first and where it is."""
    found = _SURROGATE.search(text)
    if found:
        raise BadText(_unclean(ord(found.group()), f" at character {found.start() + 1}"))
    return text


def parse_json(text: str, max_depth: int | None = None) -> Any:
    """The value of the JSON ``text``, read as every reader of the project reads JSON: strict JSON (no NaN or
    Infinity, which no file the project writes holds), numbers Python can read (at most 4300 digits), nesting
    the parser can follow (and at most ``max_depth`` levels where given: ``USER_JSON_DEPTH`` for a user's
    file) and text with no lone surrogate; BadText says what is wrong."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except BadText:
        raise
    except json.JSONDecodeError as err:
        where = f"line {err.lineno} column {err.colno}" if err.lineno > 1 else f"column {err.colno}"
        raise BadText(f"malformed JSON ({err.msg} at {where})") from None
    except RecursionError:
        raise BadText("JSON nested too deeply to read") from None
    except ValueError:  # an integer of more digits than int() reads
        raise BadText(f"JSON holding a number of more than {sys.get_int_max_str_digits()} digits") from None
    check_json_text(text, value)
    if max_depth is not None and _depth(value, max_depth) > max_depth:
        raise BadText(f"JSON nested more than {max_depth} levels deep")
    return value


def check_json_text(text: str, value: Any) -> None:
    """BadText when ``value`` (the JSON ``text`` spells it, read or to be written) holds a lone surrogate: one
    can hide behind an escape (``\\ud83d``), so the text is searched for one only where it may spell one."""
    if _MAYBE_SURROGATE.search(text):
        found = _SURROGATE.search(json.dumps(value, ensure_ascii=False))
        if found:
            raise BadText(f"JSON holding text that is {_unclean(ord(found.group()), escaped=True)}")


def _no_constant(name: str) -> Any:
    raise BadText(f"JSON holding {name}, which strict JSON does not allow")


def _depth(value: Any, limit: int) -> int:
    """How deep ``value`` nests (a scalar: 0), counted level by level, without recursion, up to ``limit`` + 1."""
    level, depth = [value], 0
    while depth <= limit:
        level = [v for v in level if isinstance(v, (dict, list))]
        if not level:
            break
        depth += 1
        level = [x for v in level for x in (v.values() if isinstance(v, dict) else v)]
    return depth


def decode_text(data: bytes, origin: str) -> str:
    """The UTF-8 text of a file the user wrote (``origin``: its name, or ``file:line``), as ``utf8`` reads it;
    other bytes are a DelibError naming where they are."""
    try:
        return utf8(data, bom=True)
    except BadText as err:
        raise DelibError(f"{origin} is {err}; save it as UTF-8 (e.g. iconv -f latin1 -t utf-8) and rerun") from None


def read_user_text(path: Path, what: str) -> str:
    """The text of the file ``path`` the user named as ``what`` (``experiment file``), as ``decode_text``
    reads it; one that cannot be read is a DelibError naming it."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise DelibError(f"cannot read {what} {path}: {err.strerror or err}") from err
    return decode_text(data, str(path))


REWRITTEN = "restore it, or delete it and rerun the command that wrote it"
"""The fix for a JSON file the project wrote that cannot be read."""


def read_json(path: Path, fix: str = REWRITTEN) -> Any:
    """The JSON file ``path`` (UTF-8, a byte order mark allowed: files such as --rule may be edited by hand),
    read as ``parse_json`` reads JSON, or a DelibError naming it and ``fix``."""
    try:
        return parse_json(utf8(path.read_bytes(), bom=True))
    except OSError as err:
        raise DelibError(f"cannot read {path}: {err.strerror or err}; {fix}") from err
    except BadText as err:
        raise DelibError(f"{path} is {err}; {fix}") from None


def read_object(path: Path, fix: str = REWRITTEN) -> dict[str, Any]:
    """A JSON file holding an object (cell.json, a manifest, an output's recorded settings), or a DelibError
    naming it."""
    data = read_json(path, fix)
    if not isinstance(data, dict):
        raise DelibError(f"{path} holds a JSON {type(data).__name__}, not an object; {fix}")
    return data


def check_arguments(argv: list[str]) -> None:
    """Refuse a command-line argument that is not clean UTF-8 (a Latin-1 terminal, a file name holding such
    a byte), naming it and the fix, before it reaches a question, a record or a path."""
    for arg in argv:
        try:
            clean_text(arg)
        except BadText as err:
            raise DelibError(f"argument '{printable(arg)}' is {err}; type it in a UTF-8 terminal (e.g. LANG=C.UTF-8), "
                             "and rename a file or folder so named (e.g. convmv -f latin1 -t utf-8)") from None


def writable_folder(path: str | os.PathLike, flag: str) -> Path:
    """``path`` if a folder can be written there (it exists as a folder or can be made), else a DelibError
    naming the flag, before anything is written: an empty path would write into the current folder."""
    target = _named(path, flag, "folder")
    if os.path.exists(target) and not os.path.isdir(target):
        raise DelibError(f"{flag} {target} is a file; name a folder")
    _check_writable(target, flag)
    return target


def writable_file(path: str | os.PathLike, flag: str, example: str) -> Path:
    """``path`` if a file can be written there (``example``: a file name the message suggests in a folder)."""
    target = _named(path, flag, "file")
    if os.path.isdir(target):
        raise DelibError(f"{flag} {target} is a folder; name a file, e.g. {target / example}")
    _check_writable(target, flag)
    return target


def existing(path: str | os.PathLike, what: str, fix: str, folder: bool = False, inside: str = "") -> Path:
    """``path``, named by the user to be read as ``what`` (a file; with ``folder`` a folder), or a DelibError
    naming the problem and ``fix``: an empty name (it would read the current folder), nothing there, or the
    other kind. ``inside`` (a name or glob pattern) is what the folder holds: a folder given for a file that
    holds one such file is told to pass it; such a file given for its folder, to pass the folder."""
    name = os.fspath(path)
    if not name.strip():
        raise DelibError(f"the {what}'s path is empty; {fix}")
    target = Path(name)
    if not target.exists():
        raise DelibError(f"{what} {target} not found; {fix}")
    if folder and not target.is_dir():
        shown = f"pass its folder, {target.parent}" if inside and target.match(inside) else fix
        raise DelibError(f"{what} {target} is a file, not a folder; {shown}")
    if not folder and target.is_dir():
        held = [p for p in target.glob(inside) if p.is_file()] if inside else []
        shown = f"pass the file in it, {held[0]}" if len(held) == 1 else fix
        raise DelibError(f"{what} {target} is a folder, not a file; {shown}")
    return target


def _named(path: str | os.PathLike, flag: str, kind: str) -> Path:
    """``path`` as a Path, refused when empty or not clean UTF-8 (``clean_text``: it goes into records)."""
    if not os.fspath(path).strip():
        raise DelibError(f"{flag} is empty; name a {kind} to write to")
    try:
        clean_text(os.fspath(path))
    except BadText as err:
        raise DelibError(f"{flag} {printable(os.fspath(path))} is {err}; name a {kind} in UTF-8") from None
    return Path(path)


def _check_writable(target: Path, flag: str) -> None:
    """Refuse a path below a file, with a name longer than the file system allows, or whose nearest existing
    folder (the file and its folder, when the target exists as a file) this process may not write in."""
    existing = next(p for p in (target, *target.parents) if os.path.exists(p))
    if existing != target and not os.path.isdir(existing):
        raise DelibError(f"{flag} {target} lies below {existing}, which is a file; choose a path outside it")
    _check_lengths(target, existing, flag)
    needed = [existing] if os.path.isdir(existing) else [existing, existing.parent]
    denied = next((p for p in needed if not os.access(p, os.W_OK)), None)
    if denied is not None:
        raise DelibError(f"{flag} {target}: {denied} is not writable (read-only or another user's); choose a "
                         "place you can write to")


def _check_lengths(target: Path, existing: Path, flag: str) -> None:
    """Refuse a path with a name (of the part not yet made) or a whole longer than the file system of
    ``existing`` (the nearest folder that exists) allows: made, it would fail half way."""
    folder = existing if os.path.isdir(existing) else existing.parent
    longest = max(target.parts[len(existing.parts):], key=_bytes, default="")
    name_max, path_max = _limit(folder, "PC_NAME_MAX", 255), _limit(folder, "PC_PATH_MAX", 4096)
    if _bytes(longest) > name_max:
        raise DelibError(f"{flag} {target}: the name {longest[:24]}... is {_bytes(longest)} bytes, more than the "
                         f"{name_max} this file system allows for one name; choose a shorter name")
    if _bytes(os.path.abspath(target)) >= path_max:
        raise DelibError(f"{flag} {target} is longer than the {path_max} bytes this file system allows for a path; "
                         "choose a shorter one")


def _bytes(name: str | os.PathLike) -> int:
    return len(os.fsencode(name))


def _limit(folder: Path, name: str, default: int) -> int:
    """A file system limit (``os.pathconf``) of ``folder``, ``default`` where the system does not say."""
    try:
        return os.pathconf(folder, name)
    except (OSError, ValueError):
        return default


# --- writes the file system refuses -----------------------------------------------------------------------

_CAUSES = {
    errno.ENOSPC: ("no space is left on its disk", "free space there (or write elsewhere)"),
    errno.EDQUOT: ("your disk quota is used up", "free space there (or write elsewhere)"),
    errno.ENAMETOOLONG: ("a name in it is longer than the file system allows", "choose a shorter name"),
    errno.EISDIR: ("a folder stands where the file goes", "move that folder away"),
    errno.ENOTDIR: ("a file stands where a folder of its path goes", "move that file away"),
    errno.EACCES: ("it is not writable (another user's?)", "choose a place you can write to"),
    errno.EPERM: ("it is not writable (another user's?)", "choose a place you can write to"),
    errno.EROFS: ("its file system is read-only", "choose a place you can write to"),
}


def make_folder(path: Path) -> Path:
    """``path`` made as a folder (with its parents) if it is not one yet, or a DelibError naming why not."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise write_error(err, path) from err
    return path


def write_error(err: OSError, path: str | os.PathLike) -> DelibError:
    """The one line for a write the file system refused (``path``: what was being written): the cause in words
    (no space left, a name too long, a folder where a file goes, ...) and the fix."""
    cause, fix = _CAUSES.get(err.errno or 0, (err.strerror or str(err), "check the disk"))
    return DelibError(f"cannot write {printable(os.fspath(path))}: {cause}; {fix}, then rerun")
