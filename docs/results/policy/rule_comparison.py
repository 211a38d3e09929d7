"""The shipped policies against the fixed rules on the held-out decisions they were evaluated on.

    DELIB_DATA_DIR=../shared/data PYTHONPATH=src python docs/results/policy/rule_comparison.py

Same held-out questions as training (seed 0, val_fraction 0.2 over the same rollout directories); scores
are rl/evaluate.held_out's: reward per decision of the greedy action, the rules read off the features.
"""

from __future__ import annotations

import json
from pathlib import Path

from deliberation.engine.state import FEATURE_NAMES, FEATURE_VERSION
from deliberation.policy.checkpoint import load_policy
from deliberation.rl.config import TrainConfig
from deliberation.rl.held_out import held_out
from deliberation.rl.rollout_files import load_decisions
from deliberation.rl.trainer import prepare
from deliberation.types import to_json

CASES = {  # checkpoint -> the rollouts it trained on
    "default": ["data/rollouts/gsm8k-train", "data/rollouts/math-train"],
    "qwen2.5-coder-1.5b": ["data/rollouts/gsm8k-train-1.5b"],
}


def main() -> None:
    out = {}
    for name, dirs in CASES.items():
        _, val = prepare(load_decisions([Path(d) for d in dirs]), TrainConfig())
        net = load_policy(f"src/deliberation/policy/checkpoints/{name}.pt", FEATURE_NAMES, FEATURE_VERSION).net
        scores = to_json(held_out(net, val))
        out[name] = {k: scores[k] for k in ("questions", "decision_points", "policy_reward", "fixed_rewards",
                                             "rule_rewards", "best_rule", "gain_over_rule_ci95", "gain_ci95")}
    text = json.dumps(out, indent=2)
    Path("docs/results/policy/rule_comparison.json").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
