"""The team backend (backends/team.py) on scripted members with distinct models: routing by agent, one call
per member per batch in request order, one instance per distinct member, cache keys that ignore the agent,
and the checks made before anything loads."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from deliberation.backends import check_options, context_window, team_size
from deliberation.benchmarks.answers import make_backend
from deliberation.backends.cache import request_key
from deliberation.backends.team import TeamBackend, agent_models, team_options
from deliberation.benchmarks import get as get_benchmark
from deliberation.engine import prompts
from deliberation.errors import DelibError
from deliberation.types import Completion, GenerationRequest, Message, Purpose, RequestKind

SCRIPTED = {"benchmark": "gsm8k"}


def scripted_team(*models: str, **shared) -> TeamBackend:
    return make_backend("team", **team_options(models, "scripted", {**SCRIPTED, **shared}))


def question() -> str:
    bench = get_benchmark("gsm8k")
    return bench.format_question(bench.load("test", limit=1)[0])


def request(agent: int | None, seed: int = 7) -> GenerationRequest:
    return GenerationRequest(prompts.initial_messages(question()), max_tokens=64, seed=seed, agent=agent,
                             purpose=Purpose(RequestKind.ANSWER, "gsm8k/test/0", question(), 0))


class Recorder:
    """Forwards to a member, noting each call's requests (which agents, in which order)."""

    def __init__(self, inner) -> None:
        self.inner, self.batches = inner, []
        self.name, self.model, self.supports_logprobs = inner.name, inner.model, inner.supports_logprobs

    def generate(self, requests):
        self.batches.append([r.agent for r in requests])
        return self.inner.generate(requests)

    def close(self) -> None:
        self.inner.close()


def test_agents_naming_one_model_share_one_member_and_each_member_is_called_once_in_order():
    team = scripted_team("strong", "weak", "strong", "weak", "strong")
    assert team.assignment == (0, 1, 0, 1, 0) and len(team.members) == 2
    assert [m.model for m in team.members] == ["strong", "weak"]
    team.members = [Recorder(m) for m in team.members]
    agents = [4, 1, 0, 3, 2, 1]
    outs = team.generate([request(a, seed=10 + i) for i, a in enumerate(agents)])
    assert [m.batches for m in team.members] == [[[4, 0, 2]], [[1, 3, 1]]]
    alone = make_backend("scripted", model="strong", **SCRIPTED)  # the scripted agent reads its seed alone
    assert [o.text for o in outs] == [alone.generate([request(a, seed=10 + i)])[0].text for i, a in enumerate(agents)]


def test_a_request_for_no_agent_goes_to_agent_0_and_one_past_the_team_is_refused():
    team = scripted_team("weak", "strong")
    team.members = [Recorder(m) for m in team.members]
    team.generate([request(None)])
    assert [m.batches for m in team.members] == [[[None]], []]
    with pytest.raises(DelibError, match="agent 2, but the team has models for 2 agents"):
        team.generate([request(2)])


def test_the_agent_is_not_part_of_the_cache_key():
    """Adding the field must not change a key: every cache written before it would miss. The pinned key is
    the one the code before the field gave this request."""
    plain = GenerationRequest((Message("user", "1 + 1"),), max_tokens=8, seed=3)
    keys = {request_key("llamacpp", "qwen", replace(plain, agent=a)) for a in (None, 0, 2)}
    assert keys == {"bc1a56ce3a6eac7ac74c0e068dc6ada9c3af7c9968d8ed2892b68eea127dcfd1"}


def test_each_member_caches_under_its_own_model(tmp_path: Path):
    cache = tmp_path / "responses.sqlite"
    strong = make_backend("scripted", cache=str(cache), model="strong", **SCRIPTED)
    strong.generate([request(None, seed=s) for s in (1, 2)])
    strong.close()
    team = make_backend("team", cache=str(cache), **team_options(["strong", "weak"], "scripted", SCRIPTED))
    outs = team.generate([request(0, seed=1), request(1, seed=1), request(0, seed=2)])
    assert [o.cached for o in outs] == [True, False, True]
    assert [m.stats.hits for m in team.members] == [2, 0]
    team.close()


def test_latency_adds_the_members_called_before():
    team = scripted_team("a", "b")

    class Slow:
        def __init__(self, inner, seconds):
            self.inner, self.seconds = inner, seconds

        def generate(self, requests):
            return [replace(c, latency_s=self.seconds) for c in self.inner.generate(requests)]

    team.members = [Slow(team.members[0], 2.0), Slow(team.members[1], 3.0)]
    outs = team.generate([request(1), request(0)])
    assert [o.latency_s for o in outs] == [3.0, 5.0]  # agent 1's member first: it asked first


def test_a_member_returning_too_few_completions_is_named():
    team = scripted_team("a", "b")

    class Short:
        def generate(self, requests):
            return [Completion("x", 1, 1)]

    team.members[1] = Short()
    with pytest.raises(DelibError, match="team member b returned 1 completions for 2 requests"):
        team.generate([request(1), request(1, seed=8)])


def test_labels_tell_apart_members_sharing_a_model_name():
    options = team_options(["m", {"model": "m", "skills": [0.9]}, "other"], "scripted", SCRIPTED)
    assert agent_models("team", options) == ["m", "m (skills=[0.9])", "other"]
    assert agent_models("scripted", {"model": "m"}) == []
    team = make_backend("team", **options)
    assert team.model == "m,m (skills=[0.9]),other" and len(team.members) == 3


def test_team_options_give_a_table_its_own_backend_and_the_shared_options_only_on_the_same_backend():
    options = team_options(["a", {"backend": "openai", "model": "b", "base_url": "u"}], "scripted",
                           {"benchmark": "gsm8k"})
    assert options == {"members": [{"backend": "scripted", "benchmark": "gsm8k", "model": "a"},
                                   {"backend": "openai", "model": "b", "base_url": "u"}]}


@pytest.mark.parametrize("members, message", [
    ([], "a team needs one model per agent"),
    ([{"model": "x"}], "team agent 0: .* is not a table of a backend name"),
    ([{"backend": "scripted"}, {"backend": "nope"}], "team agent 1: unknown backend 'nope'"),
    ([{"backend": "team", "members": []}], "team agent 0: a team member cannot be a team"),
    ([{"backend": "scripted", "skils": 0.5}], "team agent 0: backend 'scripted' takes no option skils"),
    ([{"backend": "llamacpp", "model": "qwen-typo"}], "team agent 0: unknown model 'qwen-typo'"),
    ([{"backend": "llamacpp", "model": "missing/x.gguf"}], "team agent 0: model file missing/x.gguf does not exist"),
])
def test_bad_members_are_refused_before_anything_is_built(members, message):
    with pytest.raises(DelibError, match=message):
        check_options("team", {"members": members})


def test_a_team_without_members_names_the_option():
    with pytest.raises(DelibError, match="needs option members"):  # the CLI's words: tests/cli/test_input_errors.py
        check_options("team", {})


def test_team_size_and_the_smallest_context_window_are_known_before_loading(tmp_path: Path):
    gguf = tmp_path / "model.gguf"  # checked to exist, never loaded
    gguf.write_bytes(b"")
    members = [{"backend": "llamacpp", "model": str(gguf), "n_ctx": 4096},
               {"backend": "llamacpp", "model": str(gguf)}, {"backend": "scripted"}]
    assert team_size("team", {"members": members}) == 3 and team_size("scripted", {}) is None
    assert context_window("team", {"members": members}) == 4096


def test_close_closes_every_member_even_when_one_fails() -> None:
    team = scripted_team("m-a", "m-b", "m-c")
    closed = []

    class Failing:
        def close(self) -> None:
            raise RuntimeError("boom")

    class Recording:
        def __init__(self, name: str) -> None:
            self.name = name

        def close(self) -> None:
            closed.append(self.name)

    team.members = [Failing(), Recording("b"), Recording("c")]
    with pytest.raises(RuntimeError, match="boom"):
        team.close()
    assert closed == ["b", "c"]
