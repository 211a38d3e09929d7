"""The extension's status: per 1.5B store, the built questions that hold 12 round-0 samples (each with its
critic call), and the hours left at measured minutes a question.

    python experiments/extend_status.py [--stores DIR] [--samples K] MINUTES_GSM8K MINUTES_MATH

prints the line data/trees/COMMANDS.md keeps for data/trees/extend-12.sh, e.g. "12 samples: math-train 50
of 50, gsm8k-train 37 of 100, gsm8k-test 0 of 300, math-test 0 of 150. Left at 1.5 minutes a GSM8K and 3
a MATH question: training 1.6 h, all 11.1 h." A question counts once a row of its own holds every sample
0..K-1 (the nodes' ``agent`` is the sample's index) and as many critic nodes as it has samples at least.
Read with the build paused: a record being appended reads as torn.
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path

from deliberation.cli.common import Parser  # one-line errors, no abbreviated flags
from deliberation.errors import DelibError, exit_status
from deliberation.files import read_gzip_lines
from deliberation.outputs.kinds import TREES
from deliberation.trees.store import TreeRow, TreeStore
from deliberation.types import from_json

REPO = Path(__file__).resolve().parents[1]
STORES = ("math-train", "gsm8k-train", "gsm8k-test", "math-test")
"""The stores in the order the extension builds them."""


def extended(store: Path, samples: int) -> tuple[int, int]:
    """(built questions holding ``samples`` round-0 samples with their critic calls, built questions)."""
    built = TreeStore.open(store).built
    answers: dict[str, set[int]] = defaultdict(set)
    critics: dict[str, int] = defaultdict(int)
    for row in read_gzip_lines(store / TREES, "delib tree", False, lambda raw: from_json(TreeRow, raw)):
        for node in row.nodes:
            if node.kind.value == "answer":
                answers[row.example_id].add(node.agent)
            elif node.kind.value == "critic":
                critics[row.example_id] += 1
    full = {e for e in built if set(range(samples)) <= answers[e] and critics[e] >= samples}
    return len(full), len(built)


def status(counts: dict[str, tuple[int, int]], minutes: tuple[float, float], samples: int) -> str:
    """The status line for ``counts`` (store -> extended, built) at ``minutes`` a GSM8K and a MATH question."""
    def hours(names: tuple[str, ...]) -> float:
        return sum((counts[n][1] - counts[n][0]) * minutes[0 if "gsm8k" in n else 1] for n in names) / 60

    shown = ", ".join(f"{name} {done} of {built}" for name, (done, built) in counts.items())
    return (f"{samples} samples: {shown}. Left at {minutes[0]:g} minutes a GSM8K and {minutes[1]:g} a MATH "
            f"question: training {hours(STORES[:2]):.1f} h, all {hours(STORES):.1f} h.")


def main(argv: list[str]) -> None:
    parser = Parser(description=__doc__.split("\n")[0])
    parser.add_argument("minutes", nargs=2, type=float, metavar=("MINUTES_GSM8K", "MINUTES_MATH"),
                        help="measured minutes a question in each benchmark's stores")
    parser.add_argument("--stores", default=str(REPO / "data/trees/qwen2.5-coder-1.5b"),
                        help="folder of the stores (default: the 1.5B stores of this checkout)")
    parser.add_argument("--samples", type=int, default=12, help="round-0 samples a question should hold")
    args = parser.parse_args(argv)
    if not all(m > 0 and math.isfinite(m) for m in args.minutes):
        raise DelibError(f"minutes a question must be positive numbers, not {args.minutes}")
    counts = {name: extended(Path(args.stores) / name, args.samples) for name in STORES}
    print(status(counts, tuple(args.minutes), args.samples))


if __name__ == "__main__":
    sys.exit(exit_status(lambda: main(sys.argv[1:])))
