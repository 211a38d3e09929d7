"""A communication graph answering one question through the engine (GPTSwarm and AgentPrune).

Nodes 0..N-1 are agents; GPTSwarm's decision node is node N. Each round, the agents run in topological
order of that round's spatial edges among them, level by level (agents of one level in one batch), those whose
answers can reach the team's answer only (GPTSwarm's reference skips the others; AgentPrune's reads all): an
agent without predecessors answers the problem alone (in round 0 without a role, this is the round-0 answer
every method sends, seeded as agent i, so a tree store serves it), one with predecessors sees their
solutions (this round's over spatial edges, the last round's over temporal ones) and answers afresh;
AgentPrune's Math Solver sees their answers only, as PHP's hint after the question (none readable: it
answers alone). The
team's answer: GPTSwarm votes over the answers of the agents with an edge to its decision node (none: no
answer); AgentPrune's decision agent reads every agent's last solution and answers (one more call). An
AgentPrune Programming Expert's program runs (``protocols/program.py``) and its value is appended to its reply,
"The answer is \\boxed{value}.", as the reference appends "the answer is" its code's result (boxed, so that
every benchmark's answer reader reads it); a reply without a program, or whose program fails or returns no
value (None), stays as it is. A program's value can depend on the machine (its 30-second limit, string
hashing, library versions), as AFlow's Programmer's can: a replay that meets another value sends other
requests than the store holds (offline: the missing node is named; online: the new ones are recorded).
Requests of agent i in round t are seeded as agent i of round t; the decision call as agent N.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Sequence

from deliberation.engine import prompts
from deliberation.engine.loop import AgentRecord, Context, episode_of, generate_as, record_of, turn_of
from deliberation.engine.prompts.common import Prompt, decision, referenced
from deliberation.protocols.graph import Edge, Realized, reaches
from deliberation.protocols.php import hinted, hints_of
from deliberation.protocols.program import program_of, run_solve
from deliberation.types import Completion, Episode, RequestKind, Turn


@dataclass(frozen=True)
class Layout:
    """What a graph protocol shows its agents: a system prompt per agent (None: the project's own) and how
    the team's answer is decided (``vote``: GPTSwarm's decision node; ``refer``: AgentPrune's FinalRefer)."""

    agents: int
    roles: tuple[str, ...] | None = None
    decision: str = "vote"
    programmer: int | None = None
    """The role whose program runs (AgentPrune's Programming Expert), or None."""
    hint_role: int | None = None
    """The role that reads its predecessors' answers as a hint, not their solutions (AgentPrune's Math
    Solver), or None."""

    def system(self, agent: int) -> str:
        return prompts.SYSTEM if self.roles is None else self.roles[agent % len(self.roles)]

    def runs_code(self, agent: int) -> bool:
        return self.roles is not None and agent % len(self.roles) == self.programmer

    def hints(self, agent: int) -> bool:
        return self.roles is not None and agent % len(self.roles) == self.hint_role


def levels(agents: int, edges: Sequence[Edge]) -> list[list[int]]:
    """The agents by depth in the spatial DAG among them: each level after all its predecessors."""
    inner = [(s, d) for s, d in edges if s < agents and d < agents]
    depth: dict[int, int] = {}
    for node in _topological(agents, inner):
        depth[node] = 1 + max((depth[s] for s, d in inner if d == node), default=-1)
    return [[n for n in range(agents) if depth[n] == level] for level in range(max(depth.values()) + 1)]


def _topological(agents: int, edges: Sequence[Edge]) -> list[int]:
    """Kahn's order (the smallest ready node first)."""
    indegree = {n: sum(d == n for _, d in edges) for n in range(agents)}
    ready, order = sorted(n for n, k in indegree.items() if k == 0), []
    while ready:
        node = ready.pop(0)
        order.append(node)
        for s, d in edges:
            if s == node:
                indegree[d] -= 1
                if indegree[d] == 0:
                    ready = sorted([*ready, d])
    return order


def useful(layout: Layout, spatial: Sequence[Realized], temporal: Sequence[Realized]) -> list[set[int]]:
    """Per round, the agents whose answers can reach the team's answer: the only ones run. GPTSwarm's reference
    runs just the nodes from which its decision node is reachable (``swarm/graph/graph.py``, ``Graph.run``), so an
    agent with no path to it is not called; AgentPrune's decision agent reads every agent, so every agent runs."""
    n, rounds = layout.agents, len(spatial)
    if layout.decision != "vote":
        return [set(range(n)) for _ in range(rounds)]
    found: list[set[int]] = [set() for _ in range(rounds)]
    for t in reversed(range(rounds)):
        goals = {n} if t == rounds - 1 else {s for s, d in temporal[t + 1].edges if d in found[t + 1]}
        found[t] = {i for i in range(n) if any(reaches(spatial[t].edges, i, goal) for goal in goals)}
    return found


def run_graph(ctx: Context, layout: Layout, spatial: Sequence[Realized], temporal: Sequence[Realized],
              start: float | None = None) -> Episode:
    """One episode over the graphs of each round (``spatial[t]``, ``temporal[t]``; temporal[0] unused), calling
    the agents ``useful`` names."""
    start = time.perf_counter() if start is None else start
    turns: list[Turn] = []
    last: list[AgentRecord | None] = [None] * layout.agents
    for t, (graph, running) in enumerate(zip(spatial, useful(layout, spatial, temporal))):
        now: list[AgentRecord | None] = [None] * layout.agents
        before = temporal[t].edges if t > 0 else ()
        for level in ([i for i in level if i in running] for level in levels(layout.agents, graph.edges)):
            if not level:
                continue
            asked = [_prompt(ctx, layout, i, graph, before, now, last) for i in level]
            outs = generate_as(ctx, asked, level, level, [t] * len(level), t)
            outs = [_executed(out) if layout.runs_code(i) else out for i, out in zip(level, outs)]
            for i, prompt, out in zip(level, asked, outs):
                now[i] = record_of(ctx, out, True, prompt.messages)
                turns.append(turn_of(ctx, i, t, None, now[i], [out]))
        last = now
    return episode_of(ctx, _decide(ctx, layout, spatial[-1], last, turns, len(spatial)), turns, len(spatial) - 1,
                      start)


def _executed(out: Completion) -> Completion:
    """A programming role's reply with its program's value appended (see the module docstring)."""
    code = program_of(out.text)
    if code is None:
        return out
    ran, value = run_solve(code)
    if not ran or value.strip() in ("", "None"):  # no value to give (a solve() that printed it returns None)
        return out
    return replace(out, text=f"{out.text}\nThe answer is \\boxed{{{value}}}.")


def _prompt(ctx: Context, layout: Layout, agent: int, graph: Realized, before: Sequence[Edge],
            now: Sequence[AgentRecord | None], last: Sequence[AgentRecord | None]) -> Prompt:
    """Agent ``agent``'s request: alone, with its predecessors' solutions, or (a hinted role) with their answers
    as PHP's hint, "(Hint: The answer is near to A1, A2, ...)" (none parseable: alone)."""
    seen_now = [now[s] for s in graph.predecessors(agent) if s < layout.agents and now[s] is not None]
    seen_before = [last[s] for s, d in before if d == agent and last[s] is not None]
    hints = hints_of(ctx, [*seen_now, *seen_before]) if layout.hints(agent) else []
    if hints:  # sent as PHP sends its hinted requests: an answer request
        return Prompt(RequestKind.ANSWER, hinted(ctx, hints, layout.system(agent)))
    if (not seen_now and not seen_before) or layout.hints(agent):
        return Prompt(RequestKind.ANSWER, prompts.initial_messages(ctx.question, layout.system(agent)))
    return referenced(ctx.question, [r.text for r in seen_now], [r.text for r in seen_before], layout.system(agent))


def _decide(ctx: Context, layout: Layout, graph: Realized, last: Sequence[AgentRecord | None],
            turns: list[Turn], rounds: int) -> list[AgentRecord]:
    """The records the team's vote is over: the decision node's predecessors (GPTSwarm), or the decision
    agent's own answer (AgentPrune: its call, made as round ``rounds``, appended to ``turns``)."""
    done = [r for r in last if r is not None]
    if layout.decision == "vote":
        voters = [last[s] for s in graph.predecessors(layout.agents) if s < layout.agents and last[s] is not None]
        return voters or [AgentRecord("", None, None, 0, False)]
    asked = decision(ctx.question, [r.text for r in done])
    [out] = generate_as(ctx, [asked], [layout.agents], [layout.agents], [rounds], rounds)
    record = record_of(ctx, out, True, asked.messages)
    turns.append(turn_of(ctx, layout.agents, rounds, None, record, [out]))
    return [record]
