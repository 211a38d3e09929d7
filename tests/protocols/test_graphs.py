"""GPTSwarm's and AgentPrune's graphs: sampling charges the edges drawn for, the final graph thresholds
probabilities (not logits), pruning drops the lowest logits, the low-rank penalty has its value, REINFORCE
finds a known optimum, tokens spent optimising are counted, a rerun retraces the same steps from the cache, a
tree store serves what it holds without being written, and an optimised graph refuses its training
questions."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Sequence

import numpy as np
import pytest
import torch

from deliberation import benchmarks
from deliberation.cli.main import main
from deliberation.config import EngineConfig
from deliberation.errors import DelibError
from deliberation.methods.graphs import ROUNDS
from deliberation.engine.loop import make_context
from deliberation.engine.prompts import initial_messages
from deliberation.engine.spec import MethodSpec
from deliberation.protocols.designs import PROGRAMMER, ROLES, idle_note, initial
from deliberation.protocols.graph import final, low_rank_penalty, prune, sample
from deliberation.protocols.swarm import run_graph
from deliberation.rl.graph_optimize import GraphOptimization, _train
from deliberation.types import Completion, Example, GenerationRequest


def test_a_sample_charges_the_edges_drawn_for_and_skips_those_closing_a_cycle():
    potential = [(0, 1), (1, 0), (1, 2), (2, 0)]
    logits = torch.tensor([5.0, 5.0, 5.0, -5.0], requires_grad=True)
    drawn = sample(potential, logits, [True] * 4, np.random.default_rng(0))
    p = torch.sigmoid(logits.detach())
    assert drawn.edges == ((0, 1), (1, 2))  # (1, 0) and (2, 0) would close a cycle: skipped, not charged
    assert float(drawn.logp.detach()) == pytest.approx(math.log(p[0]) + math.log(p[2]))
    drawn.logp.backward()
    assert logits.grad[1] == 0 and logits.grad[3] == 0 and logits.grad[0] > 0


def test_the_final_graph_thresholds_probabilities_not_logits():
    potential = [(0, 3), (1, 3), (2, 3)]
    kept = final(potential, [0.3, -0.1, 0.6], [True, True, False]).edges
    assert kept == ((0, 3),)  # p(0.3) = 0.57 > 0.5 although 0.3 < 0.5; (2, 3) is masked


class Counting:
    """Answers 42, counting its calls."""

    name, model, supports_logprobs, cache_scope = "counting", "m", False, "m"

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        self.calls += len(requests)
        return [Completion("The final answer is $\\boxed{42}$.", 20, 10) for _ in requests]


def test_a_final_graph_runs_only_the_agents_whose_answers_reach_its_decision_and_notes_the_others():
    shape = initial("gptswarm", 3, 1)  # edges 0->1, 0->2, 1->0, 1->2, 2->0, 2->1, 0->D, 1->D, 2->D
    lone = replace(shape, spatial_logits=(0.2, -0.1, -0.8, -0.5, 0.9, -0.5, -0.1, -0.7, 0.6))  # 0->1, 2->0, 2->D
    assert lone.deciding() == (2,) and "depends on agent(s) 2 of 3; agent(s) 0, 1 reach no answer" in idle_note(lone)
    chained = replace(shape, spatial_logits=(0.1, 0.4, -0.7, -0.9, 0.1, -0.4, -0.2, -0.6, 0.8))  # 0->2->D
    assert chained.deciding() == (0, 2) and "agent(s) 1 reach no answer and are not called" in idle_note(chained)
    backend = Counting()
    ctx = make_context(Example("q1", "What is 6 times 7?", "42"), backend, benchmarks.get("gsm8k"),
                       EngineConfig(agents=3), MethodSpec("gptswarm", None, protocol=chained))
    episode = run_graph(ctx, chained.layout, *chained.final_graphs())
    assert [t.agent for t in episode.turns] == [0, 2] and backend.calls == 2  # agent 1 is not called, as in GPTSwarm


def test_the_call_plan_and_the_context_check_count_only_the_agents_a_final_graph_calls(tmp_path):
    from deliberation.methods import get
    from deliberation.methods.base import MethodConfig
    from deliberation.protocols.designs import save_graph

    shape = initial("gptswarm", 3, 1)  # edges 0->1, 0->2, 1->0, 1->2, 2->0, 2->1, 0->D, 1->D, 2->D
    lone = replace(shape, spatial_logits=(0.2, -0.1, -0.8, -0.5, 0.9, -0.5, -0.1, -0.7, 0.6),
                   record={"questions": {"benchmark": "gsm8k", "split": "train", "ids": ["gsm8k/train/0"]}})
    save_graph(tmp_path / "graph.json", lone)  # 0->1, 2->0, 2->D: agent 2 alone is called
    cfg = MethodConfig(engine=EngineConfig(agents=3), graph=str(tmp_path / "graph.json"))
    assert get("gptswarm").call_bounds(cfg).answers == (1, 1)
    assert lone.most_shown() == 0  # agent 1 would read agent 0's solution, but neither is called
    everyone = replace(shape, spatial_logits=(1.0,) * 9)
    assert everyone.deciding() == (0, 1, 2) and idle_note(everyone) is None
    assert idle_note(replace(shape, spatial_logits=(-1.0,) * 9)) is None  # silent: refused elsewhere, not noted
    assert initial("agentprune", 3, 2).deciding() == (0, 1, 2)  # its decision agent reads every agent


def test_pruning_drops_the_lowest_logits_of_the_surviving_edges():
    mask = prune([0.9, -0.2, 0.1, 3.0, -1.0], [True, True, True, True, False], 0.5)
    assert mask == [True, False, False, True, False]
    assert prune([0.1, 0.2], [True, True], 0.1) == [False, True]  # at least one
    assert prune([0.1, 0.2], [True, True], 0.0) == [True, True]


def test_the_low_rank_penalty_is_the_nuclear_norm_plus_the_distance_beyond_delta():
    logits = torch.tensor([3.0, 0.0, 0.0, 4.0])
    mask = torch.tensor([1.0, 0.0, 0.0, 1.0])
    distance = math.sqrt(2 ** 2 + 3 ** 2)
    assert float(low_rank_penalty(logits, mask, 2, 0.1)) == pytest.approx(7.0 + distance - 0.1)
    assert float(low_rank_penalty(mask, mask, 2, 0.1)) == pytest.approx(2.0)  # at the topology: nuclear only


class OneRightAgent:
    """Agent 0 is always right, every other agent always wrong (its seed's low 4 bits name the agent)."""

    name, model, supports_logprobs, cache_scope = "fixed", "m", False, "m"

    def __init__(self, gold: dict[str, str]) -> None:
        self.gold, self.calls = gold, 0

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        self.calls += len(requests)
        out = []
        for r in requests:
            answer = self.gold[r.purpose.question] if r.seed % 16 == 0 else "-1"
            out.append(Completion(f"The final answer is $\\boxed{{{answer}}}$.", 20, 10))
        return out


def test_reinforce_learns_to_keep_the_right_agent_and_drop_the_wrong_ones():
    bench = benchmarks.get("gsm8k")
    examples = [Example(f"q{i}", f"What is {i} plus {i}?", str(2 * i)) for i in range(8)]
    backend = OneRightAgent({bench.format_question(e): e.answer for e in examples})
    spec = GraphOptimization(method="gptswarm", iterations=40, split="train", engine=EngineConfig(agents=3))
    graph, spent = _train(spec, initial("gptswarm", 3, 1), examples, backend, bench)
    probs = dict(zip(graph.spatial, 1 / (1 + np.exp(-np.array(graph.spatial_logits)))))
    assert probs[(0, 3)] > 0.9 and probs[(1, 3)] < 0.3 and probs[(2, 3)] < 0.3  # from 1/2 each
    assert final(graph.spatial, graph.spatial_logits, graph.spatial_mask).predecessors(3) == [0]
    assert spent["llm_calls"] == backend.calls < 40 * 4 * 3  # agents with no path to the decision are not run
    assert (spent["prompt_tokens"], spent["completion_tokens"]) == (20 * backend.calls, 10 * backend.calls)


class ByRole:
    """The Programming Expert writes ``body`` as its solve() and states 41 in words; every other role, and the
    decision agent, answers 42 (agent 0) or 5."""

    name, model, supports_logprobs, cache_scope = "roles", "m", False, "m"

    def __init__(self, body: str) -> None:
        self.body = body

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        code = f"```python\ndef solve():\n    {self.body}\n```\nSo the final answer is 41."
        return [Completion(code if r.messages[0].content == ROLES[PROGRAMMER] else
                           f"The final answer is $\\boxed{{{42 if r.seed % 16 == 0 else 5}}}$.", 20, 10)
                for r in requests]


@pytest.mark.parametrize("body, answer", [("return 6 * 7", "42"), ("print(6 * 7)", "41"),
                                          ("return 6 * undefined_name", "41")])
def test_the_programming_experts_program_runs_and_its_value_is_its_answer(body, answer):
    """AgentPrune's Programming Expert (agent 2 of 3) answers what its program returns, not what it wrote;
    a program that returns nothing (it printed), or fails, leaves its reply as it is."""
    lone = replace(initial("agentprune", 3, 1), spatial_mask=(False,) * 6, temporal_mask=(False,) * 9)
    example = Example("q1", "What is 6 times 7?", "42")
    ctx = make_context(example, ByRole(body), benchmarks.get("gsm8k"), EngineConfig(agents=3),
                       MethodSpec("agentprune", None, protocol=lone))
    episode = run_graph(ctx, lone.layout, *lone.final_graphs())
    answers = {t.agent: t.answer for t in episode.turns if t.round == 0}
    assert answers[2] == answer and answers[1] == "5"
    assert episode.turns[2].text.endswith("So the final answer is 41." if answer == "41" else
                                          "So the final answer is 41.\nThe answer is \\boxed{42}.")


class Keeping(ByRole):
    """ByRole that keeps every request."""

    def __init__(self, body: str) -> None:
        super().__init__(body)
        self.requests: list[GenerationRequest] = []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        self.requests += requests
        return super().generate(requests)


def test_the_math_solver_reads_its_predecessors_answers_as_a_hint_and_the_others_their_solutions():
    """Edges 1 -> 0 (the Math Solver reads the Mathematical Analyst) and 1 -> 2 (the Programming Expert reads
    it too): agent 0 is asked with "(Hint: The answer is near to 5)" and no solution; agent 2 sees the text."""
    edges = initial("agentprune", 3, 1)
    lone = replace(edges, spatial_mask=tuple(e in ((1, 0), (1, 2)) for e in edges.spatial),
                   temporal_mask=(False,) * 9)
    backend = Keeping("return 6 * 7")
    ctx = make_context(Example("q1", "What is 6 times 7?", "42"), backend, benchmarks.get("gsm8k"),
                       EngineConfig(agents=3), MethodSpec("agentprune", None, protocol=lone))
    run_graph(ctx, lone.layout, *lone.final_graphs())
    asked = {r.seed % 16: r.messages[-1].content for r in backend.requests if r.messages[0].content in ROLES}
    assert "What is 6 times 7? (Hint: The answer is near to 5)." in asked[0] and "The final answer is" not in asked[0]
    assert "The final answer is $\\boxed{5}$." in asked[2] and "Hint" not in asked[2]


class Unsure(Keeping):
    """Keeping whose Mathematical Analyst (role 1) never states an answer."""

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        outs = super().generate(requests)
        return [Completion("I cannot tell.", 5, 10) if r.messages[0].content == ROLES[1] else o
                for r, o in zip(requests, outs)]


@pytest.mark.parametrize("backend, hint", [(Keeping("return 6 * 7"), "(Hint: The answer is near to 5)."),
                                           (Unsure("return 6 * 7"), None)])
def test_the_math_solver_reads_last_rounds_answers_as_a_hint_or_is_asked_alone_when_none_is_readable(backend, hint):
    """Only the temporal edge 1 -> 0, two rounds: in round 1 the Math Solver's hint is the Mathematical Analyst's
    round-0 answer; an analyst without a readable answer leaves it asked exactly as in round 0."""
    edges = initial("agentprune", 3, 2)
    lone = replace(edges, spatial_mask=(False,) * 6, temporal_mask=tuple(e == (1, 0) for e in edges.temporal))
    example = Example("q1", "What is 6 times 7?", "42")
    ctx = make_context(example, backend, benchmarks.get("gsm8k"), EngineConfig(agents=3),
                       MethodSpec("agentprune", None, protocol=lone))
    run_graph(ctx, lone.layout, *lone.final_graphs())
    solver = [r.messages for r in backend.requests if r.messages[0].content == ROLES[0]]
    assert len(solver) == 2 and "Hint" not in solver[0][-1].content
    if hint is None:
        assert solver[1] == solver[0] and solver[0][0] == initial_messages(example.question, ROLES[0])[0]
    else:
        assert f"What is 6 times 7? {hint}" in solver[1][-1].content


@pytest.mark.parametrize("method, options", [("agentprune", "graph"), ("aflow-gsm8k", None),
                                             ("aflow-math", None), ("gptswarm", "graph")])
def test_a_method_that_runs_code_is_refused_before_it_runs_where_code_cannot_run_isolated(
        optimised, monkeypatch, method, options):
    """Its first program would be refused hours into a run; the run is refused at once instead. GPTSwarm runs
    no code and is not."""
    from deliberation import make_backend, run_method
    from deliberation.benchmarks.sandbox import isolation

    monkeypatch.setattr(isolation, "probe_bwrap", lambda as_root: isolation.Probe(None, "bwrap is missing"))
    monkeypatch.delenv(isolation.ALLOW_UNISOLATED, raising=False)
    given = {} if options is None else {"graph": str(optimised / method / "graph.json")}
    example = benchmarks.get("gsm8k").load("test", limit=1)[0]
    if method == "gptswarm":
        assert run_method(method, example, make_backend("scripted"), **given).turns
        return
    with pytest.raises(DelibError, match="model-written code cannot run isolated here: bwrap is missing"):
        run_method(method, example, make_backend("scripted"), **given)


@pytest.mark.needs_split("gsm8k/train")
@pytest.mark.parametrize("argv", [["optimize-graph", "--method", "agentprune", "--backend", "scripted"],
                                  ["aflow-search", "--backend", "scripted", "--optimizer-backend", "scripted"]])
def test_an_optimisation_that_runs_code_is_refused_at_its_start_where_code_cannot_run_isolated(
        argv, tmp_path, monkeypatch, capsys):
    from deliberation.benchmarks.sandbox import isolation

    monkeypatch.setattr(isolation, "probe_bwrap", lambda as_root: isolation.Probe(None, "bwrap is missing"))
    monkeypatch.delenv(isolation.ALLOW_UNISOLATED, raising=False)
    assert main([*argv, "--limit", "2", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "cannot run isolated here: bwrap is missing" in capsys.readouterr().err and not (tmp_path / "o").exists()


def delib(*argv: str) -> int:
    return main([*argv, "--quiet"] if argv[0] == "run" else list(argv))


@pytest.fixture(scope="module")
def optimised(tmp_path_factory):
    root = tmp_path_factory.mktemp("graphs")
    for kind in ("gptswarm", "agentprune"):
        assert delib("optimize-graph", "--method", kind, "--backend", "scripted", "--limit", "8", "--iterations", "3",
                     "--rounds", "1", "--out", str(root / kind)) == 0
    return root


@pytest.mark.needs_split("gsm8k/train")
def test_an_iteration_runs_its_questions_together_and_learns_the_same_graph(optimised, tmp_path, monkeypatch):
    """--concurrency 4 runs an iteration's four sampled graphs at once (the backend gets batches wider than
    the three agents of one graph): the same graphs are drawn, and the scripted backend answers a request alike
    in any batch, so the logits and tokens equal a sequential run's."""
    batches = sent_requests(monkeypatch)
    assert delib("optimize-graph", "--method", "agentprune", "--backend", "scripted", "--limit", "8",
                 "--iterations", "3", "--rounds", "1", "--concurrency", "4", "--out", str(tmp_path / "c4")) == 0
    together = json.loads((tmp_path / "c4" / "graph.json").read_text())
    alone = json.loads((optimised / "agentprune" / "graph.json").read_text())
    for key in ("spatial_logits", "temporal_logits", "spatial_mask", "temporal_mask"):
        assert together[key] == alone[key]
    assert together["record"]["tokens"] == alone["record"]["tokens"]
    assert together["record"]["settings"]["concurrency"] == 4 and max(batches) > 3


@pytest.mark.needs_split("gsm8k/train")
def test_the_python_call_refuses_a_question_the_graph_was_optimised_on(optimised):
    """``deliberation.run_method`` refuses as ``delib run`` does: a training question is in-sample."""
    from deliberation import make_backend, run_method

    graph = str(optimised / "gptswarm" / "graph.json")
    trained = benchmarks.get("gsm8k").load("train", limit=8)
    with pytest.raises(DelibError, match=f"was optimised on 1 of these questions \\(e.g. {trained[0].id}\\)"):
        run_method("gptswarm", trained[0], make_backend("scripted"), graph=graph)
    unseen = benchmarks.get("gsm8k").load("test", limit=1)[0]
    assert run_method("gptswarm", unseen, make_backend("scripted"), graph=graph).turns


def sent_requests(monkeypatch) -> list[int]:
    """The sizes of the batches the optimisation's own backend receives, from now on."""
    from deliberation.rl import graph_optimize

    batches: list[int] = []
    made = graph_optimize.make_backend

    def recording(name: str, **kw):
        backend = made(name, **kw)
        generate = backend.generate
        backend.generate = lambda requests: batches.append(len(requests)) or generate(requests)
        return backend

    monkeypatch.setattr(graph_optimize, "make_backend", recording)
    return batches


@pytest.mark.needs_split("gsm8k/train")
def test_a_tree_store_serves_the_requests_it_holds_and_is_not_written(optimised, tmp_path, monkeypatch, capsys):
    """Agents that read no peer ask the round-0 requests a store of the training questions answered: served
    from it, they are not generated again, the graph learned is the same, and the store is left as it was."""
    store = tmp_path / "gsm8k-train"
    assert delib("tree", "--backend", "scripted", "--split", "train", "--limit", "8", "--samples", "3", "--methods",
                 "mpdf", "--out", str(store), "--quiet") == 0
    built = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    batches = sent_requests(monkeypatch)
    capsys.readouterr()
    assert delib("optimize-graph", "--method", "gptswarm", "--backend", "scripted", "--limit", "8", "--iterations",
                 "3", "--rounds", "1", "--cache", "none", "--trees", str(store), "--out", str(tmp_path / "g"),
                 "--quiet") == 0
    assert capsys.readouterr().err == ""  # --quiet: no progress bar
    served = json.loads((tmp_path / "g" / "graph.json").read_text())
    alone = json.loads((optimised / "gptswarm" / "graph.json").read_text())
    assert served["spatial_logits"] == alone["spatial_logits"]
    assert served["record"]["tokens"] == alone["record"]["tokens"]  # served answers count as generated ones
    assert 0 < sum(batches) < alone["record"]["tokens"]["llm_calls"]
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == built


@pytest.mark.needs_split("gsm8k/train")  # graphs are optimised on GSM8K train questions
@pytest.mark.parametrize("kind", ["gptswarm", "agentprune"])
def test_an_optimised_graph_runs_and_refuses_its_training_questions(optimised, tmp_path, capsys, caplog, kind):
    graph = str(optimised / kind / "graph.json")
    with caplog.at_level("WARNING", logger="deliberation"):
        assert delib("run", "--method", kind, "--graph", graph, "--backend", "scripted", "--limit", "4",
                     "--rounds", "3", "--out", str(tmp_path / "test")) == 0
    config = json.loads((tmp_path / "test" / "config.json").read_text())
    assert config["graph_used"].startswith(graph) and config["graph_rounds"] == (1 if kind == "gptswarm" else 2)
    spent = json.loads((optimised / kind / "graph.json").read_text())["record"]["tokens"]
    summary = json.loads((tmp_path / "test" / "summary.json").read_text())
    assert summary["optimisation_tokens"] == spent["prompt_tokens"] + spent["completion_tokens"] > 0
    assert [r.getMessage() for r in caplog.records] == [  # its own rounds, whatever --rounds says, and why
        f"delib: note: method {kind} runs with the rounds of its graph; --rounds 3 does not apply "
        f"({ROUNDS[kind]})"]
    assert delib("run", "--method", kind, "--graph", graph, "--backend", "scripted", "--split", "train", "--limit",
                 "4", "--out", str(tmp_path / "train")) == 2
    assert "was optimised on" in capsys.readouterr().err and not (tmp_path / "train").exists()


@pytest.mark.needs_split("gsm8k/train")  # graphs are optimised on GSM8K train questions
def test_bad_graphs_and_settings_are_refused_in_one_line(optimised, tmp_path, capsys):
    swarm = str(optimised / "gptswarm" / "graph.json")
    cases = [
        (("run", "--method", "gptswarm", "--backend", "scripted", "--out", str(tmp_path / "a")),
         "delib optimize-graph"),
        (("run", "--method", "agentprune", "--graph", swarm, "--backend", "scripted", "--out", str(tmp_path / "b")),
         "is a gptswarm graph"),
        (("run", "--method", "gptswarm", "--graph", swarm, "--agents", "4", "--backend", "scripted",
          "--out", str(tmp_path / "c")), "pass --agents 3"),
        (("optimize-graph", "--method", "gptswarm", "--split", "test", "--backend", "scripted",
          "--out", str(tmp_path / "d")), "--allow-test"),
        (("optimize-graph", "--method", "debate", "--backend", "scripted", "--out", str(tmp_path / "e")),
         "no graph to optimise"),
        (("optimize-graph", "--method", "gptswarm", "--prune-rate", "0.5", "--no-low-rank", "--backend", "scripted",
          "--out", str(tmp_path / "f")), "--prune-rate and --no-low-rank apply to agentprune only"),
    ]
    for argv, needle in cases:
        assert delib(*argv) == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and "\n" not in err, err


def test_a_tree_store_that_is_not_there_is_refused_before_the_model_loads(tmp_path, monkeypatch, capsys):
    batches = sent_requests(monkeypatch)
    from deliberation.rl import graph_optimize

    made: list[str] = []
    making = graph_optimize.make_backend
    monkeypatch.setattr(graph_optimize, "make_backend", lambda name, **kw: made.append(name) or making(name, **kw))
    assert delib("optimize-graph", "--backend", "scripted", "--limit", "4", "--iterations", "1", "--trees",
                 str(tmp_path / "absent"), "--out", str(tmp_path / "g")) == 2
    assert made == [] and batches == [] and "absent" in capsys.readouterr().err


def silenced(source, target):
    """The graph at ``source`` with every agent -> decision edge below 1/2, written to ``target``."""
    raw = json.loads(source.read_text())
    agents = raw["agents"]
    raw["spatial_logits"] = [-3.0 if dst == agents else x for (_, dst), x in zip(raw["spatial"], raw["spatial_logits"])]
    target.write_text(json.dumps(raw))
    return target


@pytest.mark.needs_split("gsm8k/train")  # graphs are optimised on GSM8K train questions
def test_a_graph_that_cannot_answer_is_refused_and_the_optimisation_says_so(optimised, tmp_path, capsys,
                                                                               monkeypatch):
    """GPTSwarm's decision node votes over the agents with an edge into it: with none left, every answer would
    be empty, so a run refuses the graph before its first question, and an optimisation that ends so writes
    nothing, leaving its --out to the next try."""
    from deliberation.protocols.designs import load_graph
    from deliberation.rl import graph_optimize

    swarm = silenced(optimised / "gptswarm" / "graph.json", tmp_path / "silent.json")
    assert load_graph(str(optimised / "gptswarm" / "graph.json"), "gptswarm").answers()
    assert not load_graph(str(swarm), "gptswarm").answers()
    assert delib("run", "--method", "gptswarm", "--graph", str(swarm), "--backend", "scripted", "--limit", "2",
                 "--out", str(tmp_path / "run")) == 2
    err = capsys.readouterr().err.strip()
    assert "no edge into the decision node" in err and "\n" not in err and not (tmp_path / "run").exists()
    train = graph_optimize._train
    silent = load_graph(str(swarm), "gptswarm")
    monkeypatch.setattr(graph_optimize, "_train", lambda *a, **k: (silent, train(*a, **k)[1]))
    argv = ["optimize-graph", "--method", "gptswarm", "--backend", "scripted", "--limit", "4", "--iterations", "1",
            "--out", str(tmp_path / "o"), "--quiet"]
    assert delib(*argv) == 2
    said = capsys.readouterr()
    err = said.err.strip()
    assert "the optimised graph has no edge into the decision node" in err and "nothing written" in err
    assert "\n" not in err and "->" not in said.out  # no line that reads as success before the refusal
    assert not (tmp_path / "o" / "graph.json").exists()
    answering = load_graph(str(optimised / "gptswarm" / "graph.json"), "gptswarm")  # another try that answers
    monkeypatch.setattr(graph_optimize, "_train", lambda *a, **k: (answering, train(*a, **k)[1]))
    assert delib(*argv) == 0 and (tmp_path / "o" / "graph.json").exists()  # the --out is free for it



class RemembersItself:
    """AgentPrune's team where only agent 1 can be right, and only in round 1 reading its own round-0 solution
    over the temporal edge (1, 1): its round-0 reply carries a mark no other reply does, and its round-1 reply
    is right, with a second mark, only where its prompt shows the first; the decision agent is right only where
    a solution it reads carries the second mark. Every other reply is wrong and unmarked."""

    name, model, supports_logprobs, cache_scope = "remembers", "m", False, "m"

    def __init__(self, gold: dict[str, str]) -> None:
        self.gold = gold

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        return [Completion(self.reply(r), 20, 10) for r in requests]

    def reply(self, r: GenerationRequest) -> str:
        system, user = r.messages[0].content, r.messages[-1].content
        right = f"The final answer is $\\boxed{{{self.gold[r.purpose.question]}}}$."
        if system == ROLES[1] and "## Solutions from the last round" not in user:
            return "FIRST-MARK. The final answer is $\\boxed{-1}$."  # round 0, or round 1 without its memory
        if system == ROLES[1]:
            return f"SECOND-MARK. {right}" if "FIRST-MARK" in user.split("## Solutions from the last round")[1] \
                else "The final answer is $\\boxed{-1}$."
        if system not in ROLES:  # the decision agent
            return right if "SECOND-MARK" in user else "The final answer is $\\boxed{-1}$."
        return "The final answer is $\\boxed{-1}$."


def test_agentprune_learns_the_one_temporal_edge_that_makes_its_team_right_and_pruning_keeps_it():
    """Round 0's temporal edges read no earlier round and are not charged; round 1's (1, 1) is the only edge
    whose presence changes the utility, so REINFORCE raises it above every other logit, and pruning, which
    drops the lowest, keeps it."""
    bench = benchmarks.get("gsm8k")
    examples = [Example(f"q{i}", f"What is {i} plus {i}?", str(2 * i)) for i in range(8)]
    backend = RemembersItself({bench.format_question(e): e.answer for e in examples})
    spec = GraphOptimization(method="agentprune", iterations=40, split="train", engine=EngineConfig(agents=3),
                             low_rank=False)
    graph, spent = _train(spec, initial("agentprune", 3, 2), examples, backend, bench)
    self_edge = graph.temporal.index((1, 1))
    probs = 1 / (1 + np.exp(-np.array(graph.temporal_logits)))
    assert probs[self_edge] > 0.9 and graph.temporal_logits[self_edge] == max(
        (*graph.spatial_logits, *graph.temporal_logits))
    assert graph.temporal_mask[self_edge] and sum(graph.temporal_mask) == 9 - 2 and sum(graph.spatial_mask) == 6 - 2
    assert spent["graph_runs"] == 40 * 4 and spent["llm_calls"] == 40 * 4 * (2 * 3 + 1)  # 2 rounds, the decision


def test_agentprunes_loss_charges_no_round_0_temporal_edge_and_its_penalty_lays_out_the_spatial_matrix():
    from deliberation.rl.graph_optimize import DELTA, _loss, _penalty

    graph = initial("agentprune", 3, 2)
    spatial = torch.tensor([0.5, -0.3, 0.2, 0.9, -1.0, 0.4], requires_grad=True)
    temporal = torch.linspace(-1, 1, 9).requires_grad_()
    rng = np.random.default_rng(3)
    s = [sample(graph.spatial, spatial, graph.spatial_mask, rng) for _ in range(2)]
    t = [sample(graph.temporal, temporal, graph.temporal_mask, rng, acyclic=False) for _ in range(2)]

    class Right:
        correct = True

    _loss([(None, s, t)], [Right()]).backward(retain_graph=True)
    charged = temporal.grad.clone()
    temporal.grad = None
    (-t[1].logp).backward(retain_graph=True)  # round 1's temporal edges alone
    assert torch.allclose(charged, temporal.grad) and charged.abs().sum() > 0
    square = np.array([[0, 0.5, -0.3], [0.2, 0, 0.9], [-1.0, 0.4, 0]])  # (s, d) in pair order (or transposed)
    off = np.ones((3, 3)) - np.eye(3)
    grid = temporal.detach().numpy().reshape(3, 3)
    expected = sum(np.linalg.svd(m, compute_uv=False).sum() + max(0.0, np.linalg.norm(a - m) - DELTA)
                   for m, a in ((square, off), (grid, np.ones((3, 3)))))
    penalty = _penalty(GraphOptimization(method="agentprune", split="train"), graph, spatial, temporal)
    assert float(penalty.detach()) == pytest.approx(expected, rel=1e-5)
    assert float(_penalty(GraphOptimization(method="agentprune", split="train", low_rank=False), graph, spatial,
                          temporal)) == 0.0
