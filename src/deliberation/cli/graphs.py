"""``delib optimize-graph``: learn the communication graph that ``delib run --method gptswarm|agentprune``
runs, on training questions."""

from __future__ import annotations

import argparse

from deliberation.cli import flags
from deliberation.cli.common import (add_backend_args, add_data_args, add_engine_args, backend_options, benchmark_name,
                                     command_line, engine_config, out_folder, selection, set_data_dir)

EPILOG = """examples:
  delib optimize-graph --method gptswarm --split train --limit 200 --iterations 25 --out runs/swarm
  delib run --method gptswarm --graph runs/swarm/graph.json --limit 100 --out runs/swarm-test
  delib optimize-graph --method agentprune --split train --rounds 1 --out runs/prune
graph.json holds the edge logits, the masks, the settings, the training question ids (a method refuses to
answer them) and the tokens spent optimising. A rerun replays the calls already made from the response
cache (OUT/responses.sqlite), so an interrupted optimisation resumes."""
OWN = ("method", "iterations", "batch", "lr", "prune_rate", "low_rank", "allow_test")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    from deliberation.rl.graph_optimize import GraphOptimization

    p = sub.add_parser("optimize-graph", help="learn a GPTSwarm or AgentPrune communication graph by REINFORCE",
                       description="Samples a graph per training question, runs it, and moves the edge "
                       "probabilities by REINFORCE towards the graphs that answered right (AgentPrune: with its "
                       "low-rank penalty, then one-shot pruning). --agents is the team; agentprune runs round 0 "
                       "and --rounds more.", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_args(p)
    p.add_argument("--out", required=True, type=out_folder, help="folder for graph.json")
    flags.add_flags(p, GraphOptimization, only=OWN)
    add_backend_args(p, "SQLite response cache (default: <out>/responses.sqlite; 'none' disables)")
    add_engine_args(p)
    p.set_defaults(func=cmd_optimize_graph, split="train")


def cmd_optimize_graph(args: argparse.Namespace) -> int:
    from deliberation.rl.graph_optimize import GraphOptimization, optimize

    set_data_dir(args)
    spec = GraphOptimization(benchmark=benchmark_name(args), split=args.split, limit=args.limit, backend=args.backend,
                             backend_options=backend_options(args), cache=args.cache, engine=engine_config(args),
                             data_dir=args.data_dir, command=command_line(args), selection=selection(args),
                             **flags.values(args, GraphOptimization, only=OWN))
    print(f"-> {optimize(spec, args.out)}")
    return 0
