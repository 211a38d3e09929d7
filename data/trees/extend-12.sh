#!/usr/bin/env bash
# Learned compute allocation (docs/results/allocation/): the four qwen2.5-coder-1.5b stores of the paired
# experiment extended in place from 6 to 12 round-0 samples per built question (`delib tree --samples 12` on
# an existing store generates only the missing samples and their critic calls, with the seeds a fresh build
# of 12 gives them; samples a two-round RESAMPLE replay already drew are reused). Training stores first; the
# test stores only once the allocation experiment's registration is committed (REGISTERED below), so that no
# test sample exists before what will be measured on them is fixed. Every step is resumable: rerunning this
# script continues where it stopped. Settings are the stores' own (data/trees/COMMANDS.md).
# Run from the repository root with the project's venv on PATH and DELIB_DATA_DIR set.
set -euo pipefail
M=qwen2.5-coder-1.5b
D=data/trees/$M
REGISTERED=docs/results/allocation/registered.json
common=(--samples 12 --methods mpdf --concurrency 3 --model "$M" --max-tokens 1024 --temperature 0.7 --seed 0
        --rounds 2 --cache "runs/trees-$M.sqlite" --backend-opt n_threads=2 --quiet)
delib tree --benchmark math --split train --limit 50 --out "$D/math-train" "${common[@]}"
delib tree --benchmark gsm8k --split train --limit 100 --out "$D/gsm8k-train" "${common[@]}"
if ! git ls-files --error-unmatch "$REGISTERED" > /dev/null 2>&1 || ! git diff --quiet HEAD -- "$REGISTERED"; then
  echo "training stores extended; the test stores wait for the registration ($REGISTERED, committed)" >&2
  exit 0
fi
delib tree --benchmark gsm8k --split test --limit 300 --out "$D/gsm8k-test" "${common[@]}"
delib tree --benchmark math --split test --limit 150 --out "$D/math-test" "${common[@]}"
