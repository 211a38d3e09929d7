"""Record look K of the paired experiment from its report folder into the look's summary.json, and merge
it into docs/results/paired/summary.json (one entry per look); print the decision.

    python experiments/paired_look.py K LOOK_DIR LEARNED_LABEL [SUMMARY]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from deliberation.report.look import look_record
from deliberation.types import write_json_atomic


def main(look: int, folder: Path, learned: str, summary: Path) -> None:
    record = look_record(look, folder / "report", learned)
    write_json_atomic(folder / "summary.json", record)
    looks = json.loads(summary.read_text())["looks"] if summary.is_file() else []
    looks = [x for x in looks if x["look"] != look] + [record]
    write_json_atomic(summary, {"looks": sorted(looks, key=lambda x: x["look"])})
    d = record["decision"]
    print(f"look {look}: z = {d['z']:+.2f} (boundary {d['boundary']}), {d['reason']}; stop: {d['stop']}")


if __name__ == "__main__":
    main(int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3],
         Path(sys.argv[4]) if len(sys.argv) > 4 else Path("docs/results/paired/summary.json"))
