"""A tree store's ``manifest.json``, typed: what its outcomes depend on and how it was built.

Written by ``delib tree`` (``trees.build.manifest``) and read by every replay, training and report command.
The file keeps the keys it always had, so stores built before a key existed read as what they were built
with: no ``methods`` (every method's round-1 nodes), no ``selection`` (the whole split in order), no
``resumes`` (never resumed with another command).
"""

from __future__ import annotations

import json
import math
import typing
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from deliberation.config import RESUMES, Selection
from deliberation.errors import BadText, DelibError, existing, parse_json, utf8
from deliberation.files import write_json_atomic
from deliberation.outputs.resume import ResumeRule, check_resume
from deliberation.types import from_json, to_json

MANIFEST = "manifest.json"
BUILD_ONE = "build one with `delib tree`"
FORMAT = "deliberation-trees"
BEFORE_METHODS = ("cot", "self-consistency", "debate", "reconcile", "dylan", "mpdf", "always-persist", "always-refine",
                  "always-concede", "confidence-threshold", "agreement-threshold", "agreement-then-confidence",
                  "oracle")
"""The methods registered when ``methods`` joined the manifest: a store without the entry recorded the round-1
nodes of exactly these (every method then), never those of a method registered later."""
TREE_RESUME = ResumeRule(compared=("backend", "model", "scope", "benchmark", "split", "temperature", "max_tokens",
                                   "seed", "verbal_confidence", "prompt_version", "agents"))
"""Entries a store and a build growing it must share: they change what a node's outcome is (the cache scope
names the backend settings that do, and node keys hash it), or which nodes a question holds (the team whose
round-1 updates it records)."""


@dataclass(frozen=True)
class TreeManifest:
    """What a store's outcomes depend on (backend, model, engine settings, prompt version, benchmark and
    split), what it holds (agents, round-0 samples, the methods whose round-1 nodes it records, the question
    selection), and how it was built (the command, the response cache, later commands that resumed it)."""

    backend: str
    model: str
    scope: str
    """The backend's cache scope: node keys hash it (``backends.cache.request_key``)."""
    supports_logprobs: bool
    backend_options: Mapping[str, Any]
    benchmark: str
    split: str
    temperature: float
    max_tokens: int
    seed: int
    verbal_confidence: bool
    prompt_version: int | None
    agents: int
    samples: int
    """Round-0 samples every built question holds (a resumed build that adds a question with fewer narrows
    it)."""
    methods: tuple[str, ...] | None = None
    """The methods whose round-1 nodes every built question holds; None: ``BEFORE_METHODS`` (stores from
    before ``--methods``, which recorded every method registered then)."""
    cache: str | None = None
    command: str = ""
    """The command that created the store."""
    selection: Selection = field(default_factory=Selection)
    """The questions: this selection's first N (the whole split in order by default)."""
    resumes: tuple[str, ...] = ()
    """Each other command that resumed the build, in order."""
    others: Mapping[str, Any] = field(default_factory=dict)
    """Entries this version does not know (a store written by a later one): kept, and written back."""

    @property
    def recorded(self) -> tuple[str, ...]:
        """The methods whose round-1 nodes every built question holds, as the manifest says (what was
        registered when an older store was built, not what is registered today)."""
        return self.methods if self.methods is not None else BEFORE_METHODS

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``manifest.json`` (the defaults of later keys left out, as older stores have it)."""
        out: dict[str, Any] = {**self.others, **{f.name: getattr(self, f.name) for f in fields(self)
                                                 if f.name not in ("methods", "selection", "resumes", "others")}}
        out["backend_options"] = dict(self.backend_options)
        if self.methods is not None:
            out["methods"] = list(self.methods)
        if self.selection != Selection():
            out["selection"] = to_json(self.selection)
        if self.resumes:
            out[RESUMES] = [{"command": c} for c in self.resumes]
        return {**out, "format": FORMAT}

    def write(self, folder: Path) -> None:
        write_json_atomic(folder / MANIFEST, self.to_dict())

    def resumed(self, wanted: "TreeManifest") -> "TreeManifest":
        """This store's manifest once a build with ``wanted`` resumes it: a command it has not recorded is
        added."""
        known = (self.command, *self.resumes)
        return replace(self, resumes=self.resumes + ((wanted.command,) if wanted.command and wanted.command not in
                                                     known else ()))

    def narrowed(self, wanted: "TreeManifest") -> "TreeManifest":
        """This store's manifest once a build with ``wanted`` adds questions: fewer round-0 samples or methods
        narrow what it promises to what every built question holds. Only a build that adds questions narrows
        it: one asking for less that finds every question built (an older, smaller recipe rerun) takes nothing."""
        methods = tuple(m for m in self.recorded if wanted.methods is None or m in wanted.methods)
        return replace(self, samples=min(self.samples, wanted.samples), methods=methods)

    def completed(self, wanted: "TreeManifest") -> "TreeManifest":
        """This store's manifest once every built question holds what a build with ``wanted`` records: more
        round-0 samples (an extension, ``delib tree --samples 12`` on a store of 6) or more methods widen
        what it promises."""
        return replace(self, samples=max(self.samples, wanted.samples),
                       methods=tuple(dict.fromkeys(self.recorded + wanted.recorded)))

    def check_matches(self, wanted: "TreeManifest", path: Path) -> None:
        """Refuse to mix outcomes made under other settings, or questions of another selection, into (or out
        of) one store."""
        check_resume(path, "trees built", to_json(self), to_json(wanted), TREE_RESUME,
                     "use another store or the store's settings")
        if self.selection != wanted.selection:
            raise DelibError(f"{path} holds trees of another question selection ({_shown(self.selection)} there, "
                             f"{_shown(wanted.selection)} here); use another store or its selection")


def read_manifest(path: Path) -> TreeManifest:
    """The manifest of the store at ``path``; a missing, corrupt or foreign file is a one-line DelibError."""
    if not (path / MANIFEST).is_file():
        raise DelibError(f"{path} is not a tree store (no {MANIFEST}); build one with `delib tree`")
    try:
        raw = parse_json(utf8((path / MANIFEST).read_bytes()))
    except BadText as err:
        raise DelibError(f"{path / MANIFEST} is not valid JSON ({err}); restore it or rebuild the store with "
                         "`delib tree`") from err
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise DelibError(f"{path / MANIFEST} is not a tree-store manifest; rebuild the store with `delib tree`")
    try:
        return _from_dict(raw)
    except (KeyError, TypeError, ValueError, DelibError) as err:  # DelibError: a recorded setting out of range
        raise DelibError(f"{path / MANIFEST} lacks or mangles an entry ({err}); restore it or rebuild the store "
                         "with `delib tree`") from err


def refuse_test_store(path: str | Path, learned: str, allow_test: bool) -> None:
    """Refuse, unless ``allow_test``, to learn from the tree store at ``path`` when it holds test questions: what
    is ``learned`` from them ("an allocator trained", "a rule tuned") would be measured on the questions it
    learned from. The one check of every command that learns from stores, as ``LearningWorkload``'s is of
    every command that learns from a split."""
    if allow_test:
        return
    manifest = read_manifest(existing(path, "tree store", BUILD_ONE, folder=True, inside=MANIFEST))
    if manifest.split == "test":
        raise DelibError(f"{path} holds {manifest.benchmark} test questions: {learned} on them would be measured "
                         "on the questions it learned from; use a store of training questions (or pass --allow-test "
                         "to do it knowingly, and measure on other questions)")


def refuse_repeated(seen: set[str], new: Iterable[str], source: str, fix: str) -> set[str]:
    """``seen`` (the ids of the questions read so far) with ``new`` (those of ``source``) added; refused, naming
    a question and ``fix``, when they share one: the same store named twice, or a copy, would weigh its questions
    twice in what is learned. The one check of every command that learns from several sources."""
    added = set(new)
    twice = sorted(seen & added)
    if twice:
        raise DelibError(f"question {twice[0]} is in {source} and in another source; {fix}")
    return seen | added


def _from_dict(raw: Mapping[str, Any]) -> TreeManifest:
    """The manifest of the JSON object ``raw``, each entry of its annotated type (``types.from_json``: a
    TypeError or ValueError naming the entry otherwise)."""
    names = {f.name for f in fields(TreeManifest)} - {"resumes", "others"}
    known = {k: v for k, v in raw.items() if k in names}
    resumes = [entry["command"] for entry in raw.get(RESUMES, ())]
    others = {k: v for k, v in raw.items() if k not in names and k not in (RESUMES, "format")}
    manifest = replace(from_json(TreeManifest, {**known, "resumes": resumes}), others=others)
    _check_values(manifest)
    return manifest


def _check_values(manifest: TreeManifest) -> None:
    """A ValueError naming an entry of a value no build writes: null where the type allows none, a count
    below 1, a negative seed, a temperature that is not a finite number from 0 (``from_json`` checks types only,
    and lets null through)."""
    hints = typing.get_type_hints(TreeManifest)
    for f in fields(manifest):
        if getattr(manifest, f.name) is None and type(None) not in typing.get_args(hints[f.name]):
            raise ValueError(f"{f.name} is null")
    for name in ("agents", "samples", "max_tokens"):
        if getattr(manifest, name) < 1:
            raise ValueError(f"{name} is {getattr(manifest, name)}, not a count of at least 1")
    if manifest.seed < 0 or not (math.isfinite(manifest.temperature) and manifest.temperature >= 0):
        raise ValueError(f"seed {manifest.seed} or temperature {manifest.temperature} is out of range")


def _shown(selection: Selection) -> str:
    return "none" if selection == Selection() else json.dumps(to_json(selection))
