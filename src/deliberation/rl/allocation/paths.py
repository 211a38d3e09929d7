"""Every decision an allocator can face on a store's questions, precomputed once from the recorded samples.

Samples are drawn in order, so the allocator's state after d draws is the state of the first d samples
(or, after DELIBERATE, of the team's deliberated answers and samples N..d-1): per question there are at
most two branches of at most ``limit`` states. ``question_paths`` replays them offline through the engine's
own functions (``allocate/episode.py``'s ``state_of`` and ``deliberate``, the engine's vote and scorer), so
an allocator simulated on a ``Path`` answers, and spends, exactly what ``delib evaluate`` replaying the
method over the store gives (tests/allocate pins this). Training, tuning and the curves then cost no call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from deliberation import benchmarks
from deliberation.allocate.episode import Opening, deliberate, state_of
from deliberation.allocate.moves import Allocator, Move
from deliberation.allocate.state import FEATURE_NAMES, State, features
from deliberation.engine import prompts
from deliberation.engine.loop import AgentRecord, Context, final_vote, generate, make_context, record_of, score
from deliberation.engine.spec import MethodSpec, VoteWeights
from deliberation.trees.store import TreeBackend, TreeStore, built_examples, store_engine
from deliberation.types import Example


@dataclass(frozen=True)
class Branch:
    """The states of one branch, indexed by samples drawn d (0..limit; entries below the first draw unused)."""

    states: tuple[State, ...]  # (limit + 1,): the state after d draws (index 0: no draw, an empty state)
    features: np.ndarray  # (limit + 1, F) float32
    correct: np.ndarray  # (limit + 1,) bool: the vote after d draws is right
    tokens: np.ndarray  # (limit + 1,) int: prompt + completion tokens spent after d draws


@dataclass(frozen=True)
class Path:
    """A question's branches: ``plain`` (samples only) and, where a deliberation spec was given,
    ``deliberated`` (the team deliberated once, after its first draw)."""

    example_id: str
    benchmark: str
    team: int
    plain: Branch
    deliberated: Branch | None = None
    unsummarised: int = 0
    """Samples without a log-probability summary (a store built before it recorded them): their states read
    no log-probability and a weighted vote gives them the least confident known weight, where samples built
    since always hold one."""

    @property
    def limit(self) -> int:
        return len(self.plain.correct) - 1


def question_paths(store: TreeStore, limit: int, vote: VoteWeights | None = None,
                   deliberation: MethodSpec | None = None, data_dir: str | None = None,
                   examples: Sequence[Example] | None = None) -> list[Path]:
    """The paths of every built question of ``store`` (or of ``examples``), ``limit`` samples each, offline."""
    backend = TreeBackend(store, None, f"the allocator reads {limit} round-0 samples a question (and a three-move "
                                       "one the round-1 updates of agreement-threshold): extend the store with its "
                                       f"own command, `--limit {len(store.built)} --samples {limit}` (and those "
                                       "methods)")
    bench = benchmarks.get(store.manifest.benchmark)
    engine = store_engine(store, rounds=0, agents=limit)
    spec = MethodSpec("allocate", None, vote_weights=vote)
    found = []
    for example in examples if examples is not None else built_examples(store, data_dir):
        ctx = make_context(example, backend, bench, engine, spec)
        asked = prompts.initial_messages(ctx.question)
        outs = generate(ctx, [asked] * limit, range(limit), 0)
        records = [record_of(ctx, out, True, asked) for out in outs]
        cost = np.array([out.prompt_tokens + out.completion_tokens for out in outs])
        team = store.manifest.agents
        branches = [_branch(ctx, records, np.cumsum(cost), False)]
        if deliberation is not None:
            new, turns = deliberate(ctx, records[:team], deliberation, np.random.default_rng(0))
            spent = sum(t.prompt_tokens + t.completion_tokens for t in turns)
            branches.append(_branch(ctx, new + records[team:], np.cumsum(cost) + spent, True))
        found.append(Path(example.id, store.manifest.benchmark, team, *branches,
                          unsummarised=sum(out.summary is None for out in outs)))
    return found


def _branch(ctx: Context, records: list[AgentRecord], spent: np.ndarray, deliberated: bool) -> Branch:
    """The states after 1..len(records) draws of ``records`` (``spent``: tokens after each draw)."""
    limit = len(records)
    states = [State((), deliberated)] + [state_of(records[:d], deliberated) for d in range(1, limit + 1)]
    feats = np.zeros((limit + 1, len(FEATURE_NAMES)), dtype=np.float32)
    correct = np.zeros(limit + 1, dtype=bool)
    for d in range(1, limit + 1):
        feats[d] = features(states[d])
        correct[d] = score(ctx, final_vote(ctx, records[:d])[1])
    return Branch(tuple(states), feats, correct, np.concatenate([[0], spent]).astype(np.int64))


@dataclass(frozen=True)
class Outcome:
    """What an allocator does on one question: right or not, tokens spent, samples drawn, deliberated."""

    example_id: str
    benchmark: str
    correct: bool
    tokens: int
    drawn: int
    deliberated: bool


def simulate(path: Path, allocator: Allocator, opening: Opening | None = None) -> Outcome:
    """The allocator's episode on ``path`` (``allocation_episode``'s loop over the recorded states)."""
    rng = np.random.default_rng(0)  # the fixed rules and a greedy allocator draw nothing
    branch, drawn, decisions = path.plain, min(allocator.first or path.team, path.limit), 0
    while drawn < path.limit:
        state = branch.states[drawn]
        first_move = decisions == 0 and opening is not None and path.deliberated is not None
        move = opening(state) if first_move else allocator.decide(state, rng)
        decisions += 1
        if move is Move.STOP:
            break
        if move is Move.DELIBERATE:
            branch = path.deliberated  # type: ignore[assignment]
            continue
        drawn = min(drawn + (allocator.step or path.team), path.limit)
    return Outcome(path.example_id, path.benchmark, bool(branch.correct[drawn]), int(branch.tokens[drawn]), drawn,
                   branch is path.deliberated)
