"""Everything the allocation experiment fixes before a test sample exists, from the training trees only.

    python experiments/allocation_prepare.py [--stores DIR] [--limit 12] [--out docs/results/allocation/prepare]

Reads the training stores (GSM8K train 100, MATH train 50; ``--limit`` samples a question) and decides, in
this order, each by what scores best on them (docs/results/allocation/PREREGISTRATION.md says why):

1. the weighted vote's temperature: the answer-token log-probability vote (CISC's softmax over samples) at
   each temperature of ``TEMPERATURES``, against the plain vote, averaged over self-consistency k = 3..limit;
2. the step (one sample a RESAMPLE, or a batch of the team) and the vote (plain or the one chosen in 1): by
   5-fold cross-validation over the training questions, the held-out accuracy at the token budget of
   self-consistency over 6 samples (interpolated along each setting's lambda grid);
3. lambda: the one whose allocator, trained on every training question, spends what self-consistency over 6
   samples spends on them (bisection), the primary arm's; its three-move twin (DELIBERATE open) at the same
   lambda; the allocators of the lambda grid (the secondary curve);
4. the sampling baselines' knobs: adaptive-consistency's threshold and ESC's window whose training tokens are
   the nearest to self-consistency over 6 samples' (their grids are fixed here, the curves run every value).

Writes OUT/prepare.json (every number above), OUT/checkpoints/*.pt (the primary, its twin, the grid) and
prints the lines of registered.json. Deterministic: seeds are fixed, training is single-threaded.
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
from deliberation.rl.allocation.train import AllocatorTraining, train

REPO = Path(__file__).resolve().parents[1]
TRAINING = ("math-train", "gsm8k-train")
TEMPERATURES = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
LAMBDAS = (0.0, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.008, 0.012, 0.02, 0.03, 0.05)
THRESHOLDS = (0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
WINDOWS = (2, 3, 4, 5, 6)
FOLDS = 5
REFERENCE_K = 6
SIGNAL = "logprob-answer"


def mean_outcome(paths: Sequence[QuestionPath], allocator, three: bool = False) -> tuple[float, float]:
    """(accuracy, mean tokens) of ``allocator`` on ``paths``."""
    outs = [simulate(p, allocator, (lambda s: allocator.choose(s, True)) if three else None) for p in paths]
    return float(np.mean([o.correct for o in outs])), float(np.mean([o.tokens for o in outs]))


def sc(paths: Sequence[QuestionPath], k: int) -> tuple[float, float]:
    return float(np.mean([p.plain.correct[k] for p in paths])), float(np.mean([p.plain.tokens[k] for p in paths]))


def learned(paths: Sequence[QuestionPath], cfg: AllocatorTraining) -> LearnedAllocator:
    net, _ = train(paths, cfg)
    return LearnedAllocator(net, cfg.step, {}, first=paths[0].team)


def folds(paths: Sequence[QuestionPath]) -> list[int]:
    """A fold per question: round robin within each benchmark in store order (both benchmarks in every fold)."""
    seen: dict[str, int] = {}
    found = []
    for p in paths:
        found.append(seen.get(p.benchmark, 0) % FOLDS)
        seen[p.benchmark] = seen.get(p.benchmark, 0) + 1
    return found


def at_budget(points: Sequence[tuple[float, float]], budget: float) -> float:
    """Accuracy at ``budget`` tokens, interpolated linearly along (accuracy, tokens) points sorted by tokens."""
    ordered = sorted((t, a) for a, t in points)
    tokens, accuracy = [t for t, _ in ordered], [a for _, a in ordered]
    return float(np.interp(budget, tokens, accuracy))


def cross_validated(paths: Sequence[QuestionPath], step: int, budget: float) -> dict[str, object]:
    """Held-out (accuracy, tokens) at every lambda, pooled over the folds, and the accuracy at ``budget``."""
    fold = folds(paths)
    curve = []
    for lam in LAMBDAS:
        outs = []
        for f in range(FOLDS):
            train_on = [p for p, g in zip(paths, fold) if g != f]
            held = [p for p, g in zip(paths, fold) if g == f]
            allocator = learned(train_on, AllocatorTraining(lam=lam, step=step))
            outs += [simulate(p, allocator) for p in held]
        curve.append((float(np.mean([o.correct for o in outs])), float(np.mean([o.tokens for o in outs]))))
    return {"curve": [{"lam": lam, "accuracy": a, "tokens": t} for lam, (a, t) in zip(LAMBDAS, curve)],
            "at_budget": at_budget(curve, budget)}


def matched_lambda(paths: Sequence[QuestionPath], cfg: AllocatorTraining, budget: float) -> tuple[float, list]:
    """The lambda whose allocator trained on ``paths`` spends nearest ``budget`` on them (bisection in log
    space between the grid's neighbours), and every (lambda, accuracy, tokens) tried."""
    tried = []

    def spend(lam: float) -> float:
        acc, tokens = mean_outcome(paths, learned(paths, replace(cfg, lam=lam)))
        tried.append((lam, acc, tokens))
        return tokens

    low, high = 0.0, LAMBDAS[-1]
    spend(low)
    spend(high)
    for _ in range(10):
        mid = (low + high) / 2 if low == 0.0 else float(np.sqrt(low * high))
        if spend(mid) > budget:
            low = mid
        else:
            high = mid
    best = min(tried, key=lambda t: (abs(t[2] - budget), t[0]))
    return best[0], tried


def knob(paths: Sequence[QuestionPath], rules: dict, budget: float) -> dict[str, object]:
    """Each rule's (accuracy, tokens) on ``paths`` and the knob whose tokens are nearest ``budget``."""
    found = {str(k): dict(zip(("accuracy", "tokens"), mean_outcome(paths, rule))) for k, rule in rules.items()}
    return {"grid": found, "matched": min(found, key=lambda k: abs(found[k]["tokens"] - budget))}


QUICK = {"TEMPERATURES": (0.1, 1.0), "LAMBDAS": (0.0, 0.005, 0.05), "FOLDS": 2}
"""``--quick``: grids small enough to exercise every step in seconds (a smoke test; its numbers mean nothing)."""


def prepare(stores: Path, limit: int, out: Path) -> dict[str, object]:
    names = [str(stores / name) for name in TRAINING]
    plain = load_paths(names, limit, None, 3)
    acc6, budget = sc(plain, REFERENCE_K)
    votes = {str(t): float(np.mean([sc(load_paths(names, limit, VoteWeights(SIGNAL, t), 2), k)[0]
                                    for k in range(3, limit + 1)])) for t in TEMPERATURES}
    votes["plain"] = float(np.mean([sc(plain, k)[0] for k in range(3, limit + 1)]))
    temperature = max(TEMPERATURES, key=lambda t: votes[str(t)])
    weighted = load_paths(names, limit, VoteWeights(SIGNAL, temperature), 3)
    candidates = {(step, vote): cross_validated(weighted if vote else plain, step, budget)
                  for step in (1, 0) for vote in (False, True)}
    step, vote = max(candidates, key=lambda c: (candidates[c]["at_budget"], -c[0], not c[1]))
    chosen = weighted if vote else plain
    cfg = AllocatorTraining(step=step)
    lam, tried = matched_lambda(chosen, cfg, budget)
    meta = {"team": chosen[0].team, "limit": limit, "step": step,
            "vote": [SIGNAL, temperature] if vote else None, "stores": [f"data/trees/qwen2.5-coder-1.5b/{n}"
                                                                         for n in TRAINING],
            "questions": [p.example_id for p in chosen]}
    checkpoints = out / "checkpoints"
    saved = {}
    for name, moves, lam_ in [("primary", 2, lam), ("deliberate", 3, lam)] + [(f"lam-{x:g}", 2, x) for x in LAMBDAS]:
        run = replace(cfg, lam=lam_, moves=moves)
        net, _ = train(chosen, run)
        path = save_allocator(checkpoints / f"{name}.pt", net, {**meta, "training": asdict(run)})
        allocator = LearnedAllocator(net, step, meta, first=chosen[0].team)
        acc, tokens = mean_outcome(chosen, allocator, moves == 3)
        saved[name] = {"lam": lam_, "moves": moves, "sha256": sha256_hex(path), "accuracy": acc, "tokens": tokens}
    record = {
        "limit": limit, "reference": {"k": REFERENCE_K, "accuracy": acc6, "tokens": budget},
        "self_consistency": {str(k): dict(zip(("accuracy", "tokens"), sc(plain, k))) for k in range(1, limit + 1)},
        "vote_temperatures": votes, "vote_temperature": temperature,
        "cross_validation": {f"step={s or 'team'} vote={'weighted' if v else 'plain'}": c
                             for (s, v), c in candidates.items()},
        "step": step, "vote": [SIGNAL, temperature] if vote else None, "lambda": lam,
        "lambda_search": [{"lam": a, "accuracy": b, "tokens": c} for a, b, c in tried],
        "checkpoints": saved,
        "adaptive_threshold": knob(plain, {t: BetaRule(t) for t in THRESHOLDS}, budget),
        "esc_window": knob(plain, {w: WindowRule(w) for w in WINDOWS}, budget),
        "questions": len(chosen),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "prepare.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return record


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
    print(json.dumps({k: record[k] for k in ("reference", "step", "vote", "lambda", "checkpoints")}, indent=2))


if __name__ == "__main__":
    sys.exit(exit_status(lambda: main(sys.argv[1:])))
