"""The paired experiment's analysis lives beside the scripts that run it (``experiments/looks``), outside the
package; its tests import it as those scripts do, with the scripts' folder on the path."""

from __future__ import annotations

import sys
from pathlib import Path

EXPERIMENTS = str(Path(__file__).resolve().parents[2] / "experiments")
if EXPERIMENTS not in sys.path:
    sys.path.insert(0, EXPERIMENTS)
