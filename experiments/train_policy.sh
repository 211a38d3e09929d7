#!/usr/bin/env bash
# Train the meta-policy on collected rollouts and run the reward-scale ablation (docs/results/policy/).
#
#   experiments/train_policy.sh OUT ROLLOUT_DIR...
#   SOURCE=--trees experiments/train_policy.sh OUT TREE_STORE...   (decisions derived from tree stores)
#
# 1. SFT on oracle labels                               -> OUT/sft
# 2. softrankpo, grpo, reinforce x reward scale 0.1/1/10, each from OUT/sft/policy.pt (also its KL
#    reference)                                         -> OUT/ablation/ALGO-SCALE
#    OUT/ablation/softrankpo-1 is the default-settings SoftRankPO policy, the one to ship.
#    ALGOS replaces the three algorithms, e.g. ALGOS="softrankpo-full grpo-full reinforce-full" for the
#    full-information objective (all three counterfactual rewards of each decision; `delib train --help`).
# 3. delib report over all of it                        -> OUT/report/report.md (training table + plots)
#
# Every step reads the same rollouts and the same held-out questions (--seed 0, --val-fraction default).
# TRAIN_ARGS is added to every `delib train` call, e.g. TRAIN_ARGS="--ignore-features confidence".
# Policy training is small: minutes on one CPU core. Steps whose output exists are skipped (rerun = resume;
# the report is always written again). DELIB (default delib) is the delib to run.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: [SOURCE=--trees] $0 OUT ROLLOUT_DIR|TREE_STORE..." >&2
  exit 2
fi
OUT=$1; shift
DELIB=${DELIB:-delib}
train() {  # train OUT_DIR ARGS...: skip when OUT_DIR already holds a policy
  local dir=$1; shift
  # shellcheck disable=SC2086  # TRAIN_ARGS holds several words
  [ -f "$dir/policy.pt" ] || "$DELIB" train "${SOURCE:---rollouts}" "$@" --out "$dir" ${TRAIN_ARGS:-}
}
train "$OUT/sft" "$@" --algo sft
# shellcheck disable=SC2086  # ALGOS holds several words
for algo in ${ALGOS:-softrankpo grpo reinforce}; do
  for scale in 0.1 1 10; do
    train "$OUT/ablation/$algo-$scale" "$@" --algo "$algo" --init "$OUT/sft/policy.pt" --reward-scale "$scale"
  done
done
"$DELIB" report "$OUT" --out "$OUT/report"
