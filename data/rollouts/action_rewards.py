"""Does REFINE pay, and where? Mean counterfactual reward of each action per kind of state, per rollout set.

Every decision of ``delib collect`` carries the reward of all three actions (r_local + r_global, the others'
sampled actions fixed), so a rollout set answers this without training anything. States are grouped by how
many agents (self included) hold the agent's answer: alone or in a majority of 2 (a unanimous team stops
early and decides nothing). REFINE's edge over PERSIST and over CONCEDE gets a 95% interval from resampling
whole questions (decisions of one question are not independent). Run from the repository root (reads
committed files only, seconds on CPU):

    python data/rollouts/action_rewards.py data/rollouts/gsm8k-train data/rollouts/gsm8k-train-1.5b
"""

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from deliberation.engine.state import FEATURE_NAMES
from deliberation.rl.rollout_files import check_manifest, load_decisions
from deliberation.types import ACTIONS

GROUPS = {1: "alone", 2: "majority of 2", 3: "unanimous"}
BOOTSTRAP = 2000


def grouped_rewards(directory: Path) -> dict[str, dict[str, list[tuple[float, ...]]]]:
    """Rewards of every decision by group (how many agents hold the deciding agent's answer), then by
    question."""
    share = FEATURE_NAMES.index("agree_share")
    parseable = FEATURE_NAMES.index("parseable")
    groups: dict[str, dict[str, list[tuple[float, ...]]]] = defaultdict(lambda: defaultdict(list))
    for d in load_decisions([directory]):
        agents = len(d.peers) + 1
        group = GROUPS.get(round(d.own[share] * agents), "other") if d.own[parseable] else "no answer"
        groups[group][d.example_id].append(d.rewards)
    return groups


def edge(by_question: list[np.ndarray], other: int, rng: np.random.Generator) -> str:
    """mean(REFINE - action ``other``) over decisions, with its 95% interval from resampling questions."""
    sums = np.array([(r[:, 1] - r[:, other]).sum() for r in by_question])  # [questions]
    counts = np.array([len(r) for r in by_question])  # [questions]
    picks = rng.integers(0, len(by_question), size=(BOOTSTRAP, len(by_question)))  # [B, questions]
    means = sums[picks].sum(1) / counts[picks].sum(1)  # [B]
    low, high = np.quantile(means, [0.025, 0.975])
    return f"vs {ACTIONS[other].value} {sums.sum() / counts.sum():+.3f} [{low:+.3f}, {high:+.3f}]"


def group_line(group: str, by_question: list[np.ndarray], rng: np.random.Generator) -> str:
    """Decisions, questions, mean reward of each action and REFINE's edges, for one group of states."""
    r = np.concatenate(by_question)  # [n, 3] rewards of PERSIST, REFINE, CONCEDE
    means = " ".join(f"{m:+.3f}" for m in r.mean(0))
    edges = [edge(by_question, other, rng) for other in (0, 2)]
    return (f"  {group:>13}: {len(r):5d} decisions ({len(by_question):3d} questions); mean reward "
            f"{'/'.join(a.value for a in ACTIONS)} {means}; REFINE's edge {', '.join(edges)}")


def report(directory: Path) -> None:
    """One line per group: decisions and their questions, mean reward per action, REFINE's edge."""
    manifest = check_manifest(directory)
    groups = grouped_rewards(directory)
    total = sum(len(rs) for g in groups.values() for rs in g.values())
    print(f"{directory} ({manifest['model']}, {manifest['benchmark']} {manifest['split']}): {total} decisions")
    rng = np.random.default_rng(0)
    for group in [*GROUPS.values(), "other", "no answer"]:
        if group in groups:
            print(group_line(group, [np.array(rs) for rs in groups[group].values()], rng))


def main() -> None:
    for arg in sys.argv[1:]:
        report(Path(arg))


if __name__ == "__main__":
    main()
