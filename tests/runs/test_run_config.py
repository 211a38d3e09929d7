"""A run's config.json as one typed record (``runs/run_config.py``): what a run writes is byte for byte what runs
always wrote, every committed file (older ones included) reads and is written back unchanged, and a file that
lacks a setting is one clear error, not a ``?`` in a report."""

from __future__ import annotations

import json
import subprocess
from dataclasses import fields
from pathlib import Path

import pytest

from deliberation import methods
from deliberation.config import RESUMES, EngineConfig
from deliberation.errors import DelibError
from deliberation.files import write_json_atomic
from deliberation.methods.mpdf import policy_name
from deliberation.policy import shipped
from deliberation.report.loading import load_run
from deliberation.outputs.kinds import EPISODES
from deliberation.runs.directory import CONFIG, ENGINE_USED, SUMMARY, RunDir
from deliberation.runs.run_config import RunConfig, RunSpec, config_of, config_record, read_run_config
from deliberation.types import Episode, Turn, to_json

REPO = Path(__file__).resolve().parents[2]
MEMBERS = [{"backend": "scripted", "benchmark": "gsm8k", "model": m} for m in ("strong", "weak", "strong")]


def committed_configs() -> list[Path]:
    """Every config.json of a run directory that git tracks under docs/results and data."""
    listed = subprocess.run(["git", "ls-files", "--", "docs/results/**/config.json", "data/**/config.json"], cwd=REPO,
                            capture_output=True, text=True, check=True, timeout=60).stdout.split()
    return [REPO / f for f in listed if any((REPO / f).with_name(n).exists() for n in (SUMMARY, EPISODES))]


def old_config_record(spec: RunSpec) -> dict:
    """config.json as the runner built it before the record existed: the spec, the engine the method ran, and
    the method's entries (mpdf and mpdf-allocate: the policy and its hash)."""
    record = {**to_json(spec), "engine_used": to_json(methods.get(spec.method).engine(spec.engine))}
    if spec.method == "mpdf":
        record["policy_used"] = policy_name(spec.method_config())
    if spec.method == "mpdf-allocate":
        record["policy_used"] = f"{spec.policy} {shipped.content_hash(shipped.checkpoint_path(str(spec.policy)))}"
    return record


SPECS = {
    "self-consistency": RunSpec(method="self-consistency", benchmark="math", split="train", limit=5,
                                backend="scripted", engine=EngineConfig(agents=5, rounds=2), command="delib run"),
    "mpdf with a policy": RunSpec(method="mpdf", policy="qwen2.5-coder-1.5b-trees", confidence_threshold=0.9,
                                  backend="llamacpp", backend_options={"model": "qwen2.5-coder-1.5b", "n_threads": 2},
                                  cache="c.sqlite", trees="data/trees/x"),
    "mpdf-allocate": RunSpec(method="mpdf-allocate", policy=str(shipped.SHIPPED / "grpo.pt"), stop_at=0.6,
                             backend="scripted"),
    "a team": RunSpec(method="debate", backend="team", backend_options={"members": MEMBERS},
                      engine=EngineConfig(rounds=1), concurrency=4),
}


@pytest.mark.parametrize("name", SPECS)
def test_a_run_writes_config_json_byte_for_byte_as_before(name, tmp_path):
    spec = SPECS[name]
    write_json_atomic(tmp_path / "before.json", old_config_record(spec))
    with RunDir.open(tmp_path / "run", config_record(spec).to_dict()):
        pass
    assert (tmp_path / "run" / CONFIG).read_bytes() == (tmp_path / "before.json").read_bytes()
    assert read_run_config(tmp_path / "run" / CONFIG) == config_record(spec)


def test_every_committed_config_reads_and_is_written_back_byte_for_byte(tmp_path):
    files = committed_configs()
    assert len(files) > 100
    for k, path in enumerate(files):
        config = read_run_config(path)
        write_json_atomic(tmp_path / f"{k}.json", config.to_dict())
        assert (tmp_path / f"{k}.json").read_bytes() == path.read_bytes(), path
        assert config_of(config.to_dict()) == config, path


def test_a_config_from_before_later_settings_reads_as_what_it_meant():
    """A run made before the method options, question selection, concurrency and prompt version 2 reads as the
    values every run then had (``RUN_RESUME.added_later``, a resumable setting's default), recording none."""
    path = REPO / "docs/results/gsm8k-readme/agreement-threshold/config.json"
    raw, config = json.loads(path.read_text()), read_run_config(path)
    assert "prompts" not in raw["engine"] and "confidence_threshold" not in raw and "concurrency" not in raw
    assert (config.spec.engine.prompts, config.spec.confidence_threshold, config.spec.concurrency) == (
        "standalone", 0.7, 1)
    assert not config.records("engine.prompts") and config.records("engine.rounds") and config.engine_used is None
    assert config.to_dict() == raw


def test_the_keys_other_modules_name_are_fields_of_the_record():
    """``RunDir`` exempts ``engine_used`` from the resume check and records ``resumes``: both are fields here."""
    assert {ENGINE_USED, RESUMES} <= {f.name for f in fields(RunConfig)}


def episode() -> Episode:
    return Episode("gsm8k/test/0", "cot", "1", True, (Turn(0, 0, None, "1", "text", None, 10, 5, 1),), 0)


@pytest.mark.parametrize("drop, change, named", [
    ("backend", {}, "lacks backend"),
    (None, {"engine": {**to_json(EngineConfig()), "seed": "7"}}, r"EngineConfig\.seed"),
    (None, {"engine": {"agents": 3}}, "lacks engine.rounds"),
    (None, {"policy": 5}, r"RunSpec\.policy")])
def test_a_report_on_a_config_lacking_or_mangling_a_setting_is_one_line_naming_the_file(tmp_path, drop, change, named):
    """Read by keys, such a file reported its backend as "?" or its seed as a traceback; read as its record, it
    is one line naming the file, the setting and the fix."""
    recorded = {k: v for k, v in {**config_record(SPECS["a team"]).to_dict(), **change}.items() if k != drop}
    with RunDir.open(tmp_path, recorded) as run:
        run.append(episode())
    with pytest.raises(DelibError, match=named) as err:
        load_run(tmp_path)
    assert str(tmp_path / CONFIG) in str(err.value) and "rerun" in str(err.value) and "\n" not in str(err.value)


def test_a_run_whose_config_json_is_gone_reports_as_before(tmp_path):
    """Deleting a damaged config.json is the documented fix: the run still reports, its settings unknown."""
    with RunDir.open(tmp_path, config_record(SPECS["a team"]).to_dict()) as run:
        run.append(episode())
    (tmp_path / CONFIG).unlink()
    result = load_run(tmp_path)
    assert (result.label, result.backend, result.model, result.seed, result.engine, result.options) == (
        "?", "?", "default", 0, (), ())
