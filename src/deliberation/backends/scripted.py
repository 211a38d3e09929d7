"""A deterministic, seeded simulator of LLM agents, for tests and overhead benchmarks only: the
``scripted`` backend. It simulates the engine's agents from what each request is for
(``GenerationRequest.purpose``, a typed record the engine sets), so it needs nothing of the engine and lives
beside the real backends: its registry entry points down the layers, never up.

It reads the request's purpose (never the prompt text: any prompt style or wording works), looks the problem
up in the answer key it was handed (``types.AnswerKey``; whoever builds the backend passes ``answers``, the
benchmarks' key ``benchmarks/answers.py`` everywhere in this package, so this LLM client layer knows no
dataset), and answers in the benchmark's format so extraction and scoring run for real. Then:
- round 0: agent k (the low 4 bits of the request seed) is right with probability skill_k + d_q, d_q a
  per-question difficulty offset; wrong answers come from a few per-question distractors, so wrong agents
  sometimes agree, as real ones do;
- update requests (any update style): a right answer breaks with ``p_break``; a wrong one is fixed with
  ``p_fix`` plus a bonus proportional to the share of peers that are right (solutions as the prompt shows
  them);
- critic requests: P(Yes) drawn around ``conf_right`` or ``conf_wrong`` (so confidence correlates with
  correctness), returned as the first token's logprobs, or, asked without logprobs, as a verbal 0-100.
- answers carry a log-probability summary (``backends/logprob_summary.py``) of token log-probabilities drawn
  around ``LOGPROB_RIGHT`` or ``LOGPROB_WRONG`` from a generator of their own (so the texts are what they
  were before summaries existed), about 4 characters a token.
Token counts are realistic (about 4 characters a token; answers of 150-400 tokens).

Numbers from this backend are never results: it exists to exercise the machinery.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import replace
from typing import Sequence

import numpy as np

from deliberation.backends.logprob_summary import summarize
from deliberation.errors import DelibError, require_number
from deliberation.types import (AnswerKey, AnswerKeyFactory, Completion, Example, GenerationRequest, Keyed,
                                LogprobSummary, Purpose, RequestKind, TokenLogprob, purpose_of)

_FILLER = ("we", "compute", "the", "value", "carefully", "then", "combine", "it", "with", "previous", "result")


LOGPROB_RIGHT, LOGPROB_WRONG = -0.35, -0.6
"""Mean token log-probability of a right and of a wrong simulated answer (a spread of 0.3 a token)."""


def _summary(request: GenerationRequest, completion: Completion, right: bool) -> LogprobSummary | None:
    """A summary of ``completion.completion_tokens`` token log-probabilities drawn around the answer's mean,
    token k ending at character 4(k + 1) of the text (its last at the end)."""
    rng = np.random.default_rng([request.seed, stable_hash("logprob", request.messages[-1].content)])
    n, length = completion.completion_tokens, len(completion.text)
    values = np.minimum(rng.normal(LOGPROB_RIGHT if right else LOGPROB_WRONG, 0.3, n), 0.0)  # (n,)
    return summarize(values.tolist(), [min(4 * (k + 1), length) for k in range(n - 1)] + [length])


def stable_hash(*parts: object) -> int:
    """A 64-bit hash of ``parts`` that every process and Python version gives alike (``hash`` is salted): the
    scripted backend's draws, and the answer key of a free question (``benchmarks.answers``)."""
    return int.from_bytes(hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()[:8], "big")


class ScriptedBackend:
    """Simulated agents answering the questions of ``answers(benchmark, data_dir)`` deterministically
    (``benchmark`` None: any question the key holds)."""

    name = "scripted"
    supports_logprobs = True

    def __init__(self, benchmark: str | None = None, skills: Sequence[float] = (0.45, 0.55, 0.65),
                 p_break: float = 0.1, p_fix: float = 0.25, conf_right: float = 0.72, conf_wrong: float = 0.5,
                 data_dir: str | None = None, model: str = "scripted-v1",
                 answers: AnswerKeyFactory | None = None) -> None:
        if answers is None:
            raise DelibError("the scripted backend answers from an answer key and was given none: build it with "
                             "deliberation.make_backend('scripted'), which hands it the benchmarks' key")
        self._answers, self._benchmark, self._data_dir = answers, benchmark, data_dir
        self._key: AnswerKey = answers(benchmark, data_dir)
        self.model = model
        self.skills = tuple(skills)
        self.p_break, self.p_fix = p_break, p_fix
        self.conf_right, self.conf_wrong = conf_right, conf_wrong
        self.calls = 0  # requests answered, for tests of "no LLM call"

    @staticmethod
    def validate_options(skills: object = None, **options: object) -> None:
        """Refuse skills that are not a list of numbers (``skills=[0.5,0.6]``), and the other rates out of
        [0, 1], before anything is written (``backends.check_options``)."""
        if skills is not None and not _numbers(skills):
            raise DelibError(f"scripted option skills takes a list of numbers, one an agent (its chance of a right "
                             f"answer before the question's difficulty), e.g. skills=[0.45,0.55,0.65]; got {skills!r}")
        for name in ("p_break", "p_fix", "conf_right", "conf_wrong"):
            if name in options:
                require_number(name, options[name], 0, 1, "(a probability)")  # type: ignore[arg-type]

    @staticmethod
    def records_summaries(**_: object) -> bool:
        """Every answer carries a simulated summary (module docstring)."""
        return True

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        self.calls += len(requests)
        return [self._one(r) for r in requests]

    def close(self) -> None:
        """Drop the key's loaded questions (a fresh key reads them again if asked)."""
        self._key = self._answers(self._benchmark, self._data_dir)

    # --- request handling --------------------------------------------------------------------------

    def _one(self, request: GenerationRequest) -> Completion:
        purpose = purpose_of(request, "scripted backend")
        keyed = self._key.find(purpose.question)
        rng = np.random.default_rng([request.seed, stable_hash(request.messages[-1].content)])
        if purpose.kind is RequestKind.CRITIC:
            return self._critic(request, keyed, purpose, rng)
        right = self._right_after_update(keyed, purpose, rng) if purpose.kind is RequestKind.UPDATE else (
            rng.random() < self._p_initial(keyed.example, request.seed % 16))
        completion = self._completion(request, self._solution(keyed, right, rng))
        return replace(completion, summary=_summary(request, completion, right))

    def _p_initial(self, example: Example, agent: int) -> float:
        difficulty = (stable_hash("difficulty", example.id) % 1000) / 1000.0 * 0.6 - 0.3
        return float(np.clip(self.skills[agent % len(self.skills)] + difficulty, 0.02, 0.98))

    def _right_after_update(self, keyed: Keyed, purpose: Purpose, rng: np.random.Generator) -> bool:
        example = keyed.example
        share = float(np.mean([keyed.score(example, p) for p in purpose.peers])) if purpose.peers else 0.0
        if keyed.score(example, purpose.own):
            return rng.random() >= self.p_break
        return rng.random() < self.p_fix + 0.5 * share

    def _critic(self, request: GenerationRequest, keyed: Keyed, purpose: Purpose,
                rng: np.random.Generator) -> Completion:
        mean = self.conf_right if keyed.score(keyed.example, purpose.own) else self.conf_wrong
        p_yes = float(np.clip(rng.normal(mean, 0.15), 0.01, 0.99))
        if not request.logprobs:
            return self._completion(request, str(round(100 * p_yes)))
        token = "Yes" if p_yes >= 0.5 else "No"
        top = (("Yes", math.log(p_yes)), ("No", math.log(1 - p_yes)))
        top = tuple(sorted(top, key=lambda t: -t[1]))
        lp = TokenLogprob(token, dict(top)[token], top)
        return self._completion(request, token, (lp,))

    # --- text ----------------------------------------------------------------------------------------

    def _solution(self, keyed: Keyed, right: bool, rng: np.random.Generator) -> str:
        steps = [f"Step {k}: " + " ".join(rng.choice(_FILLER, size=int(rng.integers(15, 30)))) + "."
                 for k in range(1, int(rng.integers(4, 10)))]
        return "\n".join(steps) + "\n" + self._final(keyed, right, rng)

    def _final(self, keyed: Keyed, right: bool, rng: np.random.Generator) -> str:
        example = keyed.example
        if keyed.code:
            body = example.answer if right else "    return None\n"
            return f"```python\n{example.question}{body}```"
        answer = example.answer if right else self._distractor(example, rng)
        return f"The final answer is $\\boxed{{{answer}}}$."

    def _distractor(self, example: Example, rng: np.random.Generator) -> str:
        """One of three per-question wrong answers (shared across agents, so wrong agents can agree)."""
        pick = stable_hash("distractor", example.id, int(rng.integers(0, 3)))
        if example.choices:
            letters = [c for c in "ABCD"[: len(example.choices)] if c != example.answer]
            return letters[pick % len(letters)]
        try:
            value = float(example.answer.replace(",", ""))
        except ValueError:
            return f"{example.answer}+{1 + pick % 7}"
        wrong = value + (1 + pick % 9) * (1 if pick % 2 else -1)
        return str(int(wrong)) if wrong == int(wrong) else f"{wrong:g}"

    def _completion(self, request: GenerationRequest, text: str,
                    logprobs: tuple[TokenLogprob, ...] | None = None) -> Completion:
        """Count ~4 characters a token; cut the text at max_tokens like a real model."""
        finish = "length" if len(text) > 4 * request.max_tokens else "stop"
        text = text[: 4 * request.max_tokens]
        prompt = sum(len(m.content) for m in request.messages) // 4 + 8 * len(request.messages)
        return Completion(text, prompt, max(1, len(text) // 4), logprobs if request.logprobs else None, finish)


def _numbers(values: object) -> bool:
    """Whether ``values`` is a non-empty list of finite numbers (a skill is clipped with the difficulty added)."""
    return isinstance(values, (list, tuple)) and len(values) > 0 and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in values)
