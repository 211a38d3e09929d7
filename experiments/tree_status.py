"""The paired experiment's build status: questions built per test store, the block in progress, hours left.

    python experiments/tree_status.py [--stores DIR] [--registration FILE] MINUTES_GSM8K MINUTES_MATH

prints the line data/trees/COMMANDS.md keeps for the build (data/trees/build-1.5b.sh), e.g. "built
gsm8k-test 193 of 200, math-test 50 of 100 (block 2). Left at 2.4 minutes a GSM8K and 5.5 a MATH-500
question: block 2 about 4.9 h, through block 4 (n = 600) about 22.0 h." Block k holds the first 100k
GSM8K test and 50k MATH-500 questions (the registered block sizes, registered.json); the block in
progress is the first not complete in both stores. The minutes a question are measured on the machine
that builds (they differ by machine and load: the status lines say what they were measured over), so
they are arguments, not defaults. Read with the build paused: a record being appended reads as torn.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import registered  # experiments/registered.py: a script's own folder is on its import path
from deliberation.cli.common import Parser  # one-line errors, no abbreviated flags
from deliberation.errors import DelibError, exit_status
from deliberation.trees.store import TreeStore

from looks.sequential import BOUNDARIES

REPO = Path(__file__).resolve().parents[1]
STORES = ("gsm8k-test", "math-test")
"""The test stores in the order of the registered block sizes (GSM8K, MATH-500)."""


def status(built: tuple[int, int], sizes: tuple[int, int], minutes: tuple[float, float]) -> str:
    """The status line for ``built`` questions per store, ``sizes`` a block adds and ``minutes`` a question."""
    looks = len(BOUNDARIES)
    block = next((k for k in range(1, looks + 1) if any(b < k * s for b, s in zip(built, sizes))), looks)
    counts = ", ".join(f"{name} {b} of {block * s}" for name, b, s in zip(STORES, built, sizes))

    def hours(k: int) -> float:
        return sum(max(k * s - b, 0) * m for b, s, m in zip(built, sizes, minutes)) / 60

    return (f"built {counts} (block {block}). Left at {minutes[0]:g} minutes a GSM8K and {minutes[1]:g} a "
            f"MATH-500 question: block {block} about {hours(block):.1f} h, through block {looks} "
            f"(n = {looks * sum(sizes)}) about {hours(looks):.1f} h.")


def main(argv: list[str]) -> None:
    parser = Parser(description=__doc__.split("\n")[0])
    parser.add_argument("minutes", nargs=2, type=float, metavar=("MINUTES_GSM8K", "MINUTES_MATH"),
                        help="measured minutes a question in each store")
    parser.add_argument("--stores", default=str(REPO / "data/trees/qwen2.5-coder-1.5b"),
                        help="folder of the test stores (default: the 1.5B stores of this checkout)")
    parser.add_argument("--registration", default=str(REPO / "docs/results/paired/registered.json"),
                        help="registered.json, for the block sizes (default: this checkout's)")
    args = parser.parse_args(argv)
    if not all(m > 0 and math.isfinite(m) for m in args.minutes):
        raise DelibError(f"minutes a question must be positive numbers, not {args.minutes}")
    if not Path(args.registration).is_file():
        raise DelibError(f"registration {args.registration} not found; pass --registration FILE")
    sizes = registered.read(Path(args.registration))["block"]["sizes"]
    built = tuple(len(TreeStore.open(str(Path(args.stores) / name)).built) for name in STORES)
    print(status(built, tuple(sizes), tuple(args.minutes)))


if __name__ == "__main__":
    sys.exit(exit_status(lambda: main(sys.argv[1:])))
