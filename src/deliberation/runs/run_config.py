"""A run's config.json (docs/design.md, section Run directories): what the run was asked (``RunSpec``) and what
it recorded besides, as one typed record, ``RunConfig``, with one writer (``config_record``, what a run writes)
and one reader (``read_run_config``, what the report reads).

The file keeps the entries it always had, all at its top level: the spec's settings under their names, the
engine the method ran (``engine_used``), the method's record (``methods.base.MethodRecord``) and, once the run
was resumed, ``resumes``. A file written before a setting existed reads as what it meant: the value
``RUN_RESUME`` gives every run made before it (a method option's default, the standalone prompts), or, for a
setting that may change on a resume (``concurrency``), its default; it is written back without it, and top-level
entries this version does not know are kept, so every file this or an earlier version wrote reads and writes
back byte for byte (a later version's unknown keys nested in ``engine`` would be dropped). ``RunDir`` compares and
extends the file as JSON (``RunConfig.to_dict``), under ``RUN_RESUME``.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from deliberation import methods
from deliberation.config import EngineConfig, Workload
from deliberation.errors import DelibError, read_object
from deliberation.methods.base import MethodConfig, MethodRecord
from deliberation.methods.options import MethodOptions
from deliberation.outputs.resume import ResumeRule
from deliberation.runs.directory import RUN_RESUME
from deliberation.types import ADDED_LATER, from_json, to_json

FIX = "delete it and rerun the command that made the run (it is rewritten, the episodes kept)"
"""What to do about a config.json that cannot be read."""


@dataclass(frozen=True)
class RunSpec(MethodOptions, Workload):
    """One cell of an evaluation: a method with its options on a workload; saved as config.json (the method
    options under their names, methods/options.py)."""

    method: str = field(kw_only=True)
    trees: str | None = None
    """The tree store a replay read its outcomes from (``delib evaluate``); None for a live run."""

    def __post_init__(self) -> None:
        Workload.__post_init__(self)
        MethodOptions.__post_init__(self)

    def method_config(self) -> MethodConfig:
        return MethodConfig(benchmark=self.benchmark, engine=self.engine, **self.method_options())


@dataclass(frozen=True)
class RunConfig:
    """A run's config.json (see the module docstring)."""

    spec: RunSpec
    """The run as asked: the workload, the method and its options (the engine as asked, not as run)."""
    used: MethodRecord = MethodRecord()
    """What the method records that it ran (mpdf: the checkpoint and its content hash)."""
    engine_used: EngineConfig | None = field(default=None, metadata=ADDED_LATER)
    """The engine the method ran, its override applied (no rounds for self-consistency, one agent for cot);
    None in a run made before it was recorded."""
    resumes: tuple[Mapping[str, Any], ...] | None = field(default=None, metadata=ADDED_LATER)
    """What each later command that resumed the run changed (``RunDir`` records it); None: never resumed."""
    absent: frozenset[str] = frozenset()
    """The spec's settings the file does not record (it was written before they existed), a nested one by its
    path (``engine.prompts``): read as their values then, left out when written back."""
    others: Mapping[str, Any] = field(default_factory=dict)
    """Top-level entries this version does not know: kept, and written back."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of config.json (``config_of`` reads it back equal)."""
        entries = {name: value for name, value in to_json(self).items() if name not in _NOT_ENTRIES}
        return {**self.others, **_without(to_json(self.spec), self.absent), **to_json(self.used), **entries}

    def records(self, setting: str) -> bool:
        """Whether the file records ``setting`` of the spec (a nested one by its path, ``engine.prompts``)."""
        return not any(setting == name or setting.startswith(f"{name}.") for name in self.absent)


_NOT_ENTRIES = frozenset({"spec", "used", "absent", "others"})
"""``RunConfig``'s fields that are no entry of config.json: records whose entries sit at its top level, and what
the reader noted about the file."""

NOTHING_RECORDED = RunConfig(RunSpec(method="?", benchmark="?", split="?", backend="?"),
                             absent=frozenset(f.name for f in fields(RunSpec)))
"""What a run directory whose config.json was deleted (the next run into it writes its own) records: nothing;
its method, benchmark, split and backend read as unknown (``?``)."""


def config_record(spec: RunSpec) -> RunConfig:
    """What a run of ``spec`` writes to config.json: the spec (the engine as asked), the engine the method ran
    (no rounds for self-consistency, one agent for cot), and what the method records (mpdf: which policy ran)."""
    method = methods.get(spec.method)
    return RunConfig(spec, method.record(spec.method_config()), method.engine(spec.engine))


def read_run_config(path: Path) -> RunConfig:
    """The config.json at ``path``; a damaged file, or one of another shape (an entry missing, a text where a
    number belongs), is a one-line DelibError naming it, the entry and the fix."""
    data = read_object(path, FIX)
    try:
        return config_of(data)
    except (TypeError, ValueError, DelibError) as err:  # DelibError: a setting the spec refuses
        raise DelibError(f"{path} is not a run's config.json ({err}); {FIX}") from None


def config_of(data: Mapping[str, Any]) -> RunConfig:
    """The record of config.json's JSON object ``data``; a TypeError or ValueError names the entries that are
    missing, or one of another type."""
    settings, absent, missing = _complete(data, RunSpec, RUN_RESUME)
    if missing:
        raise ValueError(f"it lacks {', '.join(missing)}")
    own = {name for name in _names(RunConfig) if name not in _NOT_ENTRIES}
    record = from_json(RunConfig, {**_entries(data, own), "spec": settings,
                                   "used": _entries(data, _names(MethodRecord))})
    known = own | _names(RunSpec) | _names(MethodRecord)
    return replace(record, absent=frozenset(absent), others={k: v for k, v in data.items() if k not in known})


def _complete(data: Mapping[str, Any], cls: type, rule: ResumeRule,
              prefix: str = "") -> tuple[dict[str, Any], list[str], list[str]]:
    """``data``'s entries for the record ``cls``, each setting it lacks filled in as ``rule`` reads a run made
    before it existed (``added_later``; a setting that ``may_change`` keeps its default); the names of those
    filled in; and the names of the settings it lacks that every version records. Nested records are completed
    too, their settings named by their path (``engine.prompts``)."""
    hints = typing.get_type_hints(cls)
    found: dict[str, Any] = {}
    filled: list[str] = []
    missing: list[str] = []
    for f in fields(cls):
        name, inner = prefix + f.name, rule.nested.get(f.name)
        if f.name in data and inner is not None and is_dataclass(hints[f.name]) and isinstance(data[f.name], Mapping):
            found[f.name], deeper, lacking = _complete(data[f.name], hints[f.name], inner, f"{name}.")
            filled, missing = filled + deeper, missing + lacking
        elif f.name in data:
            found[f.name] = data[f.name]
        elif f.name in rule.added_later:
            found[f.name] = rule.added_later[f.name]
            filled.append(name)
        else:
            (filled if f.name in rule.may_change else missing).append(name)  # filled: left at its default
    return found, filled, missing


def _without(entries: Mapping[str, Any], names: frozenset[str]) -> dict[str, Any]:
    """``entries`` less ``names`` (a nested one by its path: ``engine.prompts``)."""
    kept = {}
    for key, value in entries.items():
        inner = frozenset(n.removeprefix(f"{key}.") for n in names if n.startswith(f"{key}."))
        if key not in names:
            kept[key] = _without(value, inner) if inner else value
    return kept


def _names(cls: type) -> set[str]:
    return {f.name for f in fields(cls)}


def _entries(data: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k in names}
