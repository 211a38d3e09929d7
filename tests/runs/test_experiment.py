"""Experiment grids: parse and validate TOML, run a grid with a shared cache, resume, fail per cell."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from deliberation.benchmarks.answers import make_backend
from deliberation.backends.cache import CachedBackend
from deliberation.errors import DelibError
from deliberation.runs.experiment import plan, run_experiment
from deliberation.runs.experiment_file import cap_limits, load_experiment, only_benchmarks, only_methods
from deliberation.report.write import write_report
from deliberation.runs.directory import RunDir
from deliberation.actions import Action

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
REPO = Path(__file__).resolve().parents[2]
GRID = """
name = "grid"
out = "{out}"
methods = ["self-consistency", "debate"]
benchmarks = ["gsm8k"]
limit = 3
[backend]
name = "scripted"
benchmark = "gsm8k"
"""


@pytest.fixture(autouse=True)
def data_dir(monkeypatch):
    if not os.environ.get("DELIB_DATA_DIR"):
        monkeypatch.setenv("DELIB_DATA_DIR", str(DATA))


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(text.replace("{out}", (tmp_path / "out").as_posix()))
    return path


def scripted_with_cache(cfg):
    """The scripted backend (its ``calls`` counts the requests that reach it) behind the grid's cache."""
    inner = make_backend("scripted", benchmark="gsm8k")
    return inner, CachedBackend(inner, cfg.cache)


def test_grid_runs_shares_the_cache_and_resumes(tmp_path):
    cfg = load_experiment(write_config(tmp_path, GRID))
    inner, backend = scripted_with_cache(cfg)
    sc, debate = run_experiment(cfg, progress=False, backend=backend, report=write_report)
    out = tmp_path / "out"
    for label in ("self-consistency", "debate"):
        assert {p.name for p in (out / "gsm8k" / f"{label}-s0").iterdir()} == {
            "config.json", "episodes.jsonl", "summary.json", "cell.json", ".writer.lock"}
    assert "| self-consistency |" in (out / "report" / "report.md").read_text()
    assert (out / "report" / "report.csv").exists() and (out / "responses.sqlite").exists()
    # debate's round-0 answers are self-consistency's samples: served from the cache, not generated again
    debate_turns = [t for e in RunDir(out / "gsm8k" / "debate-s0").episodes() for t in e.turns]
    assert all(t.cached for t in debate_turns if t.round == 0) and len([t for t in debate_turns if t.round == 0]) == 9
    assert not any(t.cached for t in debate_turns if t.round > 0)
    assert (sc.llm_calls, debate.llm_calls) == (9, 27)
    assert inner.calls == sc.llm_calls + debate.llm_calls - 9
    backend.close()

    episodes = {p: p.read_bytes() for p in out.glob("gsm8k/*/episodes.jsonl")}
    inner, backend = scripted_with_cache(cfg)
    again = run_experiment(cfg, progress=False, backend=backend)
    assert inner.calls == 0 and again == [sc, debate]
    assert {p: p.read_bytes() for p in out.glob("gsm8k/*/episodes.jsonl")} == episodes


def test_plan_is_benchmark_major(tmp_path):
    text = GRID.replace('["gsm8k"]', '["gsm8k", "aime24"]').replace("limit = 3", "seeds = [0, 1]\nlimit = 3")
    cfg = load_experiment(write_config(tmp_path, text))
    cells = plan(cfg)
    assert [(c.benchmark, c.seed, c.label) for c in cells] == [
        (b, s, m) for b in ("gsm8k", "aime24") for s in (0, 1) for m in ("self-consistency", "debate")]
    assert cells[-1].out == tmp_path / "out" / "aime24" / "debate-s1"
    assert cells[-1].spec.engine.seed == 1 and cells[-1].spec.cache == str(tmp_path / "out" / "responses.sqlite")


def test_failed_cell_does_not_stop_the_others(tmp_path):
    variant = '[[variants]]\nlabel = "mpdf-x"\nmethod = "mpdf"\npolicy = "missing.pt"\n'
    text = GRID.replace('"debate"', '"cot"') + variant
    cfg = load_experiment(write_config(tmp_path, text))
    assert [(a.label, a.method, a.policy) for a in cfg.arms][-1] == ("mpdf-x", "mpdf", "missing.pt")
    with pytest.raises(DelibError, match=r"1 of 3 cells failed .*gsm8k/mpdf-x-s0: .*missing\.pt") as err:
        run_experiment(cfg, progress=False, report=write_report)
    assert "\n" not in str(err.value)
    out = tmp_path / "out"
    assert (out / "gsm8k" / "cot-s0" / "summary.json").exists() and not (out / "gsm8k" / "mpdf-x-s0").exists()
    assert "| cot |" in (out / "report" / "report.md").read_text()


def test_a_ray_address_without_workers_is_refused_not_ignored(tmp_path):
    """One process runs every cell at workers 1, so an address there would be silently ignored."""
    cfg = load_experiment(write_config(tmp_path, GRID))
    with pytest.raises(DelibError, match=r"^a Ray address \(auto\) is used only with workers > 1 \(--workers N\)"):
        run_experiment(cfg, progress=False, ray_address="auto")
    assert not (tmp_path / "out").exists()


def test_workers_send_each_cell_to_ray_actors_sharing_the_cache_file(tmp_path, monkeypatch):
    """workers > 1 routes every cell, in plan order, to distributed.execute_distributed (stubbed here by the
    local runner: Ray itself is tested in tests/runs/test_distributed.py)."""
    from deliberation.runs import distributed, runner

    calls = []

    def fake(spec, out, workers, ray_address=None, progress=True):
        calls.append((spec.method, spec.cache, workers, ray_address))
        return runner.execute(spec, out, progress=False)

    monkeypatch.setattr(distributed, "execute_distributed", fake)
    cfg = load_experiment(write_config(tmp_path, GRID))
    summaries = run_experiment(cfg, progress=False, workers=2, ray_address="auto", report=write_report)
    cache = str(tmp_path / "out" / "responses.sqlite")
    assert calls == [("self-consistency", cache, 2, "auto"), ("debate", cache, 2, "auto")]
    assert [s.method for s in summaries] == ["self-consistency", "debate"]
    assert (tmp_path / "out" / "report" / "report.md").exists()
    with pytest.raises(DelibError, match="cannot be shared with Ray workers"):
        run_experiment(cfg, progress=False, workers=2, backend=make_backend("scripted", benchmark="gsm8k"))


BAD = [
    ('methods = ["self-consistency", "debate"]', 'methods = ["debate", "telepathy"]', "telepathy", "mpdf"),
    ('benchmarks = ["gsm8k", "aime24"]', 'benchmarks = ["gsm9k"]', "gsm9k", "humaneval"),
    ("limit = 3", "limit = 3\nlimt = 4", "limt", "benchmarks"),
    ("limit = 3", "limit = 3\n[engine]\nagnets = 2", "agnets", "max_tokens"),
    ("limit = 3", "limit = 3\n[engine]\nseed = 2", "seed", "seeds"),
    ("limit = 3", "limit = 3\n[engine]\nagents = 0", "agents", "at least 1"),
    ("limit = 3", "limit = 3\n[engine]\nagents = true", "agents", "int"),
    ("limit = 3", 'split = "train"\nlimit = 3', "aime24", "train"),
    ("limit = 3", "[limit]\ngsm8k = 3", "aime24", "every benchmark"),
    ('name = "scripted"', 'name = "scripted"\nskilz = [0.5]', "skilz", "skills"),
    ('name = "scripted"', 'name = "gpt-7"', "gpt-7", "llamacpp"),
    ("limit = 3", 'limit = 3\n[[variants]]\nlabel = "d2"\nmethod = "debate"\npolicy = "p.pt"', "d2", "means nothing"),
    ("limit = 3", 'limit = 3\n[[variants]]\nlabel = "d3"\nmethod = "debate"\nconfidence_threshold = 0.5', "d3",
     "confidence_threshold means nothing"),
    ("limit = 3", 'limit = 3\n[[variants]]\nlabel = "debate"\nmethod = "debate"', "debate", "used twice"),
    ("limit = 3", 'limit = 3\n[[variants]]\nlabel = "a/b"\nmethod = "mpdf"', "a/b", "directory"),
    ("limit = 3", "limit = 3\nconcurrency = 0", "concurrency", "at least 1"),
    ('benchmarks = ["gsm8k", "aime24"]', 'benchmarks = ["numeric:absent.jsonl"]', "absent.jsonl", "not found"),
    ('benchmarks = ["gsm8k", "aime24"]', 'benchmarks = ["vibes:q.jsonl"]', "vibes", "<answer type>:<path>"),
    ('benchmarks = ["gsm8k", "aime24"]', 'benchmarks = ["gsm8k", "gsm8k"]', "gsm8k", "list a benchmark once"),
    ('benchmarks = ["gsm8k", "aime24"]', 'benchmarks = [["gsm8k"]]', "['gsm8k']", "choose from"),
]


@pytest.mark.parametrize("old, new, name, hint", BAD)
def test_bad_config_is_one_line_error_before_anything_is_written(tmp_path, old, new, name, hint):
    text = GRID.replace('["gsm8k"]', '["gsm8k", "aime24"]')
    assert old in text
    path = write_config(tmp_path, text.replace(old, new))
    with pytest.raises(DelibError) as err:
        load_experiment(path)
    message = str(err.value)
    assert "\n" not in message and name in message and hint in message and str(path) in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.toml"]


def test_unreadable_files(tmp_path):
    with pytest.raises(DelibError, match="experiment file .*absent.toml not found; pass an experiment's TOML file"):
        load_experiment(tmp_path / "absent.toml")
    with pytest.raises(DelibError, match="is a folder, not a file"):
        load_experiment(tmp_path)
    (tmp_path / "bad.toml").write_text("name = \n")
    with pytest.raises(DelibError, match="bad.toml is not valid TOML"):
        load_experiment(tmp_path / "bad.toml")


@pytest.mark.parametrize("name, cells, model", [("table1.toml", 84, "qwen2.5-coder-1.5b"),
                                               ("quick.toml", 4, "qwen2.5-coder-1.5b"),
                                               ("policy_episodes.toml", 12, "qwen2.5-coder-0.5b")])
def test_shipped_experiments_load(name, cells, model):
    cfg = load_experiment(REPO / "experiments" / name)
    assert len(plan(cfg)) == cells and cfg.backend == "llamacpp"
    assert cfg.backend_options == {"model": model}


def test_concurrency_reaches_every_cell(tmp_path):
    cfg = load_experiment(write_config(tmp_path, GRID.replace("limit = 3", "limit = 3\nconcurrency = 3")))
    assert cfg.concurrency == 3 and all(cell.spec.concurrency == 3 for cell in plan(cfg))


def test_limit_cap_gives_a_smaller_table_that_a_rerun_without_it_extends(tmp_path):
    cfg = load_experiment(write_config(tmp_path, GRID.replace("limit = 3", "[limit]\ngsm8k = 3")))
    capped = cap_limits(cfg, 2)
    assert capped.limits == {"gsm8k": 2} and cap_limits(cfg, 5).limits == {"gsm8k": 3}
    assert all(c.spec.command.endswith("exp.toml --limit 2") for c in plan(capped))
    inner, backend = scripted_with_cache(cfg)
    assert [s.n for s in run_experiment(capped, progress=False, backend=backend)] == [2, 2]
    first = inner.calls
    assert [s.n for s in run_experiment(cfg, progress=False, backend=backend)] == [3, 3]
    assert inner.calls - first == first // 2  # only the third question's requests reached the model
    backend.close()
    with pytest.raises(DelibError, match="--limit must be at least 1"):
        cap_limits(cfg, 0)


def test_only_benchmarks_runs_the_same_cells_in_the_order_given(tmp_path):
    text = GRID.replace('["gsm8k"]', '["gsm8k", "aime24", "mmlu"]')
    cfg = load_experiment(write_config(tmp_path, text))
    whole = {c.out: c.spec for c in plan(cfg)}
    cut = plan(only_benchmarks(cfg, ["mmlu", "gsm8k"]))
    assert [(c.benchmark, c.label) for c in cut] == [
        (b, m) for b in ("mmlu", "gsm8k") for m in ("self-consistency", "debate")]
    assert all(whole[c.out] == c.spec for c in cut)  # same directory, same spec, same recorded command
    with pytest.raises(DelibError, match=r"--benchmarks: 'math' is not in .*exp\.toml; it has: gsm8k, aime24, mmlu"):
        only_benchmarks(cfg, ["gsm8k", "math"])
    with pytest.raises(DelibError, match="each benchmark once"):
        only_benchmarks(cfg, ["gsm8k", "gsm8k"])


def test_only_methods_runs_the_same_cells_of_those_rows_in_the_order_given(tmp_path):
    variant = '[[variants]]\nlabel = "sc-9"\nmethod = "self-consistency"\nagents = 9\n'
    text = GRID.replace('["gsm8k"]', '["gsm8k", "mmlu"]') + variant
    cfg = load_experiment(write_config(tmp_path, text))
    whole = {c.out: c.spec for c in plan(cfg)}
    cut = plan(only_methods(cfg, ["sc-9", "debate"]))
    assert [(c.benchmark, c.label) for c in cut] == [(b, m) for b in ("gsm8k", "mmlu") for m in ("sc-9", "debate")]
    assert all(whole[c.out] == c.spec for c in cut)  # same directory, same spec, same recorded command
    assert cut[0].spec.engine.agents == 9  # a variant keeps its settings
    with pytest.raises(DelibError, match=r"--methods: 'mpdf' is not in .*exp\.toml; it has: self-consistency, deb"):
        only_methods(cfg, ["debate", "mpdf"])
    with pytest.raises(DelibError, match="each method once"):
        only_methods(cfg, [])


def test_a_variant_sets_the_confidence_threshold_of_its_cells(tmp_path):
    """threshold 0: every parseable answer persists (no REFINE); 1 (the highest a P(Yes) threshold can be): none
    does, the scripted critic's P(Yes) staying below 1, so agents refine or concede. No early stop, so round 1
    is played under both."""
    variants = "[engine]\nearly_stop = false\n" + "".join(
        f'[[variants]]\nlabel = "ct-{x}"\nmethod = "confidence-threshold"\nconfidence_threshold = {x}\n'
        for x in ("0.0", "1.0"))
    cfg = load_experiment(write_config(tmp_path, GRID.replace('["self-consistency", "debate"]', "[]") + variants))
    run_experiment(cfg, progress=False)
    cells = {c.label: c for c in plan(cfg)}
    assert [cells[label].spec.confidence_threshold for label in ("ct-0.0", "ct-1.0")] == [0.0, 1.0]
    actions = {label: {t.action for e in RunDir(cells[label].out).episodes() for t in e.turns if t.round > 0}
               for label in cells}
    assert actions["ct-0.0"] and actions["ct-1.0"]  # round 1 was played under both thresholds
    assert Action.REFINE not in actions["ct-0.0"] and Action.PERSIST not in actions["ct-1.0"]


def test_a_file_of_ones_own_is_a_benchmark_of_the_grid_with_a_folder_of_its_own(tmp_path):
    """benchmarks = ["numeric:<file>"] runs like `delib run --benchmark FILE --answer-type numeric`; its cells go
    in <out>/numeric-<stem>, not in folders made of the path."""
    data = tmp_path / "mine.jsonl"
    data.write_text('{"id": "a", "question": "What is 2 + 3?", "answer": "5"}\n'
                    '{"id": "b", "question": "What is 4 + 4?", "answer": "8"}\n')
    name = f"numeric:{data.as_posix()}"
    cfg = load_experiment(write_config(tmp_path, GRID.replace('["gsm8k"]', f'["gsm8k", "{name}"]')))
    assert cfg.benchmarks == ("gsm8k", name) and cfg.splits[name] == "test"
    backend = CachedBackend(make_backend("scripted"), cfg.cache)  # no benchmark: it also answers the file's questions
    summaries = run_experiment(cfg, progress=False, backend=backend)
    cell = tmp_path / "out" / "numeric-mine" / "debate-s0"
    assert [s.n for s in summaries] == [3, 3, 2, 2]
    assert json.loads((cell / "config.json").read_text())["benchmark"] == name
    assert {p.name for p in (tmp_path / "out").iterdir()} >= {"gsm8k", "numeric-mine"}


def test_a_file_of_ones_own_is_read_when_the_experiment_file_is(tmp_path):
    """A bad line fails before any cell runs (not hours later, when its benchmark's turn comes), and two files
    of one stem are refused, since their cells would share a folder."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "question": "What is 2 + 3?", "answer": "five"}\n')
    path = write_config(tmp_path, GRID.replace('["gsm8k"]', f'["gsm8k", "numeric:{bad.as_posix()}"]'))
    with pytest.raises(DelibError, match=r"bad\.jsonl:1") as err:
        load_experiment(path)
    assert "\n" not in str(err.value)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "q.jsonl").write_text('{"id": "a", "question": "1 + 1?", "answer": "2"}\n')
    both = ", ".join(f'"numeric:{(tmp_path / f / "q.jsonl").as_posix()}"' for f in ("a", "b"))
    with pytest.raises(DelibError, match="would share the folder numeric-q"):
        load_experiment(write_config(tmp_path, GRID.replace('["gsm8k"]', f"[{both}]")))


def test_a_subset_of_a_list_the_file_lacks_says_it_has_none():
    from deliberation.runs.experiment_file import _subset

    with pytest.raises(DelibError, match=r"^--backbones: 'x' is not in exp\.toml; it has no backbone$"):
        _subset(["x"], (), "--backbones", "backbone", "exp.toml")


def test_backbones_asked_of_a_file_without_them_says_it_has_none(tmp_path):
    """A file without [[backbones]] runs one model from the command line: its lone backbone has no label to pick."""
    from deliberation.runs.experiment_file import only_backbones

    cfg = load_experiment(write_config(tmp_path, GRID))
    with pytest.raises(DelibError, match=r"--backbones: 'x' is not in .*; it has no \[\[backbones\]\] table$"):
        only_backbones(cfg, ["x"])
