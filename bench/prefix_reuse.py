"""``prefix_reuse_speedup`` of ``delib bench`` alone: one deliberation round per question on the
llamacpp backend with its prefix cache off and on, without the rest of the bench.

Usage: PYTHONPATH=src python bench/prefix_reuse.py [--quick] [--model NAME] [--questions N] --out FILE
Writes one JSON object: the record (both sides' seconds and tokens, prompt tokens read and reused, the ratio)
with the settings and where it ran (CPU count, threads, load average at the start).
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import replace
from pathlib import Path

from deliberation.cli.common import Parser  # one-line errors, no abbreviated flags


def main() -> None:
    parser = Parser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smollm2-135m and the quick sizes (else the full preset)")
    parser.add_argument("--model", help="catalogue name or .gguf path (default: the preset's)")
    parser.add_argument("--questions", type=int, help="GSM8K test questions (default: the preset's)")
    parser.add_argument("--out", required=True, help="JSON file to write")
    args = parser.parse_args()
    from deliberation.perf import bench_backend, prefix_reuse
    from deliberation.perf.results import BenchSettings, with_properties

    settings = BenchSettings.for_mode(args.quick, args.model)
    settings = replace(settings, prefix_questions=args.questions or settings.prefix_questions)
    load = os.getloadavg()
    with bench_backend(settings) as on:
        result = prefix_reuse(settings, on)
    record = {**with_properties(result), "off": with_properties(result.off), "on": with_properties(result.on),
              "settings": with_properties(settings), "cpu_count": os.cpu_count(), "threads": settings.threads,
              "load_average_at_start": load, "platform": platform.platform()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    print(f"prefix_reuse_speedup {result.speedup:.2f} ({result.off.seconds:.0f} s -> {result.on.seconds:.0f} s), "
          f"prefill_tokens_saved {result.prefill_tokens_saved} ({result.prefill_saved_share:.0%}) -> {args.out}")


if __name__ == "__main__":
    main()
