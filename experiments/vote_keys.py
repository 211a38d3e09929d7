"""How often MATH votes split answers that math-verify calls equal, and whether it changes a vote's verdict.

    delib evaluate --trees STORE --method NAME [--agents K] --rounds 1 --offline --out RUN   # each arm
    python experiments/vote_keys.py RUN [RUN ...]   # one JSON line per run on stdout

The engine groups a team's answers by a normalised key (``benchmarks/math.answer_key``: math-verify's
parse as a string), which is finer than math-verify's equality: ``7(x-3)(x+3)`` and ``7(x^2-9)`` key
apart and verify equal. For each episode of a run this regroups the ballots of the final vote (each
agent's last turn, when it has an answer: an unparseable last answer casts none, as in the engine) by
math-verify's ``equivalent``, and reports the pools whose keys outnumber their classes ("finer"), and
the episodes whose verdict would differ if the largest class won instead of the largest key group
("changed"; a tie between the largest classes is listed apart as "tied", since the engine breaks ties by
confidences this script does not read). Runs of methods whose vote is weighted (CISC, ReConcile) are
refused: their winner is not the largest group. Read runs of training trees: it measures the engine, it
is not a look at test data. The measurement on the 1.5B MATH training store, with its commands, is
docs/results/vote-keys/.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from deliberation import methods
from deliberation.benchmarks.math import equivalent, extract
from deliberation.errors import DelibError, exit_status
from deliberation.methods import MethodConfig
from deliberation.report.loading import read_episodes
from deliberation.runs.directory import CONFIG
from deliberation.runs.run_config import read_run_config
from deliberation.types import Episode, Turn


def voted(episode: Episode) -> list[Turn]:
    """The ballots of the episode's final vote: each agent's last turn, unless it has no answer."""
    last: dict[int, Turn] = {}
    for turn in episode.turns:
        if turn.agent not in last or turn.round >= last[turn.agent].round:
            last[turn.agent] = turn
    return [last[agent] for agent in sorted(last) if last[agent].answer is not None]


def classes(answers: list[str]) -> list[int]:
    """Each answer's class under math-verify's equality (the first equal earlier answer's class)."""
    firsts: list[str] = []
    labels: list[int] = []
    for answer in answers:
        label = next((i for i, first in enumerate(firsts) if answer == first or _equal(first, answer)), None)
        if label is None:
            firsts.append(answer)
            label = len(firsts) - 1
        labels.append(label)
    return labels


def _equal(a: str, b: str) -> bool:
    try:
        return equivalent(a, b)
    except Exception:  # noqa: BLE001 - math-verify/sympy on arbitrary model text: unequal, as the scorer
        return False


def check(run: Path) -> dict:
    """The run's counts (module docstring): the ids of the finer pools, and of the changed and tied verdicts."""
    method = _plain_vote(run)
    episodes = read_episodes(run / "episodes.jsonl")
    if not episodes:
        raise DelibError(f"{run} holds no episodes; give the --out of a `delib evaluate` that ran")
    finer, changed, tied = [], [], []
    for episode in episodes:
        ballots = voted(episode)
        labels = classes([extract(turn.text) or "" for turn in ballots])
        if len(set(labels)) >= len({turn.answer for turn in ballots}):
            continue
        finer.append(episode.example_id)
        ranked = Counter(labels).most_common()
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            tied.append(episode.example_id)
        elif next(t for t, label in zip(ballots, labels) if label == ranked[0][0]).correct != episode.correct:
            changed.append(episode.example_id)
    return {"run": str(run), "method": method, "episodes": len(episodes), "finer": finer, "changed": changed,
            "tied": tied}


def _plain_vote(run: Path) -> str:
    """The run's method, refused unless its final vote gives every ballot one vote."""
    if not (run / CONFIG).is_file():
        raise DelibError(f"{run} is not a run directory (no {CONFIG}); give the --out of `delib evaluate`")
    ran = read_run_config(run / CONFIG).spec
    spec = methods.get(ran.method).spec(MethodConfig(ran.benchmark))
    if spec.weighted_vote or spec.vote_weights is not None:
        raise DelibError(f"{run}: {ran.method} weighs its ballots, so its winner is not the largest group; "
                         "give runs of methods with a plain vote")
    return ran.method


def main(argv: list[str]) -> None:
    if not argv:
        raise DelibError("usage: python experiments/vote_keys.py RUN [RUN ...] (run directories of `delib evaluate`)")
    lines = [json.dumps(check(Path(run))) for run in argv]  # every run checked before anything is printed
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(exit_status(lambda: main(sys.argv[1:])))
