"""experiments/registered.py: the paired experiment's files by role (registered.json) and the check a look
makes against it; and the committed registration, which must name the files the looks use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from deliberation.policy.shipped import checkpoint_path, sha256_hex

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "experiments" / "registered.py"
PAIRED = REPO / "docs" / "results" / "paired"


def registered(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=60)


@pytest.fixture
def files(tmp_path) -> dict[str, str]:
    (tmp_path / "rule.json").write_text('{"method": "agreement-resample"}')
    (tmp_path / "votes.json").write_text('{"methods": {}}')
    return {"policy": "default", "sft": "grpo", "rule": str(tmp_path / "rule.json"),
            "votes": str(tmp_path / "votes.json"), "block": "100,50"}


def pairs(files: dict[str, str], **override: str) -> list[str]:
    return [f"{role}={value}" for role, value in {**files, **override}.items()]


def test_a_registration_holds_each_role_by_hash_and_checks_it(files, tmp_path):
    reg = tmp_path / "registered.json"
    assert registered("write", str(reg), *pairs(files)).returncode == 0
    record = json.loads(reg.read_text())
    assert record["policy"] == {"file": "default", "sha256": sha256_hex(checkpoint_path("default"))}
    assert record["rule"]["sha256"] == sha256_hex(Path(files["rule"])) and record["block"] == {"sizes": [100, 50]}
    done = registered("check", str(reg), *pairs(files))
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 5
    assert registered("block", str(reg)).stdout == "100 50\n"


def test_a_shipped_checkpoint_given_by_path_is_registered_by_its_name(files, tmp_path):
    reg = tmp_path / "registered.json"
    path = str(checkpoint_path("default"))
    assert registered("write", str(reg), *pairs(files, policy=path)).returncode == 0
    assert json.loads(reg.read_text())["policy"]["file"] == "default"
    assert registered("check", str(reg), "policy=default", f"sft={files['sft']}").returncode == 0


@pytest.mark.parametrize("argv, says", [
    (("policy=grpo",), "policy grpo (sha256 "),  # another checkpoint
    (("policy=SFT",), "policy SFT (sha256 "),  # the SFT checkpoint in the primary arm's role
    (("rule=EDITED",), "is not the registered rule ("),
    (("block=2,1",), "block 2,1 (sizes [2, 1]) is not the registered block (sizes [100, 50]"),
    (("block=100,x,50",), "block '100,x,50' is not two positive counts"),
    (("block=-1,5",), "block '-1,5' is not two positive counts"),
    (("block=100,50,",), "is not two positive counts"),
    (("colour=red",), "unknown role 'colour'"),
    (("policy=default", "policy=default"), "give each role once"),
    (("policy",), "give each role once as ROLE=VALUE"),
    (("rule=nowhere.json",), "rule nowhere.json not found"),
])
def test_a_check_that_differs_is_one_line_naming_the_role(files, tmp_path, argv, says):
    reg = tmp_path / "registered.json"
    assert registered("write", str(reg), *pairs(files)).returncode == 0
    edited = tmp_path / "edited.json"
    edited.write_text('{"method": "agreement-resample", "edited": true}')
    sft = str(checkpoint_path(files["sft"]))
    given = [a.replace("SFT", sft).replace("EDITED", str(edited)) for a in argv]
    done = registered("check", str(reg), *given)
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(err) == 1 and says.replace("SFT", sft) in err[0], err
    if "(sha256 " in says or "registered" in says:
        assert "a look runs only what an amendment committed before it" in err[0]


@pytest.mark.parametrize("content, says", [
    (None, "cannot be read"), ("not json", "cannot be read"), ("[1, 2]", "has no policy sha256"),
    ('{"policy": {"file": "default"}}', "has no policy sha256"),
])
def test_a_missing_or_malformed_registration_is_one_line(files, tmp_path, content, says):
    reg = tmp_path / "registered.json"
    if content is not None:
        reg.write_text(content)
    for argv in (("check", str(reg), "policy=default"), ("block", str(reg))):
        done = registered(*argv)
        assert done.returncode == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_registration_names_every_role(files, tmp_path):
    done = registered("write", str(tmp_path / "r.json"), *pairs({k: v for k, v in files.items() if k != "votes"}))
    assert done.returncode == 2 and "missing: votes" in done.stderr and not (tmp_path / "r.json").exists()
    assert registered("nonsense").returncode == 2 and "usage:" in registered("nonsense").stderr


def test_the_committed_registration_names_the_looks_files():
    """registered.json holds the hashes of the files the looks use, and amendment 5 names both checkpoints'."""
    record = json.loads((PAIRED / "registered.json").read_text())
    assert record["policy"]["file"] == "qwen2.5-coder-1.5b-trees" and record["block"]["sizes"] == [100, 50]
    for role, path in (("policy", checkpoint_path("qwen2.5-coder-1.5b-trees")), ("sft", PAIRED / "sft.pt"),
                       ("rule", PAIRED / "best_rule.json"), ("votes", PAIRED / "vote_temperatures.json")):
        assert record[role]["sha256"] == sha256_hex(path), role
    text = (PAIRED / "PREREGISTRATION.md").read_text()
    assert record["policy"]["sha256"] in text and record["sft"]["sha256"] in text
