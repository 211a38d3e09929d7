"""The run directory (docs/design.md, section Run directories): config.json, episodes.jsonl (append-only), summary.json.

Appends are flushed and fsynced per episode, so a killed run loses at most the episode in flight; a torn
last line is dropped on reopen. Reopening a directory with a different configuration is refused rather
than mixing two runs' episodes, and so is a second writer while one runs (``.writer.lock``, see
``deliberation.outputs.lock``): readers take no lock.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from deliberation.config import RESUMES, Selection
from deliberation.errors import BadText, DelibError, make_folder, parse_json, utf8, writable_folder
from deliberation.files import append_durably, write_json_atomic
from deliberation.methods.options import DEFAULTS
from deliberation.actions import ACTION_ORDER, ACTIONS
from deliberation.outputs.kinds import EPISODES, RUN, refuse_other_kind
from deliberation.outputs.lock import DirectoryLock, lock_directory, refuse_if_locked
from deliberation.outputs.resume import BACKEND_OPTIONS, ResumeRule, check_resume, with_resume
from deliberation.types import ADDED_LATER, Episode, Turn, from_json, strict_json, to_json

CONFIG, SUMMARY = "config.json", "summary.json"
RUN_MARK = frozenset({"method"})
"""The key every run's config.json holds, since the first: a config.json without it is not a run's, and a run never
writes over it."""
CELL = "cell.json"  # an experiment's label of a run directory (deliberation.runs.experiment)
LOG = logging.getLogger("deliberation")
_WARNED: set[Path] = set()  # episodes files whose duplicates were reported: one warning a file and process


@dataclass(frozen=True)
class Summary:
    """Aggregate numbers of a run; ``tokens_per_question`` counts prompt and completion tokens."""

    method: str
    benchmark: str
    split: str
    n: int
    accuracy: float
    accuracy_ci95: tuple[float, float]
    prompt_tokens: int
    completion_tokens: int
    tokens_per_question: float
    completion_tokens_per_question: float
    llm_calls: int
    llm_calls_per_question: float
    cached_turns: int
    actions: dict[str, int] = field(default_factory=dict)
    rounds_run_mean: float = 0.0
    wall_seconds: float = 0.0
    generation_seconds: float = 0.0  # see Episode.generation_seconds: the uncached cost of the requests
    tokens_by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    """A mixed team's prompt_tokens, completion_tokens and llm_calls per model (the turns of its agents; models
    named as ``backends.team.labels`` names them); empty for a run on one model."""
    capped: int | None = field(default=None, metadata=ADDED_LATER)
    """Questions whose episode the method's cap ended (``Episode.capped``); None (and not written) for a
    method without such a cap."""
    optimisation_tokens: int | None = field(default=None, metadata=ADDED_LATER)
    """Tokens spent once, on training questions, optimising what the method ran (``Method.optimised``); None
    (and not written) where nothing was optimised."""

    @property
    def notes(self) -> str:
        """The end of a run's line: how many questions a method's cap ended, and what optimising it cost, in
        total and amortised over the run's questions; nothing for a method with neither."""
        capped = "" if self.capped is None else f", its cap ended {self.capped} of {self.n} questions"
        spent = self.optimisation_tokens
        return capped + ("" if spent is None else f", optimised with {spent:,} tokens ({spent / max(self.n, 1):,.0f} "
                         f"a question over these {self.n})")


def wilson_ci(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for k successes out of n (sound for small n and extreme rates)."""
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def summarize(episodes: Sequence[Episode], method: str, benchmark: str, split: str,
              models: Sequence[str] = ()) -> Summary:
    """The summary of a set of episodes; ``models``: a mixed team's model per agent (``tokens_by_model``)."""
    n = len(episodes)
    right = sum(e.correct for e in episodes)
    prompt = sum(e.prompt_tokens for e in episodes)
    completion = sum(e.completion_tokens for e in episodes)
    calls = sum(e.llm_calls for e in episodes)
    turns = [t for e in episodes for t in e.turns]
    actions = {a.value: sum(t.action is a for t in turns) for a in ACTION_ORDER
               if a in ACTIONS or any(t.action is a for t in turns)}  # RESAMPLE where a run took it
    return Summary(
        method, benchmark, split, n, right / n if n else 0.0, wilson_ci(right, n), prompt, completion,
        (prompt + completion) / n if n else 0.0, completion / n if n else 0.0, calls, calls / n if n else 0.0,
        sum(t.cached for t in turns), actions, sum(e.rounds_run for e in episodes) / n if n else 0.0,
        sum(e.wall_seconds for e in episodes), sum(e.generation_seconds for e in episodes),
        tokens_by_model(turns, models), _capped(episodes),
    )


def _capped(episodes: Sequence[Episode]) -> int | None:
    """How many of ``episodes`` their method's cap ended; None where none records it (a method without one)."""
    marked = [e.capped for e in episodes if e.capped is not None]
    return sum(marked) if marked else None


def tokens_by_model(turns: Sequence[Turn], models: Sequence[str]) -> dict[str, dict[str, int]]:
    """Prompt and completion tokens and LLM calls of ``turns`` per model, agent i's turns counted for
    ``models[i]``; empty without models."""
    totals = {m: {"prompt_tokens": 0, "completion_tokens": 0, "llm_calls": 0} for m in models}
    for t in turns:
        if t.agent < len(models):
            row = totals[models[t.agent]]
            row["prompt_tokens"] += t.prompt_tokens
            row["completion_tokens"] += t.completion_tokens
            row["llm_calls"] += t.llm_calls
    return totals


@dataclass(frozen=True)
class JsonlLines:
    """The complete lines of an episodes file, each decoded and keeping its "\\n", and the bytes they span: a
    torn last line (a run killed mid-append) lies beyond ``size`` and is not among them."""

    lines: tuple[str, ...]
    size: int
    torn: bool


FIX_LINE = "delete that line (rerunning the run's command redoes its question) or move the file away"
"""What to do about a line of episodes.jsonl that cannot be read."""


def jsonl_lines(path: Path) -> JsonlLines:
    """The complete lines of the JSONL file ``path`` (none when it is missing). Only "\\n" ends a line:
    str.splitlines also breaks at U+2028, U+0085 and kin, which episodes (written with ensure_ascii=False)
    hold raw whenever a model or a question uses them. A line that is not UTF-8 is a DelibError naming it
    (``errors.utf8``); a torn last line is not decoded (its last character may be cut in two)."""
    data = path.read_bytes() if path.exists() else b""
    raw = data.split(b"\n")
    return JsonlLines(tuple(_line(path, number, line) for number, line in enumerate(raw[:-1], start=1)),
                      len(data) - len(raw[-1]), bool(raw[-1]))


def _line(path: Path, number: int, line: bytes) -> str:
    try:
        return utf8(line) + "\n"
    except BadText as err:
        raise DelibError(f"{path} line {number} is {err}; {FIX_LINE}") from None


def parse_episodes(path: Path, lines: Sequence[str]) -> list[Episode]:
    """The episodes of ``lines`` (the complete lines of ``path``), each question once, or a DelibError naming
    the first line that is not one by its number, so the user can delete just that line. A later episode of
    a question and method already read (two runs that wrote into one directory at once, before writers
    locked it; a line copied twice) is dropped with one warning naming the file: counted twice, it would
    inflate n and weigh that question double."""
    first: dict[tuple[str, str], Episode] = {}
    for episode in (_episode(path, number, line) for number, line in enumerate(lines, start=1) if line.strip()):
        first.setdefault((episode.example_id, episode.method), episode)
    dropped = sum(1 for line in lines if line.strip()) - len(first)
    if dropped and path not in _WARNED:
        _WARNED.add(path)
        LOG.warning("delib: warning: %s holds %d duplicate episode(s) of questions it already has; each question "
                    "counts once (its first episode)", path, dropped)
    return list(first.values())


def _episode(path: Path, number: int, line: str) -> Episode:
    try:
        return from_json(Episode, parse_json(line))
    except (TypeError, ValueError) as err:
        raise DelibError(f"{path} line {number} is not an episode ({err}); {FIX_LINE}") from err


ENGINE_USED = "engine_used"
"""config.json's record of the engine a method ran (its override of the engine asked for applied): derived
from the method and the engine, which are compared, so it is not compared itself (runs written before it
resume as before)."""
# Settings that change how fast or where a run goes, not what it computes: a run may be resumed with
# other values (e.g. fewer llama.cpp threads on a busy machine, the cache file moved).
_RESUMABLE_KEYS = frozenset({"limit", "command", "workers", "ray_address", "cache", "concurrency", ENGINE_USED})
RUN_RESUME = ResumeRule(
    may_change=_RESUMABLE_KEYS | {RESUMES},
    added_later={**to_json(DEFAULTS), "trees": None, "selection": to_json(Selection())},
    nested={"engine": ResumeRule(added_later={"prompts": "standalone"}), "backend_options": BACKEND_OPTIONS},
    shown_as={"policy_used": "policy_used (the policy: the --policy file, its content or the rule)",
              "graph_used": "graph_used (the --graph file: its path or its content)"})
"""When a run directory may be resumed: every config.json key must match but the resumable ones. Keys a later
version added read, in a run written before them, as the value every run then had: every method option (a
run made before an option existed ran with its default), and the engine's prompts (runs made before prompt
version 2 used the standalone prompts)."""


class RunDir:
    """A run directory: ``prepare`` checks it can take a run, ``create`` makes this process its one writer
    until ``close`` (or the end of a ``with`` block); ``RunDir(path)`` alone only reads."""

    def __init__(self, path: Path, config: dict[str, Any] | None = None) -> None:
        self.path = path
        self._settings = config or {}  # config.json of the run to write (``prepare``)
        self._resume: dict[str, Any] | None = None  # config.json to write with the first appended episode
        self._fresh: dict[str, Any] | None = None  # config.json ``create`` writes (a run with no episode yet)
        self._writer: DirectoryLock | None = None

    @classmethod
    def prepare(cls, path: str | Path, config: dict[str, Any]) -> "RunDir":
        """Check that ``path`` can take a run of ``config``, writing nothing (the runner builds its backend
        between this and ``create``, so a failure there leaves no config.json). A directory holding episodes
        must hold the same settings; one with no episode yet takes any; one another process writes (a run
        into the same --out still going) is refused, before a model loads."""
        run = cls(writable_folder(path, "--out"), config)
        refuse_other_kind(run.path, RUN)
        refuse_if_locked(run.path)
        run._plan()
        return run

    def _plan(self) -> None:
        """Check the episodes' settings against the run's and note what config.json needs (see ``prepare``)."""
        finished = self.finished_ids()
        old = self._config() if finished else None
        self._fresh = self._resume = None
        if old is None:
            if not finished:  # with episodes, a deleted config.json is rewritten
                self._refuse_foreign()
            self._fresh = self._settings
        else:
            self._check_same(old, self._settings)
            self._record_resume(old, self._settings)

    def create(self) -> "RunDir":
        """Make the directory and become its one writer (a DelibError names the process that is), check it
        again now that no other run can add to it, and write a new run's config.json (a resumed run records
        its resume with its first episode)."""
        self._writer = lock_directory(make_folder(self.path))
        try:
            self._plan()
            self._cut_torn_tail()
            if self._fresh is not None:
                write_json_atomic(self.path / CONFIG, self._fresh)
                self._fresh = None
        except BaseException:
            self.close()
            raise
        return self

    @classmethod
    def open(cls, path: str | Path, config: dict[str, Any]) -> "RunDir":
        """``prepare`` and ``create`` in one step."""
        return cls.prepare(path, config).create()

    def close(self) -> None:
        """Stop being the directory's writer (another run may then resume it)."""
        if self._writer is not None:
            self._writer.release()
            self._writer = None

    def __enter__(self) -> "RunDir":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _config(self) -> dict[str, Any] | None:
        """The config.json beside the episodes (None when it was deleted: the next run writes its own)."""
        path = self.path / CONFIG
        if not path.exists():
            return None
        try:
            old = parse_json(utf8(path.read_bytes()))
        except (OSError, BadText):  # a folder, unreadable, or not JSON
            old = None
        if not isinstance(old, dict):
            raise DelibError(f"{path} is damaged (not a JSON object), so the episodes beside it cannot be checked "
                             "against these settings; delete it and rerun the command that made the run (it is "
                             "rewritten, the episodes kept), or use another --out")
        return old

    def _refuse_foreign(self) -> None:
        """Refuse a folder with no episode whose config.json (or summary.json) no run wrote, a model's config say:
        a new run would write over it. A run stopped before its first episode leaves its own, which is taken."""
        config, summary = self.path / CONFIG, self.path / SUMMARY
        try:
            held = parse_json(utf8(config.read_bytes())) if config.exists() else None
        except (OSError, BadText):  # a folder, unreadable, or not JSON
            held = []
        ours = held is None or isinstance(held, dict) and RUN_MARK <= held.keys()
        if not ours or (summary.exists() and not config.exists()):
            found = config if not ours else summary
            raise DelibError(f"--out {self.path} holds a {found.name} that no delib run wrote; pass another --out "
                             "(a new folder)")

    def _check_same(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        check_resume(self.path, RUN, old, new, RUN_RESUME, "use another --out or delete it")

    def _record_resume(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """Note the resumable settings ``new`` changes against the latest recorded ones; ``append`` writes
        them to config.json with this run's first episode, so a rerun that adds nothing records nothing."""
        self._resume = with_resume(old, new, _RESUMABLE_KEYS)

    def episodes(self) -> list[Episode]:
        """Every complete episode in the file (a torn last line from a killed run is left out; reading never
        writes: only ``create``, before this run appends, cuts it)."""
        return parse_episodes(self.path / EPISODES, jsonl_lines(self.path / EPISODES).lines)

    def _cut_torn_tail(self) -> None:
        """Cut a torn last line (a run killed mid-append) so that this run's first episode starts a line."""
        found = jsonl_lines(self.path / EPISODES)
        if found.torn:
            with open(self.path / EPISODES, "r+b") as f:
                f.truncate(found.size)

    def finished_ids(self) -> set[str]:
        return {e.example_id for e in self.episodes()}

    def append(self, episode: Episode) -> None:
        """Add one finished episode durably (``files.append_durably``: a full disk leaves no part of it; the
        first of a resumed run records the resume first)."""
        if self._resume is not None:
            write_json_atomic(self.path / CONFIG, self._resume)
            self._resume = None
        line = strict_json(to_json(episode), ensure_ascii=False) + "\n"
        append_durably(self.path / EPISODES, line.encode("utf-8"))

    def write_summary(self, summary: Summary) -> None:
        write_json_atomic(self.path / SUMMARY, to_json(summary))

    def clear_summary(self) -> None:
        """Drop summary.json while episodes are being added, so readers summarize what is there."""
        (self.path / SUMMARY).unlink(missing_ok=True)
