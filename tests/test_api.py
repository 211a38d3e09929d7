"""The public seam (``deliberation/__init__.py``): what a Python user needs to run a method and load a policy."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

import deliberation
from deliberation.cli.main import main
from deliberation.types import to_json


def test_import_is_light_and_names_load_on_use():
    """``import deliberation`` loads neither torch nor a backend; each public name resolves."""
    code = "import deliberation, sys; print('torch' in sys.modules, 'deliberation.methods' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]
    assert all(getattr(deliberation, name) is not None for name in deliberation.__all__)


def test_run_method_gives_the_episode_delib_run_records(tmp_path):
    """Same example, method, engine and seed: the episode of ``run_method`` is the one ``delib run`` wrote
    (timing fields aside)."""
    out = tmp_path / "run"
    assert main(["run", "--method", "mpdf", "--backend", "scripted", "--limit", "2", "--quiet", "--seed", "3",
                 "--out", str(out)]) == 0
    recorded = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    bench = deliberation.load_benchmark("gsm8k")
    backend = deliberation.make_backend("scripted")
    for example, row in zip(bench.load("test", limit=2), recorded):
        episode = deliberation.run_method("mpdf", example, backend, benchmark="gsm8k",
                                          engine=deliberation.EngineConfig(seed=3))
        got = {k: v for k, v in to_json(episode).items() if k not in ("wall_seconds", "generation_seconds")}
        assert got == {k: v for k, v in row.items() if k not in ("wall_seconds", "generation_seconds")}


def test_load_policy_gives_a_policy_the_engine_can_call():
    from deliberation.engine.state import AgentView, observe

    policy = deliberation.load_policy("default")
    obs = observe([AgentView("18", "so 18", 0.9, 50, False, False), AgentView("18", "18", 0.8, 40, False, False),
                   AgentView("7", "7", 0.3, 30, False, False)], 1, 2)
    actions, logprobs = policy.decide(obs, np.random.default_rng(0))
    assert len(actions) == 3 and all(a in deliberation.Action for a in actions) and logprobs == (0.0,) * 3
