#!/usr/bin/env bash
# The paired experiment's two-round secondary (docs/results/paired/PREREGISTRATION.md, amendment 1 "Rounds"):
# the learned arm and the best rule only, at two deliberation rounds, over look K's questions, paired with
# the best rule. Round-2 nodes the stores lack are generated with each store's backend and settings and
# recorded in the store (as `delib evaluate --rounds 2` grows it), so this is an LLM job: run it when the
# build is not running, after the primary has stopped. Rerunning resumes.
#
#   POLICY=CKPT experiments/paired_two_rounds.sh K
#
# POLICY: the primary arm's checkpoint; RULE, REGISTRATION, STORES, OUT and BLOCK as in paired_look.sh.
# Refused unless look K is recorded in OUT/summary.json, stopped the design and was taken on these stores,
# and unless POLICY, RULE and BLOCK are the registered ones. Writes OUT/look-K/rounds-2/ (team.md, team.json,
# team.png, a run directory per store and arm, and provenance.json: the commit, NumPy, stores and
# registration it ran with, as a look records them). Run it from the repository root (the stores name their
# response cache relative to it).
set -euo pipefail
[[ $# -eq 1 && $1 =~ ^[1-9][0-9]*$ ]] || { echo "usage: POLICY=CKPT $0 K (a look number: 1, 2, ...)" >&2; exit 2; }
K=$1
D=${STORES:-data/trees/qwen2.5-coder-1.5b}; OUT=${OUT:-docs/results/paired}
RULE=${RULE:-$OUT/best_rule.json}; DELIB=${DELIB:-delib}
POLICY=${POLICY:?name the checkpoint of the primary arm}
REG=${REGISTRATION:-docs/results/paired/registered.json}
[ -n "${BLOCK:-}" ] || BLOCK=$(python "$(dirname "$0")/registered.py" block "$REG") || exit 2
read -r GSM MATH <<< "$BLOCK"
python "$(dirname "$0")/registered.py" check "$REG" policy="$POLICY" rule="$RULE" block="$GSM,$MATH" || exit 2
STORE_N=("$D/gsm8k-test:$((GSM * K))" "$D/math-test:$((MATH * K))")  # as look K recorded them
python "$(dirname "$0")/paired_look.py" stopped "$K" "$OUT/summary.json" "${STORE_N[@]}" || exit 2
"$DELIB" compare --trees "$D/gsm8k-test,$D/math-test" --questions "$((GSM * K)),$((MATH * K))" --policy "$POLICY" \
  --rule "$RULE" --arms primary --rounds 2 --out "$OUT/look-$K/rounds-2"
python "$(dirname "$0")/paired_look.py" provenance "$OUT/look-$K/rounds-2/provenance.json" "$REG" "${STORE_N[@]}"
