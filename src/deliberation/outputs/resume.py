"""Whether an output made under some settings may be resumed under others: one rule per output kind.

An output (a run directory's ``config.json``, a tree store's or a rollout directory's ``manifest.json``)
records the settings that made it. A command resuming it compares those with its own under the kind's
``ResumeRule``: which settings must match (every setting but those that may change, or only those named),
which were added by a later version (an output written before holds the value every output then had), and
which are themselves settings (the engine, the backend options) compared entry by entry. One comparison and
one refusal message serve every kind, so a resumed run, tree build or collection says alike which settings
differ, with both values where they are short.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from deliberation.backends.base import SPEED_OPTIONS
from deliberation.config import RESUMES
from deliberation.errors import DelibError, make_folder, read_object
from deliberation.files import write_json_atomic
from deliberation.outputs.lock import DirectoryLock, lock_directory

_ABSENT = object()
SHOWN_WIDTH = 30
"""A differing value is shown in the refusal when its repr is at most this long (a question list is not)."""


@dataclass(frozen=True)
class ResumeRule:
    """What of an output's recorded settings must equal the settings a command resumes it with."""

    compared: tuple[str, ...] | None = None
    """The settings that must match, in the order a refusal names them; None: every recorded or asked one
    except ``may_change``."""
    may_change: frozenset[str] = frozenset()
    """Settings that change how fast or where the work goes, not what it computes (threads, the cache file)."""
    added_later: Mapping[str, Any] = field(default_factory=dict)
    """Settings a later version added, with the value every output written before them had."""
    nested: Mapping[str, "ResumeRule"] = field(default_factory=dict)
    """Settings that are settings themselves (a dict, or a list of dicts), compared under their own rule."""
    shown_as: Mapping[str, str] = field(default_factory=dict)
    """Settings a refusal names otherwise than the file's key (a renamed field: its flag's name today)."""

    def canonical(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The settings this rule compares, each as every version would record it (defaults of later versions
        filled in, nested settings canonical too): two outputs resume each other when these are equal."""
        keys = self.compared if self.compared is not None else sorted(set(settings) | set(self.added_later))
        found = {}
        for key in keys:
            value = settings[key] if key in settings else self.added_later.get(key, _ABSENT)
            if key in self.may_change or value is _ABSENT:
                continue
            rule = self.nested.get(key)
            if rule is not None and isinstance(value, Mapping):
                value = rule.canonical(value)
            elif rule is not None and _dicts(value):
                value = [rule.canonical(v) for v in value]
            found[key] = value
        return found

    def differing(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
        """(setting, old value, new value) for each setting on which ``old`` and ``new`` differ; a nested one
        is named by its path (``engine.temperature``, ``backend_options.members[1].model``)."""
        return self._differing(self.canonical(old), self.canonical(new), "")

    def _differing(self, old: Mapping[str, Any], new: Mapping[str, Any], prefix: str) -> list[tuple[str, Any, Any]]:
        found = []
        for key in self._order(old, new):
            a, b = old.get(key), new.get(key)  # a setting not recorded reads as None (none given)
            rule = self.nested.get(key)
            if rule is not None and isinstance(a, Mapping) and isinstance(b, Mapping):
                found += rule._differing(a, b, f"{prefix}{key}.")
            elif rule is not None and _dicts(a) and _dicts(b) and len(a) == len(b):
                for i, (x, y) in enumerate(zip(a, b)):
                    found += rule._differing(x, y, f"{prefix}{key}[{i}].")
            elif a != b:
                found.append((f"{prefix}{key}", a, b))
        return found

    def _order(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
        return list(self.compared) if self.compared is not None else sorted(set(old) | set(new))


BACKEND_OPTIONS = ResumeRule(may_change=SPEED_OPTIONS, nested={"members": ResumeRule(may_change=SPEED_OPTIONS)})
"""Backend options less the speed settings (``backends.base.SPEED_OPTIONS``), also in each member of a mixed
team (``members``): the rule of every output's recorded backend options (a run, a graph, a workflow)."""


def _dicts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, Mapping) for v in value)


def _shown(name: str, old: Any, new: Any) -> str:
    there, here = repr(old), repr(new)
    return name if max(len(there), len(here)) > SHOWN_WIDTH else f"{name} {there} there, {here} here"


def check_resume(where: Path, holds: str, old: Mapping[str, Any], new: Mapping[str, Any], rule: ResumeRule,
                 fix: str) -> None:
    """Refuse, in one line naming the differing settings and ``fix``, to resume the output at ``where`` (which
    ``holds`` what, e.g. "a run") with settings ``new`` that ``rule`` says differ from its recorded ``old``."""
    differing = rule.differing(old, new)
    if differing:
        shown = ", ".join(_shown(rule.shown_as.get(name, name), there, here) for name, there, here in differing)
        raise DelibError(f"{where} holds {holds} with other settings ({shown}); {fix}")


def with_resume(old: Mapping[str, Any], new: Mapping[str, Any], resumable: Iterable[str]) -> dict[str, Any] | None:
    """The recorded settings ``old`` with one more ``RESUMES`` entry: the ``resumable`` settings ``new`` gives
    otherwise than the latest record (the first command's, updated by each resume's entry); None when it gives
    none otherwise. The first command stays, so an output extended past its first settings (a larger --limit)
    still records how it came to hold what it holds."""
    latest = {**old}
    for entry in old.get(RESUMES, []):
        latest.update(entry)
    changed = {k: new.get(k) for k in sorted(resumable) if new.get(k) != latest.get(k)}
    return {**old, RESUMES: [*old.get(RESUMES, []), changed]} if changed else None


def open_output(directory: Path, settings: Mapping[str, Any], rule: ResumeRule, holds: str, fix: str,
                file: str, read: Callable[[Path], Mapping[str, Any]] | None = None,
                empty: Callable[[Path], bool] = lambda _: False) -> DirectoryLock:
    """Become the one writer of the output ``directory`` (made if missing) until the returned lock is
    released; then record ``settings`` in its ``file`` if it has none, or refuse (``check_resume``, naming
    ``holds`` and ``fix``) an output recorded under settings ``rule`` says differ. ``read`` reads the recorded
    settings (default: the file as a JSON object). An output ``empty`` says holds no result yet (a command
    that failed at its first question) takes any settings, as a run directory with no episode does: they
    replace the record. A new output kind calls this once: the folder, the lock, the record and the refusal
    are all here."""
    writer = lock_directory(make_folder(directory))
    try:
        if not check_recorded(directory, settings, rule, holds, fix, file, read, empty):
            write_json_atomic(directory / file, settings)
    except BaseException:
        writer.release()
        raise
    return writer


def check_recorded(directory: Path, settings: Mapping[str, Any], rule: ResumeRule, holds: str, fix: str,
                   file: str, read: Callable[[Path], Mapping[str, Any]] | None = None,
                   empty: Callable[[Path], bool] = lambda _: False) -> bool:
    """Whether the output ``directory`` records settings in ``file`` that bind a resume, refusing
    (``check_resume``) one recorded under settings ``rule`` says differ from ``settings``: ``open_output``'s
    check, also made before a model loads (with a rule that leaves out what only the loaded backend knows). An
    output ``empty`` says holds no result yet binds nothing (``open_output``)."""
    path = directory / file
    if not path.exists() or empty(directory):
        return False
    old = read(path) if read is not None else read_object(path, f"delete it, or {fix}")
    check_resume(directory, holds, old, settings, rule, fix)
    return True


def finished_already(path: Path, holds: str, recorded: Callable[[Path], Mapping[str, Any]], asked: Mapping[str, Any],
                     rule: ResumeRule, verb: str) -> bool:
    """Whether ``path`` holds the finished output (``holds``: "a graph") of a learning command asked again:
    True when its recorded settings (``recorded`` reads them) are ``asked`` under ``rule``, so the command has
    nothing to do; refused in one line, naming the differing settings, when they differ or the file is no such
    output, since finished runs may have used it: it is never overwritten. ``verb``: the command's ("optimise")."""
    if not path.is_file():
        return False
    fix = f"pass another --out, or delete it to {verb} again"
    try:
        record = recorded(path)
    except DelibError as err:  # its problem, with this command's fix, not a run's
        raise DelibError(f"{str(err).split('; ')[0]}, in the way of this command; {fix}") from err
    check_resume(path, holds, record, asked, rule, fix)
    return True
