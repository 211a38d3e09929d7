"""The measurements of ``delib bench``, one function each, every one returning a record of
``deliberation.perf.results`` with the raw numbers behind its ratio (see the package docstring)."""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from deliberation.backends.cache import CACHE_FILE
from deliberation.backends.base import Backend
from deliberation.perf.results import (OVERHEAD_TARGET_MS, BatchResult, BenchSettings, CacheResult,
                                        OverheadResult, PrefixReuseResult, Throughput, UpdateResult)
from deliberation.perf.timing import TimedBackend, profile_run, timed_execute
from deliberation.config import EngineConfig
from deliberation.runs.runner import RunSpec
from deliberation.types import Completion, Decision, GenerationRequest


def measure_overhead(method: str, settings: BenchSettings, scripted: Backend) -> OverheadResult:
    """``method`` on the scripted backend through ``runner.execute``, then replayed from a dict; the
    replay is profiled when either run is over the target."""
    spec = RunSpec(method=method, benchmark=settings.benchmark, limit=settings.overhead_questions,
                   backend=scripted.name, engine=EngineConfig(agents=settings.agents, seed=settings.seed),
                   command="delib bench")
    timed_execute(replace(spec, limit=2), TimedBackend(scripted))  # warm-up: imports, data files, caches
    timed = TimedBackend(scripted, record=True)
    wall = timed_execute(spec, timed)
    replay = TimedBackend(timed.replay())
    replay_wall = timed_execute(spec, replay)
    result = OverheadResult(method, settings.overhead_questions, timed.requests, wall, timed.seconds,
                            replay_wall, replay.seconds)
    if max(result.overhead_ms_per_call, result.replay_overhead_ms_per_call) > OVERHEAD_TARGET_MS:
        result = replace(result, hotspots=profile_run(spec, timed.replay()))
    return result


def measure_llamacpp_batch(settings: BenchSettings, backend: Backend) -> BatchResult:
    """Round 0 of self-consistency (one batch of ``agents`` requests via ``engine.loop.generate``) on
    ``batch_questions`` questions, against the same requests one at a time in raw llama-cpp-python.
    The sides alternate (a batch, then its requests raw, then fresh), so they share the background load."""
    from deliberation import benchmarks
    from deliberation.engine import loop, prompts
    from deliberation.methods.self_consistency import SPEC

    bench = benchmarks.get(settings.benchmark)
    cfg = EngineConfig(agents=settings.agents, max_tokens=settings.max_tokens, seed=settings.seed)
    timed = TimedBackend(backend, record=True)
    done: list[Completion] = []
    engine_s, raw, fresh = 0.0, [], []
    llm = raw_llama(settings)
    try:
        warm = GenerationRequest(prompts.initial_messages("1 + 1"), max_tokens=8)
        backend.generate([warm])  # page the weights in on both sides
        raw_generate(llm, warm)
        for ex in bench.load("test", limit=settings.batch_questions):
            ctx = loop.make_context(ex, timed, bench, cfg, SPEC)
            start = time.perf_counter()
            done += loop.generate(ctx, [prompts.initial_messages(ctx.question)] * cfg.agents, range(cfg.agents), 0)
            engine_s += time.perf_counter() - start
            for request in list(timed.log)[len(raw):]:  # the requests just sent
                raw.append(raw_generate(llm, request))
                fresh.append(raw_generate(llm, request, fresh=True))
    finally:
        llm.close()
    engine_side = Throughput(sum(c.completion_tokens for c in done), sum(c.prompt_tokens for c in done), engine_s)
    return BatchResult(settings.model, len(done), settings.max_tokens, engine_side, _sum(raw), _sum(fresh))


def _sum(runs: list[tuple[int, int, float]]) -> Throughput:
    return Throughput(sum(r[0] for r in runs), sum(r[1] for r in runs), sum(r[2] for r in runs))


def raw_llama(settings: BenchSettings) -> Any:
    """A plain ``llama_cpp.Llama`` on the same model file, context size, threads and layer placement:
    ``Llama`` keeps every layer on the CPU unless told (``n_gpu_layers=0``) while the engine's backend loads
    with llama.cpp's defaults (all layers on a GPU when the build has one), so -1 here; CPU builds ignore it."""
    from deliberation.backends import catalogue as models
    from deliberation.backends.llamacpp_runtime import import_llama_cpp, llama_loads_as_backend

    llama_cpp = import_llama_cpp()
    with llama_loads_as_backend(llama_cpp):  # the same model parameters as the backend's (model_params)
        return llama_cpp.Llama(model_path=str(models.resolve(settings.model)), n_ctx=settings.n_ctx,
                               n_gpu_layers=-1, n_threads=settings.threads, n_threads_batch=settings.threads,
                               seed=settings.seed, verbose=False)


def raw_generate(llm: Any, request: GenerationRequest, fresh: bool = False) -> tuple[int, int, float]:
    """(completion tokens, prompt tokens, seconds) of one ``create_chat_completion`` of ``request``,
    sampling from the full vocabulary (top_k 0, top_p 1, min_p 0) as the engine's backend does;
    ``fresh``: forget the previous prompt first (``Llama.reset``), so no prefix of it is reused."""
    start = time.perf_counter()
    if fresh:
        llm.reset()
    out = llm.create_chat_completion(
        messages=[{"role": m.role, "content": m.content} for m in request.messages],
        max_tokens=request.max_tokens, temperature=request.temperature, seed=request.seed,
        top_k=0, top_p=1.0, min_p=0.0)
    seconds = time.perf_counter() - start
    return int(out["usage"]["completion_tokens"]), int(out["usage"]["prompt_tokens"]), seconds


def measure_cache_rerun(settings: BenchSettings, inner: Backend) -> CacheResult:
    """A first run of ``cache_method`` with a response cache in front of ``inner``, then the same run into
    a new run directory through a fresh cache connection (all hits). ``inner`` stays open."""
    from deliberation.backends.cache import CachedBackend

    engine = EngineConfig(agents=settings.agents, max_tokens=settings.max_tokens, seed=settings.seed)
    with tempfile.TemporaryDirectory(prefix="delib-bench-cache-") as folder:
        path = Path(folder) / CACHE_FILE
        spec = RunSpec(method=settings.cache_method, benchmark=settings.benchmark, limit=settings.cache_questions,
                       backend=inner.name, backend_options={"model": inner.model}, cache=str(path),
                       engine=engine, command="delib bench")
        first = CachedBackend(TimedBackend(inner), path)
        first_s = timed_execute(spec, first)
        first.close()  # the SQLite connection only: the TimedBackend does not own ``inner``
        again = CachedBackend(TimedBackend(inner), path)  # a fresh connection, as a new process opens
        rerun_s = timed_execute(spec, again)
        again.close()
    return CacheResult(settings.cache_method, settings.cache_questions, first_s, rerun_s, again.hits, again.misses)


def measure_prefix_reuse(settings: BenchSettings, off: Any, on: Any) -> PrefixReuseResult:
    """One deliberation round (``perf.prefix_round``) per question on ``off`` (a llamacpp backend with
    ``prefix_cache_mb=0``) and on ``on`` (its prefix cache on), alternating per question so both sides
    share the background load. Sampling as in a run (temperature 0.7, seeded), so the two sides may generate
    slightly different texts (restored cells round differently); both sides' token counts are recorded."""
    from deliberation import benchmarks
    from deliberation.engine import prompts
    from deliberation.perf.prefix_round import timed_prefix_round

    warm = GenerationRequest(prompts.initial_messages("1 + 1"), max_tokens=8)
    off.generate([warm])  # page the weights in on both sides
    on.generate([warm])
    read, reused = on.prompt_tokens_read, on.prompt_tokens_reused
    sides: dict[str, list[Any]] = {"off": [], "on": []}
    for ex in benchmarks.get(settings.benchmark).load("test", limit=settings.prefix_questions):
        for name, backend in (("off", off), ("on", on)):
            sides[name].append(timed_prefix_round(backend, ex.question, settings.agents, settings.max_tokens,
                                                  seed=settings.seed))
    totals = {k: Throughput(sum(t.completion_tokens for t in v), sum(t.prompt_tokens for t in v),
                            sum(t.seconds for t in v)) for k, v in sides.items()}
    return PrefixReuseResult(settings.model, settings.prefix_questions, settings.agents, settings.max_tokens,
                             totals["off"], totals["on"], on.prompt_tokens_read - read,
                             on.prompt_tokens_reused - reused)


def measure_updates(settings: BenchSettings, torch_threads: int | None = None) -> UpdateResult:
    """``rl.trainer.train_pg`` (SoftRankPO, KL to a reference) for ``pg_steps`` steps (rounded up to whole
    epochs of 10 steps) on mini-batches of ``pg_batch_size`` synthetic decisions, after a one-step warm-up
    (torch imports parts of itself on first use); ``torch_threads`` None keeps torch's default."""
    import torch

    from deliberation.policy.network import MetaPolicyNet
    from deliberation.rl.config import TrainConfig
    from deliberation.rl.trainer import train_pg

    steps_per_epoch = min(10, settings.pg_steps)
    decisions = synthetic_decisions(settings.pg_batch_size * steps_per_epoch, settings.agents, settings.seed)
    cfg = TrainConfig(algo="softrankpo", batch_size=settings.pg_batch_size, val_fraction=0.0,
                      epochs=max(1, math.ceil(settings.pg_steps / steps_per_epoch)), seed=settings.seed)
    reference = MetaPolicyNet(len(decisions[0].own), hidden=cfg.hidden, heads=cfg.heads)
    before = torch.get_num_threads()
    torch.set_num_threads(torch_threads or before)
    try:
        train_pg(decisions[: settings.pg_batch_size], replace(cfg, epochs=1), init=reference, reference=reference)
        start = time.perf_counter()
        _, metrics = train_pg(decisions, cfg, init=reference, reference=reference)
        seconds = time.perf_counter() - start
        threads = torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
    return UpdateResult(cfg.algo, cfg.batch_size, len(decisions), len(metrics), seconds, threads)


def synthetic_decisions(n: int, agents: int, seed: int, group_size: int = 8) -> list[Decision]:
    """``n`` random decisions in ranking groups of ``group_size`` samples of (question, round 1, agent)."""
    from deliberation.engine.state import N_FEATURES
    from deliberation.actions import ACTIONS

    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        group = k // group_size
        rewards = tuple(float(x) for x in rng.integers(-2, 3, size=3))
        own = tuple(float(x) for x in rng.random(N_FEATURES))
        peers = tuple(tuple(float(x) for x in rng.random(N_FEATURES)) for _ in range(agents - 1))
        out.append(Decision(f"q{group // agents}", k % group_size, 1, group % agents, own, peers,
                            ACTIONS[int(rng.integers(0, 3))], math.log(1 / 3), rewards, rewards[0], 0.0))
    return out
