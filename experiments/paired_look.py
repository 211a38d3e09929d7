"""Record look K of the paired experiment from its report folder into the look's summary.json, merge it
into docs/results/paired/summary.json (one entry per look), write the look's headline table for the README
(headline.md), and print the decision. With STORE:N arguments
(a test store and the look's question count in it) the record gains the headroom columns that come from
the stores: some agent right at round 0, and each signal's AUROC.

    python experiments/paired_look.py K LOOK_DIR SUMMARY [STORE:N ...]

The learned policy is the first ``--policy`` of the look's ``delib compare`` (its team.json names its label).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from deliberation.report.compare import TEAM_JSON
from deliberation.report.look import headline_markdown, headroom, look_record
from deliberation.trees.store import TreeStore
from deliberation.types import write_json_atomic


def main(look: int, folder: Path, summary: Path, stores: list[str]) -> None:
    learned = json.loads((folder / "compare" / TEAM_JSON).read_text())["learned"][0]
    record = look_record(look, folder / "report", learned, against=sorted((folder / "against").glob("*")))
    opened = [(s, TreeStore.open(s.rsplit(":", 1)[0]), int(s.rsplit(":", 1)[1])) for s in stores]
    if opened:
        answered, block = record["methods"][learned]["pooled"]["n"], sum(n for _, _, n in opened)
        if answered != block:
            sys.exit(f"look {look}: the learned arm answered {answered} questions, its block has {block}; "
                     "rerun the look's replays")
        record["headroom"] = headroom([(f"{st.manifest.benchmark}/{st.manifest.split}", st, n)
                                       for _, st, n in opened])
    write_json_atomic(folder / "summary.json", record)
    (folder / "headline.md").write_text(headline_markdown(record))
    looks = json.loads(summary.read_text())["looks"] if summary.is_file() else []
    looks = [x for x in looks if x["look"] != look] + [record]
    write_json_atomic(summary, {"looks": sorted(looks, key=lambda x: x["look"])})
    d = record["decision"]
    print(f"look {look}: z = {d['z']:+.2f} (boundary {d['boundary']}), {d['reason']}; stop: {d['stop']}")


if __name__ == "__main__":
    main(int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:])
