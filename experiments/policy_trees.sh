#!/usr/bin/env bash
# The learned policy on deliberation trees: the best fixed rule tuned on training trees is the bar; policies
# trained on the same trees are measured against it at the team level (whole-episode accuracy by replay) on
# held-out trees, with the reward-component, state-fidelity and reward-scale ablations.
#
#   experiments/policy_trees.sh OUT TRAIN_STORE[,STORE] HELDOUT_STORE[,STORE]
#
# 1. delib tune-rules on the training stores                      -> OUT/tuning/best_rule.json
# 2. SFT, then from it: softrankpo (sampled, clipped: today's default), softrankpo-full (the three actions
#    of each decision ranked; seeds 1 and 2 from an SFT of their seed), softrankpo-pooled -> OUT/train/NAME
# 3. delib compare on the held-out stores, with the shipped policy (default) -> OUT/compare/main/team.md
# 4. reward components: softrankpo-full on r_local only / r_global only (both = main) -> OUT/compare/components
# 5. state fidelity: SFT + softrankpo-full without each feature group -> OUT/compare/features
# 6. reward scale: softrankpo-full, grpo-full, reinforce-full at 0.1, 1, 10 (experiments/train_policy.sh),
#    its training report (action shares over training)            -> OUT/scale, OUT/compare/scale
# 7. team size: with WIDE=STORE (held-out trees of a larger team, e.g. `delib tree --agents 5`), the main
#    arms replayed on it                                           -> OUT/compare/team-NAME
# 8. depth: softrankpo-full-s0 and softrankpo at DEPTH rounds, with the SFT policy, the best rule, the
#    constants and the oracle (nodes the stores lack are generated and recorded)
#                                                                  -> OUT/compare/depth-DEPTH
# Every training runs before the first comparison (the held-out stores are read last). Every replay before
# step 8 is offline at ROUNDS rounds (default 1: every node is in the stores; more is not supported, since
# training at more rounds needs nodes the stores lack). Steps whose output exists are skipped (rerun =
# resume). DELIB (default delib) is the delib to run. DEPTH= (empty) skips step 8; WIDE unset skips step 7.
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: [ROUNDS=1] [DEPTH=2] [WIDE=STORE] $0 OUT TRAIN_STORE[,STORE] HELDOUT_STORE[,STORE]" >&2
  exit 2
fi
OUT=$1; TRAIN=$2; HELDOUT=$3
ROUNDS=${ROUNDS:-1}; DEPTH=${DEPTH-2}; WIDE=${WIDE-}
DELIB=${DELIB:-delib}
read -r -a TRAIN_STORES <<< "${TRAIN//,/ }"
train() {  # train OUT_DIR ARGS...: skip when OUT_DIR already holds a policy
  local dir=$1; shift
  [ -f "$dir/policy.pt" ] || "$DELIB" train --trees "${TRAIN_STORES[@]}" --tree-rounds "$ROUNDS" "$@" --out "$dir"
}
compare() {  # compare NAME SFT POLICY[,POLICY] [REPLAY_ARGS...]: skip when its team.json exists
  local name=$1 sft=$2 policies=$3; shift 3
  local replay=("$@"); [ ${#replay[@]} -gt 0 ] || replay=(--rounds "$ROUNDS" --offline)
  [ -f "$OUT/compare/$name/team.json" ] || "$DELIB" compare --trees "$HELDOUT" --policy "$policies" --sft "$sft" \
    --rule "$OUT/tuning/best_rule.json" --out "$OUT/compare/$name" --quiet "${replay[@]}"
}
T=$OUT/train

# --- training: the rule grid and every policy (training stores only) ---
[ -f "$OUT/tuning/best_rule.json" ] || "$DELIB" tune-rules --trees "$TRAIN" --rounds "$ROUNDS" --offline \
  --out "$OUT/tuning" --quiet
train "$T/sft" --algo sft
train "$T/softrankpo" --algo softrankpo --init "$T/sft"
train "$T/softrankpo-full-s0" --algo softrankpo-full --init "$T/sft"
for seed in 1 2; do  # a seed also draws the validation questions, so each seed has its own SFT start
  train "$T/sft-s$seed" --algo sft --seed "$seed"
  train "$T/softrankpo-full-s$seed" --algo softrankpo-full --init "$T/sft-s$seed" --seed "$seed"
done
train "$T/softrankpo-pooled" --algo softrankpo-pooled --init "$T/sft"
for part in local global; do
  train "$T/components-$part" --algo softrankpo-full --init "$T/sft" --reward-components "$part"
done
FEATURES="$T/softrankpo-full-s0/policy.pt"
for group in agreement-structure reasoning-profile confidence-signals; do
  train "$T/without-$group/sft" --algo sft --ignore-features "$group"
  train "$T/without-$group/softrankpo-full" --algo softrankpo-full --init "$T/without-$group/sft" \
    --ignore-features "$group"
  FEATURES="$FEATURES,$T/without-$group/softrankpo-full/policy.pt"
done
TRAIN_ARGS="--tree-rounds $ROUNDS" SOURCE=--trees ALGOS="softrankpo-full grpo-full reinforce-full" \
  DELIB="$DELIB" "$(dirname "$0")/train_policy.sh" "$OUT/scale" "${TRAIN_STORES[@]}"

# --- comparisons: held-out stores only ---
MAIN="$T/softrankpo-full-s0/policy.pt,$T/softrankpo-full-s1/policy.pt,$T/softrankpo-full-s2/policy.pt"
MAIN="$MAIN,$T/softrankpo/policy.pt,$T/softrankpo-pooled/policy.pt,default"  # default: the shipped policy
compare main "$T/sft/policy.pt" "$MAIN"
compare components "$T/sft/policy.pt" \
  "$T/softrankpo-full-s0/policy.pt,$T/components-local/policy.pt,$T/components-global/policy.pt"
compare features "$T/sft/policy.pt" "$FEATURES"
SCALE=$(printf '%s,' "$OUT"/scale/ablation/*/policy.pt); SCALE=${SCALE%,}
compare scale "$OUT/scale/sft/policy.pt" "$SCALE"
if [ -n "$WIDE" ]; then  # the same arms on a store of a larger team (its agent count is the store's)
  HELDOUT=$WIDE compare "team-$(basename "$WIDE")" "$T/sft/policy.pt" "$MAIN"
fi
if [ -n "$DEPTH" ]; then
  compare "depth-$DEPTH" "$T/sft/policy.pt" "$T/softrankpo-full-s0/policy.pt,$T/softrankpo/policy.pt" \
    --rounds "$DEPTH"
fi
