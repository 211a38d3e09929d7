#!/usr/bin/env bash
# Look K of the paired experiment (docs/results/paired/PREREGISTRATION.md, amendment 1): every arm replayed
# offline at one round over the first 100K GSM8K test and 50K MATH-500 questions of the test stores, paired
# with the best fixed rule tuned on training trees, the registered stopping rule applied.
#
#   POLICY=CKPT SFT=CKPT experiments/paired_look.sh K
#
# POLICY: the primary arm's checkpoint (its sha256 committed in PREREGISTRATION.md before the first look);
# SFT: the SFT checkpoint; RULE (default docs/results/paired/best_rule.json, from `delib tune-rules` on the
# training stores); VOTES (default docs/results/paired/vote_temperatures.json, from `delib tune-votes` on
# them: the CISC arms' temperatures); REGISTRATION (default docs/results/paired/registered.json: POLICY,
# SFT, RULE, VOTES and BLOCK must be the registered ones, experiments/registered.py); STORES (default
# data/trees/qwen2.5-coder-1.5b); OUT (default docs/results/paired); BLOCK (default: the registered sizes,
# "100 50": GSM8K test and MATH-500 questions a block adds; tests register smaller ones). DELIB (default
# delib) and python must come from one environment, the project's venv: the bootstrap runs in delib, and the
# record names python's NumPy as the one it ran with.
# Writes OUT/look-K/{compare,sampling,report,against,summary.json,headline.md,headroom.md}, merges the
# look into OUT/summary.json and rewrites OUT/looks.md (the table of every look taken).
# A look is taken only when its block is complete (`--questions` refuses an unbuilt block), and only after
# every earlier look, none of which stopped the design (paired_look.py order). The latest look may be
# retaken: its replays are run from the stores again, not resumed.
set -euo pipefail
[[ $# -eq 1 && $1 =~ ^[1-9][0-9]*$ ]] || { echo "usage: POLICY=CKPT SFT=CKPT $0 K (a look number: 1, 2, ...)" >&2
  exit 2; }
K=$1
D=${STORES:-data/trees/qwen2.5-coder-1.5b}; OUT=${OUT:-docs/results/paired}; L=$OUT/look-$K
RULE=${RULE:-$OUT/best_rule.json}; VOTES=${VOTES:-$OUT/vote_temperatures.json}; DELIB=${DELIB:-delib}
POLICY=${POLICY:?name the checkpoint of the primary arm}; SFT=${SFT:?name the SFT checkpoint}
[ -f "$VOTES" ] || { echo "$VOTES not found: restore the committed one (git checkout -- $VOTES) or name" \
  "another with VOTES=FILE (delib tune-votes writes one)" >&2; exit 2; }
REG=${REGISTRATION:-docs/results/paired/registered.json}
[ -n "${BLOCK:-}" ] || BLOCK=$(python "$(dirname "$0")/registered.py" block "$REG") || exit 2
read -r GSM MATH <<< "$BLOCK"
python "$(dirname "$0")/registered.py" check "$REG" policy="$POLICY" sft="$SFT" rule="$RULE" votes="$VOTES" \
  block="$GSM,$MATH" || exit 2
python "$(dirname "$0")/paired_look.py" order "$K" "$OUT/summary.json" || exit 2
# A retaken look replays every arm afresh (runs resume finished questions: stale ones would stay); the
# two-round secondary's rounds-2/ beside them is another job's and stays.
rm -rf "$L/compare" "$L/sampling" "$L/report" "$L/against"
STORE_N=("gsm8k-test:$((GSM * K))" "math-test:$((MATH * K))")
replay=(--rounds 1 --offline --quiet)

"$DELIB" compare --trees "$D/gsm8k-test,$D/math-test" --questions "$((GSM * K)),$((MATH * K))" --policy "$POLICY" \
  --sft "$SFT" --rule "$RULE" --out "$L/compare" "${replay[@]}"
for pair in "${STORE_N[@]}"; do  # self-consistency at every k <= 6 (equal tokens is read off these), ...
  store=${pair%%:*}; n=${pair##*:}
  DELIB=$DELIB SAMPLES=6 VOTES=$VOTES bash "$(dirname "$0")/sampling_replays.sh" "$D/$store" "$L/sampling/$store" \
    --questions "$n"
done
reference=$(python -c "import json,sys; print(json.load(open(sys.argv[1]))['reference'])" "$L/compare/team.json")
"$DELIB" report "$L/compare" "$L/sampling" --reference "$reference" --out "$L/report"
AGAINST=$(PYTHONPATH="$(dirname "$0")${PYTHONPATH:+:$PYTHONPATH}" python -c "from looks.record import LEARNED_AGAINST_K as ks
from deliberation.report.loading import sampling_label
for k in ks: print(k, sampling_label(k), sep='\t')")
while IFS=$'\t' read -r k label; do  # the learned policy against self-consistency at k = 3 and 6 (secondaries)
  "$DELIB" report "$L/compare" "$L/sampling" --reference "$label" --out "$L/against/self-consistency-$k" > /dev/null
done <<< "$AGAINST"
python "$(dirname "$0")/paired_look.py" record "$K" "$L" "$OUT/summary.json" "$REG" \
  "$D/gsm8k-test:$((GSM * K))" "$D/math-test:$((MATH * K))"
