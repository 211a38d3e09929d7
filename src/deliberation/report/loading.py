"""Finding and loading run directories for reports: which folders are runs, what each ran, its label.

A path is a run directory (``summary.json`` and/or ``episodes.jsonl``, see ``deliberation.runs.directory``), a
training directory (``metrics.jsonl``, see ``deliberation.rl.trainer.write_training_outputs``) or a folder
holding either at any depth. Runs without ``summary.json`` (killed or still running) are summarized from
their finished episodes. A run's label is the experiment's label (``cell.json``, written by
``deliberation.runs.experiment``), else the method name with the policy file's stem when one was given; runs of
different checkpoints, engine settings or models sharing a label are told apart (``split_policies``,
``split_engines``, ``split_models``). Files are only read, never repaired.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Sequence

from deliberation.backends.team import agent_models
from deliberation.errors import (BadText, DelibError, clean_text, decode_text, parse_json, printable, read_json,
                                 read_object)
from deliberation.outputs.kinds import EPISODES, METRICS
from deliberation.rl.held_out_file import HeldOutScores, read_held_out
from deliberation.runs.directory import (CELL, CONFIG, RUN_RESUME, SUMMARY, Summary, jsonl_lines,
                                         parse_episodes, summarize)
from deliberation.runs.run_config import NOTHING_RECORDED, RunConfig, RunSpec, read_run_config
from deliberation.actions import ACTION_ORDER, ACTIONS
from deliberation.types import Episode, from_json

LOG = logging.getLogger("deliberation")

_SAMPLING_LABEL = re.compile(r"self-consistency \[agents=(\d+)\]")  # sampling_label's form


@dataclass(frozen=True)
class RunResult:
    """One run directory: where it is, what ran (from config.json) and its summary."""

    path: Path
    label: str
    method: str
    benchmark: str
    split: str
    backend: str
    model: str
    seed: int
    summary: Summary
    actions_by_round: tuple[tuple[int, ...], ...]
    """Meta-action counts per deliberation round (index 0 = round 1), in ``ACTION_ORDER`` (the paper's three,
    and RESAMPLE where a run took it)."""
    partial: bool
    """True when the directory has no summary.json (the run was killed or is still running)."""
    policy_used: str = ""
    """config.json's ``policy_used`` (mpdf: the checkpoint and its SHA-256 prefix, or the rule); else empty."""
    engine: tuple[tuple[str, str], ...] = ()
    """config.json's engine settings but the seed, sorted (agents, rounds, ...): runs that differ here never pool."""
    episode_digests: frozenset[str] = frozenset()
    """SHA-256 of each episode line with the run's settings: a copied run directory shares them (``distinct``)."""
    options: tuple[tuple[str, str], ...] = ()
    """config.json's method options set to other than their default (``--stop-at``, ``--esc-window``, ...),
    sorted: runs on one benchmark that differ here never pool (``split_options``)."""


def discover(paths: Iterable[str | os.PathLike]) -> tuple[list[Path], list[Path]]:
    """(run directories, training directories) at or under ``paths``, in the order given (folders walked in
    name order), each once; a missing path is a DelibError."""
    runs: dict[Path, None] = {}
    training: dict[Path, None] = {}
    for given in paths:
        root = Path(given)
        if not root.is_dir():
            raise DelibError(f"{root} is not a directory; pass run directories, training directories or "
                             "folders holding them")
        for folder, kind in _walk(root):
            (runs if kind == "run" else training)[folder.resolve()] = None
    return list(runs), list(training)


def _walk(root: Path) -> Iterable[tuple[Path, str]]:
    """Every run or training directory under ``root`` (hidden folders, like a trainer's staging, skipped)."""
    for folder, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        _check_name(folder)
        if SUMMARY in filenames or EPISODES in filenames:
            dirnames[:] = []
            yield Path(folder), "run"
        elif METRICS in filenames:
            dirnames[:] = []
            yield Path(folder), "training"


def _check_name(folder: str) -> None:
    """Refuse a folder whose name is not clean UTF-8 (``errors.clean_text``): its path would go into tables
    and labels that cannot hold it."""
    try:
        clean_text(folder)
    except BadText as err:
        raise DelibError(f"the folder {printable(folder)} has a name that is {err}; rename it (e.g. convmv -f latin1 "
                         "-t utf-8) and rerun") from None


def load_runs(paths: Iterable[str | os.PathLike]) -> list[RunResult]:
    """Every run directory at or under ``paths``, loaded; DelibError when a path is missing or none is found."""
    paths = list(paths)
    runs, _ = discover(paths)
    if not runs:
        raise DelibError(f"no run directory (summary.json or episodes.jsonl) found under "
                         f"{', '.join(map(str, paths))}")
    return load_results(runs)


def load_results(run_dirs: Iterable[Path], required: bool = True) -> list[RunResult]:
    """The run directories ``run_dirs``, loaded, with labels split where one label covers runs of different
    checkpoints or engine settings (so no table row pools two configurations); two directories holding the
    same run are refused (``distinct``). A run with no finished question yet (killed before its first, or still
    at it) is left out with a warning: its row would read 0% of nothing; when none has one, that is an error
    if the runs are ``required`` (a report of training directories too needs none)."""
    loaded = [load_run(p) for p in run_dirs]
    for empty in (r for r in loaded if not r.summary.n):
        LOG.warning("delib: note: %s holds no finished question yet; it is left out", empty.path)
    finished = [r for r in loaded if r.summary.n]
    if required and loaded and not finished:
        raise DelibError(f"none of the {len(loaded)} run directories holds a finished question (e.g. "
                         f"{loaded[0].path}); let a run finish its first question, then report")
    return split_models(split_options(split_engines(split_policies(distinct(finished)))))


def distinct(results: list[RunResult]) -> list[RunResult]:
    """``results``, refused when two directories hold the same episode under the same settings: a copied run
    directory (a backup beside the original) would be pooled with it and count its questions twice. Two
    runs of one configuration never share an episode line (each records its own timings)."""
    seen: dict[str, RunResult] = {}
    for r in results:
        for digest in r.episode_digests:
            first = seen.setdefault(digest, r)
            if first is not r:
                raise DelibError(f"{first.path} and {r.path} hold the same run (same settings and episodes; a copy?), "
                                 "which would count its questions twice; report on one of them (move the copy out "
                                 "of the folders given)")
    return results


def split_policies(results: Sequence[RunResult]) -> list[RunResult]:
    """Runs whose label is shared by runs of different checkpoints (every trained checkpoint is called
    policy.pt; the shipped one is retrained) get the checkpoint's SHA-256 prefix in their label, so the
    table and plots never pool two policies into one row."""
    return _split_label(results, lambda r: r.policy_used, lambda r, _: _digest(r.policy_used))


def split_engines(results: Sequence[RunResult]) -> list[RunResult]:
    """Runs sharing a label but run with other engine settings (self-consistency with 3 and with 9 agents,
    copied without the experiment's cell.json) get the settings that differ in their label, e.g.
    ``self-consistency [agents=9]``, so one row never pools two configurations."""
    return _split_label(results, lambda r: r.engine, lambda r, seen: _differing(r.engine, seen))


def split_options(results: Sequence[RunResult]) -> list[RunResult]:
    """Runs sharing a label but run on one benchmark with other method options (an allocator at two operating
    points, ESC at two windows) get the options that differ in their label, e.g. ``early-stopping-sc
    [esc_window=3]``. Options that differ only between benchmarks do not split a label: each benchmark's own
    tuned temperature or optimised graph (``--graph``) is one method's row, as in the paper's tables."""
    seen: dict[tuple[str, str], set] = {}
    for r in results:
        seen.setdefault((r.label, r.benchmark), set()).add(r.options)
    clash = {label for (label, _), options in seen.items() if len(options) > 1}
    split = iter(_split_label([r for r in results if r.label in clash], lambda r: r.options,
                              lambda r, seen: _differing_options(r.options, seen)))
    return [next(split) if r.label in clash else r for r in results]


def _differing_options(options: tuple[tuple[str, str], ...], others: set[tuple[tuple[str, str], ...]]) -> str:
    """``k=v, ...`` for the options whose value is not the same in all of ``others`` (``default`` where a run
    left one at its default)."""
    keys = sorted({k for o in others for k, _ in o})
    return ", ".join(f"{k}={dict(options).get(k, 'default')}" for k in keys
                     if len({dict(o).get(k) for o in others}) > 1)


def sampling_label(k: int) -> str:
    """The row label of self-consistency with k samples among runs of other sample counts (``split_engines``
    marks the one differing setting): ``self-consistency [agents=k]``."""
    return f"self-consistency [agents={k}]"


def sampling_k(label: str) -> int | None:
    """k of a ``sampling_label(k)`` row; None for any other label (other methods, or self-consistency that
    differs in more settings than its sample count)."""
    found = _SAMPLING_LABEL.fullmatch(label)
    return int(found.group(1)) if found else None


def split_models(results: Sequence[RunResult]) -> list[RunResult]:
    """Runs sharing a label but run on other models (mpdf on the 1.5B model, on the 0.5B model and on a mixed
    team of both) get their model in the label, e.g. ``mpdf [qwen2.5-coder-0.5b]``, so one row never pools two
    models."""
    return _split_label(results, lambda r: (r.backend, r.model), lambda r, _: r.model)


def _split_label(results: Sequence[RunResult], key: Callable[[RunResult], Hashable],
                 mark: Callable[[RunResult, set], str]) -> list[RunResult]:
    """Mark (``marked``) with ``mark(run, keys seen under its label)`` the label of every run whose label is
    shared by runs with other ``key`` values; runs whose label has one key keep it."""
    seen: dict[str, set] = {}
    for r in results:
        seen.setdefault(r.label, set()).add(key(r))
    return [replace(r, label=marked(r.label, mark(r, seen[r.label]))) if len(seen[r.label]) > 1 else r
            for r in results]


def marked(label: str, mark: str) -> str:
    """``label`` with ``mark`` added inside its bracketed group (``mpdf [policy, stop_at=0.9]``), or in a new
    one: a label holds one group, since markdown reads two in a row (``[policy] [stop_at=0.9]``) as a reference
    link, and a site build warns of it."""
    return f"{label[:-1]}, {mark}]" if label.endswith("]") else f"{label} [{mark}]"


def _differing(engine: tuple[tuple[str, str], ...], others: set[tuple[tuple[str, str], ...]]) -> str:
    """``k=v, ...`` for the settings of ``engine`` whose value is not the same in all of ``others``."""
    return ", ".join(f"{k}={v}" for k, v in engine if len({dict(o).get(k) for o in others}) > 1)


def _digest(policy_used: str) -> str:
    """``sha256:<prefix>`` from a policy_used record; the record itself when it has none."""
    _, sep, digest = policy_used.rpartition("sha256:")
    return f"sha256:{digest}" if sep else policy_used or "no policy"


def load_run(path: Path) -> RunResult:
    """One run directory; summarized from its episodes when summary.json is absent or counts other episodes
    than episodes.jsonl holds (written before summaries always described the whole file)."""
    config = read_run_config(path / CONFIG) if (path / CONFIG).exists() else NOTHING_RECORDED
    spec = config.spec
    lines = complete_lines(path / EPISODES)
    episodes = parse_episodes(path / EPISODES, lines)
    summary = _summary(path / SUMMARY) if (path / SUMMARY).exists() else None
    if summary is None or ((path / EPISODES).exists() and summary.n != len(episodes)):  # stale (a torn file too)
        summary = summarize(episodes, spec.method, spec.benchmark, spec.split, _agent_models(spec))
    cell = read_object(path / CELL) if (path / CELL).exists() else {}
    policy_used = config.used.policy_used or ""
    return RunResult(path, _label(cell.get("label") or _default_label(summary.method, spec.policy), policy_used),
                     summary.method, summary.benchmark, summary.split, spec.backend, _model(spec), spec.engine.seed,
                     summary, actions_by_round(episodes), not (path / SUMMARY).exists(),
                     policy_used, _engine(config), _digests(config, lines), _options(spec))


def _agent_models(spec: RunSpec) -> list[str]:
    """A mixed team's model per agent (``backends.team.agent_models``); empty for one model or a damaged team."""
    try:
        return agent_models(spec.backend, spec.backend_options)
    except DelibError:
        return []


def _model(spec: RunSpec) -> str:
    """The run's model: a mixed team's, agent by agent (``a,b,a``), else the model option (or ``default``)."""
    team = _agent_models(spec)
    return ",".join(team) if team else str(spec.backend_options.get("model", "default"))


def _digests(config: RunConfig, lines: Sequence[str]) -> frozenset[str]:
    settings = json.dumps(RUN_RESUME.canonical(config.to_dict()), sort_keys=True)
    return frozenset(hashlib.sha256(f"{settings}\n{line}".encode()).hexdigest() for line in lines if line.strip())


def _options(spec: RunSpec) -> tuple[tuple[str, str], ...]:
    """The method options the run set to other than their default (``methods/options.py``), the policy aside
    (the label names it)."""
    return tuple(sorted((name, str(getattr(spec, name))) for name in spec.given() if name != "policy"))


def _engine(config: RunConfig) -> tuple[tuple[str, str], ...]:
    """The engine settings config.json records but the seed. A run made before a setting existed records none
    (``RunConfig.absent``), and is told apart from runs that record it."""
    engine = config.spec.engine
    return tuple(sorted((f.name, str(getattr(engine, f.name))) for f in fields(engine)
                        if f.name != "seed" and config.records(f"engine.{f.name}")))


def _default_label(method: str, policy: str | None) -> str:
    """The method, marked with the policy when one was given (so two policies do not pool): a file by its name
    less ``.pt``, a shipped checkpoint by its name (``qwen2.5-coder-1.5b-trees``, whose dots are no suffix)."""
    return f"{method} [{Path(policy).name.removesuffix('.pt')}]" if policy else method


def _label(label: str, policy_used: str) -> str:
    """``label``, marked when mpdf ran its documented rule because no trained policy existed, so such a row
    is never read (or pooled) as the learned policy."""
    return marked(label, policy_used) if policy_used.startswith("rule:") else label


def _summary(path: Path) -> Summary:
    try:
        return from_json(Summary, read_json(path))
    except (TypeError, ValueError) as err:
        raise DelibError(f"{path} is not a run summary ({err}); delete it and rerun to rebuild it") from err


def complete_lines(path: Path) -> list[str]:
    """The complete lines of an episodes.jsonl, read only (a torn last line is ignored, not cut)."""
    return list(jsonl_lines(path).lines)


def read_episodes(path: Path) -> list[Episode]:
    """The complete episodes of an episodes.jsonl; a line that is not one is a DelibError naming its number."""
    return parse_episodes(path, complete_lines(path))


def actions_by_round(episodes: Sequence[Episode]) -> tuple[tuple[int, ...], ...]:
    """Counts of each meta-action per round 1..R over ``episodes`` (round-0 turns carry no action)."""
    acted = [t for e in episodes for t in e.turns if t.action is not None]
    rounds = max((t.round for t in acted), default=0)
    width = len(ACTION_ORDER) if any(t.action not in ACTIONS for t in acted) else len(ACTIONS)
    counts = [[0] * width for _ in range(rounds)]
    for turn in acted:
        counts[turn.round - 1][ACTION_ORDER.index(turn.action)] += 1
    return tuple(tuple(c) for c in counts)


# --- training directories (``deliberation.rl.trainer.write_training_outputs``) ---------------------------


@dataclass(frozen=True)
class TrainingPoint:
    """The fields of one ``StepMetrics`` record the figures use (names as in metrics.jsonl)."""

    stage: str
    step: int
    loss: float
    kl: float
    entropy: float
    mean_advantage: float | None
    val_accuracy: float | None
    val_actions: tuple[float, ...] | None
    val_reward: float | None = None


@dataclass(frozen=True)
class TrainingRun:
    """One training directory: its metrics and the config fields the ablation needs."""

    path: Path
    name: str
    reward_scale: float | None
    points: tuple[TrainingPoint, ...]
    held_out: HeldOutScores | None = None  # held_out.json: the final policy against the fixed policies

    @property
    def final_stage(self) -> str:
        return self.points[-1].stage if self.points else ""

    @property
    def final_val_accuracy(self) -> float | None:
        return next((p.val_accuracy for p in reversed(self.points) if p.val_accuracy is not None), None)


def load_training(dirs: Sequence[Path]) -> list[TrainingRun]:
    """Read each training directory's metrics.jsonl, config.json (reward_scale) and held_out.json (when it has
    one)."""
    return [_training_run(Path(d)) for d in dirs]


def _training_run(folder: Path) -> TrainingRun:
    config_path = folder / "config.json"
    try:
        config = read_json(config_path) if config_path.exists() else {}
        lines = decode_text((folder / METRICS).read_bytes(), str(folder / METRICS)).splitlines()
        points = tuple(_metrics_point(number, line) for number, line in enumerate(lines, 1) if line.strip())
    except (AttributeError, KeyError, TypeError, ValueError) as err:  # AttributeError: JSON but not an object
        raise DelibError(f"{folder} is not a readable training directory: config.json must be JSON and every "
                         f"metrics.jsonl record needs step, loss, kl and entropy ({err})") from err
    scale = config.get("reward_scale")
    return TrainingRun(folder, folder.name, float(scale) if scale is not None else None, points,
                       read_held_out(folder))


def _metrics_point(number: int, line: str) -> TrainingPoint:
    """Line ``number`` of a training directory's metrics.jsonl; what is wrong with it names the line."""
    try:
        return _point(parse_json(line))
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        what = f"field {err}" if isinstance(err, KeyError) else str(err) if isinstance(err, BadText) else "wrong shape"
        raise ValueError(f"{METRICS} line {number}: {what}") from err


def _point(row: dict[str, Any]) -> TrainingPoint:
    actions = row.get("val_actions")
    return TrainingPoint(str(row.get("stage", "")), int(row["step"]), float(row["loss"]), float(row["kl"]),
                         float(row["entropy"]), row.get("mean_advantage"), row.get("val_accuracy"),
                         tuple(float(x) for x in actions) if actions is not None else None,
                         row.get("val_reward"))
