"""The baselines' own tables (docs/results/baselines/), beside `delib report`'s per-benchmark ones.

    python experiments/baselines_tables.py [--out docs/results/baselines]

OUT/optimisation.md: from every OUT/graphs/<method>-<benchmark>/graph.json (``delib optimize-graph``: its
steps, training questions and tokens) and the runs of that method under OUT/runs/<benchmark>-test/
(summary.json), per graph its content hash (as runs record it) and the tokens spent optimising it in total and
amortised over the test questions it then answered, beside the tokens it spends a test question and its accuracy
there. AFlow's workflows are transferred from its paper (no search ran here: their cost is unknown, not zero)
and PHP optimises nothing: both are listed as such.

OUT/pooled.md: every baseline over all the test questions (every benchmark pooled; AFlow is its two workflows,
each on the benchmark it was found on), against the best fixed rule and against self-consistency on both sides
of equal tokens (the most samples spending no more, the fewest spending as much), paired question by question
(``deliberation.report.paired``, ``report.equal_tokens``). It refuses runs in which the baselines and the rule
did not answer the same questions, or a pairing that lost any of them. It ends with how often AFlow's ScEnsemble
named none of the solutions it was shown, so that the first was taken, and how often its Programmer ran no
program (``protocols/aflow.py``).

OUT/baselines.png: the same pooled rows, and self-consistency's curve over every k, as paired differences to
the best rule against their token ratio to it, with paired bootstrap intervals (``report.compare_plot``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from deliberation.policy.shipped import content_hash
from deliberation.protocols.aflow import ATTEMPTS, NO_CODE, letter_of
from deliberation.protocols.designs import Graph, load_graph
from deliberation.protocols.program import program_of, run_solve
from deliberation.protocols.workflow import TRANSFERRED as WORKFLOWS, ensemble_calls, programmer_calls
from deliberation.report.compare_plot import paired_plot
from deliberation.report.equal_tokens import at_equal_tokens, sampling_runs
from deliberation.report.loading import RunResult, discover, load_results, read_episodes, sampling_label
from deliberation.report.paired import POOLED, Paired, compare, outcomes
from deliberation.runs.tune_rules import read_best_rule

REPO = Path(__file__).resolve().parents[1]
BEST_RULE = REPO / "docs/results/paired/best_rule.json"
BASELINES = {"php": "php", "gptswarm": "gptswarm", "agentprune": "agentprune", "aflow-gsm8k": "aflow (transferred)",
             "aflow-math": "aflow (transferred)"}
"""The baselines' methods and the row each is pooled into: AFlow's transferred workflows are one method."""

AFLOW_CHOSE = "a fifth of GSM8K's test split and 617 MATH test problems"
"""Where AFlow's authors chose the transferred workflows: some test questions here may have chosen them."""
TRANSFERRED = (f"unknown: transferred from the AFlow paper, whose search ran with its own models (and chose on "
               f"{AFLOW_CHOSE}, so a question here may have been among those); none here")
NOT_OPTIMISED = {"php": ("0 (nothing is optimised)", "0"), "aflow-gsm8k": (TRANSFERRED, "unknown"),
                 "aflow-math": (TRANSFERRED, "unknown")}
"""The methods run without an optimisation of ours: what their optimisation cost in all and a test question
(AFlow's: not zero, but not ours to count)."""
FINAL_HEADER = ("| method | benchmark | spatial edges kept | temporal edges kept | edges pruned | edge probabilities "
                "(min-max) | agents its answer depends on |\n|---|---|---|---|---:|---|---|\n")
HEADER = ("| method | benchmark | graph | training questions | steps | graph runs | optimisation tokens | "
          "per test question (n) | run tokens per test question | accuracy |\n"
          "|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n")


def summaries(runs: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(method, benchmark) -> summary.json of each run directory under ``runs``."""
    found = {}
    for path in sorted(runs.rglob("summary.json")):
        summary = json.loads(path.read_text())
        found[summary["method"], summary["benchmark"]] = summary
    return found


def graphs(out: Path) -> dict[Path, Graph]:
    """Each graph under OUT/graphs, read once, by its file: experiments/baselines.sh writes design D's graph of
    benchmark B into OUT/graphs/D-B."""
    return {p: load_graph(str(p), p.parent.name.split("-")[0]) for p in sorted((out / "graphs").glob("*/graph.json"))}


def graph_row(path: Path, graph: Graph, runs: dict[tuple[str, str], dict[str, Any]]) -> str:
    """The row of one optimised graph: what optimising cost, and amortised over the test questions run."""
    record, method = graph.record, graph.kind
    bench = record["questions"]["benchmark"]
    spent = record["tokens"]
    total = graph.spent
    run = runs.get((method, bench))
    if run is None:
        amortised, used = "not run", "not run | not run"
    else:
        amortised, used = f"{total / run['n']:,.0f} ({run['n']})", run_cells(run)
    return (f"| {method} | {bench} | {content_hash(path)} | {len(record['questions']['ids'])} | {record['steps']} | "
            f"{spent['graph_runs']} | {total:,} | {amortised} | {used} |\n")


def final_row(graph: Graph) -> str:
    """The row of one optimised graph's final form (``Graph.final_graphs``): the edges it keeps (agent i -> j;
    D the decision node), how far its edge probabilities moved from the 1/2 they start at, and the agents whose
    answers reach its answer, the only ones called (``Graph.deciding``)."""
    spatial, temporal = (rounds[0].edges for rounds in graph.final_graphs())
    n = graph.agents
    logits = [x for x, m in zip((*graph.spatial_logits, *graph.temporal_logits),
                                (*graph.spatial_mask, *graph.temporal_mask)) if m]
    probs = [1 / (1 + math.exp(-x)) for x in logits]
    pruned = len(graph.spatial_mask) + len(graph.temporal_mask) - len(logits)
    return (f"| {graph.kind} | {graph.record['questions']['benchmark']} | {edges_cell(spatial, n)} | "
            f"{edges_cell(temporal, n) if graph.temporal else '-'} | {pruned} | {min(probs):.2f}-{max(probs):.2f} | "
            f"{', '.join(map(str, graph.deciding())) or 'none'} of {n} |\n")


def edges_cell(edges: tuple[tuple[int, int], ...], agents: int) -> str:
    """``edges`` as "i->j", node ``agents`` (the decision node) as D."""
    return ", ".join(f"{a}->{'D' if b == agents else b}" for a, b in edges) or "none"


def run_cells(run: dict[str, Any]) -> str:
    """The cells of what a method's run spent a test question and its accuracy there."""
    return f"{run['tokens_per_question']:,.0f} | {100 * run['accuracy']:.1f}%"


def table(out: Path) -> str:
    runs = summaries(out / "runs")
    found = graphs(out)
    rows = [graph_row(p, g, runs) for p, g in found.items()]
    others = sorted((m, b) for m, b in runs if m in NOT_OPTIMISED)
    rows += [f"| {m} | {b} | - | - | - | - | {' | '.join(NOT_OPTIMISED[m])} ({runs[m, b]['n']}) | "
             f"{run_cells(runs[m, b])} |\n" for m, b in others]
    if not rows:
        raise SystemExit(f"error: no graph under {out / 'graphs'} and no run of {', '.join(NOT_OPTIMISED)} under "
                         f"{out / 'runs'}; run experiments/baselines.sh first")
    finals = [final_row(g) for g in found.values()]
    return ("# Optimisation tokens\n\nTokens are prompt plus completion tokens, as everywhere in these results; "
            "an optimisation's tokens are spent once, on training questions, and amortised here over the test "
            "questions its method answered.\n\n" + HEADER + "".join(rows)
            + ("\n## The final graphs\n\nThe graph each method then runs on every test question: the edges it keeps "
               "(agent i -> agent j, D the decision node; AgentPrune's decision agent reads every agent), the "
               "edges pruned, how far the learned edge probabilities moved from the 1/2 they start at (an edge is "
               "kept above 1/2, unless it would close a cycle), and the agents whose answers reach the team's "
               "answer, the only ones called (GPTSwarm's reference runs only the nodes from which its decision "
               "node is reachable).\n\n" + FINAL_HEADER + "".join(finals) if finals else ""))


def arms(results: list[RunResult], rule: str) -> tuple[dict[str, dict], dict[str, tuple[float, float]]]:
    """(row -> question -> (correct, tokens), row -> (LLM calls, generated tokens) a question) of the baselines
    and the best rule."""
    found: dict[str, dict] = defaultdict(dict)
    spent: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in results:
        name = BASELINES.get(r.method, rule if r.method == rule else None)
        if name is not None:
            found[name].update(outcomes([r])[r.label])
            spent[name][0] += r.summary.llm_calls
            spent[name][1] += r.summary.completion_tokens
            spent[name][2] += r.summary.n
    return dict(found), {name: (c / n, g / n) for name, (c, g, n) in spent.items()}


def means(answers: dict[str, tuple[bool, int]]) -> tuple[float, float]:
    """(accuracy, tokens a question) of one row's question -> (correct, tokens)."""
    return (sum(c for c, _ in answers.values()) / len(answers), sum(t for _, t in answers.values()) / len(answers))


def paired_cells(p: Paired) -> str:
    lo, hi = p.accuracy_diff_ci95
    return f"{100 * p.accuracy_diff:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] | {p.mcnemar_p:.3g}"


def sampling_cells(p: Paired | None, sampling: dict[str, dict], lacking: list[str], above: bool) -> str:
    """A pairing with self-consistency: difference, McNemar p, k per benchmark (marked where it is the most
    samples run) and token ratio; dashes, naming the benchmarks ``lacking`` a k on that side (``above`` the
    method's tokens: it spends more than every k run; below: less than one sample), where there is no pooled
    pairing."""
    if p is None:
        side = "more than every k run" if above else "less than one sample"
        return f"- ({side} on {', '.join(lacking)}) | - | - | -"
    ks = [f"{k} (most run)" if k == max(sampling[column]) else str(k) for column, k in zip(sorted(sampling),
                                                                                              p.budget or ())]
    return f"{paired_cells(p)} | k = {'/'.join(ks)} | {p.token_ratio:.2f}"


def pooled_at(name: str, answers: dict, sampling: dict[str, dict], above: bool) -> tuple[Paired | None, list[str]]:
    """``name`` against self-consistency below (``above``: above) its budget, pooled (None where a benchmark
    has no k on that side), and the benchmarks without one."""
    rows = at_equal_tokens(name, answers, sampling, above)
    lacking = sorted(set(sampling) - {p.column for p in rows})
    return next((p for p in rows if p.column == POOLED), None), lacking


def pooled_rows(found: dict[str, dict], spent: dict[str, tuple[float, float]], sampling: dict[str, dict],
                rule: str) -> tuple[list[str], int]:
    """A row per baseline (n, accuracy, tokens, generated tokens and calls a question, and its paired
    differences to the rule and to self-consistency on both sides of its tokens), and how many paired
    comparisons they make."""
    questions = set(found[rule])
    rows, comparisons = [], 0
    for name in sorted(n for n in found if n != rule):
        if set(found[name]) != questions:
            raise SystemExit(f"error: {name} and {rule} answered different questions ({len(found[name])} and "
                             f"{len(questions)}); finish every run of experiments/baselines.sh, then rerun this")
        vs_rule = compare(name, rule, POOLED, found[name], found[rule])
        (below, short), (above, lacking) = (pooled_at(name, found[name], sampling, side) for side in (False, True))
        if (below is None and not below_one_sample(found[name], sampling, short)) or \
                any(p is not None and p.n != len(questions) for p in (below, above)):
            raise SystemExit(f"error: {name} pairs with self-consistency on fewer than its {len(questions)} "
                             "questions (a self-consistency run lacks some, or k = 1 was not run); replay every k on "
                             "every question")
        accuracy, tokens = means(found[name])
        rows.append(f"| {name} | {len(questions)} | {100 * accuracy:.1f}% | {tokens:,.0f} | {spent[name][1]:,.0f} | "
                    f"{spent[name][0]:.2f} | "
                    f"{paired_cells(vs_rule)} | {sampling_cells(below, sampling, short, False)} | "
                    f"{sampling_cells(above, sampling, lacking, True)} |\n")
        comparisons += 1 + (below is not None) + (above is not None)
    return rows, comparisons


def below_one_sample(answers: dict, sampling: dict[str, dict], short: list[str]) -> bool:
    """Whether ``answers`` (question -> (correct, tokens)) lacks self-consistency at equal tokens below it only
    because it spends less than one sample on every benchmark ``short`` names (a graph that answers with one
    agent's sample, shorter than the first): each has a k = 1 run holding its questions there, at more tokens a
    question. Any other reason (no benchmark named, no k = 1 run, one lacking questions) is not that."""
    def under(column: str) -> bool:
        asked = [q for q in answers if any(q in by_q for by_q in sampling[column].values())]
        ones = sampling[column].get(1, {})
        return bool(asked) and all(q in ones for q in asked) and \
            sum(answers[q][1] for q in asked) < sum(ones[q][1] for q in asked)
    return bool(short) and all(under(column) for column in short)


def figure(found: dict[str, dict], sampling: dict[str, dict], rule: str, out: Path) -> None:
    """OUT/baselines.png (see the module docstring): every k that answered every question of the rule."""
    questions = set(found[rule])
    rows = [compare(name, rule, POOLED, found[name], found[rule]) for name in sorted(found) if name != rule]
    for k in sorted(set.intersection(*(set(by_k) for by_k in sampling.values()))):
        answers = {q: o for by_k in sampling.values() for q, o in by_k[k].items() if q in questions}
        if set(answers) == questions:
            rows.append(compare(sampling_label(k), rule, POOLED, answers, found[rule]))
    made = paired_plot(rows, out / "baselines.png", "the baselines and self-consistency, paired with the best rule")
    if made.path is None:  # the tables stand without it
        print(f"warning: baselines.png not drawn: {made.note}", file=sys.stderr)


def pooled(out: Path) -> str:
    """OUT/pooled.md and OUT/baselines.png (see the module docstring); returns pooled.md's text."""
    rule = read_best_rule(BEST_RULE).method
    results = load_results(discover([out / "runs"])[0])
    found, spent = arms(results, rule)
    if rule not in found:
        raise SystemExit(f"error: no run of the best rule {rule} under {out / 'runs'}; run experiments/baselines.sh")
    sampling = {column: by_k for (column, _), by_k in sampling_runs(results).items()}
    accuracy, tokens = means(found[rule])
    rows, comparisons = pooled_rows(found, spent, sampling, rule)
    figure(found, sampling, rule, out)
    sides = "[95% CI] | McNemar p | its k | token ratio"
    columns = sorted(sampling)  # the benchmarks' columns, e.g. gsm8k/test
    return ("# The baselines over every test question, pooled\n\n"
            f"The test questions of {' and '.join(columns)} together (AFlow: each workflow on the benchmark it was "
            "found on). Differences in points, with paired bootstrap 95% intervals and exact McNemar p. "
            "Self-consistency is paired on both sides of each method's tokens: at equal tokens, the most samples "
            "whose tokens a question do not exceed the method's (token ratio, the method's over its "
            "self-consistency's, at least about 1), and at the next k up, the fewest samples that spend at least as "
            "much (ratio at most about 1; dashes, naming the benchmark, where every k run spends less); k per "
            f"benchmark, in the order {'/'.join(columns)}, \"most run\" where it is the most samples run (every "
            "sample the store holds unless SAMPLES said fewer). Where a method spends more than every k run (its "
            "next k up a dash), its equal-token pairing is the most samples run, at a token ratio above 1 that "
            "favours the method: a difference above 0 there does not show it better than sampling that spends as "
            "much (extending the stores, `delib tree --samples N`, pairs it further); where it spends less than one "
            "sample on a benchmark (a graph whose answer is one agent's shorter sample), its equal-token pairing is "
            "a dash and its next k up is k = 1. Self-consistency's vote gives a tie to the first sample's answer, so "
            "an even k adds little over the odd k below it (k = 2 answers as k = 1 does, but where the first sample "
            "has no answer): a method above the next k up is more accurate than sampling that spends as much, one "
            "below equal tokens less accurate than sampling that spends no more. Tokens are prompt plus completion "
            "tokens; the optimisations' tokens are not in them (optimisation.md has them, and amortised over these "
            "questions); the generated ones, the dearer on a local machine, are beside them (a method whose prompts "
            "show other answers spends more of its tokens reading, where self-consistency's are nearly all "
            "generated). baselines.png draws these methods and self-consistency at every k against the best rule. "
            f"AFlow's workflows were chosen by its authors on {AFLOW_CHOSE}, so some of these questions may have "
            "chosen them (no optimisation of ours saw a test question). Descriptive: this comparison was not "
            f"pre-registered and its p-values are not adjusted for its {comparisons} comparisons.\n\n"
            f"| method | n | accuracy | tokens a question | of them generated | LLM calls a question | "
            f"minus the best rule ({rule}) "
            f"[95% CI] | McNemar p | minus self-consistency at equal tokens {sides} | minus self-consistency at "
            f"the next k up {sides} |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---:|\n"
            + "".join(rows)
            + f"\nThe best rule alone: {100 * accuracy:.1f}% at {tokens:,.0f} tokens ({spent[rule][1]:,.0f} "
              f"generated) and {spent[rule][0]:.2f} calls a question (n = {len(found[rule])}).\n" + php_notes(out)
            + aflow_notes(out))


def php_notes(out: Path) -> str:
    """How often PHP's cap on calls (``--php-max-calls``) ended a question of each run under OUT/runs before
    two consecutive answers agreed (``Summary.capped``), so that a reader tells its rule's answers from the cap's."""
    counts = []
    for path in sorted((out / "runs").glob("*/php/summary.json")):
        summary = json.loads(path.read_text())
        counts.append(f"{path.parent.parent.name}: {summary.get('capped', 'not recorded')} of {summary['n']}")
    if not counts:
        return ""
    return (f"\nPHP's cap on calls (`--php-max-calls`) ended, before two consecutive answers agreed, "
            f"{'; '.join(counts)} questions (each answered with its last answer).\n")


def aflow_notes(out: Path) -> str:
    """For each run of an AFlow workflow under OUT/runs: how often its ScEnsemble's reply named none of the
    solutions it was shown (the first was then taken), and how often its Programmer wrote no code or no program
    that ran in its tries (the workflow's output is then "No code generated" or the last error's text, as the
    reference's is). Counts a reader needs to tell the workflow's operators from the text they fall back on."""
    letters, programs = [], []
    for path in sorted((out / "runs").glob("*/aflow-*/episodes.jsonl")):
        workflow = WORKFLOWS[path.parent.name.removeprefix("aflow-")]
        name = f"{path.parent.parent.name}/{path.parent.name}"
        episodes = read_episodes(path)
        replies = [(e.turns[k].text, shown) for e in episodes for k, shown in ensemble_calls(workflow, len(e.turns))]
        letters.append(f"{name}: {sum(letter_of(t, n) is None for t, n in replies)} of {len(replies)}")
        tries = [[e.turns[k].text for k in programmer_calls(workflow, len(e.turns)) or ()] for e in episodes]
        ends = [programmer_end(t) for t in tries if t]
        programs.append(f"{name}: {ends.count('no code')} and {ends.count('failed')} of {len(ends)}")
    if not letters:
        return ""
    return (f"\nAFlow's ScEnsemble named none of the solutions it was shown, and the first was taken, in "
            f"{'; '.join(letters)} calls. Its Programmer wrote no code, or no program that ran in {ATTEMPTS} tries, in "
            f"{'; '.join(programs)} questions (its output is then \"{NO_CODE}\" or the last error's text, as the "
            f"reference's is).\n")


def programmer_end(tries: list[str]) -> str:
    """How a Programmer's ``tries`` (its replies, in order) ended: "no code" (the last held none), "ran" (it
    stopped early, so the last program ran; or the last of all its tries runs again here, in the sandbox) or
    "failed"."""
    code = program_of(tries[-1])
    if code is None:
        return "no code"
    return "ran" if len(tries) < ATTEMPTS or run_solve(code)[0] else "failed"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="docs/results/baselines", help="the folder experiments/baselines.sh wrote")
    out = Path(parser.parse_args(argv).out)
    (out / "optimisation.md").write_text(table(out))
    (out / "pooled.md").write_text(pooled(out))
    print(out / "optimisation.md")
    print(out / "pooled.md")
    if (out / "baselines.png").is_file():
        print(out / "baselines.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
