#!/usr/bin/env bash
# The paper's other baselines at qwen2.5-coder-1.5b (docs/results/baselines/): PHP, GPTSwarm, AgentPrune and
# AFlow's transferred workflows on the first block of the tree stores (GSM8K test rows 0-99, MATH-500 rows
# 0-49), with the stores' settings (3 agents where a method has agents, temperature 0.7, seed 0, max_tokens
# 1024, 3 questions in flight with their requests batched), so that self-consistency at every k and the best
# fixed rule are paired with them question by question. Run from the repository root with the project's venv on
# PATH (its `python` and `delib`) and DELIB_DATA_DIR set where the benchmarks are not installed.
#
#   experiments/baselines.sh [ITERATIONS]
#
# Each method is replayed through its test store without --offline: the requests the store holds (the base
# answer of PHP, GPTSwarm's agents without predecessors) are served from it, the others generated with the
# store's backend and recorded in it (appended, never changed), so a rerun replays offline. The graphs are
# optimised on the training questions of the stores (the first 100 of GSM8K's train split, the first 50 of
# MATH's), steps of 4 questions: AgentPrune its reference's 10, GPTSwarm ITERATIONS
# (default 15, where its paper runs 200, the default of `delib optimize-graph` for machines with a GPU server;
# 15 took 23 minutes for GSM8K on 2 cores), and their tokens are recorded in graph.json. The training stores
# (STORES/gsm8k-train, math-train), where they exist, serve GPTSwarm the round-0 requests they hold (its agents
# that read no peer ask exactly those), read only: the same graph at fewer generated tokens (AgentPrune's agents
# speak in roles, so a store holds none of their requests and none is passed). AFlow's search is not run here
# (an optimiser model is needed): aflow-gsm8k and aflow-math are the workflows its paper found, transferred.
# Then the references are replayed offline from the same stores and questions (self-consistency at every k the
# stores hold, the best fixed rule as the paired experiment tuned it on training trees (one round):
# docs/results/paired/best_rule.json), and `delib report` pairs every method with the best rule and
# with self-consistency at its own token budget (report.md, paired.json, the figures);
# experiments/baselines_tables.py adds the optimisation tokens (optimisation.md) and every baseline over all 150
# questions, AFlow's two workflows as one method (pooled.md; baselines.png, with self-consistency's curve). The
# build of the stores must not run beside this (one writer per store, and two llama.cpp jobs slow each other
# down). Every step is resumable: rerunning continues where it stopped (a graph optimised before with other
# settings is refused, not overwritten or used).
#
# Environment (defaults: the committed experiment): STORES (folder of gsm8k-test, math-test),
# OUT (docs/results/baselines), QUESTIONS ("100 50": GSM8K, MATH), TRAIN_LIMIT ("100 50"), ENGINE_ARGS (the backend,
# model and threads of the optimisations; the replays use each store's own), CACHE (the optimisations' response
# cache; default OUT/graphs/responses.sqlite, committed, so that a rerun replays what was generated), SAMPLES
# (self-consistency's largest k; default: the round-0 samples every question of a store holds), STAGE ("all";
# "optimise": only the graphs, which touch no store, so that they can run while a store's build is stopped and
# the rest later).
set -euo pipefail
ITERATIONS=${1:-15}
M=qwen2.5-coder-1.5b
STORES=${STORES:-data/trees/$M}
OUT=${OUT:-docs/results/baselines}
read -r N_GSM8K N_MATH <<< "${QUESTIONS:-100 50}"
read -r TRAIN_GSM8K TRAIN_MATH <<< "${TRAIN_LIMIT:-100 50}"
# the best rule as tuned: its method, its rounds and (a confidence rule) its threshold
read -r -a best <<< "$(python -c "import sys, pathlib; from deliberation.runs.tune_rules import read_best_rule as r
b = r(pathlib.Path(sys.argv[1])); t = [] if b.threshold is None else ['--confidence-threshold', str(b.threshold)]
print(' '.join([b.method, '--rounds', str(b.rounds), *t]))" "$(dirname "$0")/../docs/results/paired/best_rule.json")"
rule=${best[0]}
read -r -a model <<< "${ENGINE_ARGS:---model $M --backend-opt n_threads=2}"
engine=(--agents 3 --temperature 0.7 --seed 0 --max-tokens 1024 "${model[@]}")
engine+=(--cache "${CACHE:-$OUT/graphs/responses.sqlite}" --concurrency 3)
[ -n "${N_MATH:-}" ] && [ -n "${TRAIN_MATH:-}" ] || { echo "error: QUESTIONS and TRAIN_LIMIT take two counts," \
  "GSM8K's and MATH's (e.g. TRAIN_LIMIT=\"100 50\")" >&2; exit 2; }
# AgentPrune's Programming Expert and AFlow's Programmer run model-written code: refused now, not hours in
python -c "import sys; from deliberation.errors import exit_status
from deliberation.benchmarks.sandbox.isolation import require_isolation as r; sys.exit(exit_status(r))"
# no build writes a store now (a replay would stop at its lock hours in, and two llama.cpp jobs slow each other
# down), and the test stores hold one sample count (else self-consistency would run to another k per benchmark,
# and a rerun after their build would add the rest)
python -c "import sys; from pathlib import Path; from deliberation.errors import DelibError, exit_status
from deliberation.outputs.lock import refuse_if_locked; from deliberation.trees.store import TreeStore
def check(root=Path(sys.argv[1]), tests=('gsm8k-test', 'math-test')):
    for name in (*tests, 'gsm8k-train', 'math-train'):
        refuse_if_locked(root / name, 'stop the build of the stores (or let it finish) first')
    held = {n: TreeStore.open(str(root / n)).manifest.samples for n in tests} if sys.argv[2] == 'all' else {}
    if len(set(held.values())) > 1 and not sys.argv[3]:
        raise DelibError(f'the test stores hold {held} samples a question; finish their build, or set SAMPLES')
sys.exit(exit_status(check))" "$STORES" "${STAGE:-all}" "${SAMPLES:-}"
for quad in "gsm8k:gsm8k-test:$N_GSM8K:$TRAIN_GSM8K" "math:math-test:$N_MATH:$TRAIN_MATH"; do
  IFS=: read -r bench store n train <<< "$quad"
  for method in gptswarm agentprune; do
    rounds=$([ "$method" = agentprune ] && echo 1 || echo 0)  # AgentPrune: round 0 and one more
    steps=$([ "$method" = agentprune ] && echo 0 || echo "$ITERATIONS")  # 0: the reference's budget
    trees=()
    [ "$method" = gptswarm ] && [ -d "$STORES/$bench-train" ] && trees=(--trees "$STORES/$bench-train")
    # a graph optimised before with these settings is kept; one optimised otherwise is refused, not overwritten
    delib optimize-graph --method "$method" --benchmark "$bench" --split train --limit "$train" \
      --iterations "$steps" --rounds "$rounds" "${engine[@]}" ${trees[@]+"${trees[@]}"} \
      --out "$OUT/graphs/$method-$bench"
  done
  [ "${STAGE:-all}" = optimise ] && continue
  replay=(--trees "$STORES/$store" --questions "$n" --quiet --concurrency 3)
  runs=$OUT/runs/$store
  delib evaluate "${replay[@]}" --method php --out "$runs/php"
  for method in gptswarm agentprune; do
    delib evaluate "${replay[@]}" --method "$method" --graph "$OUT/graphs/$method-$bench/graph.json" \
      --out "$runs/$method"
  done
  delib evaluate "${replay[@]}" --method "aflow-$bench" --out "$runs/aflow-$bench"  # found on this benchmark
  delib evaluate "${replay[@]}" --offline --method "${best[@]}" --out "$runs/$rule"
  held=$(python -c "import json, sys; print(json.load(open(sys.argv[1]))['samples'])" "$STORES/$store/manifest.json")
  for k in $(seq 1 "${SAMPLES:-$held}"); do
    delib evaluate "${replay[@]}" --offline --method self-consistency --agents "$k" --out "$runs/self-consistency-$k"
  done
done
[ "${STAGE:-all}" = optimise ] && exit 0
delib report "$OUT/runs" --out "$OUT"
python "$(dirname "$0")/baselines_tables.py" --out "$OUT"
