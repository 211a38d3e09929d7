"""The look's guards and provenance on their own, without replays (tests/report/test_look.py takes whole
looks): every arm on the learned arm's questions, a malformed report.csv refused in one line, and the
recorded commit marked dirty when the code or a registered file differs from it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deliberation.errors import DelibError

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "paired_look.sh"


def test_every_row_against_every_reference_covers_the_learned_arms_questions():
    """The guard itself: rows against self-consistency (the against/ reports) are held to the same questions;
    a row at equal tokens may lack a column (no k fits its budget there) but not questions of one."""
    from looks.record import _require_same_questions
    from deliberation.report.paired import Paired

    def row(label: str, reference: str, column: str, n: int, unpaired: int = 0, budget=None) -> Paired:
        return Paired(label, reference, column, n, n, 0, 0, 0, 1.0, 0.0, (0.0, 0.0), 1.0, (1.0, 1.0), unpaired,
                      budget)

    main = [row("mpdf", "rule", c, n) for c, n in (("gsm8k/test", 4), ("pooled", 6))]
    main += [row("sft", "rule", c, n) for c, n in (("gsm8k/test", 4), ("pooled", 6))]
    main.append(row("mpdf", "self-consistency at equal tokens", "gsm8k/test", 4, budget=(6,)))
    sc3 = [row("mpdf", "self-consistency [agents=3]", c, n) for c, n in (("gsm8k/test", 4), ("pooled", 6))]
    _require_same_questions(1, main, sc3, "mpdf")  # the equal-tokens row has no pooled column: fine
    for bad, of in ((row("sft", "self-consistency [agents=3]", "pooled", 5), 6),
                    (row("mpdf", "self-consistency [agents=6]", "gsm8k/test", 4, unpaired=1), 4),
                    (row("mpdf", "self-consistency at equal tokens", "pooled", 6, unpaired=2, budget=(6, 6)), 6)):
        with pytest.raises(DelibError, match=rf"^look 1: {re.escape(bad.label)} against {re.escape(bad.reference)} "
                                             rf"on {bad.column} covers {bad.n} of its {of} questions "
                                             rf"\({bad.unpaired} unpaired\) \(1 such rows\)"):
            _require_same_questions(1, main, [*sc3, bad], "mpdf")
    elsewhere = row("sft", "rule", "math/test", 2)  # a benchmark the learned arm has no row of
    with pytest.raises(DelibError, match=r"^look 1: sft against rule on math/test, a benchmark the learned arm "
                                         r"does not answer \(2 questions\) \(1 such rows\)"):
        _require_same_questions(1, [*main, elsewhere], sc3, "mpdf")


@pytest.mark.parametrize("text", [None, "method,gsm8k/test:n\nmpdf,four\n", "label\nmpdf\n"])
def test_a_missing_or_malformed_report_csv_is_one_clear_error(tmp_path, text):
    from looks.record import counts

    path = tmp_path / "report.csv"
    if text is not None:
        path.write_text(text)
    with pytest.raises(DelibError, match=r"report\.csv is not a report's report\.csv \(.*\); rerun `delib report`"):
        counts(path)


def test_the_recorded_commit_is_marked_dirty_when_the_code_differs_from_it(tmp_path):
    """The look's provenance: HEAD, with +dirty when src/ or experiments/ differ from it (wherever the script
    sits in the checkout) or a registered file inside the checkout is changed or uncommitted, not when only
    results do."""
    repo = tmp_path / "repo"
    for folder in ("experiments", "src", "docs"):
        (repo / folder).mkdir(parents=True)
    shutil.copy(SCRIPT.with_name("paired_look.py"), repo / "experiments")
    shutil.copytree(SCRIPT.with_name("looks"), repo / "experiments" / "looks",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "src" / "code.py").write_text("x = 1\n")
    (repo / "docs" / "summary.json").write_text("{}\n")
    rule = repo / "docs" / "best_rule.json"
    rule.write_text('{"method": "always-persist"}\n')

    def git(*args: str) -> str:
        config = ("-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false")
        return subprocess.run(["git", *config, *args], cwd=repo, check=True, capture_output=True,
                              text=True).stdout.strip()

    def recorded(*registered: Path) -> str:
        code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import paired_look; "
                "print(paired_look._commit([Path(p) for p in sys.argv[2:]]))")
        return subprocess.run([sys.executable, "-c", code, str(repo / "experiments"), *map(str, registered)],
                              cwd=tmp_path, check=True, capture_output=True, text=True, timeout=60).stdout.strip()

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "x")
    head = git("rev-parse", "HEAD")
    (repo / "docs" / "summary.json").write_text('{"looks": []}\n')  # a look rewrites its own results
    assert recorded() == head
    (repo / "src" / "code.py").write_text("x = 2\n")
    assert recorded() == head + "+dirty"
    git("checkout", "--", "src")
    (repo / "experiments" / "paired_look.py").write_text((repo / "experiments" / "paired_look.py").read_text() + "\n")
    assert recorded() == head + "+dirty"
    git("checkout", "--", "experiments")
    outside = tmp_path / "rule.json"  # a registration outside the checkout (the tests' own) is not git's to judge
    outside.write_text("{}\n")
    assert recorded(rule, outside) == head
    rule.write_text('{"method": "always-refine"}\n')  # a registered file changed after its commit
    assert recorded(rule) == head + "+dirty" and recorded() == head
    git("checkout", "--", "docs")
    fresh = repo / "docs" / "votes.json"  # ... or never committed
    fresh.write_text("{}\n")
    assert recorded(rule, fresh) == head + "+dirty"
