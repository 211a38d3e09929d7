"""Replaying labelled method variants (a method with its policy or threshold) over tree stores.

``delib evaluate`` replays methods with one set of options; rule tuning and the team-level comparison need
the same method under several options (confidence-threshold at eight thresholds, mpdf with several
checkpoints). Each variant is replayed exactly as ``delib evaluate`` replays it (``runs/replay.py``: the
same checks, run spec and ``TreeBackend``, one backend per store shared by all variants, so a round-2 node
one variant generates serves the next) into its own run directory ``<out>/<store>/<variant>``, whose
``cell.json`` carries the variant's label for ``delib report``. Everything is checked, every store and
checkpoint, before the first directory is written.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, Sequence

from deliberation.errors import DelibError, make_folder, repeated, writable_folder
from deliberation.files import write_json_atomic
from deliberation.methods.options import Variant
from deliberation.runs.directory import CELL, RunDir, Summary
from deliberation.runs.replay import Replay, ReplaySettings, check_method, refuse_unbuilt, spec_of, tree_backend
from deliberation.runs.run_config import config_record
from deliberation.runs.runner import RunSpec, execute, validate
from deliberation.trees.manifest import refuse_test_store
from deliberation.trees.store import TreeBackend, TreeStore, built_examples, open_store, store_engine
from deliberation.types import Example


@dataclass(frozen=True)
class StoreSettings(ReplaySettings):
    """Tree stores and the replay settings every variant over them shares (``delib tune-rules``, ``delib
    tune-votes``, ``delib compare``)."""

    trees: tuple[str, ...]
    questions: tuple[int, ...] = ()
    """Replay only the first N questions of each store (default: every built one): one N for every store, or
    one per store in ``trees`` order (a sequential look: each benchmark's block)."""

    def __post_init__(self) -> None:
        if len(self.questions) not in (0, 1, len(self.trees)) or any(n < 1 for n in self.questions):
            raise DelibError(f"questions {list(self.questions)} must be one positive count for every store or one "
                             f"per store ({len(self.trees)} stores)")

    def replays(self) -> list[Replay]:
        """The ``delib evaluate`` options every variant over each store starts from, one per store."""
        counts = self.questions * len(self.trees) if len(self.questions) == 1 else self.questions
        return [Replay(trees=t, methods=(), rounds=self.rounds, offline=self.offline, questions=n, ids=self.ids,
                       command=self.command) for t, n in itertools.zip_longest(self.trees, counts)]


@dataclass(frozen=True, kw_only=True)
class TuningStores(StoreSettings):
    """The store settings of a command that learns from its stores (``delib tune-rules``, ``tune-votes``):
    training stores, since what it learns is then measured; a test store only when asked knowingly."""

    learned: ClassVar[str] = "a setting tuned"
    """What it learns, as the refusal of a test store names it."""
    allow_test: bool = False
    """Tuning on a test store tunes on the questions the result is then measured on: opt-in only."""

    def replays(self) -> list[Replay]:
        """``StoreSettings.replays``, a test store refused first (its manifest says the split), after the check of
        the stores' names that ``replay_variants`` makes first."""
        store_names(self.trees)
        for path in self.trees:
            refuse_test_store(path, self.learned, self.allow_test)
        return super().replays()


@dataclass(frozen=True)
class StoreReplay:
    """One store's variants, checked and ready to run: the run specs, where each goes, the replay settings."""

    store: TreeStore
    examples: tuple[Example, ...]
    replay: Replay
    specs: tuple[RunSpec, ...]
    outs: tuple[Path, ...]


def store_names(trees: Sequence[str]) -> list[str]:
    """Each store's folder name (its run directories' parent); two stores of one name are refused."""
    names = [Path(t).name for t in trees]
    twice = repeated(names)
    if twice is not None or not names:
        raise DelibError(f"two stores are named {twice!r}; their runs would share a folder: pass stores in folders "
                         "of different names" if twice else "no tree store given; pass --trees STORE[,STORE]")
    return names


def plan(trees: str, name: str, variants: Sequence[Variant], out: Path, replay: Replay,
         data_dir: str | None) -> StoreReplay:
    """Check ``variants`` against the store ``trees`` and build their run specs (nothing is written)."""
    store = open_store(trees)
    engine = store_engine(store, replay.rounds, replay.agents, replay.early_stop)
    examples = tuple(built_examples(store, data_dir, replay.questions, replay.ids))
    replay = replace(replay, trees=trees)
    specs = []
    for v in variants:
        check_method(v.method, engine, store)
        options = replace(replay, **v.method_options())
        specs.append(spec_of(options, store, engine, v.method, examples, data_dir))
        validate(specs[-1])  # e.g. a checkpoint for other features fails before any directory exists
    outs = tuple(out / name / v.directory for v in variants)
    asked = {e.id for e in examples}
    for spec, folder in zip(specs, outs):  # a folder holding a run of other settings fails before any replay
        others = RunDir.prepare(folder, config_record(spec).to_dict()).finished_ids() - asked
        if others:  # its summary, what the variants are ranked by, would count them
            raise DelibError(f"{folder} holds replays of {len(others)} questions this replay does not ask for (e.g. "
                             f"{min(others)}: an earlier, larger --questions or --ids); pass another --out")
    return StoreReplay(store, examples, replay, tuple(specs), outs)


def run_store(planned: StoreReplay, variants: Sequence[Variant], progress: bool) -> list[Summary]:
    """Replay the planned variants over one store with one shared backend."""
    backend = tree_backend(planned.replay, planned.store)
    try:
        return [_run_one(spec, out, v.label, backend, progress)
                for spec, out, v in zip(planned.specs, planned.outs, variants)]
    finally:
        backend.close()


def _run_one(spec: RunSpec, out: Path, label: str, backend: TreeBackend, progress: bool) -> Summary:
    write_json_atomic(make_folder(out) / CELL, {"label": label, "method": spec.method, "seed": spec.engine.seed})
    return execute(spec, str(out), progress=progress, backend=backend)


def pooled_counts(summaries: dict[str, Summary]) -> tuple[int, int, int]:
    """(questions, correct answers, tokens) of one variant's summaries over the stores (store -> summary)."""
    n = sum(s.n for s in summaries.values())
    correct = sum(round(s.accuracy * s.n) for s in summaries.values())
    return n, correct, sum(s.prompt_tokens + s.completion_tokens for s in summaries.values())


def replay_variants(replays: Sequence[Replay], variants: Sequence[Variant], out: str | Path,
                    data_dir: str | None = None, progress: bool = False) -> dict[str, list[Summary]]:
    """Every variant over every store (one ``Replay`` each) -> store name -> summaries in ``variants``
    order (module docstring)."""
    out = writable_folder(out, "--out")
    names = store_names([r.trees for r in replays])
    plans = [plan(r.trees, name, variants, out, r, data_dir) for r, name in zip(replays, names)]
    refuse_unbuilt(replays, [e for p in plans for e in p.examples])
    return {name: run_store(p, variants, progress) for name, p in zip(names, plans)}
