"""What every method shares: its configuration and the one way an episode is run.

A method module defines ``METHOD``, a ``Method``: how its ``MethodSpec`` (engine/spec.py) is built from the
method config, what it changes in the engine config (cot: one agent; self-consistency: no rounds), which
method options (methods/options.py) it reads, and what it adds to a run's config.json. The runner asks the
entry, never the method's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from deliberation.backends.base import Backend
from deliberation.benchmarks import get as get_benchmark
from deliberation.config import EngineConfig
from deliberation.engine.loop import Context, make_context, run_episode
from deliberation.engine.spec import MethodSpec
from deliberation.methods.calls import Calls, loop_calls
from deliberation.methods.options import OPTION_NAMES, MethodOptions
from deliberation.types import ADDED_LATER, Episode, Example


@dataclass(frozen=True)
class MethodConfig(MethodOptions):
    """The settings a method needs besides the example, backend and rng: the benchmark, the engine settings
    and the method options (keywords: ``MethodConfig("math", engine, policy="default")``)."""

    benchmark: str = "gsm8k"
    engine: EngineConfig = field(default_factory=EngineConfig)


def _same(engine: EngineConfig) -> EngineConfig:
    return engine


def samples_only(engine: EngineConfig) -> EngineConfig:
    """The engine of the sampling methods: round 0 only (k = ``agents`` independent samples, no deliberation)."""
    return replace(engine, rounds=0)


@dataclass(frozen=True)
class MethodRecord:
    """What a method adds to its run's config.json (``Method.record``): the file it actually ran, with the hash
    of its contents, so resuming a run after that file changed is refused. Each entry is written only by the
    methods that run such a file (left out while None)."""

    policy_used: str | None = field(default=None, metadata=ADDED_LATER)
    """mpdf: the checkpoint (or the rule, ``rule:...``, when none exists); mpdf-allocate: the allocator."""
    graph_used: str | None = field(default=None, metadata=ADDED_LATER)
    """gptswarm, agentprune: the optimised graph."""
    graph_rounds: int | None = field(default=None, metadata=ADDED_LATER)
    """gptswarm, agentprune: the rounds the graph runs (the engine's are not used)."""
    workflow_used: str | None = field(default=None, metadata=ADDED_LATER)
    """aflow: the searched workflow."""


def _nothing(cfg: MethodConfig) -> MethodRecord:
    return MethodRecord()


@dataclass(frozen=True)
class Method:
    """A registered method (see the module docstring)."""

    spec: Callable[[MethodConfig], MethodSpec]
    """Builds the spec; raises DelibError for an unusable config (mpdf: a missing or mismatched policy),
    so the runner calls it once before writing anything."""
    engine: Callable[[EngineConfig], EngineConfig] = _same
    options: frozenset[str] = frozenset()
    """The method options (``MethodOptions`` fields) it reads: others given to it are refused, not silently
    ignored."""
    fixed_rule: bool = False
    """A fixed meta-policy (methods/rules.py): what a learned policy is compared against by default."""
    record: Callable[[MethodConfig], MethodRecord] = _nothing
    """What the run's config.json gains (mpdf: ``policy_used``, the checkpoint and its content hash)."""
    episode: Callable[[Context, np.random.Generator], Episode] = run_episode
    """How an episode runs: the round loop, or another protocol over the engine's parts (adaptive sampling)."""
    about: str = ""
    """What it does, with its source, in one line (``delib run --help`` lists it)."""
    tree_requests: bool = True
    """Sends only requests a tree build records (round-0 samples and round-1 updates); False for a protocol
    of its own (PHP's hinted calls, a graph's, a workflow's), whose calls a replay adds to a store."""
    check: Callable[[MethodConfig, Sequence[Example]], None] = lambda cfg, examples: None
    """Refuses questions the method may not answer under ``cfg`` (a graph optimised on them), before a run
    writes anything."""
    shown: Callable[[MethodConfig], int | None] = lambda cfg: None
    """The most tokens of answers one of its prompts shows, for the context-window check, where that is not a
    deliberating team's (``engine/team_checks.py``): a graph agent's predecessors', a workflow's ensemble's, a
    critic's sample; None: the deliberation rule."""
    calls: Callable[[MethodConfig], Calls] | None = None
    """The LLM calls a question costs under ``cfg`` (methods/calls.py); None: the round loop's
    (``calls.loop_calls``). A method with an episode of its own gives its own."""
    hindsight: bool = False
    """Picks by correctness (the oracle, an upper bound): a question with no right answer to check (``delib
    ask``) is refused."""
    earliest_stop: Callable[[MethodOptions], int] | None = None
    """A method that samples until a rule holds: the fewest samples after which the rule can hold (all of them
    agreeing). At ``--agents`` no more than that it draws them all on every question, and ``delib run`` says
    so; None for the others."""
    pinned_hints: tuple[tuple[str, str], ...] = ()
    """Where ``engine`` pins a flag (agents, rounds), what does what a user giving it asked for: the note
    ``delib run`` prints about the flag ends with it."""
    pinned_shown: tuple[tuple[str, str], ...] = ()
    """Where the value ``engine`` pins is not what runs (a graph runs the rounds it holds, not the engine's 0),
    what the note says the method runs with instead of ``name = value``."""
    optimised: Callable[[MethodConfig], int | None] = lambda cfg: None
    """The tokens (prompt plus completion) spent optimising what the method runs under ``cfg``, as its file
    records them (a graph's, a searched workflow's): a run's summary reports them beside its accuracy. None:
    nothing was optimised, or not by this project (AFlow's transferred workflows)."""

    def __post_init__(self) -> None:
        undeclared = sorted(self.options - set(OPTION_NAMES))
        if undeclared:  # a typo here would refuse the option it means for this method
            raise ValueError(f"Method.options names {undeclared}, which are not fields of MethodOptions")

    def run(self, example: Example, backend: Backend, cfg: MethodConfig, rng: np.random.Generator) -> Episode:
        """One episode of this method on ``example``."""
        bench = get_benchmark(cfg.benchmark)
        return self.episode(make_context(example, backend, bench, self.engine(cfg.engine), self.spec(cfg)), rng)

    def call_bounds(self, cfg: MethodConfig) -> Calls:
        """The least and the most LLM calls one question costs under ``cfg`` (``delib experiment --plan``)."""
        if self.calls is not None:
            return self.calls(cfg)
        return loop_calls(self.spec(cfg), self.engine(cfg.engine))


def fixed(spec: MethodSpec, **options: Any) -> Method:
    """A method whose spec does not depend on the config."""
    return Method(spec=lambda cfg: spec, **options)
