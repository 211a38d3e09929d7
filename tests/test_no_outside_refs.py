"""The project cites only what a clone of the repository holds: its design document is docs/design.md, and an
issue number is a citation only when it names an upstream project's public tracker ("llama.cpp issue N").

A reference to a design file kept outside the repository, or to the number of an issue in a tracker users
cannot see, leaves a reader with a pointer to nothing; the substance belongs in place or in docs/.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("src", "tests", "experiments", "bench", "data", "docs", "Makefile", "README.md", "mkdocs.yml")
"""What is checked: the code, its tests, the experiment and benchmark scripts, the data's and the results'
records, the documentation and the Makefile: everything a user reads."""
TEXT_SUFFIXES = {".py", ".sh", ".toml", ".md", ".txt", ".json", ".cfg", ".yml", ".yaml"}
OUTSIDE_DESIGN = "DESIGN" + ".md"  # spelled in two parts so that this file does not cite it
UPSTREAM = frozenset({"llama.cpp"})
"""Projects whose public issue trackers the code may cite by number (the word right before "issue")."""
ISSUE = re.compile(r"\b[Ii]ssues?\s*#?\d+")


def scanned_files() -> list[Path]:
    """Every text file of ``SCANNED``, build outputs (egg-info, caches) left out."""
    found: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        files = [path] if path.is_file() else sorted(path.rglob("*"))
        found += [f for f in files if f.is_file() and (f.suffix in TEXT_SUFFIXES or f.name == "Makefile")
                  and not any(p.endswith(".egg-info") or p == "__pycache__" for p in f.parts)]
    return found


def internal_issues(text: str) -> list[str]:
    """Each issue-number reference in ``text`` whose preceding word is not an ``UPSTREAM`` project."""
    found = []
    for match in ISSUE.finditer(text):
        before = text[:match.start()].split()
        project = before[-1].strip("([{\"'`") if before else ""
        if project.lower() not in UPSTREAM:
            found.append(match.group())
    return found


def test_internal_issues_are_found_and_upstream_ones_kept() -> None:
    number = 42
    assert internal_issues(f"decided in issue {number}; see Issue #{number}") == [f"issue {number}",
                                                                                 f"Issue #{number}"]
    assert internal_issues(f"(project issues {number} and 7)") == [f"issues {number}"]
    assert internal_issues(f"segfaults (llama.cpp issue {number}) and tissue {number}") == []


def test_the_scan_reads_the_code_and_skips_build_outputs() -> None:
    files = {f.relative_to(ROOT).as_posix() for f in scanned_files()}
    assert {"src/deliberation/engine/loop.py", "Makefile", "docs/design.md", "tests/test_no_outside_refs.py",
            "README.md", "data/trees/COMMANDS.md", "docs/results/paired/PREREGISTRATION.md"} <= files
    assert not [f for f in files if ".egg-info/" in f or f.endswith(".pt")]


def offences(path: Path) -> list[str]:
    """``file:line: reference`` for each reference in ``path`` to something outside the repository."""
    found = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, start=1):
        refs = ([OUTSIDE_DESIGN] if OUTSIDE_DESIGN in line else []) + internal_issues(line)
        found += [f"{path.relative_to(ROOT)}:{number}: {ref}" for ref in refs]
    return found


def test_no_reference_outside_the_repository() -> None:
    found = [offence for path in scanned_files() for offence in offences(path)]
    assert not found, ("references to what a clone does not hold (cite docs/design.md by section, or state what "
                       "was decided and why; an upstream tracker is '<project> issue N', the project in "
                       "UPSTREAM):\n" + "\n".join(found))
