"""Does REFINE pay, and where? Mean counterfactual reward of each action per kind of state, per rollout set.

Every decision of ``delib collect`` carries the reward of all three actions (r_local + r_global, the others'
sampled actions fixed), so a rollout set answers this without training anything. States are grouped by how
many agents (self included) hold the agent's answer: alone, in a majority of 2, or unanimous. Run from the
repository root (reads committed files only, seconds on CPU):

    python data/rollouts/action_rewards.py data/rollouts/gsm8k-train data/rollouts/gsm8k-train-1.5b
"""

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from deliberation.deliberation.state import FEATURE_NAMES
from deliberation.rl.rollout_files import check_manifest, load_decisions
from deliberation.types import ACTIONS

GROUPS = {1: "alone", 2: "majority of 2", 3: "unanimous"}


def grouped_rewards(directory: Path) -> tuple[dict[str, np.ndarray], dict[str, set[str]]]:
    """Rewards (n, 3) of every decision and the questions they came from, by the number of agents holding
    the deciding agent's answer."""
    share = FEATURE_NAMES.index("agree_share")
    parseable = FEATURE_NAMES.index("parseable")
    rows: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    questions: dict[str, set[str]] = defaultdict(set)
    for d in load_decisions([directory]):
        agents = len(d.peers) + 1
        group = GROUPS.get(round(d.own[share] * agents), "other") if d.own[parseable] else "no answer"
        rows[group].append(d.rewards)
        questions[group].add(d.example_id)
    return {g: np.array(r) for g, r in rows.items()}, questions


def report(directory: Path) -> None:
    """One line per group: decisions and their questions, mean reward per action, where REFINE wins."""
    manifest = check_manifest(directory)
    groups, questions = grouped_rewards(directory)
    total = sum(len(r) for r in groups.values())
    print(f"{directory} ({manifest['model']}, {manifest['benchmark']} {manifest['split']}): {total} decisions")
    names = "/".join(a.value for a in ACTIONS)
    for group in [*GROUPS.values(), "other", "no answer"]:
        if group in groups:
            r = groups[group]  # [n, 3] rewards of PERSIST, REFINE, CONCEDE
            best = r[:, 1] > np.maximum(r[:, 0], r[:, 2])
            means = " ".join(f"{m:+.3f}" for m in r.mean(0))
            print(f"  {group:>13}: {len(r):5d} decisions ({len(questions[group]):3d} questions); mean reward {names} {means}; "
                  f"REFINE strictly best in {best.mean():.0%}")


def main() -> None:
    for arg in sys.argv[1:]:
        report(Path(arg))


if __name__ == "__main__":
    main()
