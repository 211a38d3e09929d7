"""``delib run`` and ``delib experiment`` from Python: the same specs and runners the CLI builds, without a
command line. One question (no gold answer) is ``runs/ask.py``'s ``deliberate``."""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from deliberation.backends.team import TEAM, team_options
from deliberation.benchmarks.own import file_name
from deliberation.config import EngineConfig, Selection
from deliberation.errors import DelibError, writable_folder
from deliberation.runs import experiment, experiment_file
from deliberation.runs.directory import Summary
from deliberation.runs.runner import RunSpec, execute


def run_benchmark(method: str, out: str | os.PathLike, benchmark: str = "gsm8k", *, answer_type: str | None = None,
                  split: str = "test", limit: int | None = None, selection: Selection | None = None,
                  backend: str = "llamacpp", model: str | None = None,
                  backend_options: Mapping[str, Any] | None = None, cache: str | None = None,
                  engine: EngineConfig | None = None, data_dir: str | None = None, concurrency: int = 1,
                  progress: bool = False, team: Sequence[str | Mapping[str, Any]] | None = None,
                  **method_options: Any) -> Summary:
    """Run ``method`` over a benchmark into the run directory ``out`` (resumable, as ``delib run``) and
    return its summary. ``benchmark`` is a registered name, or with ``answer_type`` a JSONL file of your
    own; ``selection`` picks questions (ids, offset, seeded subset) before ``limit``. ``cache`` is the
    SQLite response cache (none unless given; the CLI's default is ``<out>/../responses.sqlite``).
    ``team``: one model per agent (``delib run --team``): a name runs on ``backend`` with ``backend_options``,
    a mapping is an agent's own ``backend`` and options; ``engine`` then defaults to that many agents.
    ``method_options``: method options by name, as ``delib run``'s flags (the fields of ``MethodOptions``,
    methods/options.py: ``policy=``, ...)."""
    writable_folder(out, "out")  # as delib run --out is checked: an empty path would write into the current folder
    options = {**(backend_options or {}), **({"model": model} if model is not None else {})}
    if team is not None:
        if model is not None:
            raise DelibError("team names every agent's model; drop model= (or team= for one model)")
        backend, options = TEAM, team_options(team, backend, options)
        engine = engine or EngineConfig(agents=len(team))
    spec = RunSpec(method=method, benchmark=file_name(answer_type, benchmark) if answer_type else benchmark,
                   split=split, limit=limit, backend=backend, backend_options=options, cache=cache,
                   engine=engine or EngineConfig(), data_dir=data_dir, command=f"run_benchmark({method!r})",
                   concurrency=concurrency, selection=selection or Selection(), **method_options)
    return execute(spec, str(out), progress=progress)


def experiment_config(path: str | os.PathLike, limit: int | None = None, benchmarks: Sequence[str] | None = None,
                      methods: Sequence[str] | None = None,
                      backbones: Sequence[str] | None = None) -> experiment_file.ExperimentConfig:
    """The experiment file ``path`` cut as ``delib experiment``'s ``--limit``, ``--benchmarks``, ``--methods``
    and ``--backbones`` cut it (each a no-op when None)."""
    cfg = experiment_file.load_experiment(path)
    if limit is not None:
        cfg = experiment_file.cap_limits(cfg, limit)
    if benchmarks is not None:
        cfg = experiment_file.only_benchmarks(cfg, benchmarks)
    if methods is not None:
        cfg = experiment_file.only_methods(cfg, methods)
    if backbones is not None:
        cfg = experiment_file.only_backbones(cfg, backbones)
    return cfg


def run_experiment(path: str | os.PathLike, *, limit: int | None = None, benchmarks: Sequence[str] | None = None,
                   methods: Sequence[str] | None = None, backbones: Sequence[str] | None = None, workers: int = 1,
                   ray_address: str | None = None, progress: bool = False,
                   report: experiment.ReportWriter | None = None) -> list[Summary]:
    """Run (or resume) the experiment file ``path`` as ``delib experiment`` does; ``report``
    (``deliberation.write_report``) writes its report into ``<out>/report``. Returns the cells' summaries
    in plan order."""
    cfg = experiment_config(path, limit, benchmarks, methods, backbones)
    return experiment.run_experiment(cfg, progress=progress, workers=workers, ray_address=ray_address,
                                     report=report)
