"""Policy checkpoints: save atomically, load refusing other feature sets, load a named policy once.

A checkpoint is a ``torch.save`` of plain values (state dict, architecture, feature contract, meta), so
``weights_only`` loading accepts it. Names of shipped checkpoints resolve through ``policy/shipped.py``.
"""

from __future__ import annotations

import functools
import json
import os
import pickle
from pathlib import Path
from typing import Any, Mapping, Sequence

import torch

from deliberation.engine.state import FEATURE_NAMES, FEATURE_VERSION
from deliberation.errors import DelibError
from deliberation.policy.learned import TrainedPolicy
from deliberation.policy.network import MetaPolicyNet, net_from_arch
from deliberation.policy.shipped import checkpoint_path

CHECKPOINT_FORMAT = "deliberation-policy"
CHECKPOINT_FORMAT_VERSION = 1
@functools.lru_cache(maxsize=8)
def load_learned(policy: str) -> TrainedPolicy:
    """The policy ``policy`` names (a path or a shipped name), loaded once per process, refusing one
    built for other features than this build's."""
    return load_policy(checkpoint_path(policy), FEATURE_NAMES, FEATURE_VERSION)


def save_policy(path: str | os.PathLike, net: MetaPolicyNet, feature_names: Sequence[str],
                feature_version: int, meta: Mapping[str, Any]) -> Path:
    """Write a checkpoint (state dict, architecture, feature contract, ``meta`` of JSON-able values; a
    TypeError names anything else) atomically: a temporary file in the same folder is renamed over ``path``."""
    target = Path(path)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "format_version": CHECKPOINT_FORMAT_VERSION,
        "arch": net.arch(),
        "state_dict": {k: v.detach().cpu().clone() for k, v in net.state_dict().items()},
        "feature_names": list(feature_names),
        "feature_version": int(feature_version),
        "meta": json.loads(json.dumps(dict(meta))),  # plain values only, so weights_only loading accepts it
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    torch.save(payload, tmp)
    os.replace(tmp, target)
    return target


def load_policy(path: str | os.PathLike, feature_names: Sequence[str], feature_version: int) -> TrainedPolicy:
    """Load a checkpoint written by ``save_policy``; refuse one trained on other features (DelibError)."""
    payload = _read_checkpoint(Path(path))
    _check_features(payload, tuple(feature_names), int(feature_version))
    net = net_from_arch(payload["arch"])
    net.load_state_dict(payload["state_dict"])
    net.eval()
    return TrainedPolicy(net=net, feature_names=tuple(feature_names), feature_version=int(feature_version))


def load_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The ``meta`` dict stored in a checkpoint (training config, metrics summary) without building a net."""
    return dict(_read_checkpoint(Path(path))["meta"])


def _read_checkpoint(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise DelibError(f"policy checkpoint {path} not found; train one with `delib train` or pass the path "
                         "of an existing policy.pt")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, EOFError, KeyError, RuntimeError, ValueError, pickle.UnpicklingError) as err:
        raise DelibError(f"{path} is not a deliberation policy checkpoint ({type(err).__name__}); pass a "
                         "policy.pt written by `delib train`") from err
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise DelibError(f"{path} is not a deliberation policy checkpoint; pass a policy.pt written by "
                         "`delib train`")
    return payload


def _check_features(payload: Mapping[str, Any], names: tuple[str, ...], version: int) -> None:
    """Raise DelibError naming the mismatch when the checkpoint's feature contract is not the caller's."""
    stored, stored_version = tuple(payload["feature_names"]), int(payload["feature_version"])
    if stored == names and stored_version == version:
        return
    detail = ""
    if len(stored) == len(names) and stored_version == version:
        first = next(i for i, (a, b) in enumerate(zip(stored, names)) if a != b)
        detail = f" (feature {first} is {stored[first]!r} there, {names[first]!r} here)"
    raise DelibError(f"policy expects {len(stored)} features of version {stored_version}, this build produces "
                     f"{len(names)} of version {version}{detail}; retrain with delib train")
