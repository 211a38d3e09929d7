"""Every committed best_rule.json, held_out.json and rollout manifest reads into its typed record and is written
back byte for byte: the records keep the files' keys, values and key order, older files (without a key added
later) included."""

from __future__ import annotations

import subprocess
from pathlib import Path
import pytest

from deliberation.rl.held_out_file import HELD_OUT_FILE, read_held_out, write_held_out
from deliberation.rl.rollout_files import MANIFEST, ROLLOUT_RESUME, read_manifest, write_manifest
from deliberation.runs.tune_rules import BEST_RULE, read_best_rule, write_best_rule

REPO = Path(__file__).resolve().parents[1]


def committed(name: str, under: str) -> list[Path]:
    """The files called ``name`` that git tracks under the folder ``under``."""
    listed = subprocess.run(["git", "ls-files", "--", f"{under}/**/{name}"], cwd=REPO, capture_output=True,
                            text=True, check=True, timeout=60).stdout.split()
    return [REPO / f for f in listed]


KINDS = {"best_rule": (BEST_RULE, "docs/results", read_best_rule, write_best_rule),
         "held_out": (HELD_OUT_FILE, "docs/results", lambda path: read_held_out(path.parent),
                      lambda path, scores: write_held_out(path.parent, scores)),
         "rollout manifest": (MANIFEST, "data/rollouts", read_manifest, write_manifest)}
"""Each kind: its file name, the folder its committed files are under, its reader and its writer (by file path)."""


@pytest.mark.parametrize("kind", KINDS)
def test_every_committed_file_is_written_back_byte_for_byte(kind, tmp_path):
    name, under, read, write = KINDS[kind]
    files = committed(name, under)
    assert files, f"no committed {name} under {under}"
    for k, path in enumerate(files):
        record = read(path)
        copy = tmp_path / str(k) / name
        copy.parent.mkdir()
        write(copy, record)
        assert copy.read_bytes() == path.read_bytes(), path
        assert read(copy) == record, path


def test_a_committed_manifest_resumes_its_own_collection():
    """The typed manifest compares as the file's JSON did: equal to itself, other on a changed setting."""
    manifest = read_manifest(committed(MANIFEST, "data/rollouts")[0])
    assert ROLLOUT_RESUME.differing(manifest.to_dict(), manifest.to_dict()) == []
    other = {**manifest.to_dict(), "samples": manifest.joint_actions + 1}
    assert [name for name, _, _ in ROLLOUT_RESUME.differing(manifest.to_dict(), other)] == ["samples"]
