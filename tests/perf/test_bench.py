"""``delib bench``: the overhead accounting, the records' arithmetic and the JSON's keys. No assertion
here is about speed (that is what the bench itself measures: bench/run_bench.py): the accounting is
checked on a fake clock against backends whose cost on it is known, and a real run's numbers only for
being finite and positive."""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

import pytest
import torch

from deliberation.backends.scripted import ScriptedBackend
from deliberation.benchmarks.answers import BenchmarkAnswers
from deliberation.perf import BenchSettings, llama_build, measure, run_settings, timing
from deliberation.perf.measure import measure_overhead, measure_updates, raw_llama, synthetic_decisions
from deliberation.perf.results import (BatchResult, BenchMeta, BenchResult, CacheResult, OverheadResult,
                                        PrefixReuseResult, Throughput, UpdateResult)
from deliberation.perf.timing import TimedBackend
from deliberation.errors import DelibError
from deliberation.rl import trainer
from deliberation.rl.data import tensorize
from deliberation.types import Completion, GenerationRequest, Message
from scripts import script

COST_S = 0.05  # per request, on the fake clock


class FakeClock:
    """Stands in for the ``time`` module of the perf code: ``perf_counter`` reads a clock that only the test's
    backends move, so every time measured is exact arithmetic on their known costs."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(timing, "time", fake)
    monkeypatch.setattr(measure, "time", fake)
    return fake


class CostlyBackend(ScriptedBackend):
    """The scripted simulator, costing COST_S per request on ``clock``."""

    def __init__(self, clock: FakeClock, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.clock = clock

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        self.clock.now += COST_S * len(requests)
        return super().generate(requests)


def _request(seed: int) -> GenerationRequest:
    return GenerationRequest((Message("user", f"question {seed}"),), max_tokens=4, seed=seed)


class _Echo:
    """Costs COST_S per call (whatever its size) on ``clock``."""

    name, model, supports_logprobs = "echo", "echo-v1", False

    def __init__(self, clock: FakeClock) -> None:
        self.closed = False
        self.clock = clock

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        self.clock.now += COST_S
        return [Completion(f"answer {r.seed}", 3, 2) for r in requests]

    def close(self) -> None:
        self.closed = True


def test_timed_backend_counts_requests_and_time_and_replays_them(clock):
    inner = _Echo(clock)
    timed = TimedBackend(inner, record=True)
    first = timed.generate([_request(1), _request(2)])
    clock.now += 7.0  # time outside the backend is not its time
    timed.generate([_request(3)])
    assert timed.requests == 3
    assert timed.seconds == pytest.approx(2 * COST_S)  # two calls, each costing once
    replay = timed.replay()
    assert replay.generate([_request(2), _request(1)]) == [first[1], first[0]]
    with pytest.raises(DelibError, match="not recorded"):
        replay.generate([_request(4)])
    timed.close()
    assert not inner.closed  # borrowed by default
    TimedBackend(inner, owns=True).close()
    assert inner.closed


def test_overhead_subtracts_the_backend_time(clock):
    """On the fake clock only the backend costs anything: the run's wall time is exactly the backend's, so
    the overhead is exactly 0 (without the subtraction it would be the 50 ms a call costs), and the replay,
    which never reaches the costly backend, takes no time at all."""
    backend = CostlyBackend(clock, benchmark="gsm8k", answers=BenchmarkAnswers)
    settings = BenchSettings(overhead_questions=4, overhead_methods=("mpdf",))
    result = measure_overhead("mpdf", settings, backend)
    assert result.llm_calls >= 4 * settings.agents  # round 0 at least
    assert result.backend_s == pytest.approx(COST_S * result.llm_calls)  # the timer saw every call's cost
    assert result.wall_s == pytest.approx(result.backend_s)  # the wall timer spans the calls
    assert result.overhead_ms_per_call == pytest.approx(0.0, abs=1e-9)
    assert (result.replay_wall_s, result.replay_backend_s, result.replay_overhead_ms_per_call) == (0.0, 0.0, 0.0)
    assert result.hotspots == ()  # within the target: the replay is not profiled


def test_records_compute_their_ratios_from_the_raw_numbers():
    batch = BatchResult("m", 6, 64, engine=Throughput(300, 600, 2.0), raw=Throughput(200, 600, 4.0),
                        raw_fresh=Throughput(200, 600, 8.0))
    assert batch.engine.tokens_per_s == 150 and batch.raw.tokens_per_s == 50
    assert batch.speedup == pytest.approx(3.0) and batch.speedup_vs_fresh == pytest.approx(6.0)
    assert CacheResult("self-consistency", 2, 10.0, 0.05, 6, 0).speedup == pytest.approx(200.0)
    assert UpdateResult("softrankpo", 256, 2560, 50, 2.0, 1).updates_per_s == 25
    over = OverheadResult("mpdf", 10, 100, wall_s=1.0, backend_s=0.9, replay_wall_s=0.2, replay_backend_s=0.1)
    assert over.overhead_ms_per_call == pytest.approx(1.0)
    assert over.replay_overhead_ms_per_call == pytest.approx(1.0)
    assert over.episodes_per_s == pytest.approx(10.0)


def test_headline_overhead_is_the_worst_method():
    fast = OverheadResult("mpdf", 10, 100, 1.0, 0.95, 0.1, 0.0)  # 0.5 ms
    slow = OverheadResult("debate", 10, 100, 1.0, 0.8, 0.1, 0.0)  # 2 ms
    meta = BenchMeta("m", True, "0", "3", "t", "l", "AVX2 = 1", "n", 2, 2, (0.0, 0.0, 0.0), "p", "now")
    result = BenchResult(meta, (fast, slow), BatchResult("m", 3, 8, *[Throughput(3, 3, 1.0)] * 3),
                         CacheResult("sc", 1, 1.0, 0.5, 3, 0), (UpdateResult("softrankpo", 8, 16, 2, 1.0, 2),),
                         PrefixReuseResult("m", 2, 3, 8, Throughput(40, 900, 4.0), Throughput(41, 900, 2.5), 300, 600))
    data = result.to_json()
    assert data["overhead_ms_per_call"] == pytest.approx(2.0)
    assert data["prefix_reuse_speedup"] == pytest.approx(1.6)  # 4.0 s without reuse / 2.5 s with it
    assert data["prefill_tokens_saved"] == 600 and data["prefix_reuse"]["prefill_saved_share"] == pytest.approx(2 / 3)
    assert data["episodes_per_s_method"] == "mpdf"
    assert json.loads(json.dumps(data)) == data  # plain JSON values


def test_llama_build_lists_the_compiled_cpu_features():
    class Lib:
        @staticmethod
        def llama_print_system_info() -> bytes:
            return b"CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | "

    assert llama_build(Lib) == "SSE3 = 1 | AVX2 = 1 | AVX512 = 1"


def test_raw_side_places_layers_like_the_engine(smollm2_path):
    """``Llama`` defaults to no GPU layers, the engine's backend to llama.cpp's default (all of them): the raw
    side must ask for the same, or a GPU build would compare a GPU engine with a CPU baseline."""
    import llama_cpp

    llm = raw_llama(BenchSettings.for_mode(True, str(smollm2_path)))
    try:
        assert llama_cpp.llama_model_default_params().n_gpu_layers == -1  # the engine's: every layer
        assert llm.model_params.n_gpu_layers >= llama_cpp.llama_model_n_layer(llm.model)  # raw: every layer
    finally:
        llm.close()


@pytest.mark.integration
@pytest.mark.parametrize("amx", [True, False])
def test_raw_side_loads_with_the_engines_model_parameters(smollm2_path, monkeypatch, amx):
    """On a llama.cpp build with ggml's AMX kernels the engine loads without the extra weight buffers (they
    segfault: backends/llamacpp_runtime.model_params); the raw ``Llama`` must load the same way, or it would
    crash, and otherwise compare unlike builds. Outside ``raw_llama`` the defaults are llama.cpp's own."""
    import llama_cpp

    info = b"CPU : AVX2 = 1 | AMX_INT8 = 1 | " if amx else b"CPU : AVX2 = 1 | "
    monkeypatch.setattr(llama_cpp, "llama_print_system_info", lambda: info)
    llm = raw_llama(BenchSettings.for_mode(True, str(smollm2_path)))
    try:
        assert llm.model_params.use_extra_bufts is (not amx)
        assert llama_cpp.llama_cpp.llama_model_default_params().use_extra_bufts is True
    finally:
        llm.close()


def test_presets():
    quick, full = BenchSettings.for_mode(True), BenchSettings.for_mode(False)
    assert (quick.model, quick.quick, full.model, full.quick) == ("smollm2-135m", True, "qwen2.5-coder-1.5b", False)
    assert BenchSettings.for_mode(True, "qwen2.5-coder-0.5b").model == "qwen2.5-coder-0.5b"
    assert quick.overhead_questions < full.overhead_questions and quick.max_tokens < full.max_tokens


def test_synthetic_decisions_form_ranking_groups():
    batch = tensorize(synthetic_decisions(48, agents=3, seed=0, group_size=8))
    assert len(batch) == 48
    assert torch.bincount(batch.groups).tolist() == [8] * 6  # 6 groups of the 8 samples
    assert batch.peers.shape[1] == 2  # (N, P=agents-1, F)


@pytest.mark.parametrize("asked, used", [(1, 1), (None, 3)])
def test_updates_run_the_trainer_and_restore_torch_threads(asked, used):
    """Trained at the thread count asked for (None: the one set), which is set back afterwards. The count set
    first is 3, neither the one asked for nor the one the test session may already have set (tests/rl sets 1),
    so a count left behind shows."""
    outside = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        result = measure_updates(BenchSettings(pg_batch_size=16, pg_steps=3), torch_threads=asked)
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(outside)
    assert (result.steps, result.torch_threads, result.batch_size) == (3, used, 16)


def test_updates_are_timed_without_their_warm_up(clock, monkeypatch):
    """The rate's seconds are those of the measured training only: the warm-up step costs 1 s on the fake
    clock, the measured run 2 s."""
    costs, train_pg = iter([1.0, 2.0]), trainer.train_pg

    def costly(*args, **kwargs):
        done = train_pg(*args, **kwargs)
        clock.now += next(costs)
        return done

    monkeypatch.setattr(trainer, "train_pg", costly)
    result = measure_updates(BenchSettings(pg_batch_size=16, pg_steps=3))
    assert result.seconds == 2.0 and result.steps == 3


@pytest.mark.slow
@pytest.mark.integration
def test_quick_bench_json_has_every_key_with_finite_positive_numbers(smollm2_path):
    settings = BenchSettings(model=str(smollm2_path), quick=True, overhead_questions=3, batch_questions=1,
                             max_tokens=8, n_ctx=1024, n_threads=1, cache_questions=1, pg_batch_size=16,
                             pg_steps=2, prefix_questions=1)
    data = json.loads(json.dumps(run_settings(settings, progress=False).to_json()))
    for key in ("overhead_ms_per_call", "episodes_per_s", "llamacpp_batch_speedup", "cache_rerun_speedup",
                "prefix_reuse_speedup", "prefill_tokens_saved", "softrankpo_updates_per_s"):
        assert math.isfinite(data[key]) and data[key] > 0, key
    batch, cache = data["llamacpp_batch"], data["cache_rerun"]
    assert batch["requests"] == settings.agents
    for side in ("engine", "raw", "raw_fresh"):
        assert batch[side]["completion_tokens"] > 0 and batch[side]["prompt_tokens"] > 0 and batch[side]["seconds"] > 0
    assert (cache["rerun_hits"], cache["rerun_misses"]) == (settings.agents, 0)
    prefix = data["prefix_reuse"]
    assert prefix["questions"] == 1 and prefix["off"]["prompt_tokens"] > prefix["prompt_tokens_read"]
    assert [o["method"] for o in data["overhead"]] == ["mpdf", "debate"]
    assert [u["torch_threads"] for u in data["softrankpo"]][1] == 1
    meta = data["meta"]
    assert meta["model"] == str(smollm2_path) and meta["torch"] and meta["llama_cpp"] and meta["cpu_count"] >= 1
    assert "AVX2 = 1" in meta["llama_cpp_build"].split(" | ")  # the Makefile's builds, portable or native


@pytest.mark.parametrize("flag", [True, False])
def test_batch_speedup_script_turns_extra_buffer_types_off_for_both_sides(flag, monkeypatch, capsys):
    """bench/batch_speedup.py --no-extra-bufts: the engine's backend (``model_params``) and raw ``Llama``
    (the low-level defaults) load without the extra buffer types while it measures; without the flag they
    keep llama.cpp's default; either way the defaults are llama.cpp's own again afterwards."""
    import json
    import sys
    from types import SimpleNamespace

    import llama_cpp

    from deliberation.backends import llamacpp
    from deliberation.backends.llamacpp_runtime import model_params
    from deliberation.perf import measure

    seen = {}

    class Backend:
        def __init__(self, *args, **kwargs):
            seen["backend"] = model_params(llama_cpp).use_extra_bufts

        def close(self):
            pass

    def fake_measure(settings, backend):
        seen["raw"] = llama_cpp.llama_cpp.llama_model_default_params().use_extra_bufts
        side = SimpleNamespace(tokens_per_s=1.0)
        return SimpleNamespace(engine=side, raw=side, raw_fresh=side, speedup=1.0, speedup_vs_fresh=1.0)

    monkeypatch.setattr(llamacpp, "LlamaCppBackend", Backend)
    monkeypatch.setattr(measure, "measure_llamacpp_batch", fake_measure)
    monkeypatch.setattr(sys, "argv", ["batch_speedup.py", "--quick"] + ([] if flag else ["--no-extra-bufts"]))
    with script("bench/batch_speedup.py") as batch_speedup:
        batch_speedup.main()
    amx = "AMX_INT8 = 1" in llama_cpp.llama_print_system_info().decode()
    assert seen == {"backend": flag and not amx, "raw": flag and not amx}
    assert json.loads(capsys.readouterr().out)["extra_bufts"] is flag
    assert llama_cpp.llama_model_default_params().use_extra_bufts  # llama.cpp's defaults again
    assert llama_cpp.llama_cpp.llama_model_default_params().use_extra_bufts


@pytest.mark.parametrize("name", ["batch_speedup", "llamacpp_batch", "offline_replay", "prefix_reuse", "run_bench"])
def test_benchmark_scripts_refuse_an_abbreviated_flag(name, tmp_path):
    """bench/*.py parse like delib: a prefix (--mod for --model, --ou for --out) is a one-line error, never
    taken for the flag (the required --out is given, so the refusal can only be the prefix's)."""
    import subprocess
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench" / f"{name}.py"
    needs_out = "--out" in path.read_text()
    args = ["--out", str(tmp_path / "out.json"), "--ou", str(tmp_path / "x")] if needs_out else ["--mod", "x"]
    done = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=120)
    err = done.stderr.strip()
    assert done.returncode == 2 and len(err.splitlines()) == 1, err
    assert f"error: unrecognized arguments: {args[-2]}" in err and err.endswith(f"see `{name}.py --help`")
    assert not (tmp_path / "x").exists() and not (tmp_path / "out.json").exists()
