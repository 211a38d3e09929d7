"""Prompt sets (issue 26): continuation prompts extend the agent's own conversation, every request reads back
into what it asks, and the registry names both versions."""

from __future__ import annotations

import pytest

from deliberation.engine import prompts
from deliberation.errors import DelibError
from deliberation.types import Message

QUESTION = "Tom has 3 apples and buys 4 more. How many apples does he have?"
OWN = "3 + 4 = 7. The answer is 7."
PEERS = ("3 + 4 = 8. The answer is 8.", "He has 7 apples.")


def _history() -> tuple[Message, ...]:
    return prompts.answered(QUESTION, OWN)


@pytest.mark.parametrize("style", [prompts.REFINE, prompts.DEBATE, prompts.RECONCILE])
def test_continuation_update_starts_with_the_agents_conversation(style: prompts.UpdateStyle) -> None:
    history = _history()
    request = prompts.get("continuation").update(style, QUESTION, history, PEERS, [0.9, 0.2])
    assert request[: len(history)] == history and len(request) == len(history) + 1
    assert request[-1].role == "user" and all(p in request[-1].content for p in PEERS)
    assert ("confidence 0.90" in request[-1].content) == style.confidences


@pytest.mark.parametrize("verbal", [False, True])
def test_continuation_critic_starts_with_the_agents_conversation(verbal: bool) -> None:
    history = _history()
    request = prompts.get("continuation").critic(QUESTION, history, verbal)
    assert request[: len(history)] == history and request[-1].role == "user"


@pytest.mark.parametrize("name", sorted(prompts.PROMPTS))
def test_every_request_reads_back_into_what_it_asks(name: str) -> None:
    chosen = prompts.get(name)
    history = _history()
    answer = prompts.parse(prompts.initial_messages(QUESTION))
    critic = prompts.parse(chosen.critic(QUESTION, history, True))
    update = prompts.parse(chosen.update(prompts.REFINE, QUESTION, history, PEERS, [None, None]))
    assert (answer.kind, answer.question) == ("answer", QUESTION)
    assert (critic.kind, critic.question, critic.own, critic.verbal) == ("critic", QUESTION, OWN, True)
    assert (update.kind, update.question, update.own, update.peers) == ("update", QUESTION, OWN, PEERS)


def test_standalone_requests_hold_no_assistant_turn_and_keep_version_one() -> None:
    chosen = prompts.get("standalone")
    request = chosen.update(prompts.DEBATE, QUESTION, _history(), PEERS, [None, None])
    assert chosen.version == 1 and prompts.get("continuation").version == 2
    assert all(m.role != "assistant" for m in request) and prompts.question_in(request) == QUESTION


def test_an_unknown_prompt_set_is_refused_with_the_known_names() -> None:
    with pytest.raises(DelibError, match="continuation"):
        prompts.get("chatty")
