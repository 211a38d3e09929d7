"""The benchmarks' answer key: the gold of any question a run shows its agents, for the ``scripted`` simulator
(``backends/scripted.py``), which is handed one where it is built and so needs to know no dataset; and
``make_backend``, which builds a backend as every command does, handing it this key.

A question is looked up in the benchmark given; built without one, in the own-data files and benchmarks this
process opened (which a run opens before its first request), then in every registered one. Splits are read
one at a time (``test`` first) and only until the question is found, so a run reads the data it uses and no
more: a split that cannot be loaded (data that is not there) is passed over, and named only when no question
matches. A question no benchmark holds (``delib ask``, benchmark ``ask:<type>``) gets a hidden gold drawn from
its hash: a number, or a letter for ``choice``.
"""

from __future__ import annotations

from typing import Any

from deliberation import backends
from deliberation.backends.base import Backend
from deliberation.backends.scripted import stable_hash
from deliberation.benchmarks import BENCHMARKS, get as get_benchmark, opened
from deliberation.benchmarks.base import Benchmark
from deliberation.benchmarks.own import OwnData
from deliberation.errors import DelibError
from deliberation.types import AnswerKeyFactory, Example, Keyed


def make_backend(name: str, cache: str | None = None, answers: AnswerKeyFactory | None = None,
                 **options: Any) -> Backend:
    """The backend ``name`` built with ``options`` (behind the SQLite response cache at ``cache``) as every
    command builds it: a simulator (``scripted``, a team of them) is handed ``answers`` (default: the
    benchmarks' answer key, ``BenchmarkAnswers``; a key of your own answers questions no benchmark holds), the
    other backends are built as ``backends.make_backend`` builds them."""
    return backends.make_backend(name, cache=cache, answers=answers or BenchmarkAnswers, **options)


class BenchmarkAnswers:
    """``AnswerKey`` over the benchmarks: ``benchmark`` (None: any, opened first, see above), its splits read
    from ``data_dir`` (None: the usual sources, ``benchmarks/helpers/sources.py``). It is itself an
    ``AnswerKeyFactory``: ``BenchmarkAnswers(benchmark, data_dir)`` builds one."""

    def __init__(self, benchmark: str | None = None, data_dir: str | None = None) -> None:
        self._given = [get_benchmark(benchmark)] if benchmark else None
        self._data_dir = data_dir
        self._indexes: dict[tuple[str, str], dict[str, Example]] = {}  # (benchmark, split) -> question -> example
        self._unloadable: dict[tuple[str, str], str] = {}  # (benchmark, split) -> why it could not be loaded

    def find(self, question: str) -> Keyed:
        """The question ``question`` (as the agents are shown it) with its gold; splits are indexed lazily, in
        turn, until it is found."""
        benches = self._candidates()
        for bench in benches:
            for split in sorted(bench.splits, key=lambda s: s != "test"):
                index = self._index(bench, split)
                if question in index:
                    return _keyed(bench, index[question])
        return self._free(question, benches)

    def _candidates(self) -> list[Benchmark]:
        """The benchmark given; else the own-data files and benchmarks opened in this process, then every
        registered one (opened here, not loaded: loading waits for ``_index``)."""
        if self._given is not None:
            return self._given
        now = opened()
        own = [b for b in now if isinstance(b, OwnData)]
        return list(dict.fromkeys([*own, *now, *(get_benchmark(n) for n in sorted(BENCHMARKS))]))

    def _free(self, question: str, benches: list[Benchmark]) -> Keyed:
        """An asked question (``ask:<type>``, no gold): its scorer, and an example whose gold is drawn from the
        question (a letter for choice, else a number)."""
        asked = [b for b in benches if isinstance(b, OwnData) and b.path is None and b.answer_type != "code"
                 and question.endswith(b.answer_instruction)]
        if not asked:
            names = ", ".join(b.name for b in benches)
            unread = next(iter(self._unloadable.values()), None)
            why = f" (some data could not be loaded: {unread})" if unread else ""
            raise DelibError(f"scripted backend: the request is not about a question of {names}{why}")
        pick = stable_hash("free", question)
        choice = asked[0].answer_type == "choice"
        gold = "ABCD"[pick % 4] if choice else str(10 + pick % 90)
        return _keyed(asked[0].scorer, Example(f"free/{pick}", question, gold, tuple("ABCD") if choice else ()))

    def _index(self, bench: Benchmark, split: str) -> dict[str, Example]:
        """Formatted question -> example of one split, built on first use. A split that cannot be loaded (data
        not there, an own-data file a command refused) holds no question; why is kept for the error above."""
        key = (bench.name, split)
        if key not in self._indexes:
            try:
                examples = bench.load(split, data_dir=self._data_dir)
            except DelibError as err:
                self._unloadable[key], examples = str(err), []
            self._indexes[key] = {bench.format_question(ex): ex for ex in examples}
        return self._indexes[key]


def _keyed(bench: Benchmark, example: Example) -> Keyed:
    """``example`` scored as ``bench`` scores; code answers for HumanEval and own code questions."""
    code = bench.name == "humaneval" or isinstance(bench, OwnData) and bench.answer_type == "code"
    return Keyed(example, bench.score, code)
