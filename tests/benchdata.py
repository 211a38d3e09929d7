"""The benchmark data folder the tests read: $DELIB_DATA_DIR, which tests/conftest.py sets to the shared folder
beside the repository when there is one. None on a clone with no data folder until tests/conftest.py points
$DELIB_DATA_DIR at its stand-in GSM8K train (tests/standin.py): loaders read every other split from the
installed data packages (the Makefile's setup installs them when it finds no folder)."""

from __future__ import annotations

import os
from pathlib import Path


def data_folder() -> Path | None:
    """The configured data folder, or None when there is none."""
    folder = os.environ.get("DELIB_DATA_DIR")
    return Path(folder).resolve() if folder else None
