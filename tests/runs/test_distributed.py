"""Distributed runs on a local two-CPU Ray cluster against the single-process runner, with the scripted
backend: same episodes, crashed workers' examples redone exactly once, resumable, bad input writes nothing.

Faults are real: a test worker class ends its own process (``os._exit``) on chosen examples; marker files
say which, and whether only the first attempt crashes (the marker is removed before dying) or every one.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest

from deliberation.runs.distributed import EpisodeWorker, _ray_session, execute_distributed
from deliberation.errors import DelibError
from deliberation.runs.runner import RunSpec, execute, validate
from deliberation.outputs.kinds import EPISODES
from deliberation.runs.directory import RunDir
from deliberation.types import Episode, Example, to_json

pytestmark = pytest.mark.integration

N = 12
METHODS = ("mpdf", "debate")


def spec_for(method: str) -> RunSpec:
    return RunSpec(method=method, benchmark="gsm8k", split="test", limit=N, backend="scripted",
                   backend_options={"benchmark": "gsm8k"})


@pytest.fixture(scope="module")
def data_dir() -> Iterator[str]:
    """DELIB_DATA_DIR for this process and the Ray workers it starts: the env var, else ../shared/data."""
    old = os.environ.get("DELIB_DATA_DIR")
    os.environ["DELIB_DATA_DIR"] = old or str(Path(__file__).resolve().parents[3] / "shared" / "data")
    yield os.environ["DELIB_DATA_DIR"]
    if old is None:
        del os.environ["DELIB_DATA_DIR"]


@pytest.fixture(scope="module")
def cluster(data_dir):
    """One local Ray for the module (2 CPUs, 100 MB object store)."""
    try:
        import ray
    except ImportError:
        pytest.fail("ray is needed by the distributed tests: pip install -e '.[ray]'")
    ray.init(address="local", num_cpus=2, object_store_memory=100 * 2**20, include_dashboard=False,
             log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def reference(data_dir, tmp_path_factory) -> dict[str, tuple[dict[str, dict], dict]]:
    """method -> (normalized episodes by example id, normalized summary) of single-process runs."""
    runs = {}
    for method in METHODS:
        out = tmp_path_factory.mktemp(f"local-{method}")
        summary = execute(spec_for(method), str(out), progress=False)
        runs[method] = (episodes_by_id(out), normalized_summary(summary))
    return runs


def normalized(episode: Episode) -> dict:
    return to_json(dataclasses.replace(episode, wall_seconds=0.0))


def normalized_summary(summary) -> dict:
    return to_json(dataclasses.replace(summary, wall_seconds=0.0))


def episodes_by_id(out: Path) -> dict[str, dict]:
    """The run's episodes by example id, failing if any example appears twice."""
    episodes = RunDir(out).episodes()
    counts = Counter(e.example_id for e in episodes)
    assert max(counts.values(), default=1) == 1, f"duplicated episodes: {[k for k, v in counts.items() if v > 1]}"
    return {e.example_id: normalized(e) for e in episodes}


def touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()


def files_under(root: Path) -> list[str]:
    """Relative paths of the files under ``root`` (marker and record files are named by example id)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def crashing_worker(marker_dir: Path, keep_marker: bool = False) -> type[EpisodeWorker]:
    """A worker that kills its own process on examples with a marker file ``marker_dir / example.id``; the
    marker is removed first (only the first attempt dies) unless ``keep_marker`` (every attempt dies).
    Defined in a function, using no global of this module, so Ray ships the class by value to its workers
    (they cannot import this test module)."""

    class CrashingWorker(EpisodeWorker):
        def run(self, example: Example) -> Episode:
            marker = marker_dir / example.id
            if marker.exists():
                if not keep_marker:
                    marker.unlink()
                os._exit(1)
            return super().run(example)

    return CrashingWorker


def recording_worker(record_dir: Path) -> type[EpisodeWorker]:
    """A worker that leaves a file per example it runs, so a test can see which examples were run."""

    class RecordingWorker(EpisodeWorker):
        def run(self, example: Example) -> Episode:
            record = record_dir / example.id
            record.parent.mkdir(parents=True, exist_ok=True)
            record.touch()
            return super().run(example)

    return RecordingWorker


def resubmissions(caplog) -> list[str]:
    return [r.args[0] for r in caplog.records
            if r.name == "deliberation.runs.distributed" and r.levelno == logging.WARNING]


def example_ids(method: str = "debate") -> list[str]:
    return [ex.id for ex in validate(spec_for(method))[1]]


def test_unreachable_cluster_is_a_clear_error(tmp_path):
    class NoCluster:  # stands in for the ray module: what ray.init raises when nothing listens
        @staticmethod
        def is_initialized() -> bool:
            return False

        @staticmethod
        def init(**kwargs) -> None:
            raise ConnectionError("Could not find any running Ray instance.")

    with pytest.raises(DelibError, match="no Ray cluster at 'auto' .*ray start --head"):
        with _ray_session(NoCluster, "auto", 2):
            pass


@pytest.mark.parametrize("method", METHODS)
def test_distributed_run_equals_single_process(cluster, reference, tmp_path, method):
    summary = execute_distributed(spec_for(method), str(tmp_path), workers=2, progress=False)
    episodes, ref_summary = reference[method]
    assert episodes_by_id(tmp_path) == episodes
    assert len(episodes) == N
    assert normalized_summary(summary) == ref_summary
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert dict(saved, wall_seconds=0.0) == json.loads(json.dumps(ref_summary))


def test_killed_workers_examples_are_redone_exactly_once(cluster, reference, tmp_path, caplog):
    markers, out = tmp_path / "markers", tmp_path / "run"
    markers.mkdir()
    doomed = example_ids()[2:9:5]  # two examples whose first attempt kills its worker
    for eid in doomed:
        touch(markers / eid)
    caplog.set_level(logging.WARNING, logger="deliberation.runs.distributed")
    summary = execute_distributed(spec_for("debate"), str(out), workers=2, progress=False,
                                  worker_cls=crashing_worker(markers))
    assert files_under(markers) == []  # both crashes happened
    assert sorted(resubmissions(caplog)) == sorted(doomed)
    lines = (out / EPISODES).read_text().splitlines()
    assert sorted(json.loads(line)["example_id"] for line in lines) == sorted(example_ids())
    episodes, ref_summary = reference["debate"]
    assert episodes_by_id(out) == episodes
    assert normalized_summary(summary) == ref_summary


def test_example_that_always_kills_its_worker_is_given_up_then_resumed(cluster, reference, tmp_path, caplog):
    markers, out = tmp_path / "markers", tmp_path / "run"
    markers.mkdir()
    poison = example_ids()[4]
    touch(markers / poison)
    caplog.set_level(logging.WARNING, logger="deliberation.runs.distributed")
    with pytest.raises(DelibError, match=f"given up \\({poison}\\)"):
        execute_distributed(spec_for("debate"), str(out), workers=2, progress=False, max_retries=1,
                            worker_cls=crashing_worker(markers, keep_marker=True))
    assert resubmissions(caplog) == [poison]  # one retry, then given up
    episodes, ref_summary = reference["debate"]
    assert episodes_by_id(out) == {k: v for k, v in episodes.items() if k != poison}
    assert not (out / "summary.json").exists()
    (markers / poison).unlink()
    summary = execute_distributed(spec_for("debate"), str(out), workers=2, progress=False)
    assert episodes_by_id(out) == episodes
    assert normalized_summary(summary) == ref_summary


def test_resume_runs_only_missing_examples_and_nothing_when_done(cluster, reference, tmp_path):
    out, first, second, third = (tmp_path / name for name in ("run", "rec1", "rec2", "rec3"))
    for d in (first, second, third):
        d.mkdir()
    spec = spec_for("mpdf")
    execute_distributed(spec, str(out), workers=2, progress=False, worker_cls=recording_worker(first))
    assert files_under(first) == sorted(example_ids("mpdf"))
    lines = (out / EPISODES).read_text().splitlines(keepends=True)
    (out / EPISODES).write_text("".join(lines[:-3]))  # as if the run had been killed 3 episodes early
    missing = sorted(json.loads(line)["example_id"] for line in lines[-3:])
    execute_distributed(spec, str(out), workers=2, progress=False, worker_cls=recording_worker(second))
    assert files_under(second) == missing
    assert episodes_by_id(out) == reference["mpdf"][0]
    before = (out / EPISODES).read_bytes()
    summary = execute_distributed(spec, str(out), workers=2, progress=False, worker_cls=recording_worker(third))
    assert files_under(third) == []
    assert (out / EPISODES).read_bytes() == before
    assert normalized_summary(summary) == reference["mpdf"][1]


@pytest.mark.parametrize("change, message", [
    ({"method": "no-such-method"}, "unknown method"),
    ({"workers": 0}, "--workers must be at least 1"),
    ({"workers": 3}, "needs 3 CPUs but the Ray cluster has 2"),
])
def test_bad_input_fails_clearly(cluster, tmp_path, change, message):
    out = tmp_path / "run"
    spec = dataclasses.replace(spec_for("debate"), method=change.get("method", "debate"))
    with pytest.raises(DelibError, match=message):
        execute_distributed(spec, str(out), workers=change.get("workers", 2), progress=False)
    assert not out.exists()


def test_worker_that_cannot_start_fails_at_once(cluster, tmp_path, caplog):
    def broken_worker() -> type[EpisodeWorker]:
        class BrokenWorker(EpisodeWorker):
            def __init__(self, spec: RunSpec) -> None:
                raise RuntimeError("no backend on this node")

        return BrokenWorker

    caplog.set_level(logging.WARNING, logger="deliberation.runs.distributed")
    with pytest.raises(DelibError, match="could not start: .*no backend on this node"):
        execute_distributed(spec_for("debate"), str(tmp_path), workers=2, progress=False, worker_cls=broken_worker())
    assert resubmissions(caplog) == []  # not retried: it would fail the same way
    assert not (tmp_path / EPISODES).exists()


def test_error_inside_a_worker_is_reraised_as_is(cluster, tmp_path):
    spec = dataclasses.replace(spec_for("debate"), backend_options={"benchmark": "no-such-benchmark"})
    with pytest.raises(DelibError) as info:
        execute_distributed(spec, str(tmp_path), workers=2, progress=False)
    assert type(info.value) is DelibError and "no-such-benchmark" in str(info.value)
    assert "\n" not in str(info.value)
    assert not (tmp_path / EPISODES).exists()
