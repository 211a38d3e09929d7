"""A mixed team: every agent on its own model (and backend) behind the one Backend protocol, registered as
``team`` (docs/guides/backends.md, "Mixed teams"; ``delib run --team``, an experiment's ``[[agents]]``).

Options: ``members``, one table per agent, ``{"backend": NAME, **that backend's options}`` (the model among
them). ``TeamBackend`` builds one member backend per distinct table, so agents naming the same model on the
same settings share one loaded instance (llama.cpp loads it once); the same file under another name, or
with another ``n_ctx``, is another member. Each member sits behind its own response cache scope, keyed
exactly as a run of that model alone keys it (``cache.request_key``: backend, model scope, messages,
sampling, seed). The engine marks each request with its agent (``GenerationRequest.agent``, which keys
ignore), and request seeds already depend on (run seed, example, agent, round), so round 0 of agent i of a
team is the cache entry of a run of agent i's model alone. Critic calls go to the judged agent's own
model: the critic is the same LLM (docs/design.md, section Critic confidence).

One ``generate`` call groups its requests by member and calls each member once with its group, in the
order members first appear, and returns the completions in request order. So each backend batches its own
agents (and, under ``--concurrency``, every question's), as vLLM and llama.cpp's server batch the requests
of one model. Members run one after another, not at once: on a CPU two llama.cpp models decoding together
share the same cores. A completion's ``latency_s`` therefore adds the members called before its own (their
slowest completion each), so a batch's slowest completion is still what the batch cost.

A request with no agent (a warm-up) goes to agent 0's model. The team reads logprobs only when every
member does; otherwise every critic answers a verbal 0-100 (``EngineConfig.verbal_confidence``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from deliberation.backends import (MissingOptions, backend_capabilities, check_options, context_window, make_backend,
                                   records_summaries)
from deliberation.backends.base import Backend, cache_scope, cache_scope_of, interrupt
from deliberation.errors import DelibError
from deliberation.types import AnswerKeyFactory, Completion, GenerationRequest

TEAM = "team"


@dataclass(frozen=True)
class Member:
    """One agent's LLM: a registered backend and its constructor options (the model among them)."""

    backend: str
    options: Mapping[str, Any]

    @property
    def key(self) -> str:
        """Its identity: agents whose members have equal keys share one built backend."""
        return json.dumps({"backend": self.backend, **self.options}, sort_keys=True, default=str)

    @property
    def model(self) -> str:
        return str(self.options.get("model", "default"))


def team_options(entries: Sequence[str | Mapping[str, Any]], backend: str,
                 shared: Mapping[str, Any]) -> dict[str, Any]:
    """The ``team`` backend's options for one entry per agent. A model name runs on ``backend`` with the
    ``shared`` options (``--backend-opt``, ``--base-url``); a table names its own ``backend`` (default
    ``backend``) and options, over the shared ones when its backend is ``backend``."""
    if isinstance(entries, str):  # iterated, it would be a team of one agent a character
        raise DelibError(f"team {entries!r} is one string; pass a list of model names, one an agent "
                         f"(e.g. {entries.split(',')!r})")
    members = []
    for entry in entries:
        if isinstance(entry, str) and not entry.strip():
            raise DelibError(f"team {list(entries)!r} names an empty model; give each agent its model")
        table = {"model": entry} if isinstance(entry, str) else dict(entry)
        name = table.pop("backend", backend)
        members.append({"backend": name, **(shared if name == backend else {}), **table})
    return {"members": members}


def members_of(table: Any) -> tuple[Member, ...]:
    """The ``members`` option as members, checked before anything loads: one table per agent, each naming a
    registered backend other than a team, with options that backend takes and a model it can load (the
    backend class's ``check_model``: llamacpp's needs no loading)."""
    team = _parse(table)
    for agent, member in enumerate(team):
        try:
            _check(member)
        except MissingOptions as err:
            raise MissingOptions(err.backend, err.options, f"team agent {agent}: ") from err
        except DelibError as err:
            raise DelibError(f"team agent {agent}: {err}") from err
    return team


def _parse(table: Any) -> tuple[Member, ...]:
    """The members of ``table``, checked for shape only."""
    if not isinstance(table, (list, tuple)) or not table:
        raise DelibError("a team needs one model per agent: option members, one table of a backend and its "
                         f"options per agent, e.g. [{{'backend': 'llamacpp', 'model': 'qwen2.5-coder-1.5b'}}]; "
                         f"got {table!r}")
    for agent, entry in enumerate(table):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("backend"), str):
            raise DelibError(f"team agent {agent}: {entry!r} is not a table of a backend name and its options")
    return tuple(Member(e["backend"], {k: v for k, v in e.items() if k != "backend"}) for e in table)


def _check(member: Member) -> None:
    """Refuse a member that cannot be built: a nested team, an option its backend lacks, a model it cannot load."""
    if member.backend == TEAM:
        raise DelibError("a team member cannot be a team; name a model")
    check_options(member.backend, dict(member.options))
    if "model" in member.options:
        backend_capabilities(member.backend).check_model(str(member.options["model"]))


def labels(team: Sequence[Member]) -> list[str]:
    """Each agent's model as records show it: the model name, with the settings (the backend included) that
    tell it apart from another member of that name, e.g. ``smollm2-135m (n_ctx=2048)``."""
    return [_label(m, [o for o in team if o.model == m.model and o.key != m.key]) for m in team]


def _label(member: Member, rivals: Sequence[Member]) -> str:
    mine = {"backend": member.backend, **member.options}
    theirs = [{"backend": o.backend, **o.options} for o in rivals]
    differing = {k: v for k, v in mine.items() if k != "model" and any(t.get(k) != v for t in theirs)}
    return cache_scope(member.model, **differing)


def agent_models(backend: str, options: Mapping[str, Any]) -> list[str]:
    """Each agent's model label (``labels``) of a run on ``backend`` with ``options`` as config.json holds
    them; empty for a backend other than a team. Read, not checked: a record of a model since removed reads."""
    return labels(_parse(options.get("members"))) if backend == TEAM else []


class TeamBackend:
    """Sends agent i's requests to its member backend (see the module docstring)."""

    name = TEAM
    caches_itself = True
    """``make_backend`` passes the cache path in rather than wrapping the team: each member gets its own scope."""

    def __init__(self, members: Sequence[Mapping[str, Any]], cache: str | None = None,
                 answers: AnswerKeyFactory | None = None) -> None:
        team = members_of(members)
        distinct = list({m.key: m for m in team}.values())
        self.assignment: tuple[int, ...] = tuple([d.key for d in distinct].index(m.key) for m in team)
        """Per agent, the index of its member in ``members``."""
        self.members: list[Backend] = _build(distinct, cache, answers)
        self.labels = labels(team)
        self.model = ",".join(self.labels)
        self.cache_scope = f"team({', '.join(cache_scope_of(self.members[i]) for i in self.assignment)})"
        self.supports_logprobs = all(m.supports_logprobs for m in self.members)

    @staticmethod
    def validate_options(members: Any = None, **_: Any) -> None:
        """Checked by ``backends.check_options`` before anything is built (``members_of``)."""
        members_of(members)

    @staticmethod
    def context_window(members: Any = None, **_: Any) -> int | None:
        """The smallest window a member knows before loading (None when none does)."""
        windows = [context_window(m.backend, dict(m.options)) for m in members_of(members)]
        return min((w for w in windows if w is not None), default=None)

    @staticmethod
    def records_summaries(members: Any = None, **_: Any) -> bool:
        """When every member does."""
        return all(records_summaries(m.backend, dict(m.options)) for m in members_of(members))

    @staticmethod
    def team_size(members: Any = None, **_: Any) -> int:
        """The agents the team has a model for."""
        return len(members_of(members))

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """One Completion per request, in order; each member is called once, with its agents' requests."""
        groups: dict[int, list[int]] = {}  # member -> positions of its requests
        for position, request in enumerate(requests):
            groups.setdefault(self._member(request), []).append(position)
        out: dict[int, Completion] = {}
        spent = 0.0  # the slowest completion of each member called so far
        for member, positions in groups.items():
            done = self.members[member].generate([requests[p] for p in positions])
            if len(done) != len(positions):
                raise DelibError(f"team member {self.labels[self.assignment.index(member)]} returned {len(done)} "
                                 f"completions for {len(positions)} requests; a backend returns one per request")
            out.update((p, replace(c, latency_s=spent + c.latency_s)) for p, c in zip(positions, done))
            spent += max(c.latency_s for c in done)
        return [out[p] for p in range(len(requests))]

    def _member(self, request: GenerationRequest) -> int:
        agent = 0 if request.agent is None else request.agent
        if not 0 <= agent < len(self.assignment):
            raise DelibError(f"a request for agent {agent}, but the team has models for {len(self.assignment)} "
                             "agents; run as many agents as the team names models")
        return self.assignment[agent]

    def interrupt(self) -> None:
        """Pass an interrupt on to every member."""
        for member in self.members:
            interrupt(member)

    def close(self) -> None:
        """Close every member, even when one fails (its error is raised after the others are closed)."""
        errors = []
        for member in self.members:
            try:
                member.close()
            except Exception as err:  # noqa: BLE001 - the others must still free their models
                errors.append(err)
        if errors:
            raise errors[0]


def _build(distinct: Sequence[Member], cache: str | None, answers: AnswerKeyFactory | None) -> list[Backend]:
    """One backend per member, each behind ``cache`` (and handed ``answers``, ``backends.HANDED``); those built
    are closed again if a later one fails."""
    built: list[Backend] = []
    try:
        for member in distinct:
            built.append(make_backend(member.backend, cache=cache, answers=answers, **member.options))
    except BaseException:
        for backend in built:
            backend.close()
        raise
    return built
