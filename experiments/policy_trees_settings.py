"""Team size and depth (project issue 27): each arm of `experiments/policy_trees.sh` at a larger team or more
rounds, paired with the same arm at the base setting (3 agents, one round) on the same held-out questions.

    python experiments/policy_trees_settings.py OUT    # markdown on stdout, OUT/settings.png

The base setting is OUT/compare/main; the others are OUT/compare/team-* (a larger team's held-out store,
one round) and OUT/compare/depth-* (the same store at more rounds). For each arm present in both, the
difference of whole-episode accuracy (points) with its paired bootstrap 95% interval and exact McNemar p
(``deliberation.report.paired.compare``), and the ratio of tokens per question. A question is paired by
its example id, so a 5-agent store pairs with the 3-agent one wherever both hold the question.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from deliberation.report.loading import load_runs
from deliberation.report.paired import Outcome, Paired, Question, compare, outcomes
from deliberation.report.plots import method_style, new_figure, save_figure
from deliberation.report.team_plot import short_label

BASE = "main"
ONE_ROUND = "oracle"  # methods/oracle.py plays one round whatever --rounds says: left out of the depth rows
Arms = dict[str, dict[Question, Outcome]]


def settings(out: Path) -> list[tuple[str, str]]:
    """(comparison folder, its setting's name) for every larger team and depth present, base first."""
    found = [(BASE, base_name(out))]
    for folder in sorted(Path(out, "compare").glob("team-*/team.json")):
        found.append((folder.parent.name, f"{agents(folder)} agents, 1 round"))
    depths = sorted(Path(out, "compare").glob("depth-*/team.json"), key=lambda p: int(p.parent.name[6:]))
    found += [(p.parent.name, f"3 agents, {p.parent.name[6:]} rounds") for p in depths]
    return found


def base_name(out: Path) -> str:
    team = json.loads(Path(out, "compare", BASE, "team.json").read_text())
    return f"{agents(Path(out, 'compare', BASE, 'team.json'))} agents, {team['rounds']} round"


def agents(team_json: Path) -> int:
    """The team size of a comparison's runs (config.json's engine, one arm is enough)."""
    config = next(team_json.parent.glob("*/*/config.json"))
    return int(json.loads(config.read_text())["engine"]["agents"])


def arms(out: Path, name: str) -> Arms:
    """Arm label -> question -> (correct, tokens), from a comparison's run directories."""
    return outcomes(load_runs([Path(out, "compare", name)]))


def paired_rows(base: Arms, other: Arms, setting: str) -> list[Paired]:
    """Each arm at ``setting`` against itself at the base setting (arms in both only)."""
    deeper = not setting.endswith(" 1 round")
    return [compare(f"{label} @ {setting}", label, "pooled", other[label], base[label])
            for label in base if label in other and not (deeper and label == ONE_ROUND)]


def table(rows: list[Paired]) -> str:
    """One line per arm and setting; both accuracies on the questions the two settings share."""
    lines = ["| arm | setting | n | accuracy at base | accuracy | diff to base [95% CI] | McNemar p | token ratio |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for p in rows:
        label, setting = p.label.split(" @ ")
        at_base, at_setting = (p.both_right + p.only_reference) / p.n, (p.both_right + p.only_row) / p.n
        lo, hi = p.accuracy_diff_ci95
        lines.append(f"| {short_label(label)} | {setting} | {p.n} | {at_base:.3f} | {at_setting:.3f} "
                     f"| {100 * p.accuracy_diff:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] | {p.mcnemar_p:.3g} "
                     f"| {p.token_ratio:.2f} |")
    return "\n".join(lines)


def plot(rows: list[Paired], names: list[str], path: Path) -> Path:
    """Each arm's paired difference to its base setting (points, 95% interval), one x position per setting."""
    fig, (ax,) = new_figure(1, size=(7.5, 4.6))
    labels = list(dict.fromkeys(p.label.split(" @ ")[0] for p in rows))
    for i, label in enumerate(labels):
        mine = [p for p in rows if p.label.startswith(label + " @ ")]
        xs = [names.index(p.label.split(" @ ")[1]) + (i - len(labels) / 2) * 0.04 for p in mine]  # jitter
        ys = [100 * p.accuracy_diff for p in mine]
        err = [[y - 100 * p.accuracy_diff_ci95[0] for y, p in zip(ys, mine)],
               [100 * p.accuracy_diff_ci95[1] - y for y, p in zip(ys, mine)]]
        ax.errorbar(xs, ys, yerr=err, capsize=3, label=short_label(label), **method_style(i))
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xticks(range(1, len(names)), names[1:], fontsize=8)
    ax.set(ylabel="accuracy difference to the arm at base (points)")
    ax.set_title(f"each arm against itself at {names[0]} (paired, 95% bootstrap)", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    return save_figure(fig, path, "team size and depth").path


def main(out: Path) -> None:
    found = settings(out)
    base = arms(out, BASE)
    by_setting = [paired_rows(base, arms(out, name), setting) for name, setting in found[1:]]
    rows = sorted((p for ps in by_setting for p in ps), key=lambda p: list(base).index(p.label.split(" @ ")[0]))
    print(f"### Team size and depth (base: {found[0][1]}, `compare/{BASE}`)\n\n{table(rows)}\n")
    if rows:
        print(f"![team size and depth]({plot(rows, [s for _, s in found], out / 'settings.png').name})")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/results/policy-trees"))
