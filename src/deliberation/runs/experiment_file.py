"""An experiment file: the TOML grid ``delib experiment`` runs (``runs/experiment.py``), read and validated.

A config (see ``experiments/table1.toml``) names methods, benchmarks, seeds, per-benchmark split, limit
and question selection, the backend and the engine settings, plus optional ``[[variants]]``: a method under
its own label with overrides (an mpdf policy file, engine settings), optional ``[[agents]]``: each
agent's own model, a mixed team (``runs/experiment_agents.py``), and optional ``[[backbones]]``: models the
whole grid runs on, ``${NAME}`` environment variables in backend options and ``{backbone}`` in a variant's
paths (``runs/experiment_backbones.py``). ``load_experiment`` checks everything that can be
checked without running (keys, names, types, splits, backend options) and raises a one-line DelibError
before any file is written; a policy file is checked when its cell runs (``runner.validate``).
``cap_limits``, ``only_benchmarks``, ``only_methods`` and ``only_backbones`` cut a parsed file as ``delib
experiment``'s ``--limit``, ``--benchmarks``, ``--methods`` and ``--backbones`` do.
"""

from __future__ import annotations

import os
import re
import tomllib
import typing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, NoReturn, Sequence

from deliberation import benchmarks
from deliberation.benchmarks import own
from deliberation.benchmarks.helpers.sources import require_folder
from deliberation.backends import BACKENDS, backend_options, team_size
from deliberation.config import EngineConfig, Selection
from deliberation.errors import DelibError, existing, read_user_text, repeated, require_at_least, writable_folder
from deliberation import methods
from deliberation.methods import METHODS
from deliberation.methods.options import MethodOptions, Variant
from deliberation.runs import experiment_agents as agents
from deliberation.runs import experiment_backbones as backbones
from deliberation.runs.experiment_backbones import Backbone
from deliberation.backends.cache import CACHE_FILE
from deliberation.types import renamed

TOP_KEYS = ("name", "out", "methods", "benchmarks", "seeds", "split", "limit", "data_dir", "backend", "engine",
            "variants", "concurrency", "selection", "agents", "backbones")
SELECTION_TYPES: dict[str, type] = {"ids": list, "offset": int, "subset": int, "subset_seed": int}
ENGINE_TYPES: dict[str, type] = {k: v for k, v in typing.get_type_hints(EngineConfig).items() if k != "seed"}
OPTION_TYPES: dict[str, type] = {k: typing.get_args(v)[0] if type(None) in typing.get_args(v) else v
                                  for k, v in typing.get_type_hints(MethodOptions).items()}
"""The method options a variant may set, with the TOML type each takes (TOML has no null: ``X | None`` takes X)."""
VARIANT_KEYS = ("label", "method", *OPTION_TYPES, *ENGINE_TYPES)
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")  # labels name directories


@dataclass(frozen=True)
class ExperimentConfig:
    """A parsed, validated experiment file."""

    name: str
    out: str
    arms: tuple[Variant, ...]
    """The plain methods (labelled by name) followed by the variants."""
    benchmarks: tuple[str, ...]
    seeds: tuple[int, ...]
    splits: dict[str, str] = field(default_factory=dict)
    limits: dict[str, int | None] = field(default_factory=dict)
    backend: str = "llamacpp"
    backend_options: dict[str, Any] = field(default_factory=dict)
    data_dir: str | None = None
    source: str = ""
    """The file it was read from (for messages and the runs' recorded command)."""
    concurrency: int = 1
    """Questions in flight at once within a cell (``delib run --concurrency``)."""
    command: str = ""
    """The command recorded in every cell's run (``delib experiment SOURCE`` when empty)."""
    selections: dict[str, Selection] = field(default_factory=dict)
    """Per benchmark, which of its questions the cells run (``[selection]``; default: all, in order)."""
    backbones: tuple[Backbone, ...] = (Backbone(),)
    """The models the grid runs on, in order (``[[backbones]]``); by default the one [backend] names."""

    @property
    def cache(self) -> Path:
        return Path(self.out) / CACHE_FILE

    def backend_of(self, backbone: Backbone) -> dict[str, Any]:
        """The backend options of ``backbone``'s cells: [backend]'s, with the backbone's over them."""
        return {**self.backend_options, **backbone.options}


def load_experiment(path: str | os.PathLike) -> ExperimentConfig:
    """Read and validate an experiment TOML file; nothing is written."""
    path = existing(path, "experiment file", "pass an experiment's TOML file (docs/guides/experiments.md)")
    try:
        raw = tomllib.loads(read_user_text(path, "experiment file"))
    except tomllib.TOMLDecodeError as err:
        raise DelibError(f"{path} is not valid TOML: {err}") from err
    except RecursionError:  # tomllib follows nested arrays and tables by recursion
        raise DelibError(f"{path} nests arrays or tables too deeply to read; an experiment needs a few "
                         "levels") from None
    return parse_experiment(raw, str(path))


def parse_experiment(raw: Mapping[str, Any], source: str = "experiment") -> ExperimentConfig:
    """Validate the TOML table ``raw`` (``source`` names it in messages)."""
    _known(raw, TOP_KEYS, "top-level key", source)
    name = _label(_get(raw, "name", str, source), "name", source)
    names = _benchmark_names(raw, source)
    backend, options = _backend(_get(raw, "backend", dict, source, {}), source)
    backend, options = agents.team_backend(raw.get("agents"), backend, options, source)
    models = team_size(backend, options)
    engine = _engine(_get(raw, "engine", dict, source, {}), agents.base_engine(models), "[engine]", source)
    arms = tuple(Variant(m, m, engine=engine) for m in _names(raw, "methods", list(METHODS), source))
    arms += tuple(_variant(v, engine, i, source) for i, v in enumerate(_get(raw, "variants", list, source, [])))
    _check_arms(arms, source)
    for arm in arms:
        agents.check_arm(arm.label, arm.method, arm.engine, models, source)
    return ExperimentConfig(name, _out(raw, name, source), arms, names, _seeds(raw, source),
                            _splits(raw.get("split", "test"), names, source),
                            _limits(raw.get("limit"), names, source), backend, options,
                            _data_dir(raw, source), source, _concurrency(raw, source),
                            selections=_selections(raw.get("selection"), names, source),
                            backbones=backbones.parse(raw, backend, {a.label: a.method_options() for a in arms},
                                                       source))


def _data_dir(raw: Mapping[str, Any], source: str) -> str | None:
    """``data_dir``, refused before any cell runs when it is not a folder (``sources.require_folder``)."""
    data_dir = _get(raw, "data_dir", str, source, None)
    if data_dir is not None:
        try:
            require_folder(data_dir)
        except DelibError as err:
            _fail(source, f"data_dir: {err}")
    return data_dir


def _out(raw: Mapping[str, Any], name: str, source: str) -> str:
    """``out``, checked as ``delib run --out`` is (a folder that can be written), before any cell runs."""
    out = _get(raw, "out", str, source, f"runs/{name}")
    try:
        writable_folder(out, "out")
    except DelibError as err:
        _fail(source, str(err))
    return out


def cap_limits(cfg: ExperimentConfig, cap: int) -> ExperimentConfig:
    """``cfg`` with every benchmark's limit at most ``cap`` (``delib experiment --limit``): a first, smaller
    table from the same file. The limit is a resumable setting, so rerunning without the cap extends the
    same cells to the file's limits."""
    require_at_least("--limit", cap)
    limits = {b: cap if n is None else min(n, cap) for b, n in cfg.limits.items()}
    return replace(cfg, limits=limits, command=f"delib experiment {cfg.source} --limit {cap}")


def only_benchmarks(cfg: ExperimentConfig, names: Sequence[str]) -> ExperimentConfig:
    """``cfg`` cut to the benchmarks ``names``, run in the order given (``delib experiment --benchmarks``):
    on a small machine the cheap benchmarks of a grid can come first. Each cell is the one the whole file
    runs, so the command recorded in the runs stays the file's."""
    return replace(cfg, benchmarks=_subset(names, cfg.benchmarks, "--benchmarks", "benchmark", cfg.source))


def only_methods(cfg: ExperimentConfig, labels: Sequence[str]) -> ExperimentConfig:
    """``cfg`` cut to the rows ``labels`` (methods and variant labels), in the order given (``delib
    experiment --methods``): extend the methods a comparison turns on to more questions first. The cells
    are the whole file's, as for ``only_benchmarks``."""
    arms = {arm.label: arm for arm in cfg.arms}
    chosen = _subset(labels, tuple(arms), "--methods", "method", cfg.source)
    return replace(cfg, arms=tuple(arms[label] for label in chosen))


def only_backbones(cfg: ExperimentConfig, labels: Sequence[str]) -> ExperimentConfig:
    """``cfg`` cut to the backbones ``labels``, in the order given (``delib experiment --backbones``): one
    model at a time, as one server serves it. The cells are the whole file's, as for ``only_benchmarks``."""
    by_label = {b.label: b for b in cfg.backbones if b.label}  # "": a file without [[backbones]] names none
    chosen = _subset(labels, tuple(by_label), "--backbones", "[[backbones]] table", cfg.source)
    return replace(cfg, backbones=tuple(by_label[label] for label in chosen))


def _subset(names: Sequence[str], available: Sequence[str], flag: str, what: str, source: str) -> tuple[str, ...]:
    """``names`` if each is one of ``available`` and none repeats; else a one-line error naming the flag."""
    unknown = next((n for n in names if n not in available), None)
    if unknown is not None:
        held = f": {', '.join(available)}" if available else f" no {what}"
        raise DelibError(f"{flag}: {unknown!r} is not in {source}; it has{held}")
    if not names or len(set(names)) != len(names):
        raise DelibError(f"{flag} must name each {what} once, got {','.join(names) or 'nothing'}")
    return tuple(names)


def _concurrency(raw: Mapping[str, Any], source: str) -> int:
    value = _get(raw, "concurrency", int, source, 1)
    if value < 1:
        _fail(source, f"concurrency must be at least 1, got {value}")
    return value


def _fail(source: str, message: str) -> NoReturn:
    raise DelibError(f"{source}: {message}")


def _known(table: Mapping[str, Any], valid: Sequence[str], what: str, source: str, hint: str = "",
           formers: Mapping[str, str] | None = None) -> None:
    """Refuse a key of ``table`` not in ``valid``; one of ``formers`` (a former name to the name) says its name."""
    unknown = [k for k in table if k not in valid]
    if unknown and unknown[0] in (formers or {}):
        _fail(source, f"{what} {unknown[0]!r} is now {formers[unknown[0]]!r} (same meaning): rename it")
    if unknown:
        _fail(source, f"unknown {what} {unknown[0]!r}; valid: {', '.join(valid)}{hint}")


def _get(table: Mapping[str, Any], key: str, kind: type, source: str, default: Any = ..., where: str = "") -> Any:
    """``table[key]`` checked to be a ``kind`` (int passes as float, bool never passes as a number)."""
    if key not in table:
        if default is ...:
            _fail(source, f"missing {where}{key!r}")
        return default
    value = table[key]
    if not _is(value, kind):
        _fail(source, f"{where}{key!r} must be {kind.__name__}, got {value!r}")
    return float(value) if kind is float else value


def _is(value: Any, kind: type) -> bool:
    if isinstance(value, bool):  # bool is an int in Python, but `agents = true` is a mistake
        return kind is bool
    return isinstance(value, (int, float) if kind is float else kind)


def _label(value: str, what: str, source: str) -> str:
    if not LABEL.fullmatch(value):
        _fail(source, f"{what} {value!r} must be letters, digits, '.', '_', '+' or '-' (it names a directory)")
    return value


def _names(raw: Mapping[str, Any], key: str, valid: Sequence[str], source: str) -> tuple[str, ...]:
    """A list of registry names, each checked against ``valid``."""
    values = _get(raw, key, list, source, [])
    for v in values:
        if v not in valid:
            _fail(source, f"unknown {key[:-1]} {v!r} in {key}; choose from: {', '.join(valid)}")
    if len(set(values)) != len(values):
        _fail(source, f"{key!r} lists a name twice: {values}")
    return tuple(values)


def _benchmark_names(raw: Mapping[str, Any], source: str) -> tuple[str, ...]:
    """``benchmarks``: registered names, or JSONL files of one's own as ``"<answer type>:<path>"`` (the path
    relative to where delib runs, as ``delib run --benchmark FILE --answer-type TYPE``), each read and checked
    now, not when its cells come; each benchmark gets a folder of its own (``own.folder_name``)."""
    values = _get(raw, "benchmarks", list, source)
    if not values:
        _fail(source, f"'benchmarks' is empty; choose from: {', '.join(sorted(benchmarks.BENCHMARKS))}")
    for value in values:
        _check_benchmark(value, source)
    seen: dict[str, str] = {}  # folder -> the benchmark that has it
    for value in values:
        folder = own.folder_name(value)
        if folder in seen:  # the same name twice, or two files of one stem
            _fail(source, f"benchmarks {seen[folder]!r} and {value!r} would share the folder {folder}: "
                          "list a benchmark once, and give files of your own different names")
        seen[folder] = value
    return tuple(values)


def _check_benchmark(value: Any, source: str) -> None:
    """A registered name, or ``"<answer type>:<path>"`` naming a readable file of that answer type."""
    if isinstance(value, str) and value in benchmarks.BENCHMARKS:
        return
    parsed = own.parse_name(value) if isinstance(value, str) else None
    if parsed is None or parsed.path is None:
        _fail(source, f"unknown benchmark {value!r} in benchmarks; choose from: "
                      f"{', '.join(sorted(benchmarks.BENCHMARKS))}, or a file of your own as '<answer type>:<path>' "
                      f"({'|'.join(own.ANSWER_TYPES)})")
    try:
        own.read_examples(Path(parsed.path), parsed.answer_type)
    except DelibError as err:
        _fail(source, f"benchmarks: {err} (paths are relative to the folder delib runs in)")


def _engine(table: Mapping[str, Any], base: EngineConfig, where: str, source: str) -> EngineConfig:
    """``base`` with the engine settings of ``table`` (run seeds come from the top-level ``seeds``)."""
    _known(table, tuple(ENGINE_TYPES), f"key in {where}", source, " (run seeds go in the top-level seeds list)")
    values = {k: _get(table, k, ENGINE_TYPES[k], source, where=f"{where} ") for k in table}
    try:
        return replace(base, **values)
    except DelibError as err:
        _fail(source, f"{where}: {err}")


def _variant(table: Any, base: EngineConfig, index: int, source: str) -> Variant:
    where = f"[[variants]] #{index + 1}"
    if not isinstance(table, dict):
        _fail(source, f"{where} must be a table with label and method")
    _known(table, VARIANT_KEYS, f"key in {where}", source)
    label = _label(_get(table, "label", str, source, where=f"{where} "), "label", source)
    method = _get(table, "method", str, source, where=f"{where} ")
    if method not in METHODS:
        _fail(source, f"unknown method {method!r} in {where}; choose from: {', '.join(METHODS)}")
    options = {k: _get(table, k, OPTION_TYPES[k], source, where=f"{where} ") for k in OPTION_TYPES if k in table}
    unused = methods.unread(options, (method,))  # a key written in the file is given, even at its default
    if unused:
        _fail(source, f"{where} ({label}): {unused} means nothing to method {method!r}; drop it")
    engine = _engine({k: v for k, v in table.items() if k in ENGINE_TYPES}, base, where, source)
    try:
        return Variant(label, method, engine=engine, **options)
    except DelibError as err:
        _fail(source, f"{where}: {err}")


def _check_arms(arms: Sequence[Variant], source: str) -> None:
    if not arms:
        _fail(source, "no methods and no variants: list methods = [...] or add [[variants]]")
    labels = [a.label for a in arms]
    twice = repeated(labels)
    if twice:
        _fail(source, f"label {twice!r} is used twice (a variant's label must differ from the methods')")


def _seeds(raw: Mapping[str, Any], source: str) -> tuple[int, ...]:
    seeds = _get(raw, "seeds", list, source, [0])
    if not seeds or not all(_is(s, int) for s in seeds) or len(set(seeds)) < len(seeds):
        _fail(source, f"seeds must be a non-empty list of distinct integers, got {seeds!r}")
    return tuple(seeds)


def _splits(value: Any, names: Sequence[str], source: str) -> dict[str, str]:
    """One split for all benchmarks, or a [split] table of per-benchmark overrides of 'test'."""
    if isinstance(value, dict):
        _known(value, names, "benchmark in [split]", source)
        splits = {b: _get(value, b, str, source, "test", where="[split] ") for b in names}
    elif isinstance(value, str):
        splits = {b: value for b in names}
    else:
        _fail(source, f"split must be a string or a table benchmark = split, got {value!r}")
    for b, split in splits.items():
        have = benchmarks.get(b).splits
        if split not in have:
            _fail(source, f"benchmark {b} has no split {split!r}; it has: {', '.join(have)} (use a [split] table)")
    return splits


def _limits(value: Any, names: Sequence[str], source: str) -> dict[str, int | None]:
    """No limit, one limit for all, or a [limit] table that must name every benchmark (a forgotten one
    would silently run the whole set)."""
    if value is None:
        return {b: None for b in names}
    if isinstance(value, dict):
        _known(value, names, "benchmark in [limit]", source)
        missing = [b for b in names if b not in value]
        if missing:
            _fail(source, f"[limit] has no entry for {', '.join(missing)}; give every benchmark a limit")
        limits = {b: _get(value, b, int, source, where="[limit] ") for b in names}
    else:
        limits = {b: _get({"limit": value}, "limit", int, source) for b in names}
    if any(n < 1 for n in limits.values()):
        _fail(source, f"limit must be at least 1 for every benchmark, got {limits}")
    return limits


def _selections(value: Any, names: Sequence[str], source: str) -> dict[str, Selection]:
    """A [selection] table: ids, offset, subset, subset_seed for every benchmark, and [selection.<benchmark>]
    tables that override them for one (ids belong to one benchmark)."""
    if value is None:
        return {b: Selection() for b in names}
    if not isinstance(value, dict):
        _fail(source, f"selection must be a table ([selection]), got {value!r}")
    _known(value, (*SELECTION_TYPES, *names), "key in [selection]", source, formers=renamed(Selection))
    common = {k: v for k, v in value.items() if k in SELECTION_TYPES}
    return {b: _selection({**common, **_get(value, b, dict, source, {}, where="[selection] ")}, f"[selection.{b}]",
                          source) for b in names}


def _selection(table: Mapping[str, Any], where: str, source: str) -> Selection:
    _known(table, tuple(SELECTION_TYPES), f"key in {where}", source, formers=renamed(Selection))
    values = {k: _get(table, k, SELECTION_TYPES[k], source, where=f"{where} ") for k in table}
    if "ids" in values and not (values["ids"] and all(isinstance(i, str) and i.strip() for i in values["ids"])):
        _fail(source, f"{where} ids must be a non-empty list of question ids, got {values['ids']!r} (leave ids out "
                      "for all questions)")
    try:
        return Selection(**{**values, "ids": tuple(values.get("ids", ()))})
    except DelibError as err:
        _fail(source, f"{where}: {err}")


def _backend(table: Mapping[str, Any], source: str) -> tuple[str, dict[str, Any]]:
    """The backend name and its options, checked against the backend class's constructor."""
    name = _get(table, "name", str, source, "llamacpp", where="[backend] ")
    if name not in BACKENDS:
        _fail(source, f"unknown backend {name!r} in [backend]; choose from: {', '.join(sorted(BACKENDS))}")
    options = {k: v for k, v in table.items() if k != "name"}
    params = backend_options(name)
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        _known(options, ("name", *params), f"option of backend {name} in [backend]", source)
    return name, options
