"""The allocation experiment's two scripts run end to end on scripted stores: the preparation writes its
record, checkpoints and the registration the comparison reads, and the comparison replays every registered
arm offline into a paired report against self-consistency over 6 samples (``--quick`` grids: the numbers of
the scripted backend mean nothing)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deliberation.cli.main import main

REPO = Path(__file__).resolve().parents[2]
STORES = {"math-train": ("math", "train"), "gsm8k-train": ("gsm8k", "train"), "gsm8k-test": ("gsm8k", "test"),
          "math-test": ("math", "test")}


def script(name: str, *argv: str, fails: str = "") -> None:
    """Run an experiment script; it succeeds, or (``fails``) exits non-zero with that one line on stderr."""
    done = subprocess.run([sys.executable, str(REPO / "experiments" / name), *argv], capture_output=True, text=True,
                          cwd=REPO)  # where the scripts record paths from
    if not fails:
        assert done.returncode == 0, done.stderr[-2000:]
    else:
        assert done.returncode != 0 and fails in done.stderr and done.stderr.count("\n") == 1, done.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.needs_split("gsm8k/train", "math/train")
def test_prepare_then_compare(tmp_path):
    for store, (bench, split) in STORES.items():
        assert main(["tree", "--backend", "scripted", "--benchmark", bench, "--split", split, "--limit", "3",
                     "--samples", "6", "--methods", "mpdf", "--out", str(tmp_path / store), "--quiet"]) == 0
    script("allocation_prepare.py", "--stores", str(tmp_path), "--limit", "6", "--out", str(tmp_path / "prep"),
           "--quick")
    prepared = json.loads((tmp_path / "prep" / "prepare.json").read_text())
    registered = json.loads((tmp_path / "prep" / "registered.json").read_text())
    assert prepared["reference"]["k"] == 6 and set(prepared["checkpoints"]) == {"primary", "deliberate"}
    assert registered["limit"] == 6 and registered["best_rule"] == "agreement-resample"
    assert all(Path(p).is_file() for p in registered["checkpoints"].values())
    commitments = (tmp_path / "prep" / "commitments.md").read_text()
    assert all(sha in commitments for sha in registered["sha256"].values())
    assert commitments.count("| step=") == 4 and f"ESC window {registered['matched']['esc_window']}" in commitments
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps({**registered, "sha256": {**registered["sha256"], "primary": "0" * 64}}))
    script("allocation_compare.py", "--stores", str(tmp_path), "--registration", str(tampered), "--out",
           str(tmp_path / "nothing"), fails="is not the registered primary checkpoint")
    assert not (tmp_path / "nothing").exists()
    script("allocation_compare.py", "--stores", str(tmp_path), "--registration", str(tmp_path / "prep" /
           "registered.json"), "--out", str(tmp_path / "cmp"), "--questions", "3", "3")
    runs = sorted(p.name for p in (tmp_path / "cmp" / "runs" / "gsm8k-test").iterdir())
    assert {"self-consistency-6", "allocate", "allocate-deliberate", "best-rule", "esc-2"} <= set(runs)
    paired = json.loads((tmp_path / "cmp" / "descriptive" / "paired.json").read_text())
    assert {p["reference"] for p in paired} >= {"self-consistency [agents=6]"}
    analyse = ("allocation_analysis.py", "--runs", str(tmp_path / "cmp" / "runs"), "--registration",
               str(tmp_path / "prep" / "registered.json"), "--questions", "3", "3", "--out")
    script(*analyse, str(tmp_path / "cmp"))
    analysis = json.loads((tmp_path / "cmp" / "analysis.json").read_text())
    primary, family = analysis["primary"], analysis["secondaries"]
    assert primary["n"] == 6 and primary["reference"] == "self-consistency-6" and primary["column"] == "pooled"
    assert len(family) == 6 and all(s["holm_p"] >= s["mcnemar_p"] for s in family)
    assert [s["column"] for s in family[3:5]] == ["gsm8k/test", "math/test"] and family[5]["label"] == \
        "allocate-deliberate"
    assert analysis["reading"].split(":")[0] in {"better", "better at equal tokens", "worse", "null",
                                                 "more accurate, but at more tokens, and not better at equal tokens"}
    assert analysis["points"]["self-consistency-6"]["n"] == 6 and "## Secondaries" in \
        (tmp_path / "cmp" / "analysis.md").read_text()
    adaptive = analysis["equal_tokens_adaptive"]
    assert adaptive and set(adaptive) <= {"allocate", *(f"allocate-{x}" for x in registered["stop_at_grid"])}
    assert all(d["reference"].startswith("adaptive-consistency at equal tokens (threshold = ") and d["n"] == 6
               for d in adaptive.values())
    assert all(d["reference"].startswith("ESC at equal tokens (window = ") and d["n"] == 6
               for d in analysis["equal_tokens_esc"].values())
    assert analysis["match_limit"] is None or analysis["match_limit"]["arm"] != "allocate"  # the grid's points
    above = analysis["next_k_up"]  # the other side of equal tokens: k spends at least the point's tokens
    assert above and all(d["reference"].startswith("self-consistency at the next k up (k = ") and d["n"] == 6
                         and d["token_ratio"] <= 1 + 1e-9 for d in above.values())
    for name, by in analysis["points_by_benchmark"].items():  # 3 questions each: the pooled mean is their mean
        assert [p["n"] for p in by.values()] == [3, 3]
        assert abs(sum(p["accuracy"] for p in by.values()) / 2 - analysis["points"][name]["accuracy"]) < 1e-9
    both = [100 * (primary["both_right"] + primary[side]) / 6 for side in ("only_row", "only_reference")]
    assert f"| allocate | self-consistency-6 | pooled | 6 | {both[0]:.1f}% / {both[1]:.1f}% | " in \
        (tmp_path / "cmp" / "analysis.md").read_text()
    assert (tmp_path / "cmp" / "curve.png").stat().st_size > 0
    episodes_table(tmp_path / "cmp", analysis["points"]["allocate"])
    config = json.loads((tmp_path / "cmp" / "runs" / "math-test" / "allocate" / "config.json").read_text())
    assert not Path(config["trees"]).is_absolute() and (REPO / config["trees"]).resolve() == tmp_path / "math-test"
    assert config["command"].startswith("python experiments/allocation_compare.py --stores ")
    refused_runs(tmp_path / "cmp" / "runs", analyse, tmp_path / "refused")
    replayed = tmp_path / "cmp" / "runs" / "gsm8k-test" / "allocate" / "episodes.jsonl"
    first, *rest = replayed.read_text().splitlines(keepends=True)
    row = json.loads(first)
    row["turns"][0]["prompt_tokens"] += 1  # one token more than the allocator's simulation spends there
    replayed.write_text(json.dumps(row) + "\n" + "".join(rest))
    script("allocation_compare.py", "--stores", str(tmp_path), "--registration", str(tmp_path / "prep" /
           "registered.json"), "--out", str(tmp_path / "cmp"), "--questions", "3", "3",
           fails="otherwise than the allocator's offline simulation")
    assert not (tmp_path / "cmp" / "runs" / "parity.json").exists()  # the analysis refuses these runs now


def episodes_table(out: Path, allocate: dict) -> None:
    """episodes.csv.gz holds a line per run and question, its gzip header no time (so identical runs write
    identical bytes); the allocator's lines hold its runs' answers and give the analysis's accuracy and tokens a
    question."""
    packed = (out / "episodes.csv.gz").read_bytes()
    assert packed[4:8] == bytes(4)  # gzip's MTIME field
    table = list(csv.DictReader(io.StringIO(gzip.decompress(packed).decode(), newline="")))
    assert len(table) == 3 * len(list((out / "runs").glob("*/*/episodes.jsonl")))
    rows = [r for r in table if r["arm"] == "allocate"]
    assert [r["store"] for r in rows] == ["gsm8k-test"] * 3 + ["math-test"] * 3
    answers = [json.loads(line)["final_answer"] or "" for store in ("gsm8k-test", "math-test")
               for line in (out / "runs" / store / "allocate" / "episodes.jsonl").read_text().splitlines()]
    assert [r["final_answer"] for r in rows] == answers
    assert abs(sum(int(r["correct"]) for r in rows) / 6 - allocate["accuracy"]) < 1e-9
    spent = sum(int(r["prompt_tokens"]) + int(r["completion_tokens"]) for r in rows) / 6
    assert abs(spent - allocate["tokens"]) < 1e-9


def refused_runs(runs: Path, analyse: tuple[str, ...], out: Path) -> None:
    """The analysis refuses runs that are not the registered arms, each finished, on the registered questions."""
    script(*analyse[:-4], "--questions", "4", "3", "--out", str(out),
           fails="replayed other questions than the store's first 4")
    (runs / "parity.json").rename(runs / "parity.kept")
    script(*analyse, str(out), fails="has no parity.json: the allocator's replays were not checked")
    (runs / "parity.kept").rename(runs / "parity.json")
    shutil.copytree(runs / "gsm8k-test" / "esc-2", runs / "gsm8k-test" / "esc-9")
    script(*analyse, str(out), fails="has a run of no registered arm, esc-9")
    shutil.rmtree(runs / "gsm8k-test" / "esc-9")
    summary = runs / "gsm8k-test" / "allocate" / "summary.json"
    summary.rename(summary.with_suffix(".kept"))
    script(*analyse, str(out), fails="allocate did not finish (no summary.json)")
    summary.with_suffix(".kept").rename(summary)
    episodes = runs / "math-test" / "esc-2" / "episodes.jsonl"
    episodes.write_text("".join(episodes.read_text().splitlines(keepends=True)[:-1]))
    script(*analyse, str(out), fails="esc-2 lacks 1 of the 6 test questions")
    assert not out.exists()
