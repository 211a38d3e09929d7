"""The methods whose communication graph is optimised (``protocols/designs.py``): ``gptswarm`` and
``agentprune``, each running the graph ``--graph`` names (from ``delib optimize-graph``), which refuses the
questions it was optimised on. ``--agents`` must be the graph's; the graph runs its own rounds (config.json
records them as ``graph_rounds``), so the engine's ``--rounds`` is not used (recorded as 0)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import numpy as np

from deliberation.benchmarks.sandbox.isolation import require_isolation
from deliberation.config import refuse_learned
from deliberation.engine.loop import Context
from deliberation.engine.spec import MethodSpec
from deliberation.engine.team_checks import peer_tokens
from deliberation.errors import DelibError
from deliberation.methods.base import Method, MethodConfig, MethodRecord
from deliberation.methods.calls import Calls, exactly
from deliberation.policy.shipped import content_hash
from deliberation.protocols.designs import Graph, load_graph, refuse_silent
from deliberation.protocols.swarm import run_graph
from deliberation.types import Episode, Example


def graph_of(kind: str, cfg: MethodConfig) -> Graph:
    if cfg.graph is None:
        raise DelibError(f"{kind} runs an optimised graph: optimise one with `delib optimize-graph --method {kind} "
                         "...` on training questions, then pass --graph OUT/graph.json")
    graph = load_graph(cfg.graph, kind)
    if cfg.engine.agents != graph.agents:
        raise DelibError(f"{cfg.graph} is a graph of {graph.agents} agents; pass --agents {graph.agents} (or a --team "
                         f"of {graph.agents} models)")
    return graph


def graph_calls(kind: str, cfg: MethodConfig) -> Calls:
    """Every agent the final graph calls answers once a round (``Graph.running``; GPTSwarm's agents with no path
    to its decision node are not called), and AgentPrune's decision agent once."""
    graph = graph_of(kind, cfg)
    return exactly(sum(map(len, graph.running())) + (kind == "agentprune"))


def graph_episode(ctx: Context, rng: np.random.Generator) -> Episode:
    """The method's graph, in its final form, every round."""
    spatial, temporal = ctx.spec.protocol.final_graphs()
    return run_graph(ctx, ctx.spec.protocol.layout, spatial, temporal, time.perf_counter())


ROUNDS = {"gptswarm": "a GPTSwarm graph runs one round",
          "agentprune": "the graph runs the rounds it was optimised with; `delib optimize-graph --method agentprune "
                        "--rounds N` optimises one with others"}
"""What runs instead of --rounds: the note ``delib run`` prints when it is given."""
ABOUT = {"gptswarm": "agents on a graph whose edges were learned by REINFORCE, --graph (Zhuge et al. 2024)",
         "agentprune": "role agents on a learned, pruned spatial-temporal graph, --graph (Zhang et al. 2025)"}


def graph_method(kind: str) -> Method:
    def check(cfg: MethodConfig, examples: Sequence[Example]) -> None:
        graph = graph_of(kind, cfg)
        refuse_learned(examples, graph.trained_on(), f"{cfg.graph} was optimised", "optimise on a split that "
                       "excludes them")
        refuse_silent(graph, f"{cfg.graph}'s final graph")
        if any(graph.layout.runs_code(i) for i in range(graph.agents)):  # a Programming Expert's code runs
            require_isolation()

    def record(cfg: MethodConfig) -> MethodRecord:
        graph = graph_of(kind, cfg)
        return MethodRecord(graph_used=f"{cfg.graph} {content_hash(Path(str(cfg.graph)))}", graph_rounds=graph.rounds)

    return Method(spec=lambda cfg: MethodSpec(name=kind, policy=None, protocol=graph_of(kind, cfg)),
                  engine=lambda e: replace(e, rounds=0), options=frozenset({"graph"}), episode=graph_episode,
                  check=check, record=record, about=ABOUT[kind], tree_requests=False,
                  calls=lambda cfg: graph_calls(kind, cfg), pinned_hints=(("rounds", ROUNDS[kind]),),
                  optimised=lambda cfg: graph_of(kind, cfg).spent,
                  pinned_shown=(("rounds", "the rounds of its graph"),),
                  shown=lambda cfg: graph_of(kind, cfg).most_shown() * peer_tokens(cfg.engine.max_tokens))


GPTSWARM = graph_method("gptswarm")
AGENTPRUNE = graph_method("agentprune")
