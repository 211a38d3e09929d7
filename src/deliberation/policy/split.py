"""``split.json`` of a ``delib train`` run, beside its checkpoint (``split_file`` finds it): the question ids the
run trained on and those it held out, so a run started from the checkpoint (``--init``), a run of it (``delib run
--method mpdf --policy``) or a comparison of it (``delib compare``) can refuse a question it trained on. Its
record, its one writer and its one reader; in ``policy``, the layer every one of them may read.

The file keeps the keys, and the order of the keys, it always had: ``train``, then ``held_out``, each a sorted
list of ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from deliberation.errors import DelibError, read_json
from deliberation.files import write_text_atomic
from deliberation.types import from_json, strict_json, to_json

SPLIT_FILE = "split.json"
"""Beside a training run's checkpoint: the question ids it trained on and held out."""
FIX = "copy it again from the training run that wrote it, or delete it (a check that reads it then says so)"


def split_file(checkpoint: Path) -> Path:
    """Where the questions ``checkpoint`` trained on are recorded: ``<name>.split.json`` beside it (a shipped
    checkpoint, which shares its folder with others), else its training run's ``split.json``. The path may
    not exist (a checkpoint whose questions are unknown)."""
    own = checkpoint.parent / f"{checkpoint.stem}.{SPLIT_FILE}"
    return own if own.is_file() else checkpoint.parent / SPLIT_FILE


def trained_on(checkpoint: Path) -> frozenset[str] | None:
    """The questions ``checkpoint`` trained on, as the split.json beside it lists them; None when it has none
    (a shipped checkpoint without one, or one copied without it: its questions are unknown)."""
    split = split_file(checkpoint)
    return frozenset(read_split(split).train) if split.is_file() else None


@dataclass(frozen=True)
class Split:
    """The questions of a training run: those it trained on, and those the trainer held out to validate on."""

    train: tuple[str, ...]
    held_out: tuple[str, ...]


def split_of(train: Iterable[str], held_out: Iterable[str]) -> Split:
    """The split of these question ids, each once, in sorted order (as the file lists them)."""
    return Split(tuple(sorted(set(train))), tuple(sorted(set(held_out))))


def write_split(folder: Path, split: Split) -> None:
    """Write split.json into the training directory ``folder`` (``read_split`` reads it back equal)."""
    write_text_atomic(folder / SPLIT_FILE, strict_json(to_json(split), indent=2) + "\n")


def read_split(path: Path) -> Split:
    """The split.json at ``path``; a damaged file, or one of another shape (a list missing, a text where a list
    belongs), is a one-line DelibError naming it, the entry and the fix."""
    try:
        return from_json(Split, read_json(path, FIX))
    except (TypeError, ValueError) as err:
        raise DelibError(f"{path} is not a split.json of `delib train` ({err}); {FIX}") from None
