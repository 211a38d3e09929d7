"""The baselines' own tables (docs/results/baselines/), beside `delib report`'s per-benchmark ones.

    python experiments/baselines_tables.py [--out docs/results/baselines]

OUT/optimisation.md: from every OUT/graphs/<method>-<benchmark>/graph.json (``delib optimize-graph``: its
steps, training questions and tokens) and the runs of that method under OUT/runs/<benchmark>-test/
(summary.json), per graph the tokens spent optimising it in total and amortised over the test questions it then
answered, beside the tokens it spends a test question. AFlow's workflows are transferred from its paper (no
search ran here, so no optimisation tokens of ours) and PHP optimises nothing: both are listed as such.

OUT/pooled.md: every baseline over all the test questions (both benchmarks pooled; AFlow is its two workflows,
each on the benchmark it was found on), against the best fixed rule and against self-consistency at equal
tokens, paired question by question (``deliberation.report.paired``, ``report.equal_tokens``). It refuses runs
in which the baselines and the rule did not answer the same questions, or a pairing that lost any of them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from deliberation.report.equal_tokens import at_equal_tokens, sampling_runs
from deliberation.report.loading import RunResult, discover, load_results
from deliberation.report.paired import POOLED, Paired, compare, outcomes
from deliberation.runs.tune_rules import read_best_rule

REPO = Path(__file__).resolve().parents[1]
BEST_RULE = REPO / "docs/results/paired/best_rule.json"
BASELINES = {"php": "php", "gptswarm": "gptswarm", "agentprune": "agentprune", "aflow-gsm8k": "aflow (transferred)",
             "aflow-math": "aflow (transferred)"}
"""The baselines' methods and the row each is pooled into: AFlow's transferred workflows are one method."""

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


def arms(results: list[RunResult], rule: str) -> tuple[dict[str, dict], dict[str, float]]:
    """(row -> question -> (correct, tokens), row -> LLM calls a question) of the baselines and the best rule."""
    found: dict[str, dict] = defaultdict(dict)
    calls: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in results:
        name = BASELINES.get(r.method, rule if r.method == rule else None)
        if name is not None:
            found[name].update(outcomes([r])[r.label])
            calls[name][0] += r.summary.llm_calls
            calls[name][1] += r.summary.n
    return dict(found), {name: c / n for name, (c, n) in calls.items()}


def means(answers: dict[str, tuple[bool, int]]) -> tuple[float, float]:
    """(accuracy, tokens a question) of one row's question -> (correct, tokens)."""
    return (sum(c for c, _ in answers.values()) / len(answers), sum(t for _, t in answers.values()) / len(answers))


def paired_cells(p: Paired) -> str:
    lo, hi = p.accuracy_diff_ci95
    return f"{100 * p.accuracy_diff:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] | {p.mcnemar_p:.3g}"


def pooled_rows(found: dict[str, dict], calls: dict[str, float], sampling: dict[str, dict], rule: str) -> list[str]:
    """A row per baseline: n, accuracy, tokens and calls a question, and its two paired differences."""
    questions = set(found[rule])
    rows = []
    for name in sorted(n for n in found if n != rule):
        if set(found[name]) != questions:
            raise SystemExit(f"error: {name} and {rule} answered different questions ({len(found[name])} and "
                             f"{len(questions)}); finish every run of experiments/baselines.sh, then rerun this")
        vs_rule = compare(name, rule, POOLED, found[name], found[rule])
        equal = [p for p in at_equal_tokens(name, found[name], sampling) if p.column == POOLED]
        if not equal or equal[0].n != len(questions):
            raise SystemExit(f"error: {name} pairs with self-consistency at equal tokens on fewer than its "
                             f"{len(questions)} questions (a benchmark where one sample costs more than it spends, "
                             "or a self-consistency run that lacks questions); replay every k on every question")
        p = equal[0]
        accuracy, tokens = means(found[name])
        rows.append(f"| {name} | {len(questions)} | {100 * accuracy:.1f}% | {tokens:,.0f} | {calls[name]:.2f} | "
                    f"{paired_cells(vs_rule)} | {paired_cells(p)} | k = {'/'.join(map(str, p.budget or ()))} | "
                    f"{p.token_ratio:.2f} |\n")
    return rows


def pooled(out: Path) -> str:
    """OUT/pooled.md (see the module docstring)."""
    rule = read_best_rule(BEST_RULE).method
    results = load_results(discover([out / "runs"])[0])
    found, calls = arms(results, rule)
    if rule not in found:
        raise SystemExit(f"error: no run of the best rule {rule} under {out / 'runs'}; run experiments/baselines.sh")
    sampling = {column: by_k for (column, _), by_k in sampling_runs(results).items()}
    accuracy, tokens = means(found[rule])
    rows = pooled_rows(found, calls, sampling, rule)
    return ("# The baselines over every test question, pooled\n\nBoth benchmarks' test questions together (AFlow: "
            "its GSM8K workflow on GSM8K, its MATH workflow on MATH). Differences in points, with paired bootstrap "
            "95% intervals and exact McNemar p. Self-consistency at equal tokens takes, on each benchmark, the most "
            "samples whose tokens a question do not exceed the method's there (k per benchmark, in the order "
            "GSM8K/MATH), so the token ratio (the method's tokens over its self-consistency's) is at least about 1; "
            "where k is the most samples a store holds, self-consistency spends less than the method by that ratio. "
            "Tokens are prompt plus completion tokens; the optimisations' tokens are not in them (optimisation.md "
            "has them, and amortised over these questions). Descriptive: this comparison was not pre-registered "
            f"and its p-values are not adjusted for its {2 * len(rows)} comparisons.\n\n"
            f"| method | n | accuracy | tokens a question | LLM calls a question | minus the best rule ({rule}) "
            "[95% CI] | McNemar p | minus self-consistency at equal tokens [95% CI] | McNemar p | its k | "
            "token ratio |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n"
            + "".join(rows)
            + f"\nThe best rule alone: {100 * accuracy:.1f}% at {tokens:,.0f} tokens and {calls[rule]:.2f} calls a "
              f"question (n = {len(found[rule])}).\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="docs/results/baselines", help="the folder experiments/baselines.sh wrote")
    out = Path(parser.parse_args(argv).out)
    (out / "optimisation.md").write_text(table(out))
    (out / "pooled.md").write_text(pooled(out))
    print(out / "optimisation.md")
    print(out / "pooled.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
