"""Experiment grids: each (backbone, benchmark, seed, method label) cell of an experiment file
(``runs/experiment_file.py``) is one resumable run directory.

All cells of a backbone share one backend, and all cells one response cache, ``<out>/responses.sqlite``
(its entries are keyed by model and server, so backbones never share answers). The engine derives
round-0 requests identically for every method with the same seed, so the first method of a benchmark pays
for the independent answers and every later method is served them from the cache; cells therefore run
backbone-major, then benchmark-major. Each cell is a run directory ``<out>/<benchmark>/<label>-s<seed>``,
under ``<out>/<backbone>/`` for a file with [[backbones]] (a file of one's own:
``<out>/<answer type>-<file stem>/...``, ``benchmarks.own.folder_name``) that
``runner.execute`` resumes, so rerunning the same command only does the work that is missing. A cell that
fails (e.g. a policy file not trained yet) does not stop the others; the failures are raised together at
the end, after the report (``delib experiment`` passes ``report.write.write_report``) is written to
``<out>/report/``. With ``workers`` > 1
each cell's examples are spread over Ray actors (``deliberation.runs.distributed``); they share the cache file.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from deliberation.backends.base import Backend
from deliberation.benchmarks.answers import make_backend
from deliberation.benchmarks.own import folder_name
from deliberation.config import Selection
from deliberation.errors import DelibError, make_folder, require_at_least
from deliberation.files import write_json_atomic
from deliberation.methods.options import Variant
from deliberation.runs.experiment_backbones import Backbone, resolve_env
from deliberation.runs.experiment_file import ExperimentConfig
from deliberation.runs.runner import RunSpec, execute, validate
from deliberation.runs.directory import CELL, Summary

ReportWriter = Callable[[Sequence[Path], Path], object]
"""Writes a report over run directories into a folder (``report.write.write_report``)."""


@dataclass(frozen=True)
class Position:
    """Where a cell sits in the grid: its backbone, benchmark, seed and row (``arm``)."""

    backbone: Backbone
    benchmark: str
    seed: int
    arm: Variant

    def method_options(self) -> dict[str, Any]:
        """The row's method options, ``{backbone}`` in a path made this backbone's label."""
        return {name: self.backbone.path(value) for name, value in self.arm.method_options().items()}

    def folder(self, out: str) -> Path:
        return Path(out) / self.backbone.label / folder_name(self.benchmark) / f"{self.arm.label}-s{self.seed}"


def positions(cfg: ExperimentConfig) -> list[Position]:
    """Every cell's position in run order: backbone-major (one model's server at a time), then benchmark, seed
    and label, so each benchmark's round-0 answers are generated once (by its first method) and served from
    the cache to the rest."""
    return [Position(backbone, bench, seed, arm) for backbone in cfg.backbones for bench in cfg.benchmarks
            for seed in cfg.seeds for arm in cfg.arms]


@dataclass(frozen=True)
class Cell:
    """One run of the grid."""

    label: str
    method: str
    benchmark: str
    seed: int
    spec: RunSpec
    out: Path
    backbone: str = ""


def plan(cfg: ExperimentConfig) -> list[Cell]:
    """Every cell, in ``positions`` order; environment variables in backend options are read now
    (``experiment_backbones.resolve_env``)."""
    return [_cell(cfg, at) for at in positions(cfg)]


def _cell(cfg: ExperimentConfig, at: Position) -> Cell:
    bench = at.benchmark
    spec = RunSpec(method=at.arm.method, benchmark=bench, split=cfg.splits[bench], limit=cfg.limits[bench],
                   backend=cfg.backend, backend_options=resolve_env(cfg.backend_of(at.backbone), cfg.source),
                   cache=str(cfg.cache), engine=replace(at.arm.engine, seed=at.seed), data_dir=cfg.data_dir,
                   command=cfg.command or f"delib experiment {cfg.source}", concurrency=cfg.concurrency,
                   selection=cfg.selections.get(bench, Selection()), **at.method_options())
    return Cell(at.arm.label, at.arm.method, bench, at.seed, spec, at.folder(cfg.out), at.backbone.label)


def run_experiment(cfg: ExperimentConfig, progress: bool = True, backend: Backend | None = None, workers: int = 1,
                   ray_address: str | None = None, notify: Callable[[str], None] | None = None,
                   report: ReportWriter | None = None) -> list[Summary]:
    """Run (or resume) every cell in plan order, then ``report`` the cells that ran into ``<out>/report/``
    (``delib experiment`` passes ``report.write.write_report``; runs/ itself knows no report), return the
    summaries.

    One process (``workers`` 1): the cells of a backbone share one backend, ``backend`` if given (the caller
    closes it; a file of one backbone only), else ``cfg.backend`` with the backbone's options in the cache
    ``<out>/responses.sqlite``, built before its first cell, closed after its last. ``workers`` > 1: each cell's
    examples are spread over that many Ray actors (``distributed.execute_distributed``, ``ray_address`` as
    in ``delib run``), each building its backend from the spec with the same cache file, so round-0
    answers are still shared across cells. ``notify`` receives a line as each cell starts. Cells that fail
    are raised together, as one DelibError, after the others ran and the report is written."""
    require_at_least("workers", workers)
    if ray_address is not None and workers == 1:  # would be ignored: one process runs every cell
        raise DelibError(f"a Ray address ({ray_address}) is used only with workers > 1 (--workers N), which spread "
                         "each cell over that many Ray actors; give workers, or leave the address out")
    if workers > 1 and backend is not None:
        raise DelibError("a backend object cannot be shared with Ray workers; pass workers=1 or no backend")
    if backend is not None and len(cfg.backbones) > 1:
        raise DelibError("a backend object serves one model, and the file has several [[backbones]]; pass no "
                         "backend (each backbone gets its own) or cut the file to one backbone")
    cells = plan(cfg)
    outcomes: list[Summary | str] = []
    for _, grouped in itertools.groupby(cells, key=lambda c: c.backbone):
        group, start = list(grouped), len(outcomes)
        with _runner(group[0].spec, backend, workers, ray_address) as run:
            outcomes += [_run_cell(c, run, progress, f"[{start + i + 1}/{len(cells)}]", notify)
                         for i, c in enumerate(group)]
    return _finish(cfg, cells, outcomes, report)


CellRunner = Callable[[RunSpec, str, bool], Summary]


@contextmanager
def _runner(spec: RunSpec, backend: Backend | None, workers: int, ray_address: str | None) -> Iterator[CellRunner]:
    """How one backbone's cells run (``spec``: its first cell's): on Ray actors, on the caller's backend, or
    on one built from the spec, closed after its cells."""
    if workers > 1:
        yield _distributed(workers, ray_address)
    elif backend is not None:
        yield _local(backend)
    else:
        shared = make_backend(spec.backend, cache=spec.cache, **spec.backend_options)
        try:
            yield _local(shared)
        finally:
            shared.close()


def _local(backend: Backend) -> CellRunner:
    return lambda spec, out, progress: execute(spec, out, progress=progress, backend=backend)


def _distributed(workers: int, ray_address: str | None) -> CellRunner:
    from deliberation.runs.distributed import execute_distributed

    return lambda spec, out, progress: execute_distributed(spec, out, workers, ray_address, progress=progress)


def _run_cell(cell: Cell, run: CellRunner, progress: bool, tag: str,
              notify: Callable[[str], None] | None) -> Summary | str:
    """Run one cell -> its summary, or its error message. Its directory gets ``cell.json`` (the label the
    report shows) once the spec is known to be valid."""
    if notify is not None:
        notify(f"{tag} {cell.label} on {cell.benchmark}/{cell.spec.split} seed {cell.seed} -> {cell.out}")
    try:
        validate(cell.spec)
        write_json_atomic(make_folder(cell.out) / CELL, {"label": cell.label, "method": cell.method, "seed": cell.seed})
        return run(cell.spec, str(cell.out), progress)
    except DelibError as err:
        return str(err)


def _finish(cfg: ExperimentConfig, cells: Sequence[Cell], outcomes: Sequence[Summary | str],
            report: ReportWriter | None) -> list[Summary]:
    """Write the report over the cells that ran; raise the failures, if any, as one line (cells that
    failed for the same reason listed under it once)."""
    done = [c.out for c, o in zip(cells, outcomes) if isinstance(o, Summary)]
    by_error: dict[str, list[str]] = {}
    for cell, outcome in zip(cells, outcomes):
        if isinstance(outcome, str):
            by_error.setdefault(outcome, []).append(str(cell.out.relative_to(cfg.out)))
    if done and report is not None:
        report(done, Path(cfg.out) / "report")
    if by_error:
        failed = sum(map(len, by_error.values()))
        where = ("no cell ran" if not done else f"report of the rest in {Path(cfg.out) / 'report'}" if report
                 else "the rest ran")
        reasons = "; ".join(f"{', '.join(names)}: {error}" for error, names in by_error.items())
        raise DelibError(f"{failed} of {len(cells)} cells failed ({where}); fix and rerun to resume. {reasons}")
    return [o for o in outcomes if isinstance(o, Summary)]
