"""Rollout files: gzip JSONL, one line per question, beside a manifest.json.

Line: ``{"model", "benchmark", "split", "example_id", "decisions": [...]}``. Each question is appended as its
own gzip member and fsynced, so a killed collection loses at most the question in flight; a torn last
member is cut off on reopen. The manifest (``RolloutManifest``) names the model, seeds, feature version and
the exact command; reading refuses rollouts whose feature version differs from this build's. One collection
writes a directory at a time (``open_collection``: ``.writer.lock``, see ``deliberation.outputs.lock``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from deliberation.config import Selection
from deliberation.engine.state import FEATURE_NAMES, FEATURE_VERSION
from deliberation.errors import BadText, DelibError, parse_json, utf8
from deliberation.files import read_gzip_lines, write_json_atomic
from deliberation.outputs.kinds import ROLLOUT_DIR, ROLLOUTS, other_kind, refuse_other_kind
from deliberation.outputs.lock import DirectoryLock
from deliberation.outputs.resume import ResumeRule, check_recorded, open_output, with_resume
from deliberation.types import ADDED_LATER, Decision, formerly, from_json, key, renamed, to_json

MANIFEST = "manifest.json"
ALL_QUESTIONS = to_json(Selection())
MANIFEST_FIX = "restore it from a copy, or collect again into a new --out"
MANIFEST_RESUME_FIX = "use another --out"


@dataclass(frozen=True)
class RolloutManifest:
    """A rollout directory's manifest.json: what its episodes depend on (compared when a collection resumes
    it, ``ROLLOUT_RESUME``), the features its decisions hold (checked by every reader), the command, and the
    collection's other settings as they were recorded. The file keeps the keys it always had: a manifest
    written before a setting existed reads, and is written back, without it."""

    model: str
    benchmark: str
    split: str
    seed: int
    agents: int
    rounds: int
    joint_actions: int = field(metadata=formerly("samples"))
    """K joint actions drawn per decision point (``delib collect --joint-actions``)."""
    epsilon: float
    policy: str | None
    """The behaviour policy's checkpoint; None: the agreement-threshold rule."""
    feature_version: int
    feature_names: tuple[str, ...]
    engine: Mapping[str, Any]
    """The engine settings (``config.EngineConfig``), as the build that collected recorded them."""
    command: str = ""
    selection: Selection | None = field(default=None, metadata=ADDED_LATER)
    """The questions; None: a manifest from before question selection (all questions, and not written)."""
    others: Mapping[str, Any] = field(default_factory=dict)
    """The collection's settings nothing reads back (backend and its options, cache, limit, concurrency, ...):
    kept, and written back."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of manifest.json."""
        return {**self.others, **{k: v for k, v in to_json(self).items() if k != "others"}}


ROLLOUT_RESUME = ResumeRule(
    compared=("model", "benchmark", "split", "seed", "feature_version", "agents", "rounds", "samples", "epsilon",
              "policy", "selection", "engine"),
    added_later={"selection": ALL_QUESTIONS, "engine": {}},
    nested={"engine": ResumeRule(compared=("temperature", "max_tokens", "early_stop"))},
    shown_as=renamed(RolloutManifest))
"""What a resumed collection must share with the rollout directory: what an episode is (the engine settings
among them that change it). A manifest from before question selection (--ids/--offset/--subset) holds all
questions. Settings are compared under their keys in the file, and named in a refusal as the flags name them."""


def manifest_of(settings: Mapping[str, Any]) -> RolloutManifest:
    """The manifest of the JSON object ``settings`` (a collection's settings, or manifest.json), each known entry
    of its annotated type (``types.from_json``: a TypeError or ValueError naming the entry otherwise)."""
    names = {key(f) for f in fields(RolloutManifest)} - {"others"}
    known = from_json(RolloutManifest, {k: v for k, v in settings.items() if k in names})
    return replace(known, others={k: v for k, v in settings.items() if k not in names})


@dataclass(frozen=True)
class RolloutRow:
    """What readers take from a line of a rollout file (``question_row`` writes it, with the model,
    benchmark and split besides)."""

    example_id: str
    decisions: tuple[Decision, ...]


def read_rows(path: Path, repair: bool = False) -> list[RolloutRow]:
    """Every question of a rollout file (``read_gzip_lines``: a torn last line cut off with ``repair``, else
    refused; a line of the wrong shape refused by its number)."""
    return read_gzip_lines(path, "delib collect", repair, lambda row: from_json(RolloutRow, row))


def open_collection(directory: Path, manifest: RolloutManifest) -> DirectoryLock:
    """Become the one writer of the rollout directory (made if missing) until the returned lock is released,
    then create its manifest, or check an existing one describes the same collection (one that holds no
    question yet takes any settings: ``holds_none``)."""
    return open_output(directory, manifest.to_dict(), ROLLOUT_RESUME, "rollouts", MANIFEST_RESUME_FIX, MANIFEST,
                       _recorded, holds_none)


def holds_none(directory: Path) -> bool:
    """Whether the rollout directory holds no question yet: a collection that failed at its first (a server
    down) left only its manifest, and a rerun with the settings corrected takes it over, as a run directory
    with no episode is."""
    path = directory / ROLLOUTS
    return not path.exists() or path.stat().st_size == 0


BEFORE_LOADING = replace(ROLLOUT_RESUME, compared=tuple(n for n in ROLLOUT_RESUME.compared or () if n != "model"))
"""``ROLLOUT_RESUME`` less the model's name, which only the loaded backend knows."""


KEPT = frozenset(ROLLOUT_RESUME.compared or ()) | {"feature_names"}
"""The manifest's entries a resumed collection must keep; the others (the command, --limit, the backend's
options, ...) it may change, and records (``resumed``)."""


@dataclass
class PendingResume:
    """manifest.json as a resumed collection leaves it (``resumed``), written with the first question the
    resume adds, so that a rerun that adds nothing records nothing."""

    path: Path
    record: dict[str, Any] | None

    def write_once(self) -> None:
        if self.record is not None:
            write_json_atomic(self.path, self.record)
            self.record = None


def resumed(directory: Path, manifest: RolloutManifest) -> PendingResume:
    """What resuming the collection in ``directory`` with ``manifest`` records: a ``resumes`` entry with each
    setting it gives otherwise (``outputs.resume.with_resume``), as a run directory and a tree store do; its
    first command and --limit stay."""
    wanted = manifest.to_dict()
    return PendingResume(directory / MANIFEST, with_resume(_recorded(directory / MANIFEST), wanted,
                                                           set(wanted) - KEPT))


def check_collection(directory: Path, manifest: RolloutManifest) -> None:
    """``open_collection``'s check of an existing manifest, made before the model loads: a resume under other
    settings, or a folder holding another kind of output, is refused at once, not after minutes of loading
    (the model's name is checked once loaded)."""
    refuse_other_kind(directory, ROLLOUT_DIR)
    check_recorded(directory, manifest.to_dict(), BEFORE_LOADING, "rollouts", MANIFEST_RESUME_FIX, MANIFEST,
                   _recorded, holds_none)


def _recorded(path: Path) -> dict[str, Any]:
    return read_manifest(path).to_dict()


def question_row(model: str, benchmark: str, split: str, example_id: str, decisions: list[Decision]) -> dict[str, Any]:
    return {"model": model, "benchmark": benchmark, "split": split, "example_id": example_id,
            "decisions": [to_json(d) for d in decisions]}


def check_manifest(directory: Path) -> RolloutManifest:
    """The manifest of a rollout directory, refused if its features are not this build's."""
    path = directory / MANIFEST
    other = other_kind(directory, ROLLOUT_DIR)
    if not path.exists() or other is not None:
        held = f"holds {other}" if other is not None else f"has no {MANIFEST}"
        raise DelibError(f"{directory} {held}: not a rollout directory made by `delib collect`")
    manifest = read_manifest(path)
    if manifest.feature_version != FEATURE_VERSION or manifest.feature_names != FEATURE_NAMES:
        raise DelibError(f"{directory} holds rollouts of feature version {manifest.feature_version}, this "
                         f"build uses version {FEATURE_VERSION}; recollect them with `delib collect`")
    return manifest


def write_manifest(path: Path, manifest: RolloutManifest) -> None:
    """Write manifest.json (``read_manifest`` reads it back equal)."""
    write_json_atomic(path, manifest.to_dict())


def read_manifest(path: Path) -> RolloutManifest:
    """The manifest.json at ``path``; a damaged file or one of another shape is a one-line DelibError naming it
    and the fix (not a traceback)."""
    try:
        raw = parse_json(utf8(path.read_bytes()))
    except BadText as err:
        raise DelibError(f"{path} is not valid JSON ({err}); {MANIFEST_FIX}") from err
    if not isinstance(raw, dict):
        raise DelibError(f"{path} is not a rollout manifest (a JSON object); {MANIFEST_FIX}")
    try:
        return manifest_of(raw)
    except (TypeError, ValueError) as err:
        raise DelibError(f"{path} lacks or mangles an entry of a rollout manifest ({err}); {MANIFEST_FIX}") from err


def load_decisions(paths: list[Path]) -> list[Decision]:
    """Every decision in the rollout directories (or files) given, checked for feature version. A question
    may come from one directory only: ranking groups are (question, round, agent), so two collections of
    the same question (the same directory twice, or another behaviour policy's) would be ranked as one."""
    decisions: list[Decision] = []
    source: dict[str, Path] = {}
    directories = [_directory(p) for p in paths]
    for directory in directories:
        if directories.count(directory) > 1:
            raise DelibError(f"rollout directory {directory} is given more than once; name each collection once")
        check_manifest(directory)
        for row in read_rows(directory / ROLLOUTS):
            _claim(source, row.example_id, directory)
            decisions += row.decisions
    if not decisions:
        files = ", ".join(map(str, paths))
        raise DelibError(f"no decisions in {files}: the rollout files are empty; run `delib collect`")
    return decisions


def _directory(path: Path) -> Path:
    """The rollout directory of a path given as the directory or a file in it."""
    if not path.exists():
        raise DelibError(f"{path} does not exist; pass rollout directories made by `delib collect`")
    return (path if path.is_dir() else path.parent).resolve()


def _claim(source: dict[str, Path], example_id: str, directory: Path) -> None:
    first = source.setdefault(example_id, directory)
    if first != directory:
        raise DelibError(f"question {example_id} is in both {first} and {directory}; train on one collection of "
                         "a question at a time (its K joint actions are ranked against each other)")
