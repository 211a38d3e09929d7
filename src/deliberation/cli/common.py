"""What every ``delib`` command shares: the parser class, backend and engine flags, registry names.

Engine flags are generated from ``EngineConfig`` (cli/flags.py): its field docstrings are the help text and
its defaults the flags' defaults.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from deliberation.backends.cache import CACHE_FILE
from deliberation.cli import flags
from deliberation.errors import BadText, DelibError, parse_json, writable_file, writable_folder

if TYPE_CHECKING:
    from deliberation.config import EngineConfig

LOG = logging.getLogger("deliberation")


def registry_names() -> tuple[list[str], list[str], list[str]]:
    from deliberation.backends import BACKENDS
    from deliberation.benchmarks import BENCHMARKS
    from deliberation.methods import METHODS

    return list(METHODS), sorted(BENCHMARKS), sorted(BACKENDS)


DATA_DIR_HELP = ("benchmark data directory holding <benchmark>/<split>.jsonl, the questions are read from it "
                 "(default: $DELIB_DATA_DIR, installed packages, then the Hugging Face hub)")
CACHE_HELP = ("SQLite response cache (default: <out>/../responses.sqlite shared by sibling runs, none for the "
              "scripted backend; 'none' disables)")


def add_backend_args(p: argparse.ArgumentParser, cache_help: str = CACHE_HELP, questions: bool = True) -> None:
    """Backend choice and options shared by run, collect and iterate (``cache_help`` says where the
    command's default cache lives); ``questions`` False (``delib ask``, one question) leaves out --data-dir and
    --concurrency."""
    from deliberation.backends.team import TEAM

    _, _, backends = registry_names()
    shown = [b for b in backends if b != TEAM]  # a team is made by `delib run --team`, not named
    p.add_argument("--backend", default="llamacpp", help="LLM backend: " + ", ".join(shown) + " (default llamacpp; "
                   "each agent on its own model: `delib run --team`)")
    p.add_argument("--model", help="model: a catalogue name (see `delib models`), a .gguf path, a local HF "
                   f"folder (hf) or the server's model id (openai, vllm); default: llamacpp's {default_model()} "
                   "(hf, vllm and openai need one)")
    p.add_argument("--base-url", help="openai backend: server URL, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--backend-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="backend constructor option, repeatable, e.g. n_threads=2 (llamacpp), device=cuda (hf), "
                   f"tensor_parallel_size=2 (vllm); openai (defaults shown): {option_defaults('openai')}: "
                   "timeout_s bounds one attempt, total_timeout_s one request with its retries "
                   "(docs/guides/backends.md)")
    p.add_argument("--cache", type=cache_file, default=None, help=cache_help)
    if not questions:
        return
    p.add_argument("--data-dir", help=DATA_DIR_HELP)
    p.add_argument("--concurrency", type=positive, default=1, metavar="N",
                   help="questions in flight at once, their requests merged into one batch per step (default 1; "
                   "on a CPU, 3 lets llama.cpp batch 9 requests instead of 3; outputs then depend on the batch)")


def default_model(backend: str = "llamacpp") -> str:
    """The model ``backend`` runs without --model, read off its constructor."""
    from deliberation.backends import backend_options

    return str(backend_options(backend)["model"].default)


def option_defaults(backend: str) -> str:
    """The backend's constructor options with their defaults, ``name=value`` (those with a flag of their own
    left out): read off the constructor, so the help never disagrees with the code."""
    import inspect

    from deliberation.backends import backend_options

    params = backend_options(backend).values()
    return ", ".join(f"{p.name}={p.default}" for p in params
                     if p.default is not inspect.Parameter.empty and p.name not in ("model", "base_url"))


def out_folder(text: str) -> str:
    """The type of every --out that names a folder: refused before anything runs when it cannot be one
    (empty, a file, below a file, not writable; ``errors.writable_folder``)."""
    writable_folder(text, "--out")
    return text


def cache_file(text: str) -> str:
    """The type of --cache: 'none', or a file that can be written (``errors.writable_file``), refused before
    anything runs and in the flag's words (the library names its parameter ``cache``)."""
    if text != "none":
        writable_file(text, "--cache", CACHE_FILE)
    return text


def flag_words(err: DelibError) -> str:
    """``err``'s message as the command line says it: backend options it names as the flags that pass them."""
    from deliberation.backends import MissingOptions

    return err.worded(lambda option: backend_flag(option, err.role)) if isinstance(err, MissingOptions) else str(err)


def backend_flag(option: str, role: str = "") -> str:
    """How the command line passes a backend option (of the backend in ``role``: ``--optimizer-model`` ...)."""
    if role:
        return {"model": f"--{role}-model", "base_url": f"--{role}-base-url"}.get(option,
                                                                                 f"--{role}-opt {option}=VALUE")
    return {"model": "--model", "base_url": "--base-url", "members": "--team MODEL,MODEL"}.get(
        option, f"--backend-opt {option}=VALUE")


def out_file(text: str) -> str:
    """The type of an --out that names one file (``delib bench``): the same checks for a file."""
    writable_file(text, "--out", "bench.json")
    return text


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


PINNABLE = ("agents", "rounds")
"""Engine flags a method may override (cot: one agent, no rounds): they default to None, so ``note_pinned``
can tell a value given from the default, which ``engine_config`` fills in."""


def add_engine_args(p: argparse.ArgumentParser, only: tuple[str, ...] | None = None) -> None:
    """Every EngineConfig field as a flag (--agents, --rounds, ..., --no-early-stop, --verbal-confidence), or
    ``only`` those a command reads (the others keep their defaults: a flag it would ignore is not offered)."""
    from deliberation.config import EngineConfig

    flags.add_flags(p, EngineConfig, only=only)
    p.set_defaults(**dict.fromkeys(n for n in PINNABLE if only is None or n in only))


def engine_config(args: argparse.Namespace):
    """The EngineConfig the flags give: --agents not given is --team's size, or the default."""
    from deliberation.config import EngineConfig

    values = flags.values(args, EngineConfig)
    team = getattr(args, "team", None)
    defaults = {"agents": len(team) if team else EngineConfig.agents, "rounds": EngineConfig.rounds}
    for name in PINNABLE:
        if name in values and values[name] is None:
            values[name] = defaults[name]
    return EngineConfig(**values)


def note_pinned(args: argparse.Namespace, method: str, engine: EngineConfig) -> None:
    """Warn (one line on stderr) when the method overrides an --agents, --team or --rounds given (cot: one
    agent, no rounds; self-consistency: no rounds; oracle: one round), so the run is not mistaken for what was
    asked. A warning, not an error: a loop over methods with one set of flags is how comparisons are run."""
    from deliberation import methods

    pinned = methods.get(method).engine(engine)  # engine: ``engine_config(args)``
    for name in PINNABLE:
        given = _given_as(args, name)
        if given and getattr(pinned, name) != getattr(engine, name):
            hint = dict(methods.get(method).pinned_hints).get(name)
            shown = dict(methods.get(method).pinned_shown).get(name, f"{name} = {getattr(pinned, name)}")
            LOG.warning("delib: note: method %s runs with %s; %s does not apply%s", method, shown, given,
                        f" ({hint})" if hint else "")
    _note_no_early_stop(args, method, pinned.agents)


def _note_no_early_stop(args: argparse.Namespace, method: str, agents: int) -> None:
    """Warn when a method that samples until its rule holds cannot stop before ``agents`` samples: it is then
    self-consistency over all of them, which is not what its name promises."""
    from deliberation import methods
    from deliberation.methods.options import MethodOptions

    earliest = methods.get(method).earliest_stop
    least = None if earliest is None else earliest(MethodOptions(**flags.values(args, MethodOptions)))
    if least is not None and agents <= least:
        LOG.warning("delib: note: method %s can stop only after %d samples agree, so at --agents %d it draws all "
                    "%d on every question (self-consistency); pass --agents above %d to let it stop early", method,
                    least, agents, agents, least)


def _given_as(args: argparse.Namespace, name: str) -> str:
    """How the command line set ``name`` (``--agents 5``, ``--team (3 models)``), or '' when it did not."""
    if getattr(args, name, None) is not None:
        return f"--{name} {getattr(args, name)}"
    team = getattr(args, "team", None)
    return f"--team ({len(team)} models)" if name == "agents" and team else ""


def add_team_arg(p: argparse.ArgumentParser) -> None:
    """--team: one model per agent; it sets --agents when --agents is not given (``engine_config``)."""
    p.add_argument("--team", type=flags.names, metavar="MODEL,MODEL",
                   help="one model per agent, on --backend with its --backend-opt, e.g. qwen2.5-coder-1.5b,"
                   "qwen2.5-coder-0.5b,qwen2.5-coder-1.5b (a model named twice is loaded once); sets --agents to "
                   "the number of models (docs/guides/backends.md, 'Mixed teams'; per-agent backends: an "
                   "experiment's [[agents]])")


def run_backend(args: argparse.Namespace) -> tuple[str, dict]:
    """The backend and its options: --backend with its options, or with --team a team of them, one model
    per agent (``backends/team.py``)."""
    options = backend_options(args)
    if not getattr(args, "team", None):
        return args.backend, options
    if args.model:
        raise DelibError("--team names every agent's model; drop --model (or drop --team for one model)")
    from deliberation.backends.team import TEAM, team_options

    return TEAM, team_options(args.team, args.backend, options)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (the problem and where help is) that start like every other delib error
    (``delib: error:``, whichever subcommand's flag it is), and no abbreviated long options: ``delib tree`` has
    --samples, --subset and --subset-seed, so a prefix (``--s``) or a typo would silently set another flag.
    ``add_parser`` builds every subcommand's parser with this class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, allow_abbrev=False, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog.split()[0]}: error: {message}; see `{self.prog} --help`\n")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """Refuse an argument no flag takes here, so that a subcommand's stray flag points to that command's
        help (argparse hands it up to ``delib``, whose help does not list it)."""
        found, extra = super().parse_known_args(args, namespace)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return found, extra


def add_data_args(p: argparse.ArgumentParser, split: str = "test") -> None:
    """--benchmark (a registered name or a JSONL file), --answer-type, --split and the question selection
    (--ids, --offset, --subset, --subset-seed) with --limit: shared by run, tree and the optimisations (whose
    questions are training ones: ``split`` is their default)."""
    from deliberation.benchmarks.own import ANSWER_TYPES

    _, bench_names, _ = registry_names()
    p.add_argument("--benchmark", default="gsm8k", help=", ".join(bench_names) + " or a JSONL file of your own "
                   "questions with --answer-type (default gsm8k)")
    p.add_argument("--answer-type", choices=list(ANSWER_TYPES), help="how a --benchmark FILE is scored and its "
                   "answers agree (docs/guides/running.md, 'Your own questions')")
    p.add_argument("--split", default=split, help=f"split (default {split})")
    p.add_argument("--limit", type=positive, help="first N questions only (of the selection)")
    add_selection_args(p)


def add_selection_args(p: argparse.ArgumentParser) -> None:
    """--ids, --offset, --subset, --subset-seed: which questions of the split (``selection`` reads them)."""
    from deliberation.config import Selection

    flags.add_flags(p, Selection)


def benchmark_name(args: argparse.Namespace) -> str:
    """--benchmark as ``benchmarks.get`` knows it: a registered name, or ``<answer type>:<file>``."""
    from deliberation.benchmarks import BENCHMARKS
    from deliberation.benchmarks.own import ANSWER_TYPES, file_name

    if args.answer_type is None:
        if args.benchmark not in BENCHMARKS and (args.benchmark.endswith(".jsonl") or Path(args.benchmark).is_file()):
            raise DelibError(f"--benchmark {args.benchmark} is a file of your own: say how its answers are scored "
                             f"with --answer-type ({'|'.join(ANSWER_TYPES)})")
        return args.benchmark
    if args.benchmark in BENCHMARKS:
        raise DelibError(f"--answer-type is for a JSONL file of your own; {args.benchmark} has its own scorer: "
                         "drop --answer-type")
    return file_name(args.answer_type, args.benchmark)


def selection(args: argparse.Namespace):
    """The question selection the flags of ``add_data_args`` give."""
    from deliberation.config import Selection

    chosen = Selection(ids=args.ids, **flags.values(args, Selection, skip=("ids",)))
    if chosen.subset is None and chosen.subset_seed != 0:  # it would be recorded, and read by nothing
        raise DelibError("--subset-seed seeds --subset only; pass --subset N with it, or leave it out")
    return chosen


def add_quiet_arg(p: argparse.ArgumentParser) -> None:
    """``--quiet``: every long-running command shows progress bars on stderr unless asked not to."""
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def add_ray_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=positive, default=1, help="Ray workers (default 1: no Ray; `delib run` "
                   "given --ray-address runs on that cluster even so)")
    p.add_argument("--ray-address", help="Ray cluster address (default: start a local Ray when --workers > 1; "
                   "an experiment uses it only with --workers > 1)")


def _option_value(text: str, kind: tuple[type, bool] | None) -> object:
    """A --backend-opt value as the type the backend declares for the option (``kind``: the type and whether
    it takes none); text that is not one stays text, for ``check_options`` to refuse naming the type. An
    option of no plain declared type is read as int, float, true/false, a JSON list (``skills=[0.5,0.6]``), or
    the text."""
    if kind is not None and kind[1] and text.lower() == "none":
        return None
    if kind is None and text.startswith("["):
        try:
            return parse_json(text)  # strict: no NaN or infinity
        except BadText:
            return text
    converters = [int, float] if kind is None else [kind[0]] if kind[0] in (int, float) else []
    for convert in converters:
        try:
            return convert(text)
        except ValueError:
            pass
    if kind is not None and kind[0] is str:
        return text
    return {"true": True, "false": False}.get(text.lower(), text)


def backend_options(args: argparse.Namespace, flag: str = "--backend-opt") -> dict:
    """The options ``args`` give a backend (``flag``: the repeatable flag that carries them)."""
    from deliberation.backends import option_kinds

    kinds = option_kinds(args.backend)
    opts = {}
    for item in args.backend_opt:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise DelibError(f"{flag} takes KEY=VALUE, got {item!r}")
        if key.strip() in opts:  # the last would win silently
            raise DelibError(f"{flag} gives {key.strip()} twice; give each option once")
        opts[key.strip()] = _option_value(value.strip(), kinds.get(key.strip()))
    role = "" if flag == "--backend-opt" else flag.removeprefix("--").removesuffix("-opt")  # optimizer
    for option, given in (("model", args.model), ("base_url", args.base_url)):
        if given and option in opts:
            raise DelibError(f"{backend_flag(option, role)} and {flag} {option}= both give the {option}; give it "
                             "once")
        if given:
            opts[option] = given
    return opts


def cache_path(args: argparse.Namespace, out: str) -> str | None:
    """The response cache: explicit, disabled, or shared by the run directories beside ``out``."""
    if args.cache == "none" or args.backend == "scripted" and args.cache is None:
        return None
    return args.cache or str(Path(out).parent / CACHE_FILE)


def set_data_dir(args: argparse.Namespace) -> None:
    """``--data-dir`` for this process and the workers it starts (they read $DELIB_DATA_DIR), refused before
    anything runs when it is not a folder (``sources.require_folder``)."""
    from deliberation.benchmarks.helpers.sources import require_folder

    if args.data_dir is not None:
        os.environ["DELIB_DATA_DIR"] = str(require_folder(args.data_dir))


def command_line(args: argparse.Namespace) -> str:
    """The command as typed (the arguments ``main`` parsed), for config.json and manifest.json."""
    return shlex.join(["delib", *args.argv])


def workload(args: argparse.Namespace, **given: Any) -> dict[str, Any]:
    """Every ``Workload`` field from the shared flags (benchmark, split, limit, backend and its options, cache,
    engine, data folder, the command, questions in flight, question selection), as the keyword arguments of
    any spec built on ``Workload`` (``RunSpec``, ``TreeSpec``, ``CollectSpec``, ...); ``given`` holds what a
    command decides itself (``delib run``'s team backend, a cache beside ``--out``), and no flag is read for
    it."""
    read = {"benchmark": lambda: benchmark_name(args), "split": lambda: args.split, "limit": lambda: args.limit,
            "backend": lambda: args.backend, "backend_options": lambda: backend_options(args),
            "cache": lambda: args.cache, "engine": lambda: engine_config(args), "data_dir": lambda: args.data_dir,
            "command": lambda: command_line(args), "concurrency": lambda: args.concurrency,
            "selection": lambda: selection(args)}
    return {name: given[name] if name in given else flag() for name, flag in read.items()}
