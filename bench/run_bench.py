"""Measured costs of the framework as JSON: the script form of ``delib bench``.

Usage: PYTHONPATH=src python bench/run_bench.py --quick --out bench.json [--model NAME]
``--quick`` uses smollm2-135m and small sizes (a few minutes on 2 cores); the full bench uses
qwen2.5-coder-1.5b. What each number means: the docstring of ``deliberation.perf``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from deliberation.cli.common import Parser  # one-line errors, no abbreviated flags
from deliberation.errors import DelibError
from deliberation.perf import run_bench


def main() -> int:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smollm2-135m and small sizes (minutes)")
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--model", help="llamacpp model (default: smollm2-135m with --quick, else qwen2.5-coder-1.5b)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    args = parser.parse_args()
    try:
        result = run_bench(args.quick, args.model, progress=not args.no_progress)
    except DelibError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    text = json.dumps(result.to_json(), indent=2)
    Path(args.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
