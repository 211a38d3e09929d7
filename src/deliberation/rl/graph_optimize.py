"""``delib optimize-graph``: learn a communication graph's edges by REINFORCE on training questions.

GPTSwarm's and AgentPrune's shared recipe (their reference code: ``Evaluator.optimize_swarm`` and
``experiments/run_gsm8k.py``): each iteration takes the next ``batch`` questions (the training questions in one
seeded permutation, cycled), samples a graph per question (``protocols/graph.sample``, every round its own), runs
it, and takes the utility u = 1 if the team's answer is right, else 0; the loss is -mean(u * log p(graph)), no
baseline, and Adam steps the logits at ``lr``. AgentPrune adds its low-rank penalty (``--no-low-rank`` drops it)
and, after the last iteration, prunes ``prune_rate`` of each edge set once. Writes ``OUT/graph.json``: the logits
and masks, the settings, the training question ids and the tokens spent (``protocols/designs.py`` reads it); a
graph left with no edge into its decision node could not answer, so it is refused and nothing written, leaving the
--out free for another try. A test split is refused unless asked for knowingly. The response cache (default
``OUT/responses.sqlite``) makes a rerun after an interruption replay every call already made: the permutation and
the sampled graphs follow from the seed, so it retraces the same steps. A rerun over a finished graph.json does
nothing when its settings are the same (``GRAPH_RESUME``) and is refused otherwise, so that a graph a run used is
never overwritten by another (``outputs.resume.finished_already``). The same seeding means a question met again
under the same sampled graph gets the same answers (a request is seeded by the question, agent and round, and
cached), where the reference samples afresh; with more draws than training questions (e.g. GPTSwarm's 800 on 100
questions) a revisit under the same graph repeats its utility.

Defaults are each reference's budget: GPTSwarm 200 iterations of 4 questions (``run_mmlu.py``), AgentPrune 10
(``run_gsm8k.py``'s ``num_iterations``); lr 0.1 and batch 4 in both.
"""

from __future__ import annotations

import logging
from contextlib import closing
from dataclasses import dataclass, fields, replace
from functools import cache as once, partial
from pathlib import Path
from typing import Any

import numpy as np

from deliberation import benchmarks
from deliberation.backends.concurrent import in_order
from deliberation.benchmarks.answers import make_backend
from deliberation.benchmarks.sandbox.isolation import require_isolation
from deliberation.benchmarks.selection import load_selected
from deliberation.config import LearningWorkload
from deliberation.engine.loop import make_context
from deliberation.engine.spec import MethodSpec
from deliberation.errors import DelibError, require_at_least, require_number
from deliberation.files import setting_up
from deliberation.outputs.resume import BACKEND_OPTIONS, ResumeRule, finished_already
from deliberation.protocols.designs import (DESIGNS, GRAPH_FILE, Graph, idle_note, initial, load_graph, refuse_silent,
                                           save_graph)
from deliberation.protocols.graph import low_rank_penalty, prune, sample
from deliberation.protocols.swarm import run_graph
from deliberation.trees.store import TreeStore, reading_through

LOG = logging.getLogger("deliberation")
BUDGETS = {"gptswarm": 200, "agentprune": 10}
"""Iterations of each reference (see the module docstring)."""


@dataclass(frozen=True)
class GraphOptimization(LearningWorkload):
    """What ``delib optimize-graph`` optimises, on which questions, and how."""

    learns = ("optimise the graph on the questions it is measured on", "optimise")

    method: str = "gptswarm"
    """The design: gptswarm or agentprune."""
    iterations: int = 0
    """Optimiser steps (0: the reference's budget, GPTSwarm 200, AgentPrune 10)."""
    batch: int = 4
    """Questions an iteration, each with its own sampled graph (both references: 4)."""
    lr: float = 0.1
    """Adam's learning rate on the edge logits (both references: 0.1)."""
    prune_rate: float = 0.25
    """agentprune: the share of each edge set pruned once after optimising (its reference prunes 25% a time)."""
    low_rank: bool = True
    """agentprune: add its low-rank penalty (nuclear norm, and the distance to the topology beyond delta)."""
    trees: str | None = None
    """A tree store of the same model and settings whose recorded answers serve the requests it holds (a
    GPTSwarm agent that reads no peer asks the round-0 request of its question; AgentPrune's agents speak in
    roles, so a store holds none of theirs), read only; the rest is generated."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.method not in DESIGNS:
            raise DelibError(f"--method {self.method!r} has no graph to optimise; choose one of {', '.join(DESIGNS)}")
        require_at_least("--iterations", self.iterations, 0)
        require_at_least("--batch", self.batch)
        require_number("--lr", self.lr, 1e-6, 100)
        require_number("--prune-rate", self.prune_rate, 0, 1)
        given = [flag for name, flag in AGENTPRUNE_ONLY.items()
                 if getattr(self, name) != next(f.default for f in fields(self) if f.name == name)]
        if given and self.method != "agentprune":
            raise DelibError(f"{' and '.join(given)} apply to agentprune only ({self.method} neither prunes nor "
                             "regularises its edges); drop them")

    @property
    def steps(self) -> int:
        return self.iterations or BUDGETS[self.method]


AGENTPRUNE_ONLY = {"prune_rate": "--prune-rate", "low_rank": "--no-low-rank"}
"""The settings only AgentPrune reads, by flag: another design refuses them rather than record them unused."""
DELTA = 0.1
"""AgentPrune's delta, the distance to the topology its penalty tolerates (its code's default)."""


@dataclass(frozen=True)
class Optimised:
    """Where an optimisation's output is (a graph; ``delib aflow-search``'s workflow), and whether it was there
    before (asked again: nothing was done)."""

    path: Path
    reused: bool


def optimize(spec: GraphOptimization, out: str, progress: bool = True) -> Optimised:
    """Optimise (see the module docstring) behind a bar of its steps, into ``out``/graph.json."""
    bench = benchmarks.get(spec.benchmark)
    examples = load_selected(bench, spec.split, spec.limit, spec.selection, spec.data_dir)
    graph = initial(spec.method, spec.engine.agents, spec.engine.rounds + 1)
    if any(graph.layout.runs_code(i) for i in range(graph.agents)):  # refused now, not at its first program
        require_isolation()
    store = None if spec.trees is None else TreeStore.open(spec.trees)  # a wrong path fails before the model loads
    folder = Path(out)
    asked = {**spec.record(VERSION, sorted({e.id for e in _order(examples, spec)[: spec.steps * spec.batch]})),
             "steps": spec.steps}
    found = once(lambda path: load_graph(str(path), spec.method))  # read once, for its record and its edges
    if finished_already(folder / GRAPH_FILE, "a graph", lambda path: found(path).record, asked, GRAPH_RESUME,
                        "optimise"):  # no run would take a silent one an older version wrote
        refuse_silent(found(folder / GRAPH_FILE), f"{folder / GRAPH_FILE}'s final graph")
        return Optimised(folder / GRAPH_FILE, True)
    with setting_up(folder):
        inner = make_backend(spec.backend, cache=job_cache(spec.cache, folder), **spec.backend_options)
        made = inner if store is None else reading_through(store, inner)
    with closing(made) as backend:
        trained, spent = _train(spec, graph, examples, backend, bench, progress)
    refuse_silent(trained, "the optimised graph", "nothing written: optimise again with more --iterations or another "
                  "--seed (the calls made are in the response cache)")
    save_graph(folder / GRAPH_FILE, replace(trained, record={**asked, "tokens": spent}))
    if note := idle_note(trained):
        LOG.warning("delib: note: %s", note)
    return Optimised(folder / GRAPH_FILE, False)


VERSION = 1
"""The optimiser's version in graph.json: raised by a change to what it learns from the same settings (the
loss, the sampling, the pruning, a design's prompts), so that a graph learned before is refused, not reused."""
GRAPH_RESUME = ResumeRule(
    compared=("version", "settings", "engine", "steps", "questions"), added_later={"version": 1},
    nested={"settings": ResumeRule(may_change=GraphOptimization.unlearned | {"trees", "iterations"},
                                   nested={"backend_options": BACKEND_OPTIONS}),
            "engine": ResumeRule()})
"""When a graph.json answers an optimisation asked again: the same optimiser version, settings, engine,
steps and training questions. Settings that change how fast or where, not what is learned, may differ (the
workload's ``unlearned``, the backend's threads, and a tree store serving recorded answers: a cache in another
form); ``iterations`` is compared through ``steps``, so 0 and the reference's budget are one. A graph written
before the version was recorded is version 1."""


def job_cache(cache: str | None, folder: Path) -> str | None:
    """The response cache of an optimisation writing into ``folder``: ``cache`` as given, None for "none",
    by default ``folder/responses.sqlite`` (where a rerun finds the calls already made)."""
    if cache == "none":
        return None
    return cache if cache is not None else str(folder / "responses.sqlite")


def _order(examples: list, spec: GraphOptimization) -> list:
    """The questions in the order iterations take them: one seeded permutation, cycled."""
    perm = np.random.default_rng(spec.engine.seed).permutation(len(examples))
    return [examples[i] for i in np.resize(perm, max(len(examples), spec.steps * spec.batch))]


def _train(spec: GraphOptimization, graph: Graph, examples: list, backend: Any, bench: Any,
           progress: bool = False) -> tuple[Graph, dict[str, int]]:
    """Every step, behind a bar that shows how many sampled graphs answered right so far and the tokens
    generated (the response cache's replays included: what the optimisation cost)."""
    import torch  # here, not at import: the CLI builds its flags from this module
    from tqdm import tqdm

    spatial = torch.zeros(len(graph.spatial), requires_grad=True)
    temporal = torch.zeros(len(graph.temporal), requires_grad=True)
    opt = torch.optim.Adam([spatial, temporal], lr=spec.lr)
    rng = np.random.default_rng(spec.engine.seed)
    order = _order(examples, spec)
    spent = {"prompt_tokens": 0, "completion_tokens": 0, "llm_calls": 0, "graph_runs": 0}
    right = 0
    with tqdm(total=spec.steps, disable=not progress, unit="step", desc=spec.method, dynamic_ncols=True) as bar:
        for step in range(spec.steps):
            drawn = [(example, *_draw(graph, spatial, temporal, rng))
                     for example in order[step * spec.batch:(step + 1) * spec.batch]]
            episodes = in_order(partial(_play, spec, bench, graph), drawn, backend, spec.concurrency)
            loss = _loss(drawn, episodes) + _penalty(spec, graph, spatial, temporal)
            opt.zero_grad()
            loss.backward()
            opt.step()
            for episode in episodes:
                _count(spent, episode)
                right += bool(episode.correct)
            bar.set_postfix({"right": f"{right}/{spent['graph_runs']}", "generated": f"{spent['completion_tokens']:,}"})
            bar.update()
    return _finish(spec, graph, spatial.detach().tolist(), temporal.detach().tolist()), spent


def _loss(drawn: list[tuple], episodes: list) -> Any:
    """REINFORCE without a baseline: -mean(u * log p(graph)), u = 1 for a right answer; round 0's temporal
    edges read no earlier round and are not charged."""
    import torch

    return torch.stack([-float(episode.correct) * (sum(x.logp for x in s) + sum(x.logp for x in t[1:]))
                        for (_, s, t), episode in zip(drawn, episodes)]).mean()


def _draw(graph: Graph, spatial: Any, temporal: Any, rng: np.random.Generator) -> tuple[list, list]:
    """One question's sampled graph: (spatial, temporal) edges of every round."""
    return ([sample(graph.spatial, spatial, graph.spatial_mask, rng) for _ in range(graph.rounds)],
            [sample(graph.temporal, temporal, graph.temporal_mask, rng, acyclic=False) for _ in range(graph.rounds)])


def _play(spec: GraphOptimization, bench: Any, graph: Graph, item: tuple, backend: Any) -> Any:
    """The episode of one question of an iteration run on its sampled graph ``item``. An iteration's
    graphs are sampled first, in question order, then run together (``--concurrency`` of them in flight, their
    requests batched): the same graphs, and at concurrency 1 the same calls, as one after the other."""
    example, s, t = item
    ctx = make_context(example, backend, bench, spec.engine, MethodSpec(spec.method, None))
    return run_graph(ctx, graph.layout, s, t)


def _count(spent: dict[str, int], episode: Any) -> None:
    spent["prompt_tokens"] += episode.prompt_tokens
    spent["completion_tokens"] += episode.completion_tokens
    spent["llm_calls"] += episode.llm_calls
    spent["graph_runs"] += 1


def _penalty(spec: GraphOptimization, graph: Graph, spatial: Any, temporal: Any) -> Any:
    """AgentPrune's low-rank penalty over both edge sets (0 for GPTSwarm or with ``--no-low-rank``), on the
    (E,) logit tensors. The spatial matrix's diagonal is 0: this graph has no self-edges to learn, where the
    reference keeps a logit for each in its matrix (masked out of sampling) that the penalty still moves."""
    import torch

    if spec.method != "agentprune" or not spec.low_rank:
        return torch.zeros(())
    n = graph.agents
    square = torch.zeros(n * n)  # the spatial logits laid out as an (n, n) matrix, the diagonal 0 and masked
    index = torch.tensor([s * n + d for s, d in graph.spatial])
    square = square.index_put((index,), spatial)
    topology = torch.ones(n * n) - torch.eye(n).reshape(-1)
    return low_rank_penalty(square, topology, n, DELTA) + low_rank_penalty(temporal, torch.ones(n * n), n, DELTA)


def _finish(spec: GraphOptimization, graph: Graph, spatial: list[float], temporal: list[float]) -> Graph:
    """The optimised logits, and for AgentPrune the masks after one-shot pruning."""
    found = replace(graph, spatial_logits=tuple(spatial), temporal_logits=tuple(temporal))
    if spec.method != "agentprune":
        return found
    return replace(found, spatial_mask=tuple(prune(spatial, graph.spatial_mask, spec.prune_rate)),
                   temporal_mask=tuple(prune(temporal, graph.temporal_mask, spec.prune_rate)))
