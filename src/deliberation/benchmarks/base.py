"""The Benchmark interface: load examples, extract an answer from model text, score it.

An unparseable answer is always wrong (docs/design.md, section Benchmarks and scoring).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from deliberation.types import Example


class Benchmark(ABC):
    """One evaluation dataset with its answer format and scorer."""

    name: str = ""
    splits: tuple[str, ...] = ()
    # Instruction appended to every question so agents answer in a form ``extract`` can read.
    answer_instruction: str = "Put your final answer in \\boxed{}."

    @abstractmethod
    def load(self, split: str, limit: int | None = None, data_dir: str | None = None) -> list[Example]:
        """The first ``limit`` examples of ``split`` (all when None), in the dataset's order."""

    @abstractmethod
    def extract(self, text: str) -> str | None:
        """The answer stated in ``text``, or None when none can be read."""

    @abstractmethod
    def score(self, example: Example, text: str) -> bool:
        """Whether ``text`` answers ``example`` correctly. Unparseable is wrong."""

    def data_file(self, split: str) -> str | None:
        """The file of ``split`` in a data directory: ``<name>/<split>.jsonl`` (docs/getting-started.md, "The data
        folder format"); None for a benchmark that reads no data directory (your own file)."""
        return f"{self.name}/{split}.jsonl"

    def format_question(self, example: Example) -> str:
        """The question as shown to an agent, with the answer-format instruction."""
        return f"{example.question}\n\n{self.answer_instruction}"

    def answer_key(self, answer: str) -> str:
        """A canonical form of an extracted answer, so equal answers vote together."""
        return answer.strip()

    def key_for(self, example: Example, text: str) -> str | None:
        """The voting key of a response to ``example`` (None when it has no parseable answer): by default
        ``answer_key`` of ``extract_for``; HumanEval keys programs by their behaviour on the prompt's examples."""
        answer = self.extract_for(example, text)
        return None if answer is None else self.answer_key(answer)

    def extract_for(self, example: Example, text: str) -> str | None:
        """The answer in ``text`` read with the example at hand (MMLU matches a choice's text, HumanEval picks
        the code block that defines the entry point). Defaults to ``extract``."""
        return self.extract(text)

    def close(self) -> None:
        """Release what the benchmark holds (MATH: its verification worker process); it restarts on use."""

    def score_many(self, examples: Sequence[Example], texts: Sequence[str]) -> list[bool]:
        """``score`` for each (example, text) pair; benchmarks with slow scoring run them in parallel."""
        if len(examples) != len(texts):
            raise ValueError(f"score_many got {len(examples)} examples but {len(texts)} texts")
        return [self.score(ex, text) for ex, text in zip(examples, texts)]


class NumericBenchmark(Benchmark):
    """A benchmark whose answers are numbers (GSM8K, AMC): ``sources`` maps split -> SplitSources."""

    sources: dict = {}
    answer_instruction = "Reason step by step, then put your final answer (a number) in \\boxed{}."

    def load(self, split: str, limit: int | None = None, data_dir: str | None = None) -> list[Example]:
        from deliberation.benchmarks.helpers import sources

        return sources.load(self.name, split, self.sources, limit, data_dir)

    def extract(self, text: str) -> str | None:
        from deliberation.benchmarks.helpers import numeric

        return numeric.extract_answer(text)

    def score(self, example: Example, text: str) -> bool:
        from deliberation.benchmarks.helpers import numeric

        return numeric.score_answer(example.answer, text)

    def answer_key(self, answer: str) -> str:
        from deliberation.benchmarks.helpers import numeric

        return numeric.numeric_key(answer)
