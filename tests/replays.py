"""Run directories compared episode by episode (a replay against an online run, or two replays), and the
`delib evaluate` line that replays a committed run offline.

Wall-clock and generation seconds differ between any two runs, and ``cached`` between a replay (every call
served) and a live run; everything else must be equal."""

from __future__ import annotations

import json
from pathlib import Path

from deliberation.methods.options import DEFAULTS


def episodes(run: Path) -> list[dict]:
    """The episodes of run directory ``run`` without the fields that differ between equal runs."""
    rows = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    for row in rows:
        del row["wall_seconds"], row["generation_seconds"]
        for turn in row["turns"]:
            del turn["cached"]
    return rows


def replay_argv(config: dict, out: Path, repo: Path, questions: int | None = None) -> list[str]:
    """The `delib evaluate` line that replays the run ``config`` describes (its store under ``repo``, method,
    agents, rounds and every method option it set), offline: on its selected questions, or on the store's first
    ``questions``."""
    engine = config["engine"]
    chosen = (["--questions", str(questions)] if questions is not None
              else ["--ids", ",".join(config["selection"]["ids"])])
    argv = ["evaluate", "--trees", str(repo / config["trees"]), *chosen, "--method", config["method"],
            "--agents", str(engine["agents"]), "--rounds", str(engine["rounds"]), "--offline", "--quiet",
            "--out", str(out)]
    for name, default in DEFAULTS.items():
        value = config.get(name, default)  # a config written before the option existed holds its default
        if value != default:
            argv += [f"--{name.replace('_', '-')}", str(value)]
    return argv
