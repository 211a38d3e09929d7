"""AFlow's operators, and the prompts of the workflows it found for GSM8K and MATH (AFlow, Zhang et al.,
ICLR 2025, "AFlow: Automating Agentic Workflow Generation"; reference code FoundationAgents/AFlow,
``scripts/operators.py``; the paper's Section 5.2 and Appendix B describe the workflows, which
``protocols/workflow.py`` writes as data and runs).

Operators (one LLM call each, through the engine, seeded as call k of the question):
- Custom(input, instruction): the instruction followed by the input, one user message; the reply's text;
- ScEnsemble(solutions): the solutions lettered A, B, ...; the model names the one whose answer is most
  frequent; that solution (the first when no letter can be read) is returned verbatim;
- Programmer(problem, analysis): the model writes a ``solve()`` function; it runs in the project's sandbox
  (``benchmarks/sandbox``: isolated, no network, 30 s); on an error the code and the error are shown and it
  tries again, at most 3 times; the value ``solve()`` returns, as text, else the last error, as the
  reference returns it; a reply with no code ends it at once with "No code generated" (the reference's words).

Departures: prompts paraphrased, and the problem is shown as this project shows every method (with its answer
format); sampling at the run's temperature (AFlow's executor decodes at temperature 0 with gpt-4o-mini);
ScEnsemble's letter is read from free text, from the letter line as models write it (AFlow asks for an XML
field), and a reply naming none takes the first solution (the reference's lookup fails there, and its benchmark
reruns the whole workflow, up to 5 times, then scores the question wrong); the code is the reply's last fenced
block defining ``solve`` (else its last), run whole in the sandbox (the reference's formatter also reads code
outside a fence, keeps only the imports and definitions ``solve`` reaches, and refuses code importing os, sys,
subprocess, multiprocessing or plotting libraries as a failed try; the sandbox isolates the program instead,
its memory capped); a failed try shows the last 1,000 characters of its error (the reference: the whole traceback), so a
long traceback does not crowd the prompt; a float ``solve()`` returns is shown rounded to 6 decimals
(``7.000000000000001`` as ``7.0``), because this project scores a number exactly and AFlow's scorer allows a
difference of 1e-6.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from deliberation.engine.loop import AgentRecord, Context, generate_as, record_of, turn_of
from deliberation.engine.prompts.common import Prompt
from deliberation.protocols.program import program_of, run_solve
from deliberation.types import Message, RequestKind, Turn

MATH_SOLVE = ("You are a highly skilled mathematician. Read the problem carefully; identify the key quantities and "
              "how they relate; choose the concepts and formulas that apply; solve it step by step, showing all "
              "work and checking each step; verify the result, by substituting back or another method. End with "
              "the final answer alone, as an exact number without units.\n\n")
REFINE_ANSWER = ("Given the problem and the output of code written to solve it, write a complete solution: restate "
                 "the problem, explain the approach, show the calculation step by step, interpret the code's "
                 "output, and put the final answer in \\boxed{}.\n\n")
DETAILED_SOLUTION = ("Write a comprehensive step-by-step solution: restate the problem, name the concepts and "
                     "theorems it needs, give each step with its reasoning, and put the final answer in "
                     "\\boxed{}.\n\n")
GENERATE_SOLUTION = ("Solve the problem: outline the approach and formulas, show the detailed calculation and "
                     "explain each step, and put the final answer in \\boxed{}.\n\n")
ENSEMBLE = ("Several solutions to the question below follow, each under a letter. Find the answer that occurs most "
            "often among them: that is the most reliable one. Explain your thought process in detail, then end "
            "with the line \"Letter: X\", X the letter of a solution holding that answer.\n\n")
PROGRAM = ("Write complete, self-contained Python code that solves the problem below. Define a function "
           "solve() with no arguments that computes and returns the answer (a number or a short string); "
           "do not print, read input, or include tests. Reply with the code in one ```python block.\n\n")
ATTEMPTS = 3
"""Programmer's tries (the reference's)."""
NO_CODE = "No code generated"
"""Programmer's output when a reply holds no code (the reference's words; it stops there)."""
_FILLER = (r"(?:[\s:*`'\"(\[{$\\=-]|(?i:is|the|of|my|i|choose|chosen|final|answer|most|frequent|common|consistent|"
           r"solution|option|boxed|text|textbf|mathbf|mathrm)\b)*")
"""What may stand between the word "letter" and the letter: markup, punctuation that does not end a sentence, and
the words models put there ("The letter I choose is B", "Letter: Solution B", "Letter: $\\boxed{B}$")."""
_LETTER = re.compile(r"(?i:\bletter\b)" + _FILLER + r"(?:([A-Z])\b|([a-z])\)?[ \t*`]*$)", re.MULTILINE)
"""A letter line: a capital letter after "letter" and filler; a small one only where it ends the line ("letter:
(b)"), so that the words of a sentence ("each letter a solution") are not read as letters."""


def letter_of(reply: str, count: int) -> int | None:
    """The index of the solution the ensemble's ``reply`` names among ``count`` (its last letter line naming
    one of them), or None when it names none."""
    named = [ord((big or small).upper()) - ord("A") for big, small in _LETTER.findall(reply)]
    return next((i for i in reversed(named) if 0 <= i < count), None)


@dataclass
class Calls:
    """The question's context and the calls made so far (each a turn of the episode)."""

    ctx: Context
    turns: list[Turn] = field(default_factory=list)
    records: list[AgentRecord] = field(default_factory=list)

    def ask(self, text: str, kind: RequestKind = RequestKind.ANSWER, shown: tuple[str, ...] = ()) -> str:
        """One call on ``text`` as a user message, seeded as call k; its reply's text."""
        k = len(self.turns)
        prompt = Prompt(kind, (Message("user", text),), "", shown)
        [out] = generate_as(self.ctx, [prompt], [k], [k], [0], 0)
        record = record_of(self.ctx, out, True, prompt.messages)
        self.records.append(record)
        self.turns.append(turn_of(self.ctx, k, 0, None, record, [out]))
        return out.text

    def custom(self, input_: str, instruction: str) -> str:
        return self.ask(instruction + input_)

    def sc_ensemble(self, solutions: list[str]) -> str:
        letters = [chr(ord("A") + i) for i in range(len(solutions))]
        listed = "\n\n".join(f"{letter}. {s}" for letter, s in zip(letters, solutions))
        reply = self.ask(f"{ENSEMBLE}Question:\n{self.ctx.question}\n\nSolutions:\n{listed}", RequestKind.UPDATE,
                         tuple(solutions))
        return solutions[letter_of(reply, len(solutions)) or 0]

    def programmer(self, analysis: str = "None") -> str:
        feedback, output = "", ""
        for _ in range(ATTEMPTS):
            reply = self.ask(f"{PROGRAM}Problem:\n{self.ctx.question}\n\nAnalysis:\n{analysis}{feedback}")
            code = program_of(reply)
            if code is None:
                return NO_CODE
            ok, output = run_solve(code)
            if ok:
                return output
            feedback = f"\n\nThe code you wrote before:\n{code}\n\nIt failed:\n{output}\nFix it."
        return output
