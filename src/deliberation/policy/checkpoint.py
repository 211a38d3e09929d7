"""Policy checkpoints: save atomically, load verified (refusing other feature sets), load a named one once.

A checkpoint is a ``torch.save`` of plain values (state dict, architecture, feature contract, meta), so
``weights_only`` loading accepts it. Names of shipped checkpoints resolve through ``policy/shipped.py``.

Loading verifies what it reads, because ``torch.load`` does not: it ignores the CRC-32 the zip archive
keeps of every member, so a flipped bit in the weights loaded silently (values up to 1e24). Checked in
order: every member's CRC (``zipfile.testzip``), the fields and their types, the state dict's keys and
shapes against the module its ``arch`` builds, finite weights. Any failure is one DelibError naming the file
and what is wrong.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import shutil
import zipfile
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import torch

from deliberation.engine.features import PAPER, contract
from deliberation.errors import DelibError, existing, make_folder, write_error
from deliberation.policy.learned import TrainedPolicy
from deliberation.policy.network import MetaPolicyNet, net_from_arch
from deliberation.policy.shipped import checkpoint_path

CHECKPOINT_FORMAT = "deliberation-policy"
CHECKPOINT_FORMAT_VERSION = 1


@dataclass(frozen=True)
class Kind:
    """A kind of checkpoint this format stores: its format mark, what it is called and how to get one."""

    format: str
    what: str
    fix: str


POLICY = Kind(CHECKPOINT_FORMAT, "deliberation policy checkpoint",
              "train one with `delib train` or pass the path of an existing policy.pt")
ALLOCATOR = Kind("deliberation-allocator", "compute-allocation checkpoint",
                 "train one with `delib train-allocator` or pass a shipped allocator's name")
KINDS = (POLICY, ALLOCATOR)
"""Every kind of checkpoint the package writes, declared here (not by the modules that load them) so that a
file of one kind passed as another is named for what it is whichever modules were imported. The allocator's
network and loader are in ``allocate/network.py``."""
_FIELDS = {"arch": dict, "state_dict": dict, "feature_names": list, "feature_version": int, "meta": dict}
"""The fields ``save_policy`` writes besides the format marks, and their types."""


@functools.lru_cache(maxsize=8)
def load_learned(policy: str) -> TrainedPolicy:
    """The policy ``policy`` names (a path or a shipped name), loaded once per process, refusing one
    built for a feature set this build does not register (engine/features.py)."""
    path = Path(checkpoint_path(policy))
    payload = read_checkpoint(path)  # read and verified once
    found = contract(payload["feature_names"], payload["feature_version"]) or PAPER
    return _policy(path, payload, found.names, found.version)


def save_policy(path: str | os.PathLike, net: MetaPolicyNet, feature_names: Sequence[str],
                feature_version: int, meta: Mapping[str, Any]) -> Path:
    """Write a checkpoint (state dict, architecture, feature contract, ``meta`` of JSON-able values; a
    TypeError names anything else) atomically: a temporary file in the same folder is renamed over ``path``."""
    return save_checkpoint(path, POLICY, net, feature_names, feature_version, meta)


def save_checkpoint(path: str | os.PathLike, kind: Kind, net: torch.nn.Module, feature_names: Sequence[str],
                    feature_version: int, meta: Mapping[str, Any]) -> Path:
    """``save_policy`` for any kind of checkpoint (a network with an ``arch()``)."""
    target = Path(path)
    payload = {
        "format": kind.format,
        "format_version": CHECKPOINT_FORMAT_VERSION,
        "arch": net.arch(),
        "state_dict": {k: v.detach().cpu().clone() for k, v in net.state_dict().items()},
        "feature_names": list(feature_names),
        "feature_version": int(feature_version),
        "meta": json.loads(json.dumps(dict(meta))),  # plain values only, so weights_only loading accepts it
    }
    tmp = make_folder(target.parent) / f".{target.name}.tmp{os.getpid()}"
    try:
        torch.save(payload, tmp)
        os.replace(tmp, target)
    except (OSError, RuntimeError) as err:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise _unwritten(err, target) from err
    return target


def _unwritten(err: OSError | RuntimeError, target: Path) -> DelibError:
    """The one line for a checkpoint that could not be written (``errors.write_error``). torch reports a failed
    write as a RuntimeError without its cause ("file write failed"): a disk with (almost) no space left is
    taken as the cause then."""
    if isinstance(err, OSError):
        return write_error(err, target)
    if shutil.disk_usage(target.parent).free < 1 << 20:
        return write_error(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), target)
    return DelibError(f"cannot write {target}: {' '.join(str(err).split())[:200]}; check its disk, then rerun")


def load_policy(path: str | os.PathLike, feature_names: Sequence[str], feature_version: int) -> TrainedPolicy:
    """Load a checkpoint written by ``save_policy``; refuse one trained on other features (DelibError)."""
    return _policy(Path(path), read_checkpoint(Path(path)), feature_names, feature_version)


def _policy(path: Path, payload: dict[str, Any], feature_names: Sequence[str], feature_version: int) -> TrainedPolicy:
    """The policy of checkpoint ``payload`` (read from ``path``), refused when trained on other features."""
    _check_features(payload, tuple(feature_names), int(feature_version))
    net = net_for(path, payload, net_from_arch)
    net.load_state_dict(payload["state_dict"])
    net.eval()
    return TrainedPolicy(net=net, feature_names=tuple(feature_names), feature_version=int(feature_version))


def load_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The ``meta`` dict stored in a checkpoint (training config, metrics summary) without building a net."""
    return dict(read_checkpoint(Path(path))["meta"])


def read_checkpoint(path: Path, kind: Kind = POLICY) -> dict[str, Any]:
    """The payload of the checkpoint at ``path``, its archive intact and its fields of the right types."""
    existing(path, kind.what, kind.fix, inside="*.pt")
    _check_archive(path, kind)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # an odd pickle can fail anywhere in the unpickler (IndexError, struct.error, ...)
        raise DelibError(f"{path} is not a {kind.what} (torch.load: {type(err).__name__}); {kind.fix}") from err
    if not isinstance(payload, dict) or payload.get("format") != kind.format:
        other = next((k for k in KINDS if isinstance(payload, dict) and payload.get("format") == k.format), None)
        found = f" but a {other.what}" if other is not None else ""
        raise DelibError(f"{path} is not a {kind.what}{found}; {kind.fix}")
    for field, type_ in _FIELDS.items():
        if not isinstance(payload.get(field), type_):
            wrong = "missing" if field not in payload else f"not a {type_.__name__}"
            raise damaged(path, f"its {field!r} is {wrong}", kind)
    return payload


def _check_archive(path: Path, kind: Kind) -> None:
    """Refuse a file that is no zip archive (truncated, foreign) or whose members fail their CRC-32."""
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except Exception as err:  # a damaged directory can fail anywhere in zipfile (BadZipFile, UnicodeDecodeError)
        raise DelibError(f"{path} is not a {kind.what} (no intact zip archive: {type(err).__name__}); "
                         f"{kind.fix}") from err
    if bad is not None:
        raise damaged(path, f"member {bad} fails its checksum", kind)


def net_for(path: Path, payload: Mapping[str, Any], build: Callable[[Mapping[str, Any]], torch.nn.Module],
            kind: Kind = POLICY) -> Any:
    """The module ``build`` makes of the payload's ``arch``, once its state dict fits it: the same keys, the
    same shapes, floating-point tensors, finite values. The shapes come from a module on the ``meta`` device
    (no memory), so a hand-made arch asking for a huge network is refused before anything is allocated."""
    try:
        with torch.device("meta"):
            expected = build(payload["arch"]).state_dict()
    except (DelibError, KeyError, TypeError, ValueError) as err:
        raise damaged(path, f"its arch describes no network of its kind ({err})", kind) from err
    stored = payload["state_dict"]
    if set(stored) != set(expected):
        odd = ", ".join(sorted(map(str, set(stored) ^ set(expected))))
        raise damaged(path, f"its weights do not fit its arch (keys missing or extra: {odd})", kind)
    for key, want in expected.items():
        have = stored[key]
        if not isinstance(have, torch.Tensor) or not have.is_floating_point() or have.shape != want.shape:
            got = tuple(have.shape) if isinstance(have, torch.Tensor) else type(have).__name__
            raise damaged(path, f"weight {key} is {got}, its arch needs a float tensor of {tuple(want.shape)}",
                          kind)
        if not bool(torch.isfinite(have).all()):
            raise damaged(path, f"weight {key} holds NaN or infinite values", kind)
    return build(payload["arch"])


def damaged(path: Path, what: str, kind: Kind = POLICY) -> DelibError:
    """The one line for a checkpoint of ``kind`` that cannot be trusted, and the ways out."""
    return DelibError(f"{kind.what} {path} cannot be used: {what}; copy it again from where it came from, "
                      f"or {kind.fix}")


class FeatureMismatch(DelibError):
    """A checkpoint that reads other features than the caller's (``mismatch``: which, without a fix, for a
    caller that knows the fix better: ``delib train --init``)."""

    def __init__(self, mismatch: str) -> None:
        self.mismatch = mismatch
        super().__init__(f"{mismatch}; retrain with delib train")


def _check_features(payload: Mapping[str, Any], names: tuple[str, ...], version: int) -> None:
    """Raise DelibError naming the mismatch when the checkpoint's feature contract is not the caller's."""
    stored, stored_version = tuple(payload["feature_names"]), int(payload["feature_version"])
    if stored == names and stored_version == version:
        return
    detail = ""
    if len(stored) == len(names) and stored_version == version:
        first = next(i for i, (a, b) in enumerate(zip(stored, names)) if a != b)
        detail = f" (feature {first} is {stored[first]!r} there, {names[first]!r} here)"
    raise FeatureMismatch(f"policy expects {len(stored)} features of version {stored_version}, this build "
                          f"produces {len(names)} of version {version}{detail}")
