"""Record look K of the paired experiment from its report folder into the look's summary.json, merge it
into docs/results/paired/summary.json (one entry per look), write the look's headline table for the README
(headline.md) and its headroom table (headroom.md), rewrite the table of every look taken beside
summary.json (looks.md), and print the decision. With STORE:N arguments (a test store and the look's
question count in it) the record gains the headroom columns that come from the stores: some agent right at
round 0, and each signal's AUROC. It also keeps the meta-actions each arm took,
per benchmark and pooled (from the look's run folders). The record keeps what it was computed from:
the commit (``+dirty`` when the code or a registered file differs from it), registered.json as
paired_look.sh checked the look's files against it, the stores and their counts, NumPy's version (the
bootstrap's generator and percentile). A look is recorded only in its turn (``looks/sequential.check_order``).

    python experiments/paired_look.py record K LOOK_DIR SUMMARY REGISTERED_JSON [STORE:N ...]
    python experiments/paired_look.py order K SUMMARY      # may look K be taken? (before its replays)
    python experiments/paired_look.py stopped K SUMMARY [STORE:N ...]  # did look K stop the design, on
        # these stores? (before the two-round secondary)
    python experiments/paired_look.py provenance FILE REGISTERED_JSON STORE:N ...  # the secondary's record
        # of what it ran with, as a look's

The learned policy is the first ``--policy`` of the look's ``delib compare`` (its team.json names its label).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Sequence

import numpy

from deliberation.errors import DelibError, exit_status
from deliberation.files import write_json_atomic, write_text_atomic
from deliberation.report.compare import TEAM_JSON
from deliberation.report.loading import load_runs
from deliberation.trees.store import TreeStore

from looks.actions import action_counts
from looks.markdown import headline_markdown, headroom_markdown, looks_markdown
from looks.record import headroom, look_record
from looks.sequential import check_order


LOOKS_MD = "looks.md"
"""Beside summary.json: the table of every look taken (``looks/markdown.looks_markdown``)."""


def taken(summary: Path) -> list[dict]:
    """The looks summary.json records (none before the first), or a DelibError naming a malformed file."""
    if not summary.is_file():
        return []
    try:
        looks = json.loads(summary.read_text())["looks"]
        for x in looks:
            if not (isinstance(x["look"], int) and isinstance(x["decision"]["stop"], bool)):
                raise TypeError(f"look entry {x['look']!r} has no whole look number or stop decision")
        return looks
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DelibError(f"{summary} is not the looks' summary.json ({type(err).__name__}: {err}); restore it "
                         "from git") from err


def look_number(text: str) -> int:
    """K as a look number (1, 2, ...), or a DelibError."""
    if not (text.isdecimal() and text[0] != "0"):
        raise DelibError(f"look {text!r} is not a look number (1, 2, ...)")
    return int(text)


def block_counts(stores: list[str]) -> list[tuple[str, TreeStore, int]]:
    """STORE:N arguments opened: (argument, store, N)."""
    opened = []
    for arg in stores:
        path, _, n = arg.rpartition(":")
        if not (path and n.isdecimal()):
            raise DelibError(f"{arg!r} is not STORE:N (a tree store and the look's question count in it)")
        opened.append((arg, TreeStore.open(path), int(n)))
    return opened


def record(look: int, folder: Path, summary: Path, registered: Path, stores: list[str]) -> None:
    check_order(look, taken(summary))
    try:
        learned = json.loads((folder / "compare" / TEAM_JSON).read_text())["learned"][0]
        kept = json.loads(registered.read_text())
    except (OSError, ValueError, KeyError, IndexError) as err:
        raise DelibError(f"look {look}: {err}; run experiments/paired_look.sh, which writes the look's compare "
                         "folder and checks the registration") from err
    entry = look_record(look, folder / "report", learned, against=sorted((folder / "against").glob("*")))
    opened = block_counts(stores)
    if opened:
        answered, block = entry["methods"][learned]["pooled"]["n"], sum(n for _, _, n in opened)
        if answered != block:
            raise DelibError(f"look {look}: the learned arm answered {answered} questions, its block has {block}; "
                             "rerun the look's replays")
        entry["headroom"] = headroom([(f"{st.manifest.benchmark}/{st.manifest.split}", st, n)
                                      for _, st, n in opened])
    entry["actions"] = action_counts(load_runs([folder / "compare", folder / "sampling"]))  # as the report's labels
    entry["provenance"] = provenance(registered, kept, stores)
    looks = sorted([x for x in taken(summary) if x["look"] != look] + [entry], key=lambda x: x["look"])
    headline, room, table = headline_markdown(entry), headroom_markdown(entry), _looks_table(looks, summary)
    write_json_atomic(folder / "summary.json", entry)  # everything rendered before anything is written
    write_text_atomic(folder / "headline.md", headline)
    write_text_atomic(folder / "headroom.md", room)
    write_text_atomic(summary.parent / LOOKS_MD, table)
    write_json_atomic(summary, {"looks": looks})  # last: the look is recorded
    d = entry["decision"]
    print(f"look {look}: z = {d['z']:+.2f} (boundary {d['boundary']}), {d['reason']}; stop: {d['stop']}")


def _looks_table(looks: list[dict], summary: Path) -> str:
    """looks.md from every recorded look, or a DelibError naming a record that lacks what it shows."""
    try:
        return looks_markdown(looks)
    except (KeyError, IndexError, TypeError) as err:
        raise DelibError(f"{summary}: a look's record lacks {err} (its learned arm's cells, the oracle's or its "
                         "decision); restore summary.json from git") from err


def provenance(registered: Path, kept: dict, stores: list[str]) -> dict:
    """What a result was computed with: the commit (``_commit``), NumPy's version, the STORE:N arguments and
    the registration's contents (``kept``, read from ``registered``)."""
    return {"commit": _commit([registered, *registered_files(kept)]), "numpy": numpy.__version__,
            "stores": stores, "registered": kept}


def write_provenance(path: Path, registered: Path, stores: list[str]) -> None:
    """The two-round secondary's provenance file (a look keeps its own inside its record)."""
    try:
        kept = json.loads(registered.read_text())
    except (OSError, ValueError) as err:
        raise DelibError(f"{registered} is not a registration ({err}); pass registered.json") from err
    block_counts(stores)  # each a STORE:N of an existing store
    write_json_atomic(path, provenance(registered, kept, stores))


def registered_files(kept: dict) -> list[Path]:
    """The files registered.json names by path (best_rule.json, vote_temperatures.json, a checkpoint given
    as a path; a shipped checkpoint is named, and lives under src/)."""
    return [Path(v["file"]) for v in kept.values() if isinstance(v, dict) and Path(str(v.get("file"))).is_file()]


def _commit(registered: Sequence[Path] = ()) -> str | None:
    """The repository's HEAD commit, with ``+dirty`` when the code (src, experiments) differs from it, or a
    file of the registration (``registered``: registered.json and the files it names) inside the checkout is
    changed or not committed; None outside a git checkout. A look rewrites its own results, so those do not
    count."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    try:
        top = Path(git("rev-parse", "--show-toplevel")).resolve()
        inside = [str(p) for p in (q.resolve() for q in registered) if p.is_relative_to(top)]
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ":/src", ":/experiments")  # from the top
        dirty += git("status", "--porcelain", "--", *inside) if inside else ""  # untracked counts here
        return git("rev-parse", "HEAD") + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def stopped(look: int, summary: Path, stores: list[str]) -> None:
    """Refuse unless look ``look`` is recorded and stopped the design (the two-round secondary runs after),
    and, given ``stores`` (STORE:N), unless the look was taken on exactly those."""
    found = next((x for x in taken(summary) if x["look"] == look), None)  # taken() holds int looks
    if found is None or not found["decision"]["stop"]:
        raise DelibError(f"look {look} {'is not recorded' if found is None else 'did not stop the design'} in "
                         f"{summary}; the two-round secondary runs after the primary has stopped")
    recorded = found.get("provenance", {}).get("stores")
    if stores and stores != recorded:
        raise DelibError(f"look {look} was taken on {recorded}, not {stores}; run the secondary on the look's "
                         "stores (STORES as the look had it)")


def main(argv: list[str]) -> None:
    if argv[:1] == ["record"] and len(argv) >= 5:
        record(look_number(argv[1]), Path(argv[2]), Path(argv[3]), Path(argv[4]), argv[5:])
    elif argv[:1] == ["order"] and len(argv) == 3:
        check_order(look_number(argv[1]), taken(Path(argv[2])))
    elif argv[:1] == ["stopped"] and len(argv) >= 3:
        stopped(look_number(argv[1]), Path(argv[2]), argv[3:])
    elif argv[:1] == ["provenance"] and len(argv) >= 4:
        write_provenance(Path(argv[1]), Path(argv[2]), argv[3:])
    else:
        raise DelibError("usage: python experiments/paired_look.py record K LOOK_DIR SUMMARY REGISTERED_JSON "
                         "[STORE:N ...] | order K SUMMARY | stopped K SUMMARY [STORE:N ...] | provenance FILE "
                         "REGISTERED_JSON STORE:N ...")


if __name__ == "__main__":
    sys.exit(exit_status(lambda: main(sys.argv[1:])))
