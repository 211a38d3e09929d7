"""Prompt sets: continuation prompts extend the agent's own conversation, every prompt says what it
asks and carries the solutions it shows as they are shown, and the registry names both versions."""

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
    request = prompts.get("continuation").update(style, QUESTION, history, PEERS, [0.9, 0.2]).messages
    assert request[: len(history)] == history and len(request) == len(history) + 1
    assert request[-1].role == "user" and all(p in request[-1].content for p in PEERS)
    assert ("confidence 0.90" in request[-1].content) == style.confidences


@pytest.mark.parametrize("verbal", [False, True])
def test_continuation_critic_starts_with_the_agents_conversation(verbal: bool) -> None:
    history = _history()
    request = prompts.get("continuation").critic(QUESTION, history, verbal).messages
    assert request[: len(history)] == history and request[-1].role == "user"


@pytest.mark.parametrize("name", sorted(prompts.PROMPTS))
def test_every_prompt_says_what_it_asks_and_carries_the_solutions_as_shown(name: str) -> None:
    chosen = prompts.get(name)
    history = _history()
    critic = chosen.critic(QUESTION, history, True)
    update = chosen.update(prompts.REFINE, QUESTION, history, PEERS, [None, None])
    assert (critic.kind, critic.own) == ("critic", OWN)
    assert (update.kind, update.own, update.peers) == ("update", OWN, PEERS)


@pytest.mark.parametrize("name", sorted(prompts.PROMPTS))
def test_a_long_peer_solution_is_carried_as_the_prompt_clips_it(name: str) -> None:
    """What the scripted simulator judges is what the agent is shown: a long peer's last characters."""
    long = "x" * (2 * prompts.common.PEER_CHAR_LIMIT) + " The answer is 7."
    update = prompts.get(name).update(prompts.DEBATE, QUESTION, _history(), (long, *PEERS), [None] * 3)
    shown = update.messages[-1].content
    assert update.peers[1:] == PEERS and update.peers[0] != long and update.peers[0].endswith(" The answer is 7.")
    assert all(p in shown for p in update.peers)


def test_standalone_requests_hold_no_assistant_turn_and_keep_version_one() -> None:
    chosen = prompts.get("standalone")
    request = chosen.update(prompts.DEBATE, QUESTION, _history(), PEERS, [None, None]).messages
    assert chosen.version == 1 and prompts.get("continuation").version == 2
    assert all(m.role != "assistant" for m in request) and QUESTION in request[-1].content


def test_an_unknown_prompt_set_is_refused_with_the_known_names() -> None:
    with pytest.raises(DelibError, match="continuation"):
        prompts.get("chatty")
