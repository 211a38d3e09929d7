"""The learnable communication structures (registry ``DESIGNS``) and their optimised form, ``graph.json``.

- ``gptswarm`` (Zhuge et al., ICML 2024): N agents and a decision node; potential edges are every ordered
  pair of agents and every agent -> decision; one round; the final graph keeps the edges of probability
  above 1/2; the decision node votes over its predecessors' answers (its MMLU setup's majority vote); an
  agent with no path to the decision node is not run, as the reference's ``Graph.run`` runs only the nodes
  from which an output node is reachable.
  Departures: (1) an agent with predecessors sees their solutions and answers once (in the reference's MMLU
  graph an IO agent answers the question once per output it receives, ignoring the output, so an edge adds a
  call and a vote, not information; AgentPrune's re-implementation and the GSM8K ports pass the solutions, and
  so do we: an edge that only multiplies samples would make the graph self-consistency with a learned number
  of samples); (2) the vote is over extracted answers, ties to the first (the reference breaks ties at random).
- ``agentprune`` (Zhang et al., ICLR 2025): N agents with the role prompts of its GSM8K setup; spatial edges
  (every ordered pair, within a round, acyclic) and temporal edges (every pair with self-edges, last round
  to this one); ``rounds`` rounds; after optimisation, one-shot magnitude pruning of ``prune_rate`` of each
  edge set, and the final graph is every surviving edge; the decision agent (FinalRefer) reads every agent's
  last solution. Departures: (1) one prune after the optimisation (the paper's one-shot; the reference's GSM8K
  script prunes 25% twice, after batches 5 and 10); (2) the final graph is fixed (the reference keeps sampling
  the surviving edges at test time); (3) the Programming Expert's program runs in the project's sandbox, and its
  value is appended boxed ("The answer is \\boxed{v}.", the reference: "the answer is v"), so that MATH's
  reader reads it too; the reply of a program that fails or returns nothing stays as it is (the reference
  appends what its executor returns); (4) roles paraphrased, zero-shot (the reference's prompts have few-shot
  examples); (5) round 0 and ``--rounds`` more (3 rounds at the default 2; experiments/baselines.sh runs 2, so
  that temporal edges matter; the reference's GSM8K default is one); (6) the Math Solver reads its predecessors'
  answers as PHP's hint sentence, after the question and comma-separated (the reference's: after its answer
  prompt, space-separated; with no predecessor, or none with a readable answer, it is asked alone, where the
  reference appends an empty hint); the other roles read their full solutions, as the reference's do.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from deliberation.config import learned_ids
from deliberation.errors import DelibError, existing, read_object
from deliberation.files import write_json_atomic
from deliberation.protocols.graph import Edge, final
from deliberation.protocols.swarm import Layout, useful
from deliberation.types import from_json

GRAPH_FORMAT = "deliberation-graph"
GRAPH_FILE = "graph.json"
"""The file `delib optimize-graph` writes into its --out."""
MAX_ROUNDS = 100
"""The most rounds a graph file may hold: AgentPrune runs a handful (its reference one); a file holding more
is damaged, and would make a list of that many rounds before its first question."""
ROLES = (
    "You are a math expert. Solve the problem step by step, using the other agents' answers as hints where "
    "they are given, and state the final answer.",
    "You are a mathematical analyst. First analyse the problem symbolically, naming its quantities with "
    "letters; then substitute the values, compute, and state the final answer.",
    "You are a programming expert. Write complete Python code that solves the problem: a function solve() with no "
    "arguments that computes and returns the answer, in one ```python block; it will be run, and the value it "
    "returns given as your answer.",
    "You are an inspector. Check the other agents' reasoning, arithmetic and code for mistakes, then give your "
    "own step-by-step solution and state the final answer.",
)
"""AgentPrune's GSM8K roles (Math Solver, Mathematical Analyst, Programming Expert, Inspector), paraphrased;
agent i plays role i mod 4, as its reference assigns them in order."""
MATH_SOLVER = 0
"""The role that reads its predecessors' answers as a hint (``protocols/swarm.py``), as the reference's Math
Solver ("The answer is near to ..."); the others read their full solutions."""
PROGRAMMER = 2
"""The role whose program runs, its value appended to its reply (``protocols/swarm.py``), as the reference's
Programming Expert's."""


@dataclass(frozen=True)
class Graph:
    """A communication graph, its edges' logits and masks (optimised or initial) and how it is used."""

    kind: str
    agents: int
    rounds: int
    spatial: tuple[Edge, ...]
    spatial_logits: tuple[float, ...]
    spatial_mask: tuple[bool, ...]
    temporal: tuple[Edge, ...] = ()
    temporal_logits: tuple[float, ...] = ()
    temporal_mask: tuple[bool, ...] = ()
    threshold: float | None = 0.5
    """The final graph keeps unmasked edges of probability above this (None: every unmasked edge)."""
    record: dict[str, Any] = field(default_factory=dict)
    """How it was optimised: settings, training questions, tokens spent (``delib optimize-graph``)."""

    @property
    def layout(self) -> Layout:
        agentprune = self.kind == "agentprune"
        return Layout(self.agents, roles=ROLES if agentprune else None, decision="refer" if agentprune else "vote",
                      programmer=PROGRAMMER if agentprune else None, hint_role=MATH_SOLVER if agentprune else None)

    def final_graphs(self) -> tuple[list, list]:
        """The graph of every round after optimisation: (spatial per round, temporal per round)."""
        spatial = final(self.spatial, self.spatial_logits, self.spatial_mask, True, self.threshold)
        temporal = final(self.temporal, self.temporal_logits, self.temporal_mask, False, self.threshold)
        return [spatial] * self.rounds, [temporal] * self.rounds

    def running(self) -> list[set[int]]:
        """The agents the final graph calls, per round (``swarm.useful``)."""
        return useful(self.layout, *self.final_graphs())

    def most_shown(self) -> int:
        """The most solutions one prompt of the final graph shows: an agent it calls its predecessors' over this
        round's spatial and the last round's temporal edges (a hinted role their answers only: none counted);
        AgentPrune's decision agent every agent's."""
        spatial, temporal = self.final_graphs()
        layout = self.layout
        most = max((len([s for s in spatial[t].predecessors(i) if s < self.agents])
                    + (len(temporal[t].predecessors(i)) if t > 0 else 0)
                    for t, called in enumerate(useful(layout, spatial, temporal)) for i in called
                    if not layout.hints(i)), default=0)
        return max(most, self.agents if layout.decision == "refer" else 0)

    @property
    def spent(self) -> int | None:
        """The tokens (prompt plus completion) its optimisation spent, as its record holds them; None for a graph
        never optimised."""
        tokens = self.record.get("tokens") if self.record else None  # checked when the file is read
        return None if tokens is None else tokens["prompt_tokens"] + tokens["completion_tokens"]

    def trained_on(self) -> frozenset[str]:
        return frozenset(learned_ids(self.record) if self.record else ())

    def deciding(self) -> tuple[int, ...]:
        """The agents whose answers reach the team's answer in the final graph (``swarm.useful``), the only ones
        called: AgentPrune's decision agent reads every agent; GPTSwarm's decision node votes over its
        predecessors, which read theirs, and its reference runs no other agent."""
        return tuple(sorted(set().union(*self.running())))

    def answers(self) -> bool:
        """Whether the final graph can give an answer: AgentPrune's decision agent always does; GPTSwarm's
        decision node votes over the agents with an edge into it, and an optimisation can drop them all."""
        return bool(self.deciding())


def initial(kind: str, agents: int, rounds: int) -> Graph:
    """The unoptimised graph of design ``kind``: every potential edge at probability 1/2, nothing pruned."""
    pairs = tuple((i, j) for i in range(agents) for j in range(agents) if i != j)
    if kind == "gptswarm":
        spatial = pairs + tuple((i, agents) for i in range(agents))
        return Graph(kind, agents, 1, spatial, (0.0,) * len(spatial), (True,) * len(spatial))
    if kind == "agentprune":
        temporal = tuple((i, j) for i in range(agents) for j in range(agents))
        return Graph(kind, agents, rounds, pairs, (0.0,) * len(pairs), (True,) * len(pairs), temporal,
                     (0.0,) * len(temporal), (True,) * len(temporal), threshold=None)
    raise DelibError(f"unknown graph design {kind!r}; choose one of {', '.join(DESIGNS)}")


DESIGNS = ("gptswarm", "agentprune")


def save_graph(path: Path, graph: Graph) -> None:
    write_json_atomic(path, {"format": GRAPH_FORMAT, **asdict(graph)})


def load_graph(path: str, kind: str) -> Graph:
    """The optimised graph at ``path``, refused in one line when missing, damaged or of another design."""
    fix = f"optimise one with `delib optimize-graph --method {kind}`"
    raw = read_object(existing(path, "graph", fix, inside=GRAPH_FILE), fix)
    if raw.pop("format", None) != GRAPH_FORMAT:
        raise DelibError(f"{path} is not a graph from `delib optimize-graph` (its format is not {GRAPH_FORMAT!r}); "
                         f"{fix}")
    try:
        graph = _checked(from_json(Graph, raw))
    except (ValueError, TypeError) as err:
        raise DelibError(f"{path} is a damaged graph: {err}; {fix}") from err
    if graph.kind != kind:
        raise DelibError(f"{path} is a {graph.kind} graph, not {kind}'s; pass a graph optimised for {kind}")
    return graph


def _checked(graph: Graph) -> Graph:
    """``graph`` if it is its design's initial graph but for what an optimisation changes (the logits, the
    masks and the record, which names the training questions), else a ValueError saying what is not."""
    if graph.kind not in DESIGNS:
        raise ValueError(f"its kind {graph.kind!r} is none of {', '.join(DESIGNS)}")
    if not all(isinstance(n, int) and n >= 1 for n in (graph.agents, graph.rounds)):
        raise ValueError(f"its agents ({graph.agents}) and rounds ({graph.rounds}) are not both whole numbers from 1")
    if graph.agents * (graph.agents - 1) > len(graph.spatial) or graph.rounds > MAX_ROUNDS:
        raise ValueError(f"{graph.agents} agents and {graph.rounds} rounds are more than its {len(graph.spatial)} "
                         f"spatial edges make, or than {MAX_ROUNDS} rounds")
    shape = initial(graph.kind, graph.agents, graph.rounds)
    for name in ("rounds", "spatial", "temporal", "threshold"):
        if getattr(graph, name) != getattr(shape, name):
            raise ValueError(f"its {name} is not that of a {graph.kind} graph of {graph.agents} agents")
    for name in ("spatial", "temporal"):
        edges, logits, mask = (getattr(graph, f"{name}{end}") for end in ("", "_logits", "_mask"))
        if not len(edges) == len(logits) == len(mask):
            raise ValueError(f"{len(edges)} {name} edges, {len(logits)} logits and {len(mask)} mask entries")
        if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in logits):
            raise ValueError(f"a {name} logit is not a finite number")
        if not all(isinstance(m, bool) for m in mask):
            raise ValueError(f"a {name} mask entry is not true or false")
    learned_ids(graph.record)
    tokens = graph.record.get("tokens") if graph.record else None
    if tokens is not None and not (isinstance(tokens, dict) and all(
            isinstance(tokens.get(k), int) for k in ("prompt_tokens", "completion_tokens"))):
        raise ValueError("its record's tokens are not whole prompt_tokens and completion_tokens")
    return graph


def idle_note(graph: Graph) -> str | None:
    """A note for a final graph whose answer depends on some of its agents only (``Graph.deciding``), or None:
    the others are never called, so the method is a smaller team than the one asked for."""
    deciding = graph.deciding()
    idle = [i for i in range(graph.agents) if i not in deciding]
    if not idle or not deciding:
        return None
    return (f"the final graph's answer depends on agent(s) {', '.join(map(str, deciding))} of {graph.agents}; "
            f"agent(s) {', '.join(map(str, idle))} reach no answer and are not called, as in the reference "
            f"(optimise again with more --iterations or another --seed for another graph)")


SILENT_FIX = "optimise again, into another --out, with more --iterations or another --seed"
"""What to do about a graph file that cannot answer."""


def refuse_silent(graph: Graph, what: str, fix: str = SILENT_FIX) -> None:
    """Refuse a graph that cannot answer (the reference would run it and score nothing): a run before hours of
    questions whose answers are known to be empty in advance, and the optimisation that ends so. ``what``: the
    graph, as the message names it ("runs/o/graph.json's final graph")."""
    if not graph.answers():
        raise DelibError(f"{what} has no edge into the decision node, so every answer would be empty; {fix}")


