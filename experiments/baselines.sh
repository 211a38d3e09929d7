#!/usr/bin/env bash
# The paper's other baselines at qwen2.5-coder-1.5b (docs/results/baselines/): PHP, GPTSwarm, AgentPrune and
# AFlow's transferred workflows on the first block of the tree stores (GSM8K test rows 0-99, MATH-500 rows
# 0-49), with the stores' settings (3 agents where a method has agents, temperature 0.7, seed 0, max_tokens
# 1024), so that self-consistency at every k and the best fixed rule are paired with them question by question.
#
#   experiments/baselines.sh [ITERATIONS]
#
# Each method is replayed through its test store without --offline: the requests the store holds (the base
# answer of PHP, a graph's agents without predecessors) are served from it, the others generated with the
# store's backend and recorded in it (appended, never changed), so a rerun replays offline. The graphs are
# optimised on training questions of each benchmark (the first 100 of its train split: the stores' training
# questions and, for MATH, 50 more), ITERATIONS steps of 4 questions (default 15: GPTSwarm's 200 and AgentPrune's 10 are the defaults of
# `delib optimize-graph` for machines with a GPU server; 15 fit a 2-core machine in about an hour each), and
# their tokens are recorded in graph.json. AFlow's search is not run here (an optimiser model is needed):
# aflow-gsm8k and aflow-math are the workflows its paper found, transferred. The build of the stores must not
# run beside this (one writer per store, and two llama.cpp jobs slow each other down). Every step is
# resumable: rerunning continues where it stopped.
set -euo pipefail
ITERATIONS=${1:-15}
M=qwen2.5-coder-1.5b
D=data/trees/$M
OUT=docs/results/baselines
engine=(--agents 3 --temperature 0.7 --seed 0 --max-tokens 1024 --model "$M" --backend-opt n_threads=2)
for pair in "gsm8k:gsm8k-test:100" "math:math-test:50"; do
  IFS=: read -r bench store n <<< "$pair"
  for method in gptswarm agentprune; do
    rounds=$([ "$method" = agentprune ] && echo 1 || echo 0)  # AgentPrune: round 0 and one more
    [ -f "$OUT/graphs/$method-$bench/graph.json" ] || delib optimize-graph --method "$method" --benchmark "$bench" \
      --split train --limit 100 --iterations "$ITERATIONS" --rounds "$rounds" \
      "${engine[@]}" --cache "runs/baselines-$M.sqlite" --out "$OUT/graphs/$method-$bench"
  done
  replay=(--trees "$D/$store" --questions "$n" --quiet)
  delib evaluate "${replay[@]}" --method php --out "$OUT/runs/$store/php"
  for method in gptswarm agentprune; do
    delib evaluate "${replay[@]}" --method "$method" --graph "$OUT/graphs/$method-$bench/graph.json" \
      --out "$OUT/runs/$store/$method"
  done
  delib evaluate "${replay[@]}" --method "aflow-$bench" --out "$OUT/runs/$store/aflow-$bench"  # found on this benchmark
done
