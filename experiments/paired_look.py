"""Record look K of the paired experiment from its report folder into the look's summary.json, merge it
into docs/results/paired/summary.json (one entry per look), write the look's headline table for the README
(headline.md) and its headroom table (headroom.md), and print the decision. With STORE:N arguments (a test
store and the look's question count in it) the record gains the headroom columns that come from the
stores: some agent right at round 0, and each signal's AUROC. The record keeps what it was computed from:
the commit, the registered files' hashes (registered.json), the stores and their counts, NumPy's version
(the bootstrap's generator and percentile).

    python experiments/paired_look.py record K LOOK_DIR SUMMARY REGISTERED_JSON [STORE:N ...]
    python experiments/paired_look.py order K SUMMARY      # may look K be taken? (before its replays)
    python experiments/paired_look.py stopped K SUMMARY    # did look K stop the design? (two-round secondary)

The learned policy is the first ``--policy`` of the look's ``delib compare`` (its team.json names its label).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy

from deliberation.errors import DelibError
from deliberation.report.compare import TEAM_JSON
from deliberation.report.look import headline_markdown, headroom, headroom_markdown, look_record
from deliberation.report.sequential import check_order
from deliberation.trees.store import TreeStore
from deliberation.types import write_json_atomic


def taken(summary: Path) -> list[dict]:
    """The looks summary.json records (none before the first)."""
    return json.loads(summary.read_text())["looks"] if summary.is_file() else []


def record(look: int, folder: Path, summary: Path, registered: Path, stores: list[str]) -> None:
    learned = json.loads((folder / "compare" / TEAM_JSON).read_text())["learned"][0]
    entry = look_record(look, folder / "report", learned, against=sorted((folder / "against").glob("*")))
    opened = [(s, TreeStore.open(s.rsplit(":", 1)[0]), int(s.rsplit(":", 1)[1])) for s in stores]
    if opened:
        answered, block = entry["methods"][learned]["pooled"]["n"], sum(n for _, _, n in opened)
        if answered != block:
            sys.exit(f"look {look}: the learned arm answered {answered} questions, its block has {block}; "
                     "rerun the look's replays")
        entry["headroom"] = headroom([(f"{st.manifest.benchmark}/{st.manifest.split}", st, n)
                                      for _, st, n in opened])
    entry["provenance"] = {"commit": _commit(), "numpy": numpy.__version__, "stores": stores,
                           "registered": json.loads(registered.read_text())}
    write_json_atomic(folder / "summary.json", entry)
    (folder / "headline.md").write_text(headline_markdown(entry))
    (folder / "headroom.md").write_text(headroom_markdown(entry))
    looks = [x for x in taken(summary) if x["look"] != look] + [entry]
    write_json_atomic(summary, {"looks": sorted(looks, key=lambda x: x["look"])})
    d = entry["decision"]
    print(f"look {look}: z = {d['z']:+.2f} (boundary {d['boundary']}), {d['reason']}; stop: {d['stop']}")


def _commit() -> str | None:
    """The repository's HEAD commit with ``+dirty`` when files differ from it, or None outside a git checkout."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    try:
        return git("rev-parse", "HEAD") + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def stopped(look: int, summary: Path) -> None:
    """Refuse unless look ``look`` is recorded and stopped the design (the two-round secondary runs after)."""
    found = next((x for x in taken(summary) if x["look"] == look), None)
    if found is None or not found["decision"]["stop"]:
        raise DelibError(f"look {look} {'is not recorded' if found is None else 'did not stop the design'} in "
                         f"{summary}; the two-round secondary runs after the primary has stopped")


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["record"] and len(argv) >= 5:
            record(int(argv[1]), Path(argv[2]), Path(argv[3]), Path(argv[4]), argv[5:])
        elif argv[:1] == ["order"] and len(argv) == 3:
            check_order(int(argv[1]), taken(Path(argv[2])))
        elif argv[:1] == ["stopped"] and len(argv) == 3:
            stopped(int(argv[1]), Path(argv[2]))
        else:
            print("usage: python experiments/paired_look.py record K LOOK_DIR SUMMARY REGISTERED_JSON [STORE:N ...] | "
                  "order K SUMMARY | stopped K SUMMARY", file=sys.stderr)
            return 2
    except DelibError as err:
        print(err, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
