"""Team size and depth: each arm of `experiments/policy_trees.sh` at a larger team or more
rounds, paired with the same arm at the base setting (3 agents, one round) on the same held-out questions.

    python experiments/policy_trees_settings.py [OUT]  # markdown on stdout, OUT/settings.png
                                                       # (OUT default: docs/results/policy-trees, rewriting its figure)

The base setting is OUT/compare/main; the others are OUT/compare/team-* (a larger team's held-out store,
one round) and OUT/compare/depth-* (the same store at more rounds). For each arm present in both, the
difference of whole-episode accuracy (points) with its paired bootstrap 95% interval and exact McNemar p
(``deliberation.report.paired.compare``), and the ratio of tokens per question. A question is paired by
its example id, so a 5-agent store pairs with the 3-agent one wherever both hold the question.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from deliberation.report.loading import load_runs
from deliberation.report.paired import Outcome, Paired, Question, compare, diff_points, outcomes
from deliberation.report.plots import new_figure, save_figure
from deliberation.report.styles import figure_styles
from deliberation.report.compare import ORACLE
from deliberation.report.compare_plot import short_label
from deliberation.runs.run_config import read_run_config

BASE = "main"
ONE_ROUND = ORACLE  # methods/oracle.py plays one round whatever --rounds says: left out of the depth rows
Arms = dict[str, dict[Question, Outcome]]


@dataclass(frozen=True)
class Setting:
    """A comparison folder under OUT/compare and the team size and depth its runs used."""

    folder: str
    agents: int
    rounds: int

    @property
    def label(self) -> str:
        return f"{self.agents} agents, {self.rounds} round{'s' * (self.rounds != 1)}"


def settings(out: Path) -> list[Setting]:
    """The base comparison, then every larger team's (team-*) and every depth's (depth-*), as run."""
    folders = [BASE] + sorted(p.parent.name for p in Path(out, "compare").glob("team-*/team.json"))
    folders += sorted((p.parent.name for p in Path(out, "compare").glob("depth-*/team.json")),
                      key=lambda name: int(name.split("-")[1]))
    return [setting(Path(out, "compare", name)) for name in folders]


def setting(folder: Path) -> Setting:
    """A comparison's team size (config.json of any of its runs) and rounds (team.json)."""
    config = next(folder.glob("*/*/config.json"), None)
    if config is None:
        sys.exit(f"{folder} holds no run directory: rerun experiments/policy_trees.sh to finish it")
    rounds = json.loads((folder / "team.json").read_text())["rounds"]
    return Setting(folder.name, read_run_config(config).spec.engine.agents, int(rounds))


def arms(out: Path, name: str) -> Arms:
    """Arm label -> question -> (correct, tokens), from a comparison's run directories."""
    return outcomes(load_runs([Path(out, "compare", name)]))


def paired_rows(base: Arms, other: Arms, at: Setting, base_setting: Setting) -> list[Paired]:
    """Each arm at ``at`` against itself at the base setting (arms in both only; no depth row for the oracle)."""
    deeper = at.rounds > base_setting.rounds
    return [compare(f"{label} @ {at.label}", label, "pooled", other[label], base[label])
            for label in base if label in other and not (deeper and label == ONE_ROUND)]


def table(rows: list[Paired]) -> str:
    """One line per arm and setting; both accuracies on the questions the two settings share."""
    lines = ["| arm | setting | n | accuracy at base | accuracy | diff to base [95% CI] | McNemar p | token ratio |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for p in rows:
        at_base, at_setting = (p.both_right + p.only_reference) / p.n, (p.both_right + p.only_row) / p.n
        lines.append(f"| {short_label(p.reference)} | {setting_of(p)} | {p.n} | {at_base:.3f} | {at_setting:.3f} "
                     f"| {diff_points(p.accuracy_diff, p.accuracy_diff_ci95)} | {p.mcnemar_p:.3g} "
                     f"| {p.token_ratio:.2f} |")
    return "\n".join(lines)


def setting_of(p: Paired) -> str:
    """The setting's label of a row of ``paired_rows`` (its arm is ``p.reference``: the arm at base)."""
    return p.label[len(p.reference) + len(" @ "):]


def plot(rows: list[Paired], names: list[str], path: Path) -> Path:
    """Each arm's paired difference to its base setting (points, 95% interval), one x position per setting."""
    fig, (ax,) = new_figure(1, size=(7.5, 4.6))
    labels = list(dict.fromkeys(p.reference for p in rows))
    styles = figure_styles(labels)
    for i, label in enumerate(labels):
        mine = [p for p in rows if p.reference == label]
        xs = [names.index(setting_of(p)) + (i - len(labels) / 2) * 0.04 for p in mine]  # jitter
        ys = [100 * p.accuracy_diff for p in mine]
        err = [[y - 100 * p.accuracy_diff_ci95[0] for y, p in zip(ys, mine)],
               [100 * p.accuracy_diff_ci95[1] - y for y, p in zip(ys, mine)]]
        ax.errorbar(xs, ys, yerr=err, capsize=3, label=short_label(label), **styles[label].errorbar())
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xticks(range(1, len(names)), names[1:], fontsize=8)
    ax.set(ylabel="accuracy difference to the arm at base (points)")
    ax.set_title(f"each arm against itself at {names[0]} (paired, 95% bootstrap)", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    return save_figure(fig, path, "team size and depth").path


def main(out: Path) -> None:
    found = settings(out)
    base = arms(out, BASE)
    by_setting = [paired_rows(base, arms(out, at.folder), at, found[0]) for at in found[1:]]
    rows = sorted((p for ps in by_setting for p in ps), key=lambda p: list(base).index(p.reference))
    print(f"### Team size and depth (base: {found[0].label}, `compare/{BASE}`)\n\n{table(rows)}\n")
    if rows:
        print(f"![team size and depth]({plot(rows, [s.label for s in found], out / 'settings.png').name})")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/results/policy-trees"))
