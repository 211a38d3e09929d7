"""Run directories compared episode by episode: a replay against an online run, or two replays.

Wall-clock and generation seconds differ between any two runs, and ``cached`` between a replay (every call
served) and a live run; everything else must be equal."""

from __future__ import annotations

import json
from pathlib import Path


def episodes(run: Path) -> list[dict]:
    """The episodes of run directory ``run`` without the fields that differ between equal runs."""
    rows = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    for row in rows:
        del row["wall_seconds"], row["generation_seconds"]
        for turn in row["turns"]:
            del turn["cached"]
    return rows
