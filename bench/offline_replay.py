"""Offline replay of ten methods over a 100-question tree store: zero backend calls, seconds of wall time.

Usage: DELIB_DATA_DIR=../shared/data PYTHONPATH=src python bench/offline_replay.py --out replay.json
Builds a store with the ``scripted`` backend (its outcomes stand in for an LLM's: this measures the replay,
never a result), then times ``delib evaluate --offline`` of ten methods at 1 and 2 rounds (2 rounds after one
online replay grew the store) and counts the calls that reached a backend (must be 0).
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from pathlib import Path

from deliberation.cli.common import Parser  # one-line errors, no abbreviated flags
from deliberation.cli.main import main as delib

REPLAYED = ("cot", "debate", "reconcile", "dylan", "mpdf", "always-persist", "always-refine", "always-concede",
           "confidence-threshold", "agreement-threshold")
QUESTIONS = 100


def timed(*argv: str) -> float:
    start = time.perf_counter()
    if delib([*argv, "--quiet"]) != 0:
        raise SystemExit(f"delib {' '.join(argv)} failed")
    return time.perf_counter() - start


def replay(store: Path, out: Path, rounds: int, offline: bool) -> float:
    return timed("evaluate", "--trees", str(store), "--method", ",".join(REPLAYED), "--rounds", str(rounds),
                 *(("--offline",) if offline else ()), "--out", str(out))


def measure(work: Path) -> dict:
    store = work / "store"
    build = timed("tree", "--backend", "scripted", "--limit", str(QUESTIONS), "--out", str(store))
    grow = replay(store, work / "grow", 2, offline=False)
    return {"questions": QUESTIONS, "methods": list(REPLAYED), "build_seconds": build,
            "online_replay_2_rounds_seconds": grow,
            "offline_replay_1_round_seconds": replay(store, work / "r1", 1, offline=True),
            "offline_replay_2_rounds_seconds": replay(store, work / "r2", 2, offline=True),
            "offline_backend": None,  # --offline builds no backend: a missing node fails the run, and it completed
            "load_average": os.getloadavg(), "python": platform.python_version(), "cpus": os.cpu_count()}


def main() -> int:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file to write")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(Path(tmp))
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
