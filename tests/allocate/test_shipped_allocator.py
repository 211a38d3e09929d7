"""The allocator the allocation experiment registered ships in the package and is ``mpdf-allocate``'s default:
it runs on any backend (here the scripted one) with no ``--policy``, records which checkpoint ran, equals the
registered checkpoint byte for byte, and refuses the training questions it was fitted on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from deliberation.cli.main import main
from deliberation.methods.allocate import DEFAULT_ALLOCATOR
from deliberation.errors import DelibError
from deliberation.policy import checkpoint as ckpt
from deliberation.policy.shipped import SHIPPED, checkpoint_path, content_hash, sha256_hex, shipped_names

REPO = Path(__file__).resolve().parents[2]
REGISTERED = REPO / "docs" / "results" / "allocation" / "registered.json"


def test_the_shipped_allocator_is_the_registered_primary():
    registered = json.loads(REGISTERED.read_text())
    assert sha256_hex(checkpoint_path(DEFAULT_ALLOCATOR)) == registered["sha256"]["primary"]


def test_mpdf_allocate_runs_the_shipped_allocator_by_default(tmp_path):
    out = tmp_path / "run"
    assert main(["run", "--method", "mpdf-allocate", "--agents", "12", "--backend", "scripted", "--limit", "2",
                 "--out", str(out), "--quiet"]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["policy_used"] == f"{DEFAULT_ALLOCATOR} {content_hash(checkpoint_path(DEFAULT_ALLOCATOR))}"
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 2


@pytest.mark.needs_split("gsm8k/train")
def test_the_shipped_allocator_refuses_its_training_questions(tmp_path, capsys):
    assert main(["run", "--method", "mpdf-allocate", "--agents", "12", "--backend", "scripted", "--split", "train",
                 "--limit", "2", "--out", str(tmp_path / "in-sample"), "--quiet"]) == 2
    assert "was trained on 2 of these questions" in capsys.readouterr().err


@pytest.mark.parametrize(("method", "policy", "named"), [
    ("mpdf", DEFAULT_ALLOCATOR, "is not a deliberation policy checkpoint but a compute-allocation checkpoint"),
    ("mpdf-allocate", "qwen2.5-coder-1.5b", "is not a compute-allocation checkpoint but a deliberation policy"),
])
def test_a_checkpoint_of_the_other_kind_is_named_for_what_it_is_in_a_fresh_process(tmp_path, method, policy, named):
    """In a new process, where no module has loaded an allocator before the refusal (the kinds are declared
    together, not by the modules that load them)."""
    delib = Path(sys.executable).parent / "delib"
    done = subprocess.run([str(delib), "run", "--method", method, "--policy", policy, "--agents", "12", "--backend",
                           "scripted", "--limit", "1", "--out", str(tmp_path / "run"), "--quiet"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and named in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "run").exists()


def test_every_shipped_checkpoint_is_the_kind_its_name_says():
    """An unknown ``--policy`` name lists the shipped checkpoints of the kind the method runs, told apart by
    name: each file must hold that kind."""
    allocators, policies = shipped_names(True), shipped_names(False)
    assert DEFAULT_ALLOCATOR in allocators and "default" in policies
    assert sorted(allocators + policies) == sorted(p.stem for p in SHIPPED.glob("*.pt"))
    for names, kind in ((allocators, ckpt.ALLOCATOR), (policies, ckpt.POLICY)):
        for name in names:
            assert ckpt.read_checkpoint(checkpoint_path(name), kind)


def test_an_unknown_allocator_name_lists_the_shipped_allocators_alone():
    from deliberation.allocate.network import load_allocator

    with pytest.raises(DelibError, match=r"neither a file nor a shipped allocator \(allocate-qwen2\.5-coder-1\.5b\); "
                       r"pass the path of an allocator\.pt") as refused:
        load_allocator("nope")
    assert "default" not in str(refused.value)
