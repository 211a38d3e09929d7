"""Everything the allocation experiment fixes before a test sample exists, from the training trees only.

    python experiments/allocation_prepare.py [--stores DIR] [--limit 12] [--out docs/results/allocation/prepare]

Reads the training stores (GSM8K train 100, MATH train 50; ``--limit`` samples a question) and records or
decides, in this order (docs/results/allocation/PREREGISTRATION.md says why):

1. the token price lambda: the allocator trained at each lambda of ``LAMBDAS`` (in-sample accuracy and
   tokens). Under SoftRankPO any price above 0 ranks a question's equally right trajectories by tokens alone,
   with full weight, so every positive lambda gives nearly the same stop-early policy; the allocator is
   trained at lambda 0 (correctness alone, ties share credit) and its budget set by ``stop_at``;
2. the weighted vote's temperature: the answer-token log-probability vote (CISC's softmax over samples) at
   each temperature of ``TEMPERATURES``, against the plain vote, averaged over self-consistency k = 3..limit;
3. the step (one sample a RESAMPLE, or a batch of the team) and the vote (plain or the one chosen in 2): by
   5-fold cross-validation over the training questions, the held-out accuracy at the token budget of
   self-consistency over 6 samples, interpolated along each setting's ``STOP_AT`` curve;
4. ``stop_at``: where the allocator trained on every training question spends what self-consistency over
   6 samples spends on them (bisection), the primary arm's; its three-move twin (DELIBERATE open) likewise;
5. the sampling baselines' knobs: adaptive-consistency's threshold and ESC's window whose training tokens are
   the nearest to self-consistency over 6 samples' (the curves run every value of their grids).

Writes OUT/prepare.json (every number above), OUT/checkpoints/{primary,deliberate}.pt,
OUT/registered.json (what experiments/allocation_compare.py runs: the arms, grids, knobs and the checkpoints
with their sha256; registering copies it to docs/results/allocation/) and OUT/commitments.md (the same
choices as the text of PREREGISTRATION.md's section "Commitments"), and prints the choices.
Deterministic: seeds are fixed, training is single-threaded.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from deliberation.allocate.moves import BetaRule, WindowRule
from deliberation.allocate.network import LearnedAllocator, save_allocator
from deliberation.cli.common import Parser
from deliberation.engine.spec import VoteWeights
from deliberation.errors import exit_status
from deliberation.policy.shipped import sha256_hex
from deliberation.rl.allocation.fit import load_paths
from deliberation.rl.allocation.paths import Path as QuestionPath
from deliberation.rl.allocation.paths import simulate
from deliberation.rl.allocation.config import AllocatorTraining
from deliberation.rl.allocation.train import train
from deliberation.runs.tune_rules import BEST_RULE, read_best_rule

REPO = Path(__file__).resolve().parents[1]
TRAINING = ("math-train", "gsm8k-train")
TEMPERATURES = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
LAMBDAS = (0.0, 0.001, 0.01, 0.1, 0.3, 1.0)
STOP_AT = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)
THRESHOLDS = (0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
WINDOWS = (2, 3, 4, 5, 6)
FOLDS = 5
REFERENCE_K = 6
SIGNAL = "logprob-answer"
PAIRED = REPO / "docs/results/paired"
"""The paired experiment's tuned CISC temperatures and best rule, arms here as they were there."""
EPOCHS: dict[str, int] = {}
"""Training epochs other than ``AllocatorTraining``'s defaults (``--quick`` only)."""
QUICK = {"TEMPERATURES": (0.1, 1.0), "LAMBDAS": (0.0, 0.1), "FOLDS": 2, "STOP_AT": (0.5, 0.9, 0.99),
         "EPOCHS": {"sft_epochs": 10, "rl_epochs": 10}}
"""``--quick``: grids small enough to exercise every step in seconds (a smoke test; its numbers mean nothing)."""


def mean_outcome(paths: Sequence[QuestionPath], allocator, three: bool = False) -> tuple[float, float]:
    """(accuracy, mean tokens) of ``allocator`` on ``paths``."""
    outs = [simulate(p, allocator, (lambda s: allocator.choose(s, True)) if three else None) for p in paths]
    return float(np.mean([o.correct for o in outs])), float(np.mean([o.tokens for o in outs]))


def sc(paths: Sequence[QuestionPath], k: int) -> tuple[float, float]:
    return float(np.mean([p.plain.correct[k] for p in paths])), float(np.mean([p.plain.tokens[k] for p in paths]))


def learned(paths: Sequence[QuestionPath], cfg: AllocatorTraining) -> LearnedAllocator:
    net, _ = train(paths, replace(cfg, **EPOCHS))
    return LearnedAllocator(net, cfg.step, {}, first=paths[0].team)


def curve(paths: Sequence[QuestionPath], allocator: LearnedAllocator, three: bool = False) -> list[dict]:
    """(stop_at, accuracy, tokens) of ``allocator`` on ``paths`` at every operating point of ``STOP_AT``."""
    return [dict(zip(("stop_at", "accuracy", "tokens"), (x, *mean_outcome(paths, allocator.at(x), three))))
            for x in STOP_AT]


def folds(paths: Sequence[QuestionPath]) -> list[int]:
    """A fold per question: round robin within each benchmark in store order (both benchmarks in every fold)."""
    seen: dict[str, int] = {}
    found = []
    for p in paths:
        found.append(seen.get(p.benchmark, 0) % FOLDS)
        seen[p.benchmark] = seen.get(p.benchmark, 0) + 1
    return found


def at_budget(points: Sequence[tuple[float, float]], budget: float) -> float:
    """Accuracy at ``budget`` tokens, interpolated linearly along (accuracy, tokens) points (held at the
    nearest end outside them)."""
    ordered = sorted((t, a) for a, t in points)
    return float(np.interp(budget, [t for t, _ in ordered], [a for _, a in ordered]))


def cross_validated(paths: Sequence[QuestionPath], step: int, budget: float) -> dict[str, object]:
    """Held-out (accuracy, tokens) at every operating point, pooled over the folds (lambda 0), and the
    accuracy at ``budget`` tokens."""
    fold = folds(paths)
    outs: dict[float, list] = {x: [] for x in STOP_AT}
    for f in range(FOLDS):
        allocator = learned([p for p, g in zip(paths, fold) if g != f], AllocatorTraining(step=step))
        for x in STOP_AT:
            outs[x] += [simulate(p, allocator.at(x)) for p, g in zip(paths, fold) if g == f]
    points = [(float(np.mean([o.correct for o in outs[x]])), float(np.mean([o.tokens for o in outs[x]])))
              for x in STOP_AT]
    return {"curve": [{"stop_at": x, "accuracy": a, "tokens": t} for x, (a, t) in zip(STOP_AT, points)],
            "at_budget": at_budget(points, budget)}


def matched(paths: Sequence[QuestionPath], allocator: LearnedAllocator, budget: float,
            three: bool) -> tuple[float, list[tuple[float, float, float]]]:
    """The operating point in [1/2, 1) where ``allocator`` spends nearest ``budget`` tokens on ``paths``
    (bisection: tokens grow with stop_at), and every (stop_at, accuracy, tokens) tried."""
    tried = [(x, *mean_outcome(paths, allocator.at(x), three)) for x in (0.5, 0.9999)]
    low, high = 0.5, 0.9999
    for _ in range(14):
        mid = (low + high) / 2
        tried.append((mid, *mean_outcome(paths, allocator.at(mid), three)))
        low, high = (mid, high) if tried[-1][2] < budget else (low, mid)
    return min(tried, key=lambda t: (abs(t[2] - budget), t[0]))[0], tried


def knob(paths: Sequence[QuestionPath], rules: dict, budget: float) -> dict[str, object]:
    """Each rule's (accuracy, tokens) on ``paths`` and the knob whose tokens are nearest ``budget``."""
    found = {str(k): dict(zip(("accuracy", "tokens"), mean_outcome(paths, rule))) for k, rule in rules.items()}
    return {"grid": found, "matched": min(found, key=lambda k: abs(found[k]["tokens"] - budget))}


def choose_vote(names: list[str], limit: int, plain: Sequence[QuestionPath]) -> tuple[dict[str, float], float]:
    """Mean self-consistency accuracy over k = 3..limit of the plain vote and of the weighted vote at each
    temperature, and the best temperature."""
    votes = {str(t): float(np.mean([sc(load_paths(names, limit, VoteWeights(SIGNAL, t), 2), k)[0]
                                    for k in range(3, limit + 1)])) for t in TEMPERATURES}
    votes["plain"] = float(np.mean([sc(plain, k)[0] for k in range(3, limit + 1)]))
    return votes, max(TEMPERATURES, key=lambda t: votes[str(t)])


def arm(name: str, moves: int, chosen: Sequence[QuestionPath], meta: dict, budget: float, out: Path) -> dict:
    """Train the arm on every training question, set its operating point to ``budget`` tokens, save it."""
    run = AllocatorTraining(step=meta["step"], moves=moves, **EPOCHS)
    net, _ = train(chosen, run)
    allocator = LearnedAllocator(net, meta["step"], meta, first=chosen[0].team)
    stop_at, tried = matched(chosen, allocator, budget, moves == 3)
    path = save_allocator(out / "checkpoints" / f"{name}.pt", net,
                          {**meta, "training": asdict(run), "stop_at": stop_at})
    accuracy, tokens = mean_outcome(chosen, allocator.at(stop_at), moves == 3)
    return {"moves": moves, "stop_at": stop_at, "sha256": sha256_hex(path), "accuracy": accuracy, "tokens": tokens,
            "curve": curve(chosen, allocator, moves == 3),
            "search": [dict(zip(("stop_at", "accuracy", "tokens"), t)) for t in tried]}


def prepare(stores: Path, limit: int, out: Path) -> dict[str, object]:
    names = [str(stores / name) for name in TRAINING]
    plain = load_paths(names, limit, None, 3)
    acc6, budget = sc(plain, REFERENCE_K)
    lambdas = {str(lam): dict(zip(("accuracy", "tokens"),
                                  mean_outcome(plain, learned(plain, AllocatorTraining(lam=lam))))) for lam in LAMBDAS}
    votes, temperature = choose_vote(names, limit, plain)
    weighted = load_paths(names, limit, VoteWeights(SIGNAL, temperature), 3)
    candidates = {(step, vote): cross_validated(weighted if vote else plain, step, budget)
                  for step in (1, 0) for vote in (False, True)}
    step, vote = max(candidates, key=lambda c: (candidates[c]["at_budget"], -c[0], not c[1]))
    chosen = weighted if vote else plain
    meta = {"team": chosen[0].team, "limit": limit, "step": step, "vote": [SIGNAL, temperature] if vote else None,
            "stores": [f"data/trees/qwen2.5-coder-1.5b/{n}" for n in TRAINING],
            "questions": [p.example_id for p in chosen]}
    record = {
        "limit": limit, "questions": len(chosen), "reference": {"k": REFERENCE_K, "accuracy": acc6, "tokens": budget},
        "self_consistency": {str(k): dict(zip(("accuracy", "tokens"), sc(plain, k))) for k in range(1, limit + 1)},
        "lambdas": lambdas, "lambda": 0.0, "vote_temperatures": votes, "vote_temperature": temperature,
        "cross_validation": {f"step={s or 'team'} vote={'weighted' if v else 'plain'}": c
                             for (s, v), c in candidates.items()},
        "step": step, "vote": meta["vote"], "stop_at_grid": list(STOP_AT),
        "checkpoints": {name: arm(name, moves, chosen, meta, budget, out)
                        for name, moves in (("primary", 2), ("deliberate", 3))},
        "adaptive_threshold": knob(plain, {t: BetaRule(t) for t in THRESHOLDS}, budget),
        "esc_window": knob(plain, {w: WindowRule(w) for w in WINDOWS}, budget),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "prepare.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    chosen_arms = registered(record, out)
    (out / "registered.json").write_text(json.dumps(chosen_arms, indent=2, sort_keys=True) + "\n")
    (out / "commitments.md").write_text(commitments(record, chosen_arms))
    return record


def commitments(record: dict, chosen: dict) -> str:
    """The registered choices as markdown: what PREREGISTRATION.md's "Commitments" section holds."""
    ref = record["reference"]
    lines = [f"- Training questions: {record['questions']} ({', '.join(TRAINING)}), {record['limit']} samples each; "
             f"self-consistency over {ref['k']} samples there: {100 * ref['accuracy']:.1f}% at "
             f"{ref['tokens']:,.0f} tokens a question (the primary's budget).",
             f"- Step: {'one sample' if record['step'] == 1 else 'a batch of the team'} a RESAMPLE; final vote: "
             f"{'plain' if record['vote'] is None else 'weighted by %s at temperature %s' % tuple(record['vote'])}; "
             f"lambda {record['lambda']}.",
             "- Checkpoints (sha256) and operating points (`stop_at`, matched on the training questions):"]
    lines += [f"  - {name}: `{chosen['checkpoints'][name]}` {arm['sha256']}, stop_at {arm['stop_at']:.4f} "
              f"({100 * arm['accuracy']:.1f}% at {arm['tokens']:,.0f} tokens on the training questions)"
              for name, arm in record["checkpoints"].items()]
    lines += [f"- Matched knobs: adaptive-consistency threshold {chosen['matched']['adaptive_threshold']}, ESC "
              f"window {chosen['matched']['esc_window']}; grids: stop_at {chosen['stop_at_grid']}, thresholds "
              f"{chosen['adaptive_thresholds']}, windows {chosen['esc_windows']}.",
              f"- CISC temperatures {chosen['cisc_temperatures']}; best rule `{chosen['best_rule']}`.",
              "", f"Cross-validation ({FOLDS} folds, held-out accuracy at the primary's budget) that chose the step "
              "and vote:",
              "", "| setting | held-out accuracy at the budget |", "| --- | ---: |"]
    lines += [f"| {name} | {100 * c['at_budget']:.1f}% |" for name, c in record["cross_validation"].items()]
    lines += ["", "The allocator trained at each lambda (in-sample on the training questions):", "",
              "| lambda | accuracy | tokens a question |", "| ---: | ---: | ---: |"]
    lines += [f"| {lam} | {100 * v['accuracy']:.1f}% | {v['tokens']:,.0f} |" for lam, v in record["lambdas"].items()]
    return "\n".join(lines) + "\n"


def registered(record: dict, out: Path) -> dict:
    """The arms and knobs the comparison runs (``experiments/allocation_compare.py``), from ``record``."""
    votes = json.loads((PAIRED / "vote_temperatures.json").read_text())
    files = {name: (out / "checkpoints" / f"{name}.pt").resolve() for name in record["checkpoints"]}
    checkpoints = {name: str(f.relative_to(REPO) if f.is_relative_to(REPO) else f) for name, f in files.items()}
    return {"limit": record["limit"], "reference_k": REFERENCE_K, "checkpoints": checkpoints,
            "sha256": {name: c["sha256"] for name, c in record["checkpoints"].items()},
            "stop_at": {name: c["stop_at"] for name, c in record["checkpoints"].items()},
            "stop_at_grid": list(STOP_AT), "adaptive_thresholds": list(THRESHOLDS), "esc_windows": list(WINDOWS),
            "matched": {"adaptive_threshold": float(record["adaptive_threshold"]["matched"]),
                        "esc_window": int(record["esc_window"]["matched"])},
            "cisc_temperatures": {name: votes["methods"][name]["vote_temperature"]
                                  for name in ("cisc", "cisc-logprob")},
            "best_rule": read_best_rule(PAIRED / BEST_RULE).method}


def main(argv: list[str]) -> None:
    parser = Parser(description=__doc__.split("\n")[0])
    parser.add_argument("--stores", default=str(REPO / "data/trees/qwen2.5-coder-1.5b"))
    parser.add_argument("--limit", type=int, default=12)
    parser.add_argument("--out", default=str(REPO / "docs/results/allocation/prepare"))
    parser.add_argument("--quick", action="store_true", help="tiny grids, to check the script (no result)")
    args = parser.parse_args(argv)
    if args.quick:
        globals().update(QUICK)
    record = prepare(Path(args.stores), args.limit, Path(args.out))
    shown = {k: record[k] for k in ("reference", "step", "vote", "lambdas")}
    shown["checkpoints"] = {k: {f: v[f] for f in ("stop_at", "accuracy", "tokens", "sha256")}
                            for k, v in record["checkpoints"].items()}
    print(json.dumps(shown, indent=2))


if __name__ == "__main__":
    sys.exit(exit_status(lambda: main(sys.argv[1:])))
