#!/usr/bin/env bash
# The sampling baselines of one tree store, replayed offline at one round (no model runs): self-consistency
# at every k its round-0 samples allow, adaptive-consistency and both CISC variants drawing up to all of
# them, and the two RESAMPLE rules. Shared by the paired looks and issue 37's table.
#
#   experiments/sampling_replays.sh STORE OUT [SELECTION...]   (SELECTION: --questions N, or --ids A,B)
#
# SAMPLES: the most samples (default: all the store holds; the paired looks register 6). Writes
# OUT/self-consistency-<k>, OUT/adaptive and OUT/resample (run directories; rerun = resume).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 STORE OUT [--questions N | --ids A,B]" >&2; exit 2; }
STORE=$1; OUT=$2; shift 2; DELIB=${DELIB:-delib}; PY=${PYTHON:-python}
K=${SAMPLES:-$("$PY" -c "import json, sys; print(json.load(open(sys.argv[1]))['samples'])" "$STORE/manifest.json")}
replay=(--rounds 1 --offline --quiet "$@")
for k in $(seq 1 "$K"); do
  "$DELIB" evaluate --trees "$STORE" --method self-consistency --agents "$k" --out "$OUT/self-consistency-$k" \
    "${replay[@]}"
done
"$DELIB" evaluate --trees "$STORE" --method adaptive-consistency,cisc,cisc-logprob --agents "$K" --out "$OUT/adaptive" \
  "${replay[@]}"
"$DELIB" evaluate --trees "$STORE" --method agreement-resample,always-resample --out "$OUT/resample" "${replay[@]}"
