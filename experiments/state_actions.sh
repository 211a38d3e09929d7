#!/usr/bin/env bash
# The state-and-actions table (docs/results/state-actions/), on training trees only: policies with the
# paper's state, with the signals feature set,
# and with the four actions (RESAMPLE), against the best fixed rule, adaptive-consistency, CISC and
# self-consistency at equal tokens, team-level and paired, on the validation fifth of the training questions
# (the questions every training run below holds out: same seed, same fraction, ids whose hash falls below
# 0.2, questions agreed at round 0 included). The best rule, and CISC's vote temperatures (`delib
# tune-votes`), are tuned on the other four fifths. Nothing here reads a test question.
#
#   experiments/state_actions.sh OUT TRAIN_STORE[,STORE]
#
# Steps whose output exists are skipped (rerun = resume; the sampling replays resume and the report is
# written again). Replays are offline at one round (stores built with --samples 6 hold every node: RESAMPLE
# included). TRAIN_ARGS: extra `delib train` flags (tests: fewer epochs). DELIB (default delib) and PYTHON
# (default python; it must import deliberation: the project's venv) name the programs to run.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 OUT TRAIN_STORE[,STORE]" >&2; exit 2; }
OUT=$1; TRAIN=$2; DELIB=${DELIB:-delib}; PY=${PYTHON:-python}
read -r -a STORES <<< "${TRAIN//,/ }"
replay=(--rounds 1 --offline --quiet)
train() {  # train NAME ARGS...
  [ -f "$OUT/train/$1/policy.pt" ] ||
    "$DELIB" train --trees "${STORES[@]}" --tree-rounds 1 "${@:2}" --out "$OUT/train/$1" ${TRAIN_ARGS:-}
}
train sft --algo sft
train full --algo softrankpo-full --init "$OUT/train/sft"
train sft-signals --algo sft --features signals
train full-signals --algo softrankpo-full --features signals --init "$OUT/train/sft-signals"
train sft-resample --algo sft --features signals --actions resample
train full-resample --algo softrankpo-full --features signals --actions resample --init "$OUT/train/sft-resample"
ids() {  # ids held|fit [STORE]: the built questions a training run holds out (seed 0, fifth 0.2), or the
  # others; with STORE, those of that store only
  "$PY" -c "import sys
from deliberation.rl.data import held_out_names
from deliberation.trees.store import TreeStore
names = sorted(q for s in sys.argv[3:] for q in TreeStore.open(s).built)
held = held_out_names(names, 0.2, 0)
only = set(TreeStore.open(sys.argv[2]).built) if sys.argv[2] else set(names)
print(','.join(q for q in names if q in only and (q in held) == (sys.argv[1] == 'held')))" "$1" "${2:-}" "${STORES[@]}"
}
VAL=$(ids held); FIT=$(ids fit)
[ -f "$OUT/tuning/best_rule.json" ] || "$DELIB" tune-rules --trees "$TRAIN" --ids "$FIT" --actions resample \
  --out "$OUT/tuning" "${replay[@]}"
[ -f "$OUT/votes/vote_temperatures.json" ] || "$DELIB" tune-votes --trees "$TRAIN" --ids "$FIT" --out "$OUT/votes" \
  "${replay[@]}"
T=$OUT/train
POLICIES=$T/full/policy.pt,$T/sft-signals/policy.pt,$T/full-signals/policy.pt
POLICIES=$POLICIES,$T/sft-resample/policy.pt,$T/full-resample/policy.pt
grep -qs '"learned"' "$OUT/compare/team.json" || "$DELIB" compare --trees "$TRAIN" --ids "$VAL" \
  --sft "$T/sft/policy.pt" --policy "$POLICIES" --rule "$OUT/tuning/best_rule.json" --out "$OUT/compare" "${replay[@]}"
for store in "${STORES[@]}"; do
  held=$(ids held "$store")
  [ -n "$held" ] || continue  # a store without validation questions
  DELIB=$DELIB PYTHON=$PY VOTES=$OUT/votes/vote_temperatures.json bash "$(dirname "$0")/sampling_replays.sh" \
    "$store" "$OUT/sampling/$(basename "$store")" \
    --ids "$held"
done
[ -f "$OUT/signals/signals.json" ] ||  # each signal's AUROC on the validation fifth
  "$PY" "$(dirname "$0")/signals_auroc.py" --ids "$VAL" "$OUT/signals" "${STORES[@]}" > /dev/null
four=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['learned'][-1])" "$OUT/compare/team.json")
"$DELIB" report "$OUT/compare" "$OUT/sampling" --reference "$four" --out "$OUT/report"  # the last --policy: 4 actions
