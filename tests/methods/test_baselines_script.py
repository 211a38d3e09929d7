"""experiments/baselines.sh end to end on scripted stores: the graphs optimised on training questions, every
baseline replayed through the test stores, the references replayed offline, the paired report and the
optimisation tokens (one optimisation step and a few questions; the scripted backend's numbers mean nothing);
``STAGE=optimise`` first, which writes the graphs and touches no store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deliberation.cli.main import main
from deliberation.outputs.lock import lock_directory
from deliberation.policy.shipped import content_hash

REPO = Path(__file__).resolve().parents[2]
BASELINES = {"php", "gptswarm", "agentprune"}


@pytest.mark.slow
@pytest.mark.needs_split("gsm8k/train", "math/train")
def test_the_baselines_script_runs_pairs_and_counts_optimisation_tokens(tmp_path):
    stores = tmp_path / "stores"
    for bench in ("gsm8k", "math"):
        assert main(["tree", "--backend", "scripted", "--benchmark", bench, "--split", "test", "--limit", "3",
                     "--samples", "6", "--methods", "mpdf", "--out", str(stores / f"{bench}-test"),
                     "--quiet"]) == 0
    assert main(["tree", "--backend", "scripted", "--benchmark", "gsm8k", "--split", "train", "--limit", "4",
                 "--samples", "3", "--methods", "mpdf", "--out", str(stores / "gsm8k-train"), "--quiet"]) == 0
    out = tmp_path / "out"
    env = {**os.environ, "STORES": str(stores), "OUT": str(out), "QUESTIONS": "3 2", "TRAIN_LIMIT": "4 3",
           "ENGINE_ARGS": "--backend scripted", "CACHE": str(tmp_path / "cache.sqlite"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    script = ["bash", str(REPO / "experiments" / "baselines.sh"), "1"]
    with lock_directory(stores / "math-test"):  # a build writing a store: refused before any optimisation
        busy = subprocess.run(script, cwd=tmp_path, env={**env, "STAGE": "optimise"}, capture_output=True, text=True)
    assert busy.returncode == 2 and "math-test is being written by another process" in busy.stderr
    assert "stop the build of the stores (or let it finish) first" in busy.stderr and not out.exists()
    built = {p: p.read_bytes() for p in stores.rglob("*") if p.is_file()}
    done = subprocess.run(script, cwd=tmp_path, env={**env, "STAGE": "optimise"}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(list((out / "graphs").glob("*/graph.json"))) == 4 and not (out / "runs").exists()
    assert {p: p.read_bytes() for p in stores.rglob("*") if p.is_file()} == built
    optimised = {p: p.read_bytes() for p in (out / "graphs").glob("*/graph.json")}
    done = subprocess.run(script, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert {p: p.read_bytes() for p in (out / "graphs").glob("*/graph.json")} == optimised  # not optimised again
    other = subprocess.run([*script[:-1], "2"], cwd=tmp_path, env={**env, "STAGE": "optimise"}, capture_output=True,
                           text=True)  # a graph of another budget is not silently taken
    assert other.returncode != 0 and "holds a graph with other settings (steps 1 there, 2 here)" in other.stderr
    one = subprocess.run(script, cwd=tmp_path, env={**env, "TRAIN_LIMIT": "4"}, capture_output=True, text=True)
    assert one.returncode == 2 and one.stderr.startswith("error: QUESTIONS and TRAIN_LIMIT take two counts")
    for store, n, flow in (("gsm8k-test", 3, "aflow-gsm8k"), ("math-test", 2, "aflow-math")):
        runs = {p.parent.name: json.loads(p.read_text()) for p in (out / "runs" / store).rglob("summary.json")}
        assert {*BASELINES, flow, "agreement-resample", *(f"self-consistency-{k}" for k in range(1, 7))} <= set(runs)
        assert {r["n"] for r in runs.values()} == {n}
    paired = json.loads((out / "paired.json").read_text())
    references = {p["reference"] for p in paired}
    assert any(r.startswith("agreement-resample") for r in references) and "self-consistency at equal tokens" in \
        " ".join(references)
    table, finals = (out / "optimisation.md").read_text().split("## The final graphs")
    assert table.count("| gptswarm |") == 2 and table.count("| agentprune |") == 2 and "| php |" in table
    assert finals.count("| gptswarm |") == 2 and finals.count("| agentprune |") == 2  # every graph's final form
    assert "| 0 (nothing is optimised) | 0 (3) |" in table and "| unknown (2) |" in table  # AFlow's: not ours
    graph = json.loads((out / "graphs" / "gptswarm-gsm8k" / "graph.json").read_text())
    spent = graph["record"]["tokens"]
    pruned = json.loads((out / "graphs" / "agentprune-gsm8k" / "graph.json").read_text())
    served = {p.parent.name: json.loads(p.read_text())["record"]["settings"]["trees"]
              for p in (out / "graphs").glob("*/graph.json")}  # a training store where there is one
    assert served == {"gptswarm-gsm8k": str(stores / "gsm8k-train"), "agentprune-gsm8k": None,  # roles: none held
                      "gptswarm-math": None, "agentprune-math": None}
    assert spent["graph_runs"] == 1 * 4 and pruned["record"]["tokens"]["graph_runs"] == 10 * 4  # its reference's 10
    math = json.loads((out / "graphs" / "agentprune-math" / "graph.json").read_text())["record"]
    assert math["settings"]["limit"] == 3 and len(math["questions"]["ids"]) == 3  # TRAIN_LIMIT's MATH count
    assert f"| {spent['prompt_tokens'] + spent['completion_tokens']:,} |" in table
    row = next(line for line in table.splitlines() if line.startswith("| gptswarm | gsm8k |"))
    run = json.loads((out / "runs" / "gsm8k-test" / "gptswarm" / "summary.json").read_text())
    assert content_hash(out / "graphs" / "gptswarm-gsm8k" / "graph.json") in row  # the hash its runs record
    assert row.endswith(f"| {run['tokens_per_question']:,.0f} | {100 * run['accuracy']:.1f}% |")  # beside accuracy
    rows = {line.split(" | ")[0].lstrip("| "): line for line in (out / "pooled.md").read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| method")}
    assert set(rows) == {"php", "gptswarm", "agentprune", "aflow (transferred)"}  # AFlow: one row, both workflows
    assert all(line.split(" | ")[1] == "5" for line in rows.values())  # n: 3 GSM8K + 2 MATH questions each
    php, rule = pooled_means(out, "php"), pooled_means(out, "agreement-resample")
    assert rows["php"].split(" | ")[2:5] == list(php)
    assert f"The best rule alone: {rule[0]} at {rule[1]} tokens ({rule[2]} generated)" in \
        (out / "pooled.md").read_text()
    capped = [json.loads((out / "runs" / store / "php" / "summary.json").read_text()) for store in
              ("gsm8k-test", "math-test")]  # how often PHP's cap, not its rule, ended a question
    assert all(isinstance(s["capped"], int) for s in capped) and \
        (f"gsm8k-test: {capped[0]['capped']} of 3; math-test: {capped[1]['capped']} of 2 questions"
         in (out / "pooled.md").read_text())
    sides = [line.strip("| \n").split(" | ") for line in rows.values()]  # self-consistency on both sides
    assert any(cells[14] != "-" for cells in sides)  # a method between two k (GPTSwarm, here)
    for cells in sides:
        below, above = cells[10], cells[14]
        assert len(cells) == 16 and (below == "-" or float(cells[11]) >= 1)  # a ratio of sums
        if below == "-":  # less than one sample on a benchmark (a graph answering with one agent's sample)
            assert cells[8].startswith("- (less than one sample on ") and above.startswith("k = ")
            continue
        assert below.startswith("k = ")
        if above == "-":
            assert cells[12].startswith("- (more than every k run on ")
            continue
        assert float(cells[15]) <= 1 and all(int(b.split()[0]) <= int(a.split()[0])
                                             for b, a in zip(below[4:].split("/"), above[4:].split("/")))
    made = len(sides) + sum((cells[10] != "-") + (cells[14] != "-") for cells in sides)  # the rule, SC each side
    assert f"not adjusted for its {made} comparisons" in (out / "pooled.md").read_text()
    assert (out / "baselines.png").stat().st_size > 0
    episodes = out / "runs" / "math-test" / "php" / "episodes.jsonl"
    episodes.write_text("".join(episodes.read_text().splitlines(keepends=True)[:-1]))
    done = subprocess.run([sys.executable, str(REPO / "experiments" / "baselines_tables.py"), "--out", str(out)],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "php and agreement-resample answered different questions" in done.stderr


def pooled_means(out: Path, method: str) -> tuple[str, str, str]:
    """(accuracy, tokens, generated tokens a question) of ``method`` over both benchmarks' runs, as pooled.md
    prints them."""
    runs = [json.loads((out / "runs" / store / method / "summary.json").read_text())
            for store in ("gsm8k-test", "math-test")]
    n = sum(r["n"] for r in runs)
    right = sum(round(r["accuracy"] * r["n"]) for r in runs)
    tokens = sum(r["prompt_tokens"] + r["completion_tokens"] for r in runs)
    generated = sum(r["completion_tokens"] for r in runs)
    return f"{100 * right / n:.1f}%", f"{tokens / n:,.0f}", f"{generated / n:,.0f}"
