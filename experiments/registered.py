"""Refuse a look whose checkpoints are not the registered ones: each checkpoint's full sha256 must appear in
the registration (docs/results/paired/PREREGISTRATION.md, amendment 5 names them), so no look can run a
policy chosen or retrained after the registration was committed.

    python experiments/registered.py REGISTRATION CHECKPOINT [CHECKPOINT ...]

A CHECKPOINT is a path or a shipped name (``--policy`` reads it the same way). Exit 0 and a line per
checkpoint when all are registered; exit 2 with a one-line error naming the first that is not.
"""

from __future__ import annotations

import sys
from pathlib import Path

from deliberation.errors import DelibError
from deliberation.policy.shipped import checkpoint_path, sha256_hex


def main(registration: Path, checkpoints: list[str]) -> int:
    if not registration.is_file():
        print(f"registration {registration} not found: pass REGISTRATION=FILE", file=sys.stderr)
        return 2
    text = registration.read_text()
    for name in checkpoints:
        try:
            path = checkpoint_path(name)
        except DelibError as e:
            print(e, file=sys.stderr)
            return 2
        if not path.is_file():
            print(f"checkpoint {name} not found", file=sys.stderr)
            return 2
        digest = sha256_hex(path)
        if digest not in text:
            print(f"checkpoint {name} (sha256 {digest}) is not registered in {registration}: a look runs only "
                  "the checkpoints an amendment committed before it", file=sys.stderr)
            return 2
        print(f"{name}: sha256 {digest} registered")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python experiments/registered.py REGISTRATION CHECKPOINT [CHECKPOINT ...]")
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))
