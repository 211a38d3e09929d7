"""Every request the engine sends says what it is for (``types.Purpose``): kind, question, round and
the solutions its prompt shows, under either prompt set; the response-cache key ignores it; and a reader of
purposes refuses, in one line, a request that carries none."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Sequence

import pytest

from deliberation.backends.cache import request_key
from deliberation.benchmarks import get as get_benchmark
from deliberation.config import EngineConfig
from deliberation.engine import prompts
from deliberation.engine.loop import act, initial_round, make_context
from deliberation.backends.scripted import ScriptedBackend
from deliberation.benchmarks.answers import BenchmarkAnswers
from deliberation.engine.spec import MethodSpec
from deliberation.errors import DelibError
from deliberation.policy.rules import ConstantPolicy
from deliberation.trees.manifest import TreeManifest
from deliberation.trees.store import TreeBackend, TreeStore
from deliberation.actions import Action
from deliberation.types import Completion, GenerationRequest, Message


class Recording(ScriptedBackend):
    """The scripted simulator, keeping every request it answers."""

    def __init__(self) -> None:
        super().__init__(benchmark="gsm8k", answers=BenchmarkAnswers)
        self.seen: list[GenerationRequest] = []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        self.seen += requests
        return super().generate(requests)


@pytest.mark.parametrize("prompt_set", sorted(prompts.PROMPTS))
def test_each_request_carries_what_it_is_for(prompt_set: str) -> None:
    bench = get_benchmark("gsm8k")
    example = bench.load("test", 1)[0]
    backend = Recording()
    ctx = make_context(example, backend, bench, EngineConfig(prompts=prompt_set),
                       MethodSpec("t", ConstantPolicy(Action.REFINE), confidence=True))
    records, _ = initial_round(ctx)
    act(ctx, records, [Action.REFINE, Action.RESAMPLE, Action.PERSIST], 1)
    seen = [(r.purpose.kind, r.agent, r.purpose.round) for r in backend.seen]
    assert seen == [*(("answer", i, 0) for i in range(3)), *(("critic", i, 0) for i in range(3)),
                    ("update", 0, 1), ("answer", 1, 1), ("critic", 0, 1), ("critic", 1, 1)]
    assert {(r.purpose.example_id, r.purpose.question) for r in backend.seen} == {(example.id, ctx.question)}
    texts = [r.text for r in records]
    assert [r.purpose.own for r in backend.seen[3:6]] == texts  # short answers: shown whole
    update = backend.seen[6].purpose
    assert (update.own, update.peers) == (texts[0], tuple(texts[1:]))
    assert backend.seen[7].messages == prompts.initial_messages(ctx.question)  # a RESAMPLE: a fresh answer


def test_the_purpose_is_not_part_of_the_request_key() -> None:
    """Adding it must not change a key: every cache and tree store written before it would miss."""
    bench = get_benchmark("gsm8k")
    backend = Recording()
    ctx = make_context(bench.load("test", 1)[0], backend, bench, EngineConfig(),
                       MethodSpec("t", ConstantPolicy(Action.REFINE), confidence=True))
    initial_round(ctx)
    assert all(request_key("scripted", "m", r) == request_key("scripted", "m", replace(r, purpose=None))
               for r in backend.seen)


def test_a_request_that_says_not_what_it_is_for_is_refused_in_one_line(tmp_path: Path) -> None:
    bare = GenerationRequest(prompts.initial_messages("What is 2 + 3?"), max_tokens=8)
    with pytest.raises(DelibError, match="^scripted backend: the request says not what it is for") as err:
        ScriptedBackend(benchmark="gsm8k", answers=BenchmarkAnswers).generate([bare])
    assert "\n" not in str(err.value)
    store = TreeStore.create(tmp_path / "s", TreeManifest(
        backend="scripted", model="m", scope="m", supports_logprobs=True, backend_options={}, benchmark="gsm8k",
        split="test", temperature=0.7, max_tokens=8, seed=0, verbal_confidence=False, prompt_version=2, agents=3,
        samples=3))
    store.unlock()
    with pytest.raises(DelibError, match="^tree store: the request says not what it is for"):
        TreeBackend(store, None).generate([GenerationRequest((Message("user", "hi"),))])
