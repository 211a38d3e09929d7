"""``delib ask``: one question with no gold answer; the answer, a trace of the round actions, the cost."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from deliberation.cli.main import main
from deliberation.runs.ask import deliberate, trace

QUESTION = "A shop sells pens at 3 for 2 dollars. How much do 12 pens cost?"
ROUND = re.compile(r"^round (\d+): (agent \d+ (answered|persisted|refined|conceded) .+?(; |$))+")


def ask(capsys, *args):
    code = main(["ask", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.strip()


def test_ask_prints_the_answer_the_trace_and_the_cost(capsys):
    code, lines, _ = ask(capsys, QUESTION, "--backend", "scripted", "--method", "mpdf")
    result = deliberate(QUESTION, "mpdf", backend="scripted")
    assert code == 0 and lines[0] == f"answer: {result.answer}"
    assert lines[1:-1] == trace(result.episode) and all(ROUND.match(line) for line in lines[1:-1])
    assert lines[1].startswith("round 0: agent 0 answered ") and "confidence 0." in lines[1]
    assert {"persisted", "refined", "conceded"} & set(" ".join(lines[2:-1]).split())
    assert lines[-1].startswith(f"mpdf, 3 agents, {result.episode.rounds_run} round")
    assert f"{result.prompt_tokens} prompt + {result.completion_tokens} generated tokens" in lines[-1]


def test_ask_a_choice_question_names_the_chosen_option(capsys):
    planets = ["Mars", "Jupiter", "Venus"]
    code, lines, _ = ask(capsys, "Which planet is largest?", "--answer-type", "choice", "--choice", "Mars",
                         "--choice", "Jupiter", "--choice", "Venus", "--backend", "scripted", "--method", "debate")
    chosen = deliberate("Which planet is largest?", "debate", backend="scripted", answer_type="choice",
                        choices=planets).answer
    assert chosen in ("A", "B", "C") and code == 0
    assert lines[0] == f"answer: {chosen} ({planets['ABC'.index(chosen)]})"
    assert lines[2].startswith("round 1: agent 0 refined ")


def test_ask_text_prints_the_vote_over_the_agents_final_lines(capsys):
    question = "What is the capital of France?"
    code, lines, _ = ask(capsys, question, "--answer-type", "text", "--backend", "scripted", "--method",
                         "self-consistency", "--agents", "5")
    result = deliberate(question, "self-consistency", backend="scripted", answer_type="text", agents=5)
    votes = Counter(t.answer for t in result.episode.turns)
    assert code == 0 and len(lines) == 3 and lines[0] == f"answer: {result.answer}"
    assert votes[result.answer] == max(votes.values())


@pytest.mark.parametrize("args, message", [
    (["--answer-type", "numeric", "--choice", "a", "--choice", "b"], "choices go with --answer-type choice"),
    (["--method", "cot", "--policy", "default"], "--policy means nothing to method cot"),
    (["--agents", "0"], "--agents must be at least 1"),
    (["--method", "oracle"], "oracle picks the right answer in hindsight, and a question asked alone has none"),
    (["--answer-type", "choice", "--choice", "red", "--choice", "red "], "choice 'red ' is given twice"),
    (["--answer-type", "choice", "--choice", "red", "--choice", " "],
     "a --choice is empty; give each option its text, once"),
])
def test_ask_refuses_bad_input_in_one_line(capsys, args, message):
    code, lines, err = ask(capsys, QUESTION, "--backend", "scripted", *args)
    assert code == 2 and not lines and len(err.splitlines()) == 1 and message in err


@pytest.mark.integration
def test_ask_with_smollm2(capsys, smollm2_path):
    code, lines, _ = ask(capsys, "What is 2 plus 3?", "--backend", "llamacpp", "--model", "smollm2-135m",
                         "--method", "mpdf", "--agents", "2", "--rounds", "1", "--max-tokens", "48")
    assert code == 0 and lines[0].startswith("answer:")
    assert lines[1].startswith("round 0: agent 0 answered ") and "agent 1 answered" in lines[1]
    cost = r"mpdf, 2 agents, [01] rounds? of deliberation: \d+ prompt \+ [1-9]\d* generated tokens"
    assert re.search(cost, lines[-1])
