"""Typed configuration, validated on construction with actionable messages: how a team deliberates
(``EngineConfig``) and what a command runs questions on (``Workload``, shared by ``delib run``'s RunSpec and
the tree builder's TreeSpec; ``LearningWorkload``, a workload that learns from its questions: ``delib
collect``'s CollectSpec, the graph optimisation's and AFlow's search). The CLI's flags are generated from
these fields (cli/flags.py): a field's docstring is its help text and its default the flag's default.

Training configuration lives beside the trainer (``deliberation.rl.config.TrainConfig``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Collection, Sequence

from deliberation.errors import DelibError, repeated, require_at_least, require_number
from deliberation.types import Example, formerly

MAX_DRAWS = 1024
"""The most answers a command draws per question and round (``--agents``, a tree's ``--samples``, ``--joint-
actions``): a question's requests are listed before its first call, so a count mistyped far too large would fill
memory or overflow an index instead of failing in one line. Far above what sampling methods draw
(self-consistency: 40 samples, Wang et al., ICLR 2023)."""


def require_draws(name: str, value: int, minimum: int = 1, why: str = "") -> None:
    """``require_at_least``, and at most ``MAX_DRAWS``: every count of answers drawn per question."""
    require_at_least(name, value, minimum, why)
    if value > MAX_DRAWS:
        raise DelibError(f"{name} must be at most {MAX_DRAWS} (got {value}): more answers per question than any "
                         "method draws")


RESUMES = "resumes"
"""The key, in a run's config.json and a tree store's manifest.json, of what each later command that resumed
it changed (``{"limit": 6, "command": ...}``): the first command stays the ``command`` entry, so a run or a
store extended past its first settings still records how it got what it holds."""

@dataclass(frozen=True)
class EngineConfig:
    """How a team deliberates on one question. Every method reads the fields it needs."""

    agents: int = 3
    """Number of agents N (self-consistency: number of samples; cot uses 1)."""
    rounds: int = 2
    """Deliberation rounds R after the independent round 0."""
    temperature: float = 0.7
    """Sampling temperature of every answer (critic calls are greedy)."""
    max_tokens: int = 1024
    """Generation limit per answer: at 400, 20-24% of qwen2.5-coder-1.5b's GSM8K turns were cut off."""
    seed: int = 0
    """Run seed: request seeds derive from (seed, example, agent, round) so runs are reproducible and
    round-0 requests are identical across methods (and served once by the response cache)."""
    early_stop: bool = True
    """Stop deliberating once the method's consensus rule holds (all agents agree, by default)."""
    verbal_confidence: bool = False
    """Ask for a 0-100 confidence instead of reading P(Yes) from logprobs (forced when the backend has
    no logprobs)."""
    prompts: str = "continuation"
    """Critic and update prompts: continuation (version 2: they extend the agent's own conversation, so
    prefix caches reuse what it already read and wrote) or standalone (version 1: fresh chats, the prompts
    of results made before version 2)."""

    def __post_init__(self) -> None:
        require_draws("--agents", self.agents)
        require_at_least("--rounds", self.rounds, 0)
        require_number("--temperature", self.temperature, 0)
        require_at_least("--max-tokens", self.max_tokens)
        require_at_least("--seed", self.seed, 0, "(request seeds derive from it; a backend may read a negative "
                         "seed as 'random')")


@dataclass(frozen=True)
class Selection:
    """Which questions of a split a command runs on, applied in this order: ``ids``, ``offset``, ``subset``,
    then the workload's ``limit`` (so a larger limit extends the same selection). The default is the whole
    split in its order, as before selections existed."""

    ids: tuple[str, ...] = ()
    """Only these question ids (kept in the split's order); --ids a,b,c or --ids @file (ids separated by
    newlines, commas or spaces)."""
    offset: int = 0
    """Skip the first N questions (after --ids)."""
    subset: int | None = field(default=None, metadata=formerly("sample"))
    """A random subset of N questions (after --offset), kept in the split's order; a larger N with the same seed
    keeps the smaller subset's questions."""
    subset_seed: int = field(default=0, metadata=formerly("sample_seed"))
    """Seed of --subset."""

    def __post_init__(self) -> None:
        require_at_least("--offset", self.offset, 0)
        if self.subset is not None:
            require_at_least("--subset", self.subset)
        require_at_least("--subset-seed", self.subset_seed, 0)
        check_ids(self.ids)


def check_ids(ids: tuple[str, ...]) -> None:
    """Refuse --ids naming a question twice (a run or a replay answers each question once)."""
    twice = repeated(ids)
    if twice is not None:
        raise DelibError(f"--ids names {twice!r} twice; list each question once")


@dataclass(frozen=True)
class Workload:
    """What a command runs questions on and with which backend; saved in config.json / manifest.json."""

    benchmark: str = "gsm8k"
    split: str = "test"
    limit: int | None = None
    backend: str = "llamacpp"
    backend_options: dict[str, Any] = field(default_factory=dict)
    cache: str | None = None
    engine: EngineConfig = field(default_factory=EngineConfig)
    data_dir: str | None = None
    command: str = ""
    concurrency: int = 1
    """Questions in flight at once, their LLM requests merged into shared batches (backends/coalesce.py)."""
    selection: Selection = field(default_factory=Selection)
    """Which questions of the split (before ``limit``): ids, offset, a seeded subset."""

    def __post_init__(self) -> None:
        require_at_least("concurrency", self.concurrency)
        if self.limit is not None:
            require_at_least("limit", self.limit)


@dataclass(frozen=True)
class LearningWorkload(Workload):
    """A workload that learns from its questions (rollouts for a policy, a graph's edges, a workflow): on a
    train split, or on a test split only when asked, since what it learns is then measured on the questions it
    learned from."""

    split: str = "train"
    allow_test: bool = False
    """Learning on a test split learns the questions it is then measured on: opt-in only."""
    learns: ClassVar[tuple[str, str]] = ("learn on the questions it is measured on", "learn")
    """(what a test split would make it do, the verb of the fix): each kind's words for the refusal."""
    unlearned: ClassVar[frozenset[str]] = frozenset({"command", "cache", "data_dir", "concurrency"})
    """Its settings that change how fast or where it goes, not what it learns (the command line, where the
    response cache and the data are, the questions in flight): the output asked again may differ in them."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.split == "test" and not self.allow_test:
            harm, verb = self.learns
            raise DelibError(f"--split test would {harm}; {verb} on a train split (or pass --allow-test to do it "
                             "knowingly)")

    def record(self, version: int, ids: Sequence[str]) -> dict[str, Any]:
        """What its output (a graph, a workflow) records of how it was learned, as JSON reads it back: the
        learner's ``version``, the settings, the engine and the question ``ids`` it learned from."""
        settings = {k: v for k, v in asdict(self).items() if k not in ("engine", "selection")}
        return json.loads(json.dumps({"version": version, "settings": settings, "engine": asdict(self.engine),
                                      "questions": {"benchmark": self.benchmark, "split": self.split,
                                                    "ids": list(ids)}}))


def learned_ids(record: Any) -> list[str]:
    """The question ids an output's ``record`` (``LearningWorkload.record``) says it learned from, or a
    ValueError saying it names none: a file without them could not refuse its own training questions."""
    questions = record.get("questions") if isinstance(record, dict) else None
    ids = questions.get("ids") if isinstance(questions, dict) else None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ValueError("its record names no questions it learned from (record.questions.ids)")
    return ids


def refuse_learned(examples: Sequence[Example], learned: Collection[str], what: str, fix: str) -> None:
    """Refuse to answer questions something learned from, since its score there would be in-sample: ``what``
    says what learned, as the message names it ("runs/g/graph.json was optimised"), ``fix`` the other way out
    ("optimise on a split that excludes them"). The one check of every method that runs a learned artefact."""
    hit = [e.id for e in examples if e.id in learned]
    if hit:
        raise DelibError(f"{what} on {len(hit)} of these questions (e.g. {hit[0]}); answer other questions, or {fix}")
