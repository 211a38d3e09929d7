"""Golden outputs of the redesign (issue: one folder per concept): what today's code produces, recorded
before anything moved, so a test can show the new layout computes exactly the same things.

Three artefacts, each made through the CLI (whose flags and files the redesign keeps):
- every registered method on the scripted backend, 30 GSM8K test questions, seed 0: episodes.jsonl with
  the timing fields (wall_seconds, generation_seconds) removed;
- scripted ``delib collect`` runs on GSM8K train, behaviour the agreement rule and the shipped policy
  (both epsilon-mixed): the rollout rows (decisions, rewards, log-probs);
- ``delib train --algo sft`` then ``--algo softrankpo --init`` on those rollouts: the checkpoint tensors.

They were recorded with the prompts of version 1 (``--prompts standalone``). The same episodes with the
default prompts, version 2 (``--prompts continuation``), were recorded later, from a tree that reproduced
the first three: they pin what the default prompts send from then on (the scripted backend draws each answer
from a hash of its request's last message, so a changed word in any critic or update prompt changes them).

``python tests/goldens/golden.py`` rewrites the stored files (only ever from a known-good tree);
``python tests/goldens/golden.py continuation`` only the continuation episodes.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROLLOUT_ROWS, CHECKPOINTS = HERE / "rollouts.json.gz", HERE / "checkpoints.pt"
EPISODES = {"standalone": HERE / "episodes.json.gz", "continuation": HERE / "episodes-continuation.json.gz"}
"""The episodes' goldens by prompt set (``--prompts``)."""
METHODS = ("cot", "self-consistency", "debate", "reconcile", "dylan", "mpdf", "always-persist", "always-refine",
           "always-concede", "confidence-threshold", "agreement-threshold")
TIMING = ("wall_seconds", "generation_seconds")
QUESTIONS, COLLECT_QUESTIONS = 30, 12
PROMPTS = ("--prompts", "standalone")
"""The redesign's goldens were recorded with prompt version 1, which ``--prompts standalone`` still sends (flag
added with version 2; the recorded commands had no such flag)."""


def _delib(*argv: str) -> None:
    from deliberation.cli.main import main

    code = main([*argv])
    if code != 0:
        raise RuntimeError(f"delib {' '.join(argv)} exited {code}")


def episodes(work: Path, method: str, prompts: str = "standalone") -> list[dict[str, Any]]:
    """The episodes of ``method`` over the golden questions with the ``prompts`` set, timing fields removed."""
    out = work / prompts / method
    _delib("run", "--method", method, "--benchmark", "gsm8k", "--limit", str(QUESTIONS), "--backend", "scripted",
           "--seed", "0", "--quiet", "--out", str(out), "--prompts", prompts)
    rows = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k not in TIMING} for row in rows]


def collect(work: Path, policy: str | None = None, limit: int = COLLECT_QUESTIONS) -> Path:
    """A scripted rollout collection on GSM8K train (behaviour: the agreement rule, or ``policy``
    epsilon-mixed); returns its directory."""
    out = work / f"rollouts-{policy or 'rule'}"
    extra = ("--policy", policy) if policy else ()
    _delib("collect", "--benchmark", "gsm8k", "--split", "train", "--limit", str(limit), "--backend",
           "scripted", "--joint-actions", "4", "--quiet", "--out", str(out), *PROMPTS, *extra)
    return out


def rollout_rows(directory: Path) -> list[dict[str, Any]]:
    with gzip.open(directory / "rollouts.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f]


def train(work: Path, rollouts: Path) -> dict[str, Any]:
    """SFT, then SoftRankPO from it; the two checkpoints' state dicts."""
    import torch

    sft, srpo = work / "sft", work / "srpo"
    _delib("train", "--algo", "sft", "--rollouts", str(rollouts), "--epochs", "3", "--out", str(sft))
    _delib("train", "--algo", "softrankpo", "--rollouts", str(rollouts), "--init", str(sft / "policy.pt"),
           "--epochs", "3", "--out", str(srpo))
    load = lambda p: torch.load(p / "policy.pt", map_location="cpu", weights_only=True)["state_dict"]  # noqa: E731
    return {"sft": load(sft), "softrankpo": load(srpo)}


def record_episodes(work: Path, prompts: str) -> None:
    _write_gz(EPISODES[prompts], {m: episodes(work, m, prompts) for m in METHODS})


def record(work: Path) -> None:
    import torch

    for prompts in EPISODES:
        record_episodes(work, prompts)
    rollouts = collect(work)
    _write_gz(ROLLOUT_ROWS, {"rule": rollout_rows(rollouts), "learned": rollout_rows(collect(work, "default", 6))})
    torch.save(train(work, rollouts), CHECKPOINTS)


def _write_gz(path: Path, data: Any) -> None:
    with gzip.open(path, "wt") as f:
        json.dump(data, f, sort_keys=True)


def read_gz(path: Path) -> Any:
    with gzip.open(path, "rt") as f:
        return json.load(f)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        if sys.argv[1:] == ["continuation"]:
            record_episodes(Path(tmp), "continuation")
        else:
            record(Path(tmp))
    sys.exit(0)
