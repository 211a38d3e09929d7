"""The project's scripts (experiments/*.py, bench/*.py) imported as modules for their tests."""

from __future__ import annotations

import importlib.util
import sys
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Iterator

REPO = Path(__file__).resolve().parents[1]


@contextmanager
def script(relative: str) -> Iterator[ModuleType]:
    """The script at ``relative`` (to the repository root) as a module, registered in ``sys.modules`` under
    its stem while open (dataclasses look their module up there), and whatever was there before after."""
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    before = sys.modules.get(spec.name)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        if before is None:
            del sys.modules[spec.name]
        else:
            sys.modules[spec.name] = before
