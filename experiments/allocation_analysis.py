"""The allocation experiment's registered analysis (docs/results/allocation/PREREGISTRATION.md), on the arms
experiments/allocation_compare.py replayed.

    python experiments/allocation_analysis.py [--runs DIR] [--registration FILE] [--out DIR]
                                              [--questions N_GSM8K N_MATH]

Pools the two test stores (GSM8K test, MATH-500) question by question and writes OUT/analysis.json and
OUT/analysis.md: the primary endpoint (the allocator at its registered operating point against
self-consistency over ``reference_k`` samples: paired difference with its bootstrap interval, exact McNemar
p, paired token ratio), the six secondaries with Holm-adjusted p-values, the descriptive curve (every arm's
accuracy and tokens a question), the tokens the allocator needs to match self-consistency over ``limit``
samples, the goal check and the reading the registration gave each outcome, and (descriptive) every operating
point against self-consistency, adaptive-consistency and ESC at equal tokens and against self-consistency at
the next k up, every arm's accuracy and tokens per benchmark; and OUT/curve.png (accuracy against tokens, and
those paired differences). It refuses runs that are not exactly the registered arms, each
finished, each on the registered questions of both test stores (experiments/allocation_compare.py's).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from deliberation.cli.common import Parser
from deliberation.config import Selection
from deliberation.errors import DelibError, exit_status
from deliberation.report.equal_tokens import budget_k
from deliberation.report.loading import load_run
from deliberation.report.paired import POOLED, Outcome, Paired, Question, compare, holm, outcomes
from deliberation.report.plots import plotting
from deliberation.types import to_json

from allocation_compare import PARITY, QUESTIONS, STORES, add_questions_arg, arms as registered_arms

REPO = Path(__file__).resolve().parents[1]
GOAL_POINTS, GOAL_TOKEN_SHARE = 0.02, 0.6
"""The registered goal: +2 points over self-consistency at equal tokens with the interval above 0, or
self-consistency over ``limit`` samples matched at no more than 60% of its tokens."""
SLACK = 1e-9
"""Differences of whole questions computed in floating point (9/450 can read 0.01999...): the goal's lines are
crossed or not up to this."""
Arm = dict[Question, Outcome]
BASELINES = {"adaptive-consistency": ("adaptive", "adaptive_thresholds", "threshold"),
             "ESC": ("esc", "esc_windows", "window")}
"""The sampling baselines each operating point meets at equal tokens (descriptive): the arms' folder prefix, the
registration's grid of its knob, the knob's name."""
SERIES = {"self-consistency, k = 1..{limit}": ("self-consistency-", "o-"), "adaptive-consistency": ("adaptive-", "s--"),
          "ESC": ("esc-", "^--"), "allocator, stop_at grid": ("allocate-0", "D-")}
"""The figure's curves: arms whose folder name starts with the prefix (the allocator's grid points are
``allocate-<stop_at>``, every stop_at below 1)."""


def arm(runs: Path, name: str, questions: tuple[int, ...]) -> Arm:
    """An arm's outcomes on both test stores (question -> (correct, tokens)); a run that did not finish (no
    summary.json), or that replayed other questions than each store's first ``questions``, is refused."""
    found: Arm = {}
    for store, n in zip(STORES, questions):
        result = load_run(runs / store / name)
        if result.partial:
            raise DelibError(f"{runs / store / name} did not finish (no summary.json); rerun "
                             "experiments/allocation_compare.py")
        config = json.loads((runs / store / name / "config.json").read_text())
        if config["limit"] != n or config["selection"] != json.loads(json.dumps(to_json(Selection()))):
            raise DelibError(f"{runs / store / name} replayed other questions than the store's first {n}; run "
                             "experiments/allocation_compare.py into an empty --out")
        for table in outcomes([result]).values():
            found.update(table)
    return found


def column(outcome: Arm, name: str) -> Arm:
    return {q: o for q, o in outcome.items() if q[0] == name}


def point(outcome: Arm) -> dict[str, float]:
    """Pooled accuracy and tokens a question."""
    return {"n": len(outcome), "accuracy": sum(c for c, _ in outcome.values()) / len(outcome),
            "tokens": sum(t for _, t in outcome.values()) / len(outcome)}


def at_equal_tokens(label: str, row: Arm, curve: dict[Any, Arm], reference: str = "self-consistency",
                    knob: str = "k", required: bool = True, above: bool = False) -> Paired | None:
    """``row`` against ``curve`` (knob -> arm) at the largest knob whose tokens do not exceed its own (``above``:
    the smallest whose tokens are at least its own), per benchmark, pooled; None when no knob is on that side
    (no arm of the curve at that budget), or, ``required``, a refusal: the registration gives that case no
    reading, and it cannot arise against self-consistency below, since the allocator's first draws are the
    team's, self-consistency over 3's."""
    mine, theirs, knobs = {}, {}, []
    for name in STORES.values():
        own = column(row, name)
        x = budget_k(sum(t for _, t in own.values()) / len(own), {x: column(a, name) for x, a in curve.items()},
                     set(own), above)
        if x is None and required:
            raise DelibError(f"{label} spends less on {name} than {reference} at its every {knob}: no equal-token "
                             "comparison was registered for that")
        if x is None:
            return None
        mine.update(own)
        theirs.update(column(curve[x], name))
        knobs.append(x)
    side = "the next " + knob + " up" if above else "equal tokens"
    return compare(label, f"{reference} at {side} ({knob} = {', '.join(map(str, knobs))})", POOLED, mine, theirs)


def secondaries(arms: dict[str, Arm], sc: dict[int, Arm], reg: dict[str, Any]) -> list[dict[str, Any]]:
    """The six registered secondaries, Holm-adjusted over the family."""
    primary, ref = arms["allocate"], sc[reg["reference_k"]]
    adaptive = f"adaptive-{reg['matched']['adaptive_threshold']}"
    rows = [at_equal_tokens("allocate", primary, sc),
            compare("allocate", adaptive, POOLED, primary, arms[adaptive]),
            compare("allocate", f"best rule ({reg['best_rule']})", POOLED, primary, arms["best-rule"]),
            *(compare("allocate", f"self-consistency-{reg['reference_k']}", name, column(primary, name),
                      column(ref, name)) for name in STORES.values()),
            compare("allocate-deliberate", "allocate", POOLED, arms["allocate-deliberate"], primary)]
    return [{**asdict(p), "holm_p": h} for p, h in zip(rows, holm([p.mcnemar_p for p in rows]))]


def matching_limit(arms: dict[str, Arm], sc: dict[int, Arm], reg: dict[str, Any]) -> dict[str, Any] | None:
    """The cheapest operating point of the grid at least as accurate as self-consistency over ``limit``
    samples, paired with it (None: no point of the grid reaches it)."""
    top = sc[reg["limit"]]
    grid = [f"allocate-{x}" for x in reg["stop_at_grid"]]
    reaching = [g for g in grid if point(arms[g])["accuracy"] >= point(top)["accuracy"]]
    if not reaching:
        return None
    cheapest = min(reaching, key=lambda g: point(arms[g])["tokens"])
    return {"arm": cheapest, **asdict(compare(cheapest, f"self-consistency-{reg['limit']}", POOLED, arms[cheapest],
                                              top))}


def goal_met(equal: dict[str, Any], match: dict[str, Any] | None) -> bool:
    """The registered goal: at least +2 points over self-consistency at equal tokens (``equal``, the family's
    first row) with its interval above 0, or self-consistency over ``limit`` samples matched (``match``) at no
    more than 60% of its tokens; each line up to SLACK."""
    return (equal["accuracy_diff"] >= GOAL_POINTS - SLACK and equal["accuracy_diff_ci95"][0] > 0) or (
        match is not None and match["token_ratio"] <= GOAL_TOKEN_SHARE + SLACK)


def reading(primary: Paired, equal: dict[str, Any]) -> str:
    """The registered reading of the primary outcome (PREREGISTRATION.md, "How each outcome will be read")."""
    lo, hi = primary.accuracy_diff_ci95
    if lo > 0:
        if primary.token_ratio <= 1:
            return "better: the allocator answers more questions right than the reference for no more tokens"
        if equal["accuracy_diff_ci95"][0] > 0:  # "agrees": the equal-token row's interval, unadjusted, above 0
            return ("better at equal tokens: the allocator spends more tokens than the reference, and answers more "
                    "questions right than self-consistency at its own budget")
        return "more accurate, but at more tokens, and not better at equal tokens: no claim of better"
    if hi < 0:
        return "worse: the allocator answers fewer questions right than the reference at this budget"
    ruled = f"; the goal's +{GOAL_POINTS * 100:.0f} points is ruled out at this scale" if hi < GOAL_POINTS - SLACK \
        else ""
    return f"null: no evidence of a difference (the interval contains 0){ruled}"


def complete(arms: dict[str, Arm], questions: tuple[int, ...]) -> None:
    """One analysis, on every test question (PREREGISTRATION.md): every arm answered the same questions, the
    registered number of each store's (``questions``, in STORES' order)."""
    every = set().union(*arms.values())
    for name, n in zip(STORES.values(), questions):
        answered = sum(q[0] == name for q in every)
        if answered != n:
            raise DelibError(f"the arms answered {answered} questions of {name}, the registration {n}; run "
                             "experiments/allocation_compare.py once every test store holds its samples")
    short = {name: len(every - set(a)) for name, a in arms.items() if set(a) != every}
    if short:
        name, missing = next(iter(short.items()))
        raise DelibError(f"{name} lacks {missing} of the {len(every)} test questions the arms answered; rerun "
                         "experiments/allocation_compare.py once every test store holds its samples")


def registered_runs(runs: Path, reg: dict[str, Any]) -> list[str]:
    """The registered arms' folder names, refused unless each test store's runs are exactly those."""
    wanted = set(registered_arms(reg))
    for store in STORES:
        found = {p.name for p in (runs / store).iterdir() if p.is_dir()} if (runs / store).is_dir() else set()
        odd = sorted(wanted - found) or sorted(found - wanted)
        if odd:
            what = "has no run of the registered arm" if odd[0] in wanted else "has a run of no registered arm,"
            raise DelibError(f"{runs / store} {what} {odd[0]}; run experiments/allocation_compare.py into an "
                             "empty --out")
    return sorted(wanted)


def analyse(runs: Path, reg: dict[str, Any], questions: tuple[int, ...] = QUESTIONS) -> dict[str, Any]:
    if not (runs / PARITY).is_file():
        raise DelibError(f"{runs} has no {PARITY}: the allocator's replays were not checked against its offline "
                         "simulation; run experiments/allocation_compare.py to its end")
    arms = {name: arm(runs, name, questions) for name in registered_runs(runs, reg)}
    complete(arms, questions)
    sc = {k: arms[f"self-consistency-{k}"] for k in range(1, reg["limit"] + 1)}
    primary = compare("allocate", f"self-consistency-{reg['reference_k']}", POOLED, arms["allocate"],
                      sc[reg["reference_k"]])
    family = secondaries(arms, sc, reg)
    match = matching_limit(arms, sc, reg)
    grid = {f"allocate-{x}": asdict(at_equal_tokens(f"allocate-{x}", arms[f"allocate-{x}"], sc))
            for x in reg["stop_at_grid"]}
    return {"primary": asdict(primary), "reading": reading(primary, family[0]), "secondaries": family,
            "match_limit": match, "goal_met": goal_met(family[0], match),
            "points": {name: point(o) for name, o in arms.items()}, "equal_tokens_grid": grid,
            "points_by_benchmark": {name: {b: point(column(o, b)) for b in STORES.values()}
                                    for name, o in arms.items()},
            "next_k_up": next_k_up(arms, sc, reg), "limit": reg["limit"],
            **{f"equal_tokens_{prefix}": against(arms, reg, baseline)
               for baseline, (prefix, _, _) in BASELINES.items()}}


def next_k_up(arms: dict[str, Arm], sc: dict[int, Arm], reg: dict[str, Any]) -> dict[str, Any]:
    """Descriptive (amendment 4): each operating point against self-consistency at the smallest k whose tokens
    are at least its own, per benchmark, pooled (absent where every k spends less): the other side of the
    registered equal-token rows, whose k never spends more than the point, and at an even k give a tie to the
    first sample."""
    return operating_points(arms, reg, sc, above=True)


def against(arms: dict[str, Arm], reg: dict[str, Any], baseline: str) -> dict[str, Any]:
    """Descriptive: each operating point of the allocator (the primary and the grid) against ``baseline`` (a
    BASELINES entry) at the largest knob of its grid whose tokens do not exceed the point's own (absent where
    none does)."""
    prefix, grid, knob = BASELINES[baseline]
    return operating_points(arms, reg, {x: arms[f"{prefix}-{x}"] for x in reg[grid]}, baseline, knob)


def operating_points(arms: dict[str, Arm], reg: dict[str, Any], curve: dict[Any, Arm],
                     reference: str = "self-consistency", knob: str = "k", above: bool = False) -> dict[str, Any]:
    """The primary point and every point of the grid against ``curve`` at their own budget (``at_equal_tokens``,
    ``above`` its side), each where the curve has a knob on that side."""
    found = {}
    for name in ["allocate", *(f"allocate-{x}" for x in reg["stop_at_grid"])]:
        paired = at_equal_tokens(name, arms[name], curve, reference, knob, required=False, above=above)
        if paired is not None:
            found[name] = asdict(paired)
    return found


def pct(x: float) -> str:
    return f"{100 * x:+.1f}"


def row(d: dict[str, Any]) -> str:
    """A paired comparison as a table row, each side's accuracy from its counts; Holm's p only for the
    family's rows ("-" elsewhere)."""
    lo, hi = d["accuracy_diff_ci95"]
    r_lo, r_hi = d["token_ratio_ci95"]
    holm = f"{d['holm_p']:.3g}" if "holm_p" in d else "-"
    mine, theirs = (100 * (d["both_right"] + d[side]) / d["n"] for side in ("only_row", "only_reference"))
    return (f"| {d['label']} | {d['reference']} | {d['column']} | {d['n']} | {mine:.1f}% / {theirs:.1f}% | "
            f"{pct(d['accuracy_diff'])} [{pct(lo)}, {pct(hi)}] | {d['mcnemar_p']:.3g} | {holm} | "
            f"{d['token_ratio']:.2f} [{r_lo:.2f}, {r_hi:.2f}] |")


def markdown(result: dict[str, Any]) -> str:
    head = ["| row | reference | questions | n | accuracy, row / reference | difference, points [95% CI] | "
            "McNemar p | Holm p | token ratio [95% CI] |",
            "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    lines = ["# Allocation experiment: the registered analysis", "", f"**Reading (registered):** "
             f"{result['reading']}. **Goal met:** {'yes' if result['goal_met'] else 'no'}.", "", "## Primary", "",
             *head, row(result["primary"]), "", "## Secondaries (Holm over the six)", "", *head,
             *(row(s) for s in result["secondaries"]), "", "## Matching self-consistency over all samples",
             ""]
    match = result["match_limit"]
    lines += ["No operating point of the grid is as accurate." if match is None else
              f"Cheapest operating point at least as accurate: {match['arm']}.\n\n" + "\n".join([*head, row(match)])]
    lines += ["", "## The allocator's operating points at equal tokens (descriptive)", "", *head,
              *(row(d) for key in ("grid", *(p for p, _, _ in BASELINES.values()))
                for d in result[f"equal_tokens_{key}"].values())]
    lines += ["", "## The allocator's operating points at the next k up (descriptive, amendment 4)", "", *head,
              *(row(d) for d in result["next_k_up"].values())]
    lines += ["", "## Every arm (pooled, and per benchmark)", "", "| arm | questions | n | accuracy | tokens a "
              "question |", "| --- | --- | ---: | ---: | ---: |"]
    lines += [f"| {n} | {b} | {p['n']} | {100 * p['accuracy']:.1f}% | {p['tokens']:,.0f} |"
              for n, by in result["points_by_benchmark"].items()
              for b, p in [(POOLED, result["points"][n]), *by.items()]]
    return "\n".join(lines) + "\n"


def figure(result: dict[str, Any], path: Path) -> None:
    """Accuracy against tokens (self-consistency's curve, the sampling baselines, the allocator's grid) and the
    allocator's paired difference to self-consistency and to adaptive-consistency at its own budget, with 95%
    intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for label, (prefix, style) in SERIES.items():
        pts = sorted((p["tokens"], p["accuracy"]) for n, p in result["points"].items() if n.startswith(prefix))
        left.plot([t for t, _ in pts], [100 * a for _, a in pts], style, label=label.format(limit=result["limit"]))
    for name, marker in (("allocate", "*"), ("allocate-deliberate", "P"), ("best-rule", "X")):
        p = result["points"][name]
        left.plot(p["tokens"], 100 * p["accuracy"], marker, markersize=12, label=name)
    left.set(xlabel="tokens a question", ylabel="accuracy %", title="pooled test questions")
    left.legend(fontsize=8)
    compared = [("grid", "self-consistency"), *((prefix, name) for name, (prefix, _, _) in BASELINES.items())]
    for (key, label), shift, style in zip(compared, (0.985, 1.0, 1.015), "Ds^"):
        key = f"equal_tokens_{key}"
        grid = result[key]
        xs = [shift * result["points"][n]["tokens"] for n in grid]  # side by side where several exist
        ys = [100 * g["accuracy_diff"] for g in grid.values()]
        err = [[y - 100 * g["accuracy_diff_ci95"][0] for y, g in zip(ys, grid.values())],
               [100 * g["accuracy_diff_ci95"][1] - y for y, g in zip(ys, grid.values())]]
        right.errorbar(xs, ys, yerr=err, fmt=style, capsize=3, label=f"minus {label}")
    equal = result["secondaries"][0]  # the goal's row: the primary point against self-consistency at its budget
    y = 100 * equal["accuracy_diff"]
    right.errorbar([0.985 * result["points"]["allocate"]["tokens"]], [y], fmt="*", markersize=12, capsize=3,
                   yerr=[[y - 100 * equal["accuracy_diff_ci95"][0]], [100 * equal["accuracy_diff_ci95"][1] - y]],
                   label="allocate (primary point) minus self-consistency")
    right.axhline(0, color="grey", linewidth=0.8)
    right.legend(fontsize=8)
    right.set(xlabel="tokens a question", ylabel="difference, points", title="allocator at equal tokens")
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str]) -> None:
    parser = Parser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", default=str(REPO / "docs/results/allocation/runs"))
    parser.add_argument("--registration", default=str(REPO / "docs/results/allocation/registered.json"))
    parser.add_argument("--out", default=str(REPO / "docs/results/allocation"))
    add_questions_arg(parser)
    args = parser.parse_args(argv)
    result = analyse(Path(args.runs), json.loads(Path(args.registration).read_text()), tuple(args.questions))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "analysis.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    (out / "analysis.md").write_text(markdown(result))
    if plotting():
        figure(result, out / "curve.png")
    print(out / "analysis.md")


if __name__ == "__main__":
    sys.exit(exit_status(lambda: main(sys.argv[1:])))
