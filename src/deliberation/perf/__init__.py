"""Measured costs of the framework (``delib bench``): overhead per LLM call, batching and cache speedups,
policy-gradient update rate. Every function returns a frozen dataclass; nothing here prints.

What is measured, and how:
1. ``overhead_ms_per_call``: episodes of each method run through ``runner.execute`` into a fresh run
   directory (validation, the round loop, answer extraction and scoring, appends with fsync, the summary)
   against the scripted simulator. The simulator's own work (prompt parsing, scoring) is not the
   framework's, so the backend is wrapped in a timer and its time subtracted:
   (wall - time inside backend.generate) / requests. A second run replays the recorded completions from
   a dict (a zero-cost backend) as a cross-check; when a method is over the 1 ms target, that replay run
   is profiled with cProfile and the top functions are reported.
2. ``episodes_per_s``: end to end on the scripted backend (simulator included), MPDF's default policy rule.
3. ``llamacpp_batch_speedup``: round 0 of self-consistency (one batch of ``agents`` requests through
   ``engine.generate`` on the llamacpp backend) against raw llama-cpp-python generating the same requests
   one at a time with ``create_chat_completion`` (same model, context, threads, max_tokens, temperature,
   seed; full-vocabulary sampling on both sides: top_k 0, top_p 1, min_p 0). Ratio of completion tokens/s.
   Raw llama-cpp-python keeps its default prompt-prefix reuse between calls, as a user would get it.
4. ``cache_rerun_speedup``: a method run on N questions with a response cache in front of llamacpp, then
   the same run into a new run directory with a fresh cache connection (every request a hit): ratio of
   the two ``execute`` wall times (the model is loaded once, outside both timings).
5. ``prefix_reuse_speedup`` and ``prefill_tokens_saved``: one deliberation round (round 0,
   critic, REFINE, critic for every agent; ``perf/prefix_round.py``) per question on the llamacpp backend
   with its prefix cache off, then on; ratio of wall times, and the prompt tokens whose KV cells the
   cache restored instead of reading them.
6. ``softrankpo_updates_per_s``: ``rl.trainer.train_pg`` (SoftRankPO, KL to a reference, PPO clip) on
   synthetic decisions, steps / wall seconds including its one-off tensorization, at torch's default
   thread count (what ``delib train`` gets) and again at one thread (for a network this small, intra-op
   threads on a busy machine can cost more than they give).

Timings on CPUs shared with other work mislead: llama.cpp and torch spread over every core slow down
many-fold when another process holds one (seen here with 2 cores and one busy: SmolLM2 at 2 threads
3.5 tok/s, at 1 thread 45 tok/s), so ``meta.load_average`` records the background load at the start.

Layout: ``results`` (settings and records, JSON), ``timing`` (timed/replay backends, profiling),
``measure`` (one function per measurement), ``prefix_round`` (the round the prefix-reuse measurement
times), and here the entry point ``run_bench`` and ``bench_backend``, the llamacpp backend every stage
and ``bench/*.py`` measure.
"""

from __future__ import annotations

import os
import platform
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

from deliberation import __version__
from deliberation.perf.measure import (measure_cache_rerun, measure_llamacpp_batch, measure_overhead,
                                       measure_prefix_reuse, measure_updates)
from deliberation.perf.results import BenchMeta, BenchResult, BenchSettings


def run_bench(quick: bool, model: str | None, progress: bool) -> BenchResult:
    """``delib bench [--quick] [--model NAME]``: every measurement with the preset of the mode."""
    return run_settings(BenchSettings.for_mode(quick, model), progress)


def run_settings(settings: BenchSettings, progress: bool) -> BenchResult:
    """Every measurement under ``settings``; a tqdm bar on stderr names the stage when ``progress``."""
    from tqdm import tqdm

    from deliberation.backends.catalogue import check
    from deliberation.backends.scripted import ScriptedBackend
    from deliberation.benchmarks.answers import BenchmarkAnswers

    check(settings.model)  # a model that cannot load is refused now, not after minutes of measuring
    meta = collect_meta(settings)  # before the work: its load average is the background load
    with tqdm(total=len(settings.overhead_methods) + 5, disable=not progress, unit="stage") as bar:
        step = _stepper(bar)
        scripted = ScriptedBackend(benchmark=settings.benchmark, answers=BenchmarkAnswers)
        overhead = tuple(step(f"overhead {m}", measure_overhead, m, settings, scripted)
                         for m in settings.overhead_methods)
        updates = (step("softrankpo updates", measure_updates, settings),
                   step("softrankpo updates, 1 thread", measure_updates, settings, 1))
        with bench_backend(settings) as llama:
            batch = step("llamacpp batch", measure_llamacpp_batch, settings, llama)
            cache = step("cache rerun", measure_cache_rerun, settings, llama)
            prefix = step("prefix reuse", prefix_reuse, settings, llama)
    return BenchResult(meta, overhead, batch, cache, updates, prefix, settings)


@contextmanager
def bench_backend(settings: BenchSettings, **options: Any) -> Iterator[Any]:
    """The llamacpp backend the bench measures (``settings``' model, context, threads and team size, plus
    ``options``), closed when the ``with`` block ends (also ``bench/*.py``)."""
    from deliberation.backends.llamacpp import LlamaCppBackend

    backend = LlamaCppBackend(settings.model, n_ctx=settings.n_ctx, n_threads=settings.threads,
                              max_parallel=settings.agents, **options)
    try:
        yield backend
    finally:
        backend.close()


def prefix_reuse(settings: BenchSettings, on: Any) -> Any:
    """``measure_prefix_reuse`` against a second backend on the same model with its prefix cache off."""
    with bench_backend(settings, prefix_cache_mb=0) as off:
        return measure_prefix_reuse(settings, off, on)


def _stepper(bar: Any) -> Callable[..., Any]:
    """Run one stage under the bar: name it, run it, advance."""

    def step(name: str, fn: Callable[..., Any], *args: Any) -> Any:
        bar.set_description(name)
        out = fn(*args)
        bar.update()
        return out

    return step


def llama_build(llama_cpp: Any) -> str:
    """The CPU features llama.cpp was compiled with ("AVX2 = 1 | AVX512 = 1 | ..."): a portable and a native
    build of the same version differ in speed by up to 1.4x here (docs/results/bench/README.md)."""
    info = llama_cpp.llama_print_system_info().decode("utf-8", errors="replace")
    return " | ".join(part.strip() for part in info.removeprefix("CPU :").split("|") if part.strip())


def collect_meta(settings: BenchSettings) -> BenchMeta:
    """Versions, CPUs and time of this bench."""
    import llama_cpp
    import numpy as np
    import torch

    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return BenchMeta(settings.model, settings.quick, __version__, platform.python_version(), torch.__version__,
                     llama_cpp.__version__, llama_build(llama_cpp), np.__version__, os.cpu_count() or 1,
                     settings.threads, (load[0], load[1], load[2]), platform.platform(),
                     datetime.now(timezone.utc).isoformat(timespec="seconds"))


__all__ = ["BenchResult", "BenchSettings", "bench_backend", "llama_build", "prefix_reuse", "run_bench", "run_settings"]
