"""``delib ask``: a team deliberates on one question of yours, with no gold answer (``runs/ask.py``)."""

from __future__ import annotations

import argparse

from deliberation.cli.common import (add_backend_args, add_engine_args, backend_options, note_pinned, engine_config,
                                     registry_names)
from deliberation.cli.run import add_method_options, method_options

EPILOG = """examples:
  delib ask "A shop sells pens at 3 for 2 dollars. What do 12 pens cost?"
  delib ask "Which planet is largest?" --answer-type choice --choice Mars --choice Jupiter --choice Venus
  delib ask "What is the capital of Australia?" --answer-type text --method debate --model qwen2.5-coder-1.5b
Answers agree by the answer type's keys (numbers, LaTeX, letters, program behaviour); text compares a
normalized final line, so paraphrases ("Canberra" vs "the capital is Canberra") count as different answers."""


def add_parsers(sub: argparse._SubParsersAction) -> None:
    from deliberation.benchmarks.own import ANSWER_TYPES

    from deliberation import methods

    method_names = [name for name in registry_names()[0] if not methods.get(name).hindsight]
    p = sub.add_parser("ask", help="deliberate on one question of yours (no gold answer)", epilog=EPILOG,
                       description="Agents answer the question, deliberate with --method, and the team's answer "
                       "is printed with a trace of who persisted, refined or conceded, with confidences.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("question", help="the question, in quotes")
    p.add_argument("--answer-type", default="numeric", choices=list(ANSWER_TYPES),
                   help="what kind of answer: how it is read and when two agents agree (default numeric)")
    p.add_argument("--choice", action="append", default=[], metavar="TEXT",
                   help="an option of a choice question (repeat, 2 to 4, labelled A-D; or list them in the question)")
    p.add_argument("--method", default="mpdf", help="one of: " + ", ".join(method_names) + " (default mpdf)")
    p.add_argument("--show-response", action="store_true", help="also print the winning agent's whole response")
    add_method_options(p)
    add_backend_args(p, "SQLite response cache (default: none)", questions=False)
    add_engine_args(p)
    p.set_defaults(func=cmd_ask)


def cmd_ask(args: argparse.Namespace) -> int:
    from deliberation.runs.ask import deliberate, trace

    engine = engine_config(args)
    note_pinned(args, args.method, engine)
    result = deliberate(args.question, args.method, backend=args.backend, answer_type=args.answer_type,
                        choices=args.choice, engine=engine, backend_options=backend_options(args),
                        cache=None if args.cache in (None, "none") else args.cache,
                        **method_options(args))
    answer = _shown(result.answer, args.choice)
    print(f"answer: {answer}" if "\n" not in answer else f"answer:\n{answer}")
    print("\n".join(trace(result.episode)))
    agents, rounds = len({t.agent for t in result.episode.turns}), result.episode.rounds_run
    print(f"{result.method}, {agents} agents, {rounds} round{'s' * (rounds != 1)} of deliberation: "
          f"{result.prompt_tokens} prompt + {result.completion_tokens} generated tokens, {result.llm_calls} LLM calls")
    if args.show_response:
        print(f"response:\n{result.response}")
    return 0



def _shown(answer: str | None, choices: list[str]) -> str:
    """The answer as printed: a chosen option with its text ("B (Jupiter)")."""
    if answer is None:
        return "(no agent's answer could be read)"
    index = "ABCD".find(answer) if len(answer) == 1 else -1
    return f"{answer} ({choices[index]})" if 0 <= index < len(choices) else answer
