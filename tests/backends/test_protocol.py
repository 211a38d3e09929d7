"""The Backend protocol (backends/base.py): a backend with only the required members runs `delib run` with
every optional member at its documented default, and a class or a backend lacking one is named."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Sequence

import pytest

from deliberation.backends import BACKENDS, check_options, make_backend
from deliberation.backends.base import Capabilities, cache_scope_of, capabilities, interrupt
from deliberation.backends.cache import request_key
from deliberation.cli.main import main
from deliberation.types import Completion, GenerationRequest


class MinimalBackend:
    """The required members and nothing else: every request is answered 42."""

    name = "minimal"
    supports_logprobs = False
    seen: list[GenerationRequest] = []  # every request generated, over all instances

    def __init__(self, model: str = "minimal-v0") -> None:
        self.model = model

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        MinimalBackend.seen.extend(requests)
        return [Completion("We add them up. The answer is 42.", 10, 8) for _ in requests]

    def close(self) -> None:
        pass


class Unclosable:
    name, model, supports_logprobs = "unclosable", "m", False

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        return []


class Nameless(MinimalBackend):
    def __init__(self) -> None:
        self.model = None  # type: ignore[assignment]


class SaysItCaches(MinimalBackend):
    caches_itself = "yes"


@pytest.fixture
def registered(monkeypatch):
    """Register this module's classes by name for one test (monkeypatch removes them afterwards)."""
    def register(name: str, cls: type) -> str:
        monkeypatch.setitem(BACKENDS.table, name, f"{__name__}:{cls.__name__}")
        return name
    MinimalBackend.seen.clear()
    return register


def test_a_backend_with_only_the_required_members_runs_delib_run_at_every_default(tmp_path: Path, registered):
    registered("minimal", MinimalBackend)
    out = tmp_path / "runs" / "debate"
    assert main(["run", "--backend", "minimal", "--method", "debate", "--agents", "3", "--rounds", "2",
                 "--limit", "2", "--out", str(out), "--quiet"]) == 0
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 2 and MinimalBackend.seen  # no context window or team size held it back
    with sqlite3.connect(tmp_path / "runs" / "responses.sqlite") as conn:  # wrapped: it does not cache itself
        stored = {key for key, in conn.execute("SELECT key FROM completions")}
    assert stored == {request_key("minimal", "minimal-v0", r) for r in MinimalBackend.seen}  # scope: the model


def test_every_optional_member_of_a_minimal_backend_is_its_default(registered):
    registered("minimal", MinimalBackend)
    assert capabilities(MinimalBackend) == Capabilities()
    backend = make_backend("minimal", model="any name")
    assert cache_scope_of(backend) == "any name"
    interrupt(backend)  # a backend that cannot stop is left alone
    assert backend.generate([]) == []
    check_options("team", {"members": [{"backend": "minimal", "model": "no such model"}]})  # check_model accepts


@pytest.mark.parametrize("cls, lacking", [
    (Unclosable, "lacks close()"),
    (Nameless, "lacks model (str)"),
    (SaysItCaches, "caches_itself is not what"),
])
def test_a_backend_lacking_a_member_is_named_when_it_is_made(registered, cls, lacking):
    with pytest.raises(TypeError, match=re.escape(lacking)):
        make_backend(registered("broken", cls))
