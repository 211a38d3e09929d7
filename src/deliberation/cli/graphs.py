"""``delib optimize-graph`` (the communication graph ``delib run --method gptswarm|agentprune`` runs) and
``delib aflow-search`` (the workflow ``delib run --method aflow`` runs), each on training questions."""

from __future__ import annotations

import argparse
from typing import Any

from deliberation.cli import flags
from deliberation.cli.common import (add_backend_args, add_data_args, add_engine_args, add_quiet_arg, backend_options,
                                     out_folder, set_data_dir, workload)

EPILOG = """examples:
  delib optimize-graph --method gptswarm --split train --limit 200 --iterations 25 --out runs/swarm
  delib run --method gptswarm --graph runs/swarm/graph.json --limit 100 --out runs/swarm-test
  delib optimize-graph --method agentprune --split train --rounds 1 --out runs/prune
  delib optimize-graph --method gptswarm --split train --limit 100 --trees trees/gsm8k-train --out runs/swarm
graph.json holds the edge logits, the masks, the settings, the training question ids (a method refuses to
answer them) and the tokens spent optimising. A rerun replays the calls already made from the response
cache (OUT/responses.sqlite), so an interrupted optimisation resumes; a rerun after it finished, with the same
settings, does nothing, and one with others is refused (another --out keeps both); --trees serves what a tree
store of the same model already answered (read only)."""
OWN = ("method", "iterations", "batch", "lr", "prune_rate", "low_rank", "allow_test", "trees")


SEARCH_EPILOG = """examples:
  delib aflow-search --split train --limit 40 --optimizer-backend openai --optimizer-model MODEL \\
      --optimizer-base-url http://127.0.0.1:8000/v1 --search-rounds 10 --validation-runs 2 --out runs/aflow
  delib run --method aflow --workflow runs/aflow/workflow.json --limit 100 --out runs/aflow-test
workflow.json holds the best workflow, every round (parent, modification, scores), the settings, the
validation question ids (aflow refuses to answer them) and the tokens of executor and optimiser."""
SEARCH_OWN = ("search_rounds", "validation_runs", "top_k", "patience", "alpha", "mix", "allow_test")
SAMPLING = ("temperature", "max_tokens", "seed")
"""The engine settings a workflow's and a graph's calls read (a graph also its team and rounds): no other
engine flag is offered, since none would change what they do."""


def add_parsers(sub: argparse._SubParsersAction) -> None:
    _optimize_parser(sub)
    _search_parser(sub)


def _search_parser(sub: argparse._SubParsersAction) -> None:
    from deliberation.backends import BACKENDS
    from deliberation.backends.team import TEAM
    from deliberation.rl.aflow_search import AFlowSearch

    p = sub.add_parser("aflow-search", help="search an AFlow workflow with an optimiser model (AFlow's MCTS)",
                       description="AFlow's search: from the blank workflow, each round an optimiser model modifies a "
                       "workflow picked by AFlow's soft mixed probability, and the child is scored on the training "
                       "questions; the best workflow is written. The executor is --backend, the optimiser its own "
                       "backend.", epilog=SEARCH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_args(p, split="train")
    p.add_argument("--out", required=True, type=out_folder, help="folder for workflow.json")
    p.add_argument("--optimizer-backend", default="openai", choices=sorted(set(BACKENDS) - {TEAM}),
                   help="the optimiser model's backend (default openai: any OpenAI-compatible server)")
    p.add_argument("--optimizer-model", help="the optimiser's model")
    p.add_argument("--optimizer-base-url", help="the optimiser's server (openai)")
    p.add_argument("--optimizer-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="an optimiser backend option, repeatable")
    flags.add_flags(p, AFlowSearch, only=SEARCH_OWN)
    add_backend_args(p, "SQLite response cache of both models (default: <out>/responses.sqlite; 'none' disables)")
    add_engine_args(p, only=SAMPLING)
    add_quiet_arg(p)
    p.set_defaults(func=cmd_aflow_search, saves_as_it_goes=True)  # its calls are in the cache


def cmd_aflow_search(args: argparse.Namespace) -> int:
    from deliberation.rl.aflow_search import AFlowSearch, search

    set_data_dir(args)
    optimizer = argparse.Namespace(backend=args.optimizer_backend, backend_opt=args.optimizer_opt,
                                   model=args.optimizer_model, base_url=args.optimizer_base_url)
    spec = AFlowSearch(**workload(args), optimizer_backend=args.optimizer_backend,
                       optimizer_options=backend_options(optimizer, "--optimizer-opt"),
                       **flags.values(args, AFlowSearch, only=SEARCH_OWN))
    said(search(spec, args.out, progress=not args.quiet))
    return 0


def said(done: Any) -> None:
    """An optimisation's last line: where its output is, and whether it was there already (``Optimised``)."""
    print(f"-> {done.path}" + (" (made before with these settings: nothing to do)" if done.reused else ""))


def _optimize_parser(sub: argparse._SubParsersAction) -> None:
    from deliberation.rl.graph_optimize import GraphOptimization

    p = sub.add_parser("optimize-graph", help="learn a GPTSwarm or AgentPrune communication graph by REINFORCE",
                       description="Samples a graph per training question, runs it, and moves the edge "
                       "probabilities by REINFORCE towards the graphs that answered right (AgentPrune: with its "
                       "low-rank penalty, then one-shot pruning). --agents is the team; agentprune runs round 0 "
                       "and --rounds more, a GPTSwarm graph one round (--rounds does not apply).", epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_args(p, split="train")
    p.add_argument("--out", required=True, type=out_folder, help="folder for graph.json")
    flags.add_flags(p, GraphOptimization, only=OWN)
    add_backend_args(p, "SQLite response cache (default: <out>/responses.sqlite; 'none' disables)")
    add_engine_args(p, only=("agents", "rounds", *SAMPLING))
    add_quiet_arg(p)
    p.set_defaults(func=cmd_optimize_graph, saves_as_it_goes=True)  # its calls are in the cache


def cmd_optimize_graph(args: argparse.Namespace) -> int:
    from deliberation.rl.graph_optimize import GraphOptimization, optimize

    set_data_dir(args)
    spec = GraphOptimization(**workload(args), **flags.values(args, GraphOptimization, only=OWN))
    said(optimize(spec, args.out, progress=not args.quiet))
    return 0
