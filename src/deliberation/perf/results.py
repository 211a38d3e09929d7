"""The records of ``delib bench``: settings, one frozen dataclass per measurement, and the JSON report.

Ratios and rates are properties computed from the raw numbers (tokens, seconds, calls), and the JSON
carries both, so a reader can recompute every headline figure.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from deliberation.errors import DelibError
from deliberation.types import to_json

OVERHEAD_TARGET_MS = 1.0  # the framework's cost per LLM call may not exceed this (else the bench profiles the run)
DEFAULT_MODEL = "qwen2.5-coder-1.5b"
QUICK_MODEL = "smollm2-135m"


@dataclass(frozen=True)
class BenchSettings:
    """Sizes of every measurement; ``for_mode`` gives the quick and full presets."""

    model: str = DEFAULT_MODEL
    """llamacpp model of the batching and cache measurements (catalogue name or .gguf path)."""
    quick: bool = False
    """Recorded in the report: whether the quick preset was used."""
    benchmark: str = "gsm8k"
    """Benchmark of every measurement (its test split)."""
    overhead_methods: tuple[str, ...] = ("mpdf", "debate")
    """Methods whose framework overhead is measured; the first one also gives ``episodes_per_s``."""
    overhead_questions: int = 200
    """Questions per method in the overhead measurement (fixed per-run costs amortize over them)."""
    agents: int = 3
    """Agents per team (round-0 batch size)."""
    batch_questions: int = 3
    """Questions whose round-0 batch is compared against raw llama-cpp-python."""
    max_tokens: int = 256
    """Completion limit of the llamacpp measurements."""
    n_ctx: int = 4096
    """Context window per sequence, the same on both sides of the batching comparison."""
    n_threads: int | None = None
    """llama.cpp threads for both sides (default: every core this process may use)."""
    prefix_questions: int = 2
    """Questions of the prefix-reuse measurement (one deliberation round each, reuse off and on)."""
    cache_method: str = "self-consistency"
    """Method of the cache rerun measurement."""
    cache_questions: int = 10
    pg_batch_size: int = 256
    """Decisions per policy-gradient step."""
    pg_steps: int = 200
    """Policy-gradient steps timed (rounded up to whole epochs of 10 steps)."""
    seed: int = 0
    """Run seed of every measurement (request seeds, synthetic decisions, network initialization)."""

    @classmethod
    def for_mode(cls, quick: bool, model: str | None = None) -> BenchSettings:
        """``--quick``: smollm2-135m and small sizes (minutes on 2 cores); else the full preset."""
        if model is not None and not model.strip():  # it would read as none: the preset's model, not asked for
            raise DelibError("--model is empty; name a catalogue model or a .gguf file, or leave --model out")
        if quick:
            return cls(model=model or QUICK_MODEL, quick=True, overhead_questions=50, batch_questions=2,
                       max_tokens=128, n_ctx=2048, cache_questions=4, pg_steps=50)
        return cls(model=model or DEFAULT_MODEL)

    @property
    def threads(self) -> int:
        if self.n_threads:
            return self.n_threads
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class Hotspot:
    """One profiled function: where it is, calls, own time and time including callees (cProfile)."""

    function: str
    calls: int
    tottime_s: float
    cumtime_s: float


@dataclass(frozen=True)
class OverheadResult:
    """One method through ``runner.execute`` on the scripted backend, and the same run replayed."""

    method: str
    episodes: int
    llm_calls: int
    wall_s: float  # scripted run, end to end
    backend_s: float  # of which inside backend.generate
    replay_wall_s: float  # the same run with the recorded completions served from a dict
    replay_backend_s: float
    hotspots: tuple[Hotspot, ...] = ()  # cProfile of the replay, filled when over the target

    @property
    def overhead_ms_per_call(self) -> float:
        return 1000 * (self.wall_s - self.backend_s) / self.llm_calls

    @property
    def replay_overhead_ms_per_call(self) -> float:
        return 1000 * (self.replay_wall_s - self.replay_backend_s) / self.llm_calls

    @property
    def episodes_per_s(self) -> float:
        return self.episodes / self.wall_s


@dataclass(frozen=True)
class Throughput:
    """Completion tokens generated in ``seconds`` (prompt tokens for reference)."""

    completion_tokens: int
    prompt_tokens: int
    seconds: float

    @property
    def tokens_per_s(self) -> float:
        return self.completion_tokens / self.seconds


@dataclass(frozen=True)
class BatchResult:
    """Round-0 batches through the engine against the same requests one at a time in raw llama-cpp:
    ``raw`` as llama-cpp-python does by default (a prompt sharing a prefix with the previous one reuses
    its KV cache: agents 2..N of a round-0 batch skip most of their prefill), ``raw_fresh`` with the
    cache reset before each request (the same prefill work as the engine: batching alone)."""

    model: str
    requests: int
    max_tokens: int
    engine: Throughput
    raw: Throughput
    raw_fresh: Throughput

    @property
    def speedup(self) -> float:
        return self.engine.tokens_per_s / self.raw.tokens_per_s

    @property
    def speedup_vs_fresh(self) -> float:
        return self.engine.tokens_per_s / self.raw_fresh.tokens_per_s


@dataclass(frozen=True)
class CacheResult:
    """A cached first run against a rerun into a new run directory served from the cache."""

    method: str
    questions: int
    first_s: float
    rerun_s: float
    rerun_hits: int
    rerun_misses: int

    @property
    def speedup(self) -> float:
        return self.first_s / self.rerun_s


@dataclass(frozen=True)
class PrefixReuseResult:
    """One deliberation round (round 0, critic, REFINE, critic) per question on the llamacpp backend without
    its prefix cache (``off``) and with it (``on``); the prompt tokens the cache spared the ``on`` side."""

    model: str
    questions: int
    agents: int
    max_tokens: int
    off: Throughput
    on: Throughput
    prompt_tokens_read: int  # on side: prompt tokens read by the model
    prompt_tokens_reused: int  # on side: prompt tokens whose KV cells came from the prefix cache

    @property
    def speedup(self) -> float:
        return self.off.seconds / self.on.seconds

    @property
    def prefill_tokens_saved(self) -> int:
        return self.prompt_tokens_reused

    @property
    def prefill_saved_share(self) -> float:
        return self.prompt_tokens_reused / max(1, self.prompt_tokens_read + self.prompt_tokens_reused)


@dataclass(frozen=True)
class UpdateResult:
    """Policy-gradient steps of ``train_pg`` on synthetic decisions with ``torch_threads`` intra-op threads."""

    algo: str
    batch_size: int
    decisions: int
    steps: int
    seconds: float
    torch_threads: int

    @property
    def updates_per_s(self) -> float:
        return self.steps / self.seconds


@dataclass(frozen=True)
class BenchMeta:
    """Where and with what the numbers were taken."""

    model: str
    quick: bool
    deliberation: str
    python: str
    torch: str
    llama_cpp: str
    llama_cpp_build: str  # llama_print_system_info(): the instruction sets compiled in (AVX512 = native build)
    numpy: str
    cpu_count: int
    threads: int  # llama.cpp threads on both sides of the batching comparison
    load_average: tuple[float, float, float]  # 1, 5, 15 min at the start: other work on the CPUs skews all timings
    platform: str
    timestamp: str


@dataclass(frozen=True)
class BenchResult:
    """Everything ``delib bench`` reports; ``to_json`` puts the headline numbers at the top level.

    ``updates`` holds the trainer at torch's default thread count first, then at one thread."""

    meta: BenchMeta
    overhead: tuple[OverheadResult, ...]
    batch: BatchResult
    cache: CacheResult
    updates: tuple[UpdateResult, ...]
    prefix: PrefixReuseResult
    settings: BenchSettings = field(default_factory=BenchSettings)

    @property
    def overhead_ms_per_call(self) -> float:
        """The worst method's framework overhead per LLM call."""
        return max(o.overhead_ms_per_call for o in self.overhead)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-able values (like ``types.to_json``): headline numbers, then the raw numbers."""
        return {
            "overhead_ms_per_call": self.overhead_ms_per_call,
            "overhead_target_ms": OVERHEAD_TARGET_MS,
            "episodes_per_s": self.overhead[0].episodes_per_s,
            "episodes_per_s_method": self.overhead[0].method,
            "llamacpp_batch_speedup": self.batch.speedup,
            "cache_rerun_speedup": self.cache.speedup,
            "prefix_reuse_speedup": self.prefix.speedup,
            "prefill_tokens_saved": self.prefix.prefill_tokens_saved,
            "softrankpo_updates_per_s": self.updates[0].updates_per_s,
            "meta": to_json(self.meta),
            "overhead": [with_properties(o) for o in self.overhead],
            "llamacpp_batch": {**with_properties(self.batch), "engine": with_properties(self.batch.engine),
                               "raw": with_properties(self.batch.raw),
                               "raw_fresh": with_properties(self.batch.raw_fresh)},
            "cache_rerun": with_properties(self.cache),
            "prefix_reuse": {**with_properties(self.prefix), "off": with_properties(self.prefix.off),
                             "on": with_properties(self.prefix.on)},
            "softrankpo": [with_properties(u) for u in self.updates],
            "settings": to_json(self.settings),
        }


def with_properties(obj: Any) -> dict[str, Any]:
    """A record's fields plus its computed properties (the ratios and rates)."""
    props = {name: getattr(obj, name) for name, v in vars(type(obj)).items() if isinstance(v, property)}
    return {**to_json(obj), **props}
