"""How often MATH votes split answers that math-verify calls equal, and whether it changes a vote's verdict.

    delib evaluate --trees STORE --method self-consistency --agents 6 --rounds 1 --offline --out RUN
    python experiments/vote_keys.py RUN [RUN ...]   # one JSON line per run on stdout

The engine groups a team's answers by a normalised key (``benchmarks/math.answer_key``: math-verify's
parse as a string), which is finer than math-verify's equality: ``7(x-3)(x+3)`` and ``7(x^2-9)`` key
apart and verify equal. For each episode of a run this regroups the answers the vote counted (each
agent's last answer) by math-verify's ``equivalent`` and reports: the pools whose keys outnumber their
classes ("finer"), and the episodes whose verdict would differ if the largest class won instead of the
largest key group ("changed"; a tie between the largest classes is counted apart as "tied", since the
vote's tie-break reads confidences this script does not have). Read a run of training trees: it is a
measurement of the engine, not a look at test data.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from deliberation.benchmarks.math import equivalent, extract


def voted(episode: dict) -> list[dict]:
    """Each agent's last turn with an answer: the ballots of the episode's final vote."""
    last: dict[int, dict] = {}
    for turn in episode["turns"]:
        if turn["answer"] is not None and turn["round"] >= last.get(turn["agent"], {"round": -1})["round"]:
            last[turn["agent"]] = turn
    return [last[agent] for agent in sorted(last)]


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
    """The run's counts (module docstring), with the ids of the finer pools."""
    finer, changed, tied = [], [], []
    episodes = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines() if line.strip()]
    for episode in episodes:
        ballots = voted(episode)
        answers = [extract(turn["text"]) or "" for turn in ballots]
        labels = classes(answers)
        if len(set(labels)) == len({turn["answer"] for turn in ballots}):
            continue
        finer.append(episode["example_id"])
        ranked = Counter(labels).most_common()
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            tied.append(episode["example_id"])
            continue
        winner = next(turn for turn, label in zip(ballots, labels) if label == ranked[0][0])
        if winner["correct"] != episode["correct"]:
            changed.append(episode["example_id"])
    return {"run": str(run), "episodes": len(episodes), "finer": finer, "changed": changed, "tied": tied}


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: python experiments/vote_keys.py RUN [RUN ...] (run directories of `delib evaluate`)")
    for run in argv:
        print(json.dumps(check(Path(run))))


if __name__ == "__main__":
    main(sys.argv[1:])
