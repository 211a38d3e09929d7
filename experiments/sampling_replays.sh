#!/usr/bin/env bash
# The sampling baselines of one tree store, replayed offline at one round (no model runs): self-consistency
# at every k its round-0 samples allow, adaptive-consistency and both CISC variants drawing up to all of
# them, and the two RESAMPLE rules. Shared by the paired looks and the state-and-actions table.
#
#   experiments/sampling_replays.sh STORE OUT [SELECTION...]   (SELECTION: --questions N, or --ids A,B)
#
# SAMPLES: the most samples (default: all the store holds; the paired looks register 6). VOTES: the
# vote_temperatures.json of `delib tune-votes` on training trees, whose T each CISC variant votes at
# (default: the method option's default). Writes OUT/self-consistency-<k>, OUT/adaptive and OUT/resample
# (run directories; rerun = resume). DELIB (default delib) and PYTHON (default python, one that imports
# nothing of the project here) name the programs to run.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 STORE OUT [--questions N | --ids A,B]" >&2; exit 2; }
STORE=$1; OUT=$2; shift 2; DELIB=${DELIB:-delib}; PY=${PYTHON:-python}
K=${SAMPLES:-$("$PY" -c "import json, sys; print(json.load(open(sys.argv[1]))['samples'])" "$STORE/manifest.json")}
replay=(--rounds 1 --offline --quiet "$@")
for k in $(seq 1 "$K"); do
  "$DELIB" evaluate --trees "$STORE" --method self-consistency --agents "$k" --out "$OUT/self-consistency-$k" \
    "${replay[@]}"
done
"$DELIB" evaluate --trees "$STORE" --method adaptive-consistency --agents "$K" \
  --out "$OUT/adaptive/adaptive-consistency" "${replay[@]}"
for method in cisc cisc-logprob; do
  vote=()
  [ -z "${VOTES:-}" ] || vote=(--vote-temperature "$("$PY" -c "import json, sys
print(json.load(open(sys.argv[1]))['methods'][sys.argv[2]]['vote_temperature'])" "$VOTES" "$method")")
  "$DELIB" evaluate --trees "$STORE" --method "$method" --agents "$K" --out "$OUT/adaptive/$method" "${vote[@]}" \
    "${replay[@]}"
done
"$DELIB" evaluate --trees "$STORE" --method agreement-resample,always-resample --out "$OUT/resample" "${replay[@]}"
