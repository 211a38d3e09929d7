#!/usr/bin/env bash
# The paired experiment's commitments before its first look (docs/results/paired/PREREGISTRATION.md,
# amendments 1 and 2), from the training trees only:
# - the best fixed rule, tuned at one round on every training question (GSM8K and MATH pooled; the
#   registered grid plus the RESAMPLE rules) into OUT/tuning, copied to OUT/best_rule.json;
# - CISC's vote temperatures, tuned on every training question (`delib tune-votes`) into OUT/votes, copied
#   to OUT/vote_temperatures.json (the looks' CISC arms vote at them);
# - the primary arm's checkpoint: the training run of experiments/state_actions.sh that amendment 2's rule
#   chooses from its validation table (experiments/choose_arm.py: full or full-signals), shipped as
#   SHIP/NAME.pt, with its SFT run (sft or sft-signals) copied to OUT/sft.pt and that run's split.json
#   (the questions it trained on) to OUT/split.json.
# Prints the chosen run, the sha256 of both checkpoints for the registration's next amendment, and the
# look's command; writes OUT/registered.json (experiments/registered.py: every file a look may use, by role
# and sha256, and the block sizes), committed with that amendment.
#
#   experiments/paired_prepare.sh STATE_ACTIONS_OUT
#
# TRAIN (default: the 1.5B GSM8K and MATH training stores), OUT (default docs/results/paired), SHIP (default
# the package's policy/checkpoints), NAME (default qwen2.5-coder-1.5b-trees), GRID (default
# docs/results/paired/rule_grid.json: the rule grid the registration fixed, frozen beside it).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 STATE_ACTIONS_OUT" >&2; exit 2; }
SA=$1; D=data/trees/qwen2.5-coder-1.5b; DELIB=${DELIB:-delib}; PY=${PYTHON:-python}
TRAIN=${TRAIN:-$D/gsm8k-train,$D/math-train}; OUT=${OUT:-docs/results/paired}
SHIP=${SHIP:-src/deliberation/policy/checkpoints}; NAME=${NAME:-qwen2.5-coder-1.5b-trees}
GRID=${GRID:-docs/results/paired/rule_grid.json}
ARM=$("$PY" "$(dirname "$0")/choose_arm.py" "$SA") || exit 2
echo "primary arm (amendment 2's rule): $ARM"
SFT_ARM=${ARM/full/sft}
for run in "$ARM" "$SFT_ARM"; do
  [ -f "$SA/train/$run/policy.pt" ] || { echo "$SA/train/$run/policy.pt not found; run experiments/state_actions.sh" \
    "first" >&2; exit 2; }
done
# the grid the registration fixed, frozen beside it: a rule registered later does not join it
"$DELIB" tune-rules --trees "$TRAIN" --grid "$GRID" --rounds 1 --offline --quiet --out "$OUT/tuning"
cp "$OUT/tuning/best_rule.json" "$OUT/best_rule.json"
"$DELIB" tune-votes --trees "$TRAIN" --rounds 1 --offline --quiet --out "$OUT/votes"
cp "$OUT/votes/vote_temperatures.json" "$OUT/vote_temperatures.json"
cp "$SA/train/$ARM/policy.pt" "$SHIP/$NAME.pt"
cp "$SA/train/$SFT_ARM/policy.pt" "$OUT/sft.pt"
cp "$SA/train/$SFT_ARM/split.json" "$OUT/split.json"  # beside sft.pt: a look checks it trained on no test question
sha256sum "$SHIP/$NAME.pt" "$OUT/sft.pt"
"$PY" "$(dirname "$0")/registered.py" write "$OUT/registered.json" policy="$SHIP/$NAME.pt" sft="$OUT/sft.pt" \
  rule="$OUT/best_rule.json" votes="$OUT/vote_temperatures.json" block=100,50
echo "look k: POLICY=$NAME SFT=$OUT/sft.pt RULE=$OUT/best_rule.json experiments/paired_look.sh k"
