"""``delib evaluate``: replay methods over a tree store into ordinary run directories.

Each method runs through the normal runner (``runs/runner.py``) with a ``TreeBackend`` in place of the
LLM: the engine sends its usual requests and gets the recorded outcomes, so episodes equal ``delib run``'s
on the same questions and settings, and ``delib report`` reads the result unchanged. A request the store
lacks (a round beyond 1, another update prompt) goes to the store's backend through the response cache
and is recorded; ``--offline`` never calls a backend and fails naming the first missing node instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from deliberation import methods
from deliberation.config import EngineConfig, Selection, Workload, check_ids, require_draws
from deliberation.errors import DelibError, repeated, require_at_least
from deliberation.methods.options import MethodOptions
from deliberation.runs.directory import Summary
from deliberation.runs.runner import RunSpec, execute
from deliberation.trees.store import (TreeBackend, TreeStore, built_examples, open_store, recording_backend,
                                      store_engine)
from deliberation.types import Example


@dataclass(frozen=True, kw_only=True)
class ReplaySettings:
    """The settings every replay over tree stores shares, whatever it replays (``delib evaluate``'s methods,
    ``tune-rules``' grid, ``tune-votes``' temperatures, ``compare``'s arms): declared once, here."""

    rounds: int = EngineConfig.rounds
    """Deliberation rounds after round 0, by default ``delib run``'s (round 1 is in the stores; deeper ones are
    added as reached)."""
    offline: bool = False
    """Never call a backend: a node a store lacks is an error naming it."""
    ids: tuple[str, ...] = ()
    """Replay only these questions of the stores (e.g. a policy's validation fifth: the held_out ids of its
    split.json, one a line in @FILE)."""
    command: str = ""
    """The command line that asked for the replay (recorded in each run's config.json)."""


@dataclass(frozen=True)
class Replay(MethodOptions, ReplaySettings):
    """What to replay: methods over a store, with the settings a replay may choose (the method options
    among them, each passed to the methods that read it)."""

    trees: str
    methods: tuple[str, ...]
    early_stop: bool = True
    """Stop deliberating once the method's consensus rule holds (as ``delib run``)."""
    agents: int | None = None
    """Agents (self-consistency: samples) when not the store's; deliberating methods need the store's."""
    cache: str | None = None
    """Response cache for nodes a replay adds (default: the cache the store was built with; 'none' means it too)."""
    questions: int | None = None
    """Replay the store's first N questions only (default: every built one), e.g. one block of a sequential
    experiment while the build adds the next."""
    concurrency: int = Workload.concurrency
    """Questions in flight at once, their requests merged into one batch per step: what a replay generates
    (the nodes the store lacks) is batched as by ``delib tree --concurrency`` (on a CPU, 3 lets llama.cpp batch
    9 requests instead of 3; outputs then depend on the batch, and the store records them as generated)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ids(self.ids)
        twice = repeated(self.methods)
        if twice is not None:  # both would replay into one folder
            raise DelibError(f"--method names {twice!r} twice; name each method once")
        if self.agents is not None:
            require_draws("--agents", self.agents)
        if self.questions is not None:
            require_at_least("--questions", self.questions)


def check_method(name: str, engine: EngineConfig, store: TreeStore) -> None:
    """Refuse a method whose agents the store was not built with (other agents send other requests)."""
    effective = methods.get(name).engine(engine)
    m = store.manifest
    if effective.rounds == 0 and effective.agents > m.samples:
        raise DelibError(f"{name} with {effective.agents} samples needs {effective.agents} round-0 samples; "
                         f"{store.path} holds {m.samples} (extend it in place: rerun its build command with "
                         f"--limit {len(store.built)} --samples {effective.agents})")
    if effective.rounds > 0 and effective.agents != m.agents:
        raise DelibError(f"{name} with {effective.agents} agents cannot replay {store.path}, built for "
                         f"{m.agents} agents; drop --agents or build a store for that team")


def evaluate(replay: Replay, out: str, data_dir: str | None = None, progress: bool = True) -> list[Summary]:
    """Replay every method into ``out`` (one method: ``out`` is its run directory; several: ``out/<method>``)."""
    store = open_store(replay.trees, writing=not replay.offline)  # a recording replay cuts a torn record
    try:
        engine = store_engine(store, replay.rounds, replay.agents, replay.early_stop)
        for name in replay.methods:
            check_method(name, engine, store)
        methods.refuse_unread(replay.given(), replay.methods)
        examples = built_examples(store, data_dir, replay.questions, replay.ids)
        refuse_unbuilt([replay], examples)
        backend = tree_backend(replay, store)
    except BaseException:
        store.unlock()
        raise
    try:
        return [execute(spec_of(replay, store, engine, name, examples, data_dir), _out(out, name, replay),
                        progress=progress, backend=backend) for name in replay.methods]
    finally:
        backend.close()


def refuse_unbuilt(replays: Sequence[Replay], examples: Sequence[Example]) -> None:
    """Refuse --ids naming a question no replay would answer (not built in its store, or past --questions), which
    would otherwise shrink the run silently; ``examples``: the questions the replays answer, pooled over stores
    (one store's ids may be another's)."""
    missing = sorted({i for r in replays for i in r.ids} - {e.id for e in examples})
    if missing:
        among = " or ".join(f"the first {r.questions} built questions of {r.trees}" if r.questions
                            else f"the built questions of {r.trees}" for r in replays)
        raise DelibError(f"--ids names {len(missing)} question{'s' * (len(missing) > 1)} not among {among} "
                         f"(e.g. {missing[0]}); pass ids of built questions")


def tree_backend(replay: Replay, store: TreeStore) -> TreeBackend:
    """The replay's backend: reading the store only (offline), or adding what it lacks as the store's writer."""
    if replay.offline:
        return TreeBackend(store, None)
    return recording_backend(store, replay.cache or store.manifest.cache)


def spec_of(replay: Replay, store: TreeStore, engine: EngineConfig, name: str, examples: Sequence[Example],
            data_dir: str | None) -> RunSpec:
    """The run spec replaying ``name`` over ``examples`` of the store (its selection, or the ids asked for)."""
    m = store.manifest
    method = methods.get(name)
    chosen = {k: v for k, v in replay.method_options().items() if k in method.options}
    selection = Selection(ids=tuple(e.id for e in examples)) if replay.ids else m.selection
    return RunSpec(method=name, benchmark=m.benchmark, split=m.split, limit=len(examples),
                   backend=m.backend, backend_options=dict(m.backend_options), cache=None, engine=engine,
                   data_dir=data_dir, command=replay.command, trees=str(Path(replay.trees)), selection=selection,
                   concurrency=replay.concurrency, **chosen)


def _out(out: str, name: str, replay: Replay) -> str:
    return out if len(replay.methods) == 1 else str(Path(out) / name)

