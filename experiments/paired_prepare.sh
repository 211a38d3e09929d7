#!/usr/bin/env bash
# The paired experiment's commitments before its first look (docs/results/paired/PREREGISTRATION.md,
# amendment 1), from the training trees only:
# - the best fixed rule, tuned at one round on every training question (GSM8K and MATH pooled; the
#   registered grid plus issue 37's RESAMPLE rules) into OUT/tuning, copied to OUT/best_rule.json;
# - the primary arm's checkpoint: the training run ARM of experiments/state_actions.sh (the paper's actions,
#   the state chosen on the validation fifth: full or full-signals), shipped as SHIP/NAME.pt, with its SFT
#   run (SFT_ARM, default ARM's sft run) copied to OUT/sft.pt.
# Prints the sha256 of both checkpoints for the registration's next amendment, and the look's command.
#
#   ARM=full|full-signals experiments/paired_prepare.sh STATE_ACTIONS_OUT
#
# TRAIN (default: the 1.5B GSM8K and MATH training stores), OUT (default docs/results/paired), SHIP (default
# the package's policy/checkpoints), NAME (default qwen2.5-coder-1.5b-trees).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: ARM=RUN $0 STATE_ACTIONS_OUT" >&2; exit 2; }
SA=$1; D=data/trees/qwen2.5-coder-1.5b; DELIB=${DELIB:-delib}
TRAIN=${TRAIN:-$D/gsm8k-train,$D/math-train}; OUT=${OUT:-docs/results/paired}
SHIP=${SHIP:-src/deliberation/policy/checkpoints}; NAME=${NAME:-qwen2.5-coder-1.5b-trees}
ARM=${ARM:?name the chosen training run of STATE_ACTIONS_OUT/train: full or full-signals}
case $ARM in full|full-signals) ;; *) echo "ARM=$ARM: the primary arm is full or full-signals (amendment 2)" >&2
  exit 2 ;; esac
SFT_ARM=${SFT_ARM:-${ARM/full/sft}}
for run in "$ARM" "$SFT_ARM"; do
  [ -f "$SA/train/$run/policy.pt" ] || { echo "$SA/train/$run/policy.pt not found; run experiments/state_actions.sh" \
    "first" >&2; exit 2; }
done
"$DELIB" tune-rules --trees "$TRAIN" --actions resample --rounds 1 --offline --quiet --out "$OUT/tuning"
cp "$OUT/tuning/best_rule.json" "$OUT/best_rule.json"
cp "$SA/train/$ARM/policy.pt" "$SHIP/$NAME.pt"
cp "$SA/train/$SFT_ARM/policy.pt" "$OUT/sft.pt"
sha256sum "$SHIP/$NAME.pt" "$OUT/sft.pt"
echo "look k: POLICY=$NAME SFT=$OUT/sft.pt RULE=$OUT/best_rule.json experiments/paired_look.sh k"
