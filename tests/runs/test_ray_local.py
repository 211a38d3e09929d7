"""``delib run --workers 2`` on a real local Ray, as a user types it: the command starts Ray itself (two CPUs),
runs the examples on two actors with the scripted backend, shuts Ray down, and leaves the same episodes and
summary as the run without workers. (tests/runs/test_distributed.py drives ``execute_distributed`` itself,
crashes and resumes included.)"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from deliberation.cli.main import main
from deliberation.runs.directory import RunDir
from deliberation.types import to_json

pytestmark = pytest.mark.integration

RUN = ["run", "--method", "debate", "--benchmark", "gsm8k", "--limit", "3", "--backend", "scripted", "--quiet"]


def untimed(out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's episodes by example id and its summary.json, wall times zeroed."""
    episodes = RunDir(out).episodes()
    by_id = {e.example_id: to_json(dataclasses.replace(e, wall_seconds=0.0)) for e in episodes}
    assert len(by_id) == len(episodes) == 3  # each example once
    return by_id, dict(json.loads((out / "summary.json").read_text()), wall_seconds=0.0)


def test_run_with_two_workers_on_a_local_ray_equals_the_run_without(tmp_path, monkeypatch):
    try:
        import ray
    except ImportError:
        pytest.fail("ray is needed by this test: pip install -e '.[ray]'")
    assert not ray.is_initialized()
    started: list[dict[str, Any]] = []
    real_init = ray.init
    monkeypatch.setattr(ray, "init", lambda **kw: started.append(kw) or real_init(**kw))
    assert main([*RUN, "--out", str(tmp_path / "alone")]) == 0
    assert started == []  # no Ray without workers
    assert main([*RUN, "--workers", "2", "--out", str(tmp_path / "ray")]) == 0
    assert [(kw["address"], kw["num_cpus"]) for kw in started] == [("local", 2)]
    assert not ray.is_initialized()  # the command shut down the Ray it started
    assert untimed(tmp_path / "ray") == untimed(tmp_path / "alone")
