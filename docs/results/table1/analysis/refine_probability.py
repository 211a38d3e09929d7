"""Why mpdf (the shipped policy) rarely chose REFINE in table1: the shipped policies' action probabilities on
the first deliberation round of every mpdf episode of table1, against the states of the rollouts they were
trained on (qwen2.5-coder-0.5b's for default.pt and grpo.pt, qwen2.5-coder-1.5b's own for
qwen2.5-coder-1.5b.pt, all 100 questions of which it was trained on, 12 of them held out).

Run from the repository root (reads committed files only, a few seconds on CPU):

    python docs/results/table1/analysis/refine_probability.py > docs/results/table1/analysis/refine_probability.txt

The first-round state is rebuilt from each episode's round-0 turns exactly as the engine builds it
(``record_of(..., changed=True)``; truncated = the answer used all 1024 tokens), for every episode, also
those where the agents agreed and no round was run (marked as such below).
"""

import functools
import glob
import json
from pathlib import Path

import numpy as np

from deliberation.engine.state import FEATURE_NAMES, FEATURE_VERSION, AgentView, observe
from deliberation.policy.checkpoint import load_policy
from deliberation.rl.rollout_files import load_decisions

TABLE = "docs/results/table1"
ROLLOUTS_05B = ("qwen2.5-coder-0.5b", (Path("data/rollouts/gsm8k-train"), Path("data/rollouts/math-train")))
CHECKPOINTS = {  # checkpoint -> (model, rollout directories it was trained on)
    "default": ROLLOUTS_05B,
    "grpo": ROLLOUTS_05B,
    "qwen2.5-coder-1.5b": ("qwen2.5-coder-1.5b", (Path("data/rollouts/gsm8k-train-1.5b"),)),
}
SHOWN = ("agree_share", "is_plurality", "log_tokens", "steps", "verified", "changed", "round_frac")


def table_states() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """own (N, F), peers (N, A-1, F) and a unanimous-team flag (N,) of every agent after round 0."""
    own, peers, unanimous = [], [], []
    for path in sorted(glob.glob(f"{TABLE}/*/mpdf-s0/episodes.jsonl")):
        for line in open(path):
            turns = [t for t in json.loads(line)["turns"] if t["round"] == 0]
            views = [AgentView(t["answer"], t["text"], t["confidence"], t["completion_tokens"], True,
                               t["completion_tokens"] >= 1024) for t in turns]
            obs = observe(views, 1, 2)
            own += list(obs.own)
            peers += list(obs.peers)
            unanimous += [len({v.key for v in views}) == 1] * len(views)
    return np.array(own), np.array(peers), np.array(unanimous)


@functools.lru_cache(maxsize=None)
def rollout_states(directories: tuple[Path, ...]) -> tuple[np.ndarray, np.ndarray]:
    """own (N, F) and peers (N, A-1, F) of the distinct decision states of the training rollouts (read once
    per rollout set: default.pt and grpo.pt share theirs)."""
    states = {(d.example_id, d.round, d.agent): d for d in load_decisions(directories)}
    return (np.array([d.own for d in states.values()], dtype=np.float32),
            np.array([d.peers for d in states.values()], dtype=np.float32))


def describe(name: str, probs: np.ndarray, own: np.ndarray) -> None:
    """P(REFINE) and argmax counts of ``probs`` (N, 3), and feature means where REFINE is the argmax."""
    best = probs.argmax(1)
    print(f"  {name}: {len(probs)} states; P(REFINE) median {np.median(probs[:, 1]):.3f}, "
          f"max {probs[:, 1].max():.3f}; argmax PERSIST/REFINE/CONCEDE {np.bincount(best, minlength=3).tolist()}")
    cols = [FEATURE_NAMES.index(f) for f in SHOWN]
    for label, rows in (("argmax REFINE", best == 1), ("otherwise", best != 1)):
        if rows.any():
            means = ", ".join(f"{FEATURE_NAMES[j]} {own[rows, j].mean():.2f}" for j in cols)
            print(f"    {label}: {means}")


def main() -> None:
    own, peers, unanimous = table_states()
    print(f"table1 first-round states: {len(own)} agents, {int(unanimous.sum())} of them in unanimous teams "
          f"(no round is run there); critic P(Yes) median {np.median(own[:, 2]):.3f}")
    for ckpt, (model, directories) in CHECKPOINTS.items():
        policy = load_policy(f"src/deliberation/policy/checkpoints/{ckpt}.pt", FEATURE_NAMES, FEATURE_VERSION)
        train_own, train_peers = rollout_states(directories)
        print(f"{ckpt}.pt")
        describe("table1, qwen2.5-coder-1.5b", policy.probs(own, peers), own)
        describe(f"its training rollouts, {model}", policy.probs(train_own, train_peers), train_own)


if __name__ == "__main__":
    main()
