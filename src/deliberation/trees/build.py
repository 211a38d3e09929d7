"""``delib tree``: build round 0 and the full round 1 of every question into a tree store.

At round 1 an agent's outcome under each action depends only on the round-0 state: PERSIST keeps its
answer, CONCEDE adopts the peer the engine's rule picks (no call), REFINE is one call that sees the peers'
round-0 solutions. So per question the build makes: round 0 (N answers and their critic calls), K - N
further round-0 samples with their critic calls (self-consistency and its confidence-weighted form at any
k <= K), and for each update prompt some registered
method uses (refine, debate, reconcile) one call per agent, with critic calls where a method using that
prompt computes confidence. That fixes all 3^N joint actions of round 1 for every method (``--methods``: for
those methods only, which is cheaper where they share one update prompt). Everything goes
through the engine's own functions and through the response cache, so ``delib run`` with the same cache
is served the very same completions (llama.cpp's output can depend on which requests share a batch).
"""

from __future__ import annotations

from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from deliberation import benchmarks, methods
from deliberation.backends.base import Backend, cache_scope_of
from deliberation.benchmarks.answers import make_backend
from deliberation.benchmarks.base import Benchmark
from deliberation.benchmarks.selection import load_selected
from deliberation.config import EngineConfig, Workload, require_draws
from deliberation.engine import prompts
from deliberation.engine.loop import act, generate, initial_round, make_context, record_of, score_confidence
from deliberation.engine.spec import MethodSpec
from deliberation.errors import DelibError
from deliberation.methods.base import MethodConfig
from deliberation.outputs.driver import Ledger, QuestionJob, run_job
from deliberation.outputs.kinds import TREE_STORE, refuse_other_kind
from deliberation.outputs.lock import refuse_if_locked
from deliberation.policy.rules import ConstantPolicy
from deliberation.trees.manifest import TreeManifest
from deliberation.trees.store import BUSY_FIX, MissingNode, TreeBackend, TreeStore, split_examples
from deliberation.actions import Action
from deliberation.types import Example


@dataclass(frozen=True)
class TreeSpec(Workload):
    """What to build; saved (with the command) in the store's manifest.json."""

    samples: int | None = None
    """Round-0 samples recorded per question: at least --agents, more serve self-consistency at k <= K
    (default: as many as --agents). More than an existing store holds extends it in place: only the missing
    samples (and their critic calls) are generated, with the seeds a fresh build would give them."""
    methods: tuple[str, ...] = ()
    """Record only the round-1 nodes these methods read (their update prompts, with the critic where one of
    them computes confidence); other methods then replay offline only where they need nothing else.
    Default: every registered method."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in self.methods:
            methods.get(name)  # an unknown name is a one-line error listing the registered ones
        if self.samples is not None:  # 0 is refused, not read as the default
            require_draws("--samples", self.samples)
        if self.drawn < self.engine.agents:
            raise DelibError(f"--samples {self.samples} is fewer than --agents {self.engine.agents}; give at "
                             "least as many round-0 samples as agents (or leave it out)")

    @property
    def drawn(self) -> int:
        """The round-0 samples a question gets: ``samples``, or one an agent."""
        return self.engine.agents if self.samples is None else self.samples


def recorded_methods(spec: TreeSpec) -> tuple[str, ...]:
    """The methods whose round-1 nodes the build records: ``spec.methods``, or every registered one."""
    return spec.methods or tuple(methods.METHODS)


def deliberating_spec(name: str) -> MethodSpec | None:
    """The spec of method ``name`` at its defaults when it deliberates, None for a sampling method (round 0
    only: self-consistency, the allocators; their specs may need options a default config lacks)."""
    method = methods.get(name)
    if method.engine(EngineConfig()).rounds == 0:
        return None
    spec = method.spec(MethodConfig())
    return spec if spec.policy is not None else None


def update_specs(names: tuple[str, ...]) -> list[MethodSpec]:
    """One spec per update prompt the methods ``names`` use, with the critic on where any of them uses it."""
    found: dict[Any, MethodSpec] = {}
    for name in names:
        spec = deliberating_spec(name)
        if spec is None:
            continue
        old = found.get(spec.update)
        found[spec.update] = MethodSpec(f"tree:{name}", ConstantPolicy(Action.REFINE), spec.update,
                                        confidence=spec.confidence or (old is not None and old.confidence))
    return list(found.values())


def replayable(recorded: Sequence[str]) -> tuple[str, ...]:
    """Every registered method that replays offline from a store recording the methods ``recorded``: of those
    that send only requests a build records (``runs_from_trees``), the sampling ones (round 0 only, its
    critic calls always recorded) and those whose update prompt is recorded, with the critic where they read
    it. The others (debate, say, or PHP) replay offline only from what a replay without --offline added."""
    prompts = {spec.update: spec.confidence for spec in update_specs(tuple(recorded))}
    specs = {name: deliberating_spec(name) for name in methods.METHODS if runs_from_trees(name)}
    return tuple(name for name, spec in specs.items() if spec is None
                 or (spec.update in prompts and (prompts[spec.update] or not spec.confidence)))


def runs_from_trees(name: str) -> bool:
    """Whether method ``name``, at its defaults, sends only requests a tree build records (round-0 samples,
    round-1 updates): not a protocol of its own (PHP's hints, a graph, a workflow), nor one whose defaults
    lack a file it needs (an allocator not shipped)."""
    method = methods.get(name)
    if not method.tree_requests:
        return False
    try:
        method.spec(MethodConfig())
    except DelibError:
        return False
    return True


def manifest(spec: TreeSpec, backend: Backend) -> TreeManifest:
    engine = spec.engine
    return TreeManifest(backend=backend.name, model=backend.model, scope=cache_scope_of(backend),
                        supports_logprobs=backend.supports_logprobs, backend_options=spec.backend_options,
                        benchmark=spec.benchmark, split=spec.split, temperature=engine.temperature,
                        max_tokens=engine.max_tokens, seed=engine.seed, verbal_confidence=engine.verbal_confidence,
                        prompt_version=prompts.get(engine.prompts).version, agents=engine.agents,
                        samples=spec.drawn, methods=recorded_methods(spec), cache=spec.cache,
                        command=spec.command, selection=spec.selection)


def build_question(example: Example, backend: Backend, spec: TreeSpec, updates: list[MethodSpec]) -> None:
    """Round 0 and the extra round-0 samples (each with its critic call: confidence-weighted
    self-consistency reads them), and every agent's REFINE under each update prompt. The benchmark is seen
    ``Unkeyed``: the build scores nothing and HumanEval's answer keys would run every program."""
    bench = Unkeyed(benchmarks.get(spec.benchmark))
    ctx = make_context(example, backend, bench, spec.engine, MethodSpec("tree", ConstantPolicy(Action.REFINE),
                                                                       confidence=True))
    records, _ = initial_round(ctx)
    extra = range(spec.engine.agents, spec.drawn)
    asked = prompts.initial_messages(ctx.question)
    samples = generate(ctx, [asked] * len(extra), extra, 0)
    score_confidence(ctx, [record_of(ctx, c, True, asked) for c in samples])
    for update in updates:
        act(make_context(example, backend, bench, spec.engine, update), records, [Action.REFINE] * len(records), 1)


def build(spec: TreeSpec, out: str, progress: bool = True) -> int:
    """Build (or resume) the store ``out`` as its one writer (another process building into it, or adding
    nodes, is refused before the model loads); returns the number of questions built in it."""
    examples = load_selected(benchmarks.get(spec.benchmark), spec.split, spec.limit, spec.selection, spec.data_dir)
    updates = update_specs(recorded_methods(spec))
    refuse_if_locked(Path(out), BUSY_FIX)
    refuse_other_kind(out, TREE_STORE)
    job = QuestionJob(examples, lambda: closing(make_backend(spec.backend, cache=spec.cache, **spec.backend_options)),
                      lambda inner: _store(out, spec, inner, examples, updates),
                      lambda ex, backend: build_question(ex, backend, spec, updates), spec.concurrency)
    return run_job(job, progress)


class Unkeyed:
    """A benchmark seen without its answer keys. No request of a build depends on them (the update and
    critic prompts show texts and confidences, and which agents get a critic call depends on their action),
    and HumanEval's key runs the program, so a build, and the completeness check of a resumed one
    (``lacking``), runs no code."""

    def __init__(self, bench: Benchmark) -> None:
        self._bench = bench

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bench, name)

    def key_for(self, example: Example, text: str) -> None:
        return None


def lacking(store: TreeStore, examples: list[Example], spec: TreeSpec, updates: list[MethodSpec]) -> set[str]:
    """The built questions of ``examples`` that lack a node this build records: built by an older version
    (before the extra samples had critic calls, say) or with other methods. Found by building each one
    offline from the store (no model call); the build then completes them, generating only what is missing."""
    offline = TreeBackend(store, None)
    found = set()
    for example in examples:
        if example.id in store.built:
            try:
                build_question(example, offline, spec, updates)
            except MissingNode:
                found.add(example.id)
    return found


@contextmanager
def _store(out: str, spec: TreeSpec, inner: Backend, examples: list[Example],
           updates: list[MethodSpec]) -> Iterator[Ledger[None, int]]:
    """The tree store as the build's output, its one writer until left: questions run through a
    ``TreeBackend`` that records their nodes, a built question is marked so (one lacking a node this build
    records is built again: its stored nodes are served, the missing ones generated); the count of built
    questions. The manifest promises what every built question holds: a build that adds samples or methods
    widens it once no built question lacks them, never before (an interrupted extension promises the old); one
    with fewer that will add questions narrows it before the first."""
    wanted = manifest(spec, inner)
    store = TreeStore.create(out, wanted)
    try:
        if any(e.id not in store.built for e in examples):  # a rerun that adds none narrows nothing
            store.narrow(wanted)
        done = frozenset(store.built - lacking(store, examples, spec, updates))
        yield Ledger(done, lambda ex, _: store.mark_built(ex.id), lambda: len(store.built),
                     TreeBackend(store, inner))
        held = [e for e in split_examples(store, spec.data_dir) if e.id in store.built]
        if not lacking(store, held, spec, updates):  # built questions outside --limit may still lack some
            store.complete(wanted)
    finally:
        store.unlock()
