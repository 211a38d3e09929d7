"""What optimising the learned baselines cost, beside what running them costs (docs/results/baselines/).

    python experiments/baselines_tables.py [--out docs/results/baselines]

Reads every OUT/graphs/<method>-<benchmark>/graph.json (``delib optimize-graph``: its steps, training questions
and tokens) and the runs of that method under OUT/runs/<benchmark>-test/ (summary.json), and writes
OUT/optimisation.md: per graph, the tokens spent optimising it in total and amortised over the test questions it
then answered, beside the tokens it spends a test question. AFlow's workflows are transferred from its paper
(no search ran here, so no optimisation tokens of ours) and PHP optimises nothing: both are listed as such.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

NOT_OPTIMISED = {"php": "nothing is optimised", "aflow-gsm8k": "transferred from the AFlow paper (no search here)",
                 "aflow-math": "transferred from the AFlow paper (no search here)"}
"""The methods run without an optimisation of ours, and why."""
HEADER = ("| method | benchmark | training questions | steps | graph runs | optimisation tokens | "
          "per test question (n) | run tokens per test question |\n|---|---|---:|---:|---:|---:|---:|---:|\n")


def summaries(runs: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(method, benchmark) -> summary.json of each run directory under ``runs``."""
    found = {}
    for path in sorted(runs.rglob("summary.json")):
        summary = json.loads(path.read_text())
        found[summary["method"], summary["benchmark"]] = summary
    return found


def graph_row(path: Path, runs: dict[tuple[str, str], dict[str, Any]]) -> str:
    """The row of one optimised graph: what optimising cost, and amortised over the test questions run."""
    graph = json.loads(path.read_text())
    record, method = graph["record"], graph["kind"]
    bench = record["questions"]["benchmark"]
    spent = record["tokens"]
    total = spent["prompt_tokens"] + spent["completion_tokens"]
    run = runs.get((method, bench))
    if run is None:
        amortised, per_question = "not run", "not run"
    else:
        amortised, per_question = f"{total / run['n']:,.0f} ({run['n']})", f"{run['tokens_per_question']:,.0f}"
    return (f"| {method} | {bench} | {len(record['questions']['ids'])} | {record['steps']} | "
            f"{spent['graph_runs']} | {total:,} | {amortised} | {per_question} |\n")


def table(out: Path) -> str:
    runs = summaries(out / "runs")
    rows = [graph_row(p, runs) for p in sorted((out / "graphs").glob("*/graph.json"))]
    others = sorted((m, b) for m, b in runs if m in NOT_OPTIMISED)
    rows += [f"| {m} | {b} | - | - | - | 0 ({NOT_OPTIMISED[m]}) | 0 ({runs[m, b]['n']}) | "
             f"{runs[m, b]['tokens_per_question']:,.0f} |\n" for m, b in others]
    if not rows:
        raise SystemExit(f"error: no graph under {out / 'graphs'} and no run of {', '.join(NOT_OPTIMISED)} under "
                         f"{out / 'runs'}; run experiments/baselines.sh first")
    return ("# Optimisation tokens\n\nTokens are prompt plus completion tokens, as everywhere in these results; "
            "an optimisation's tokens are spent once, on training questions, and amortised here over the test "
            "questions its method answered.\n\n" + HEADER + "".join(rows))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="docs/results/baselines", help="the folder experiments/baselines.sh wrote")
    out = Path(parser.parse_args(argv).out)
    (out / "optimisation.md").write_text(table(out))
    print(out / "optimisation.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
