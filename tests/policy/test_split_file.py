"""split.json as one typed record (``policy/split.py``): a training run writes it byte for byte as runs always
did, every committed one reads and is written back unchanged, and one that lacks a list is one clear error
rather than a leak check that silently passes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from deliberation.errors import DelibError
from deliberation.policy.shipped import SHIPPED
from deliberation.rl.config import TrainConfig
from deliberation.rl.pipeline import check_init_split
from deliberation.policy.split import SPLIT_FILE, read_split, split_of, write_split
from deliberation.types import strict_json

REPO = Path(__file__).resolve().parents[2]


def committed_splits() -> list[Path]:
    """Every split.json git tracks under docs/results, and the shipped checkpoints' ``<name>.split.json``."""
    listed = subprocess.run(["git", "ls-files", "--", f"docs/results/**/{SPLIT_FILE}"], cwd=REPO, capture_output=True,
                            text=True, check=True, timeout=60).stdout.split()
    return [REPO / f for f in listed] + sorted(SHIPPED.glob(f"*.{SPLIT_FILE}"))


def test_a_training_run_writes_split_json_byte_for_byte_as_before(tmp_path):
    """As ``delib train`` wrote it before the record: each list's ids once, sorted, train first."""
    train, held_out = ["gsm8k/train/3", "gsm8k/train/10", "gsm8k/train/3", "gsm8k/train/2"], ["gsm8k/train/7"] * 2
    before = strict_json({"train": sorted(set(train)), "held_out": sorted(set(held_out))}, indent=2) + "\n"
    write_split(tmp_path, split_of(train, held_out))
    assert (tmp_path / SPLIT_FILE).read_text() == before
    assert read_split(tmp_path / SPLIT_FILE) == split_of(held_out=held_out, train=train)


def test_every_committed_split_reads_and_is_written_back_byte_for_byte(tmp_path):
    files = committed_splits()
    assert len(files) > 5
    for k, path in enumerate(files):
        split, folder = read_split(path), tmp_path / str(k)
        assert split.train and set(split.train).isdisjoint(split.held_out), path
        folder.mkdir()
        write_split(folder, split)
        assert (folder / SPLIT_FILE).read_bytes() == path.read_bytes(), path


@pytest.mark.parametrize("text, named", [('{"held_out": ["q1"]}', r"missing field\(s\) train"),
                                         ('{"train": "q1", "held_out": ["q1"]}', r"Split\.train"),
                                         ('{"train": ["q2"], "held_out": [1]}', r"Split\.held_out")])
def test_init_from_a_run_whose_split_json_lacks_or_mangles_a_list_is_refused_in_one_line(tmp_path, text, named):
    """Read by keys, a split.json without its train list (or with a text in its place) let --init's leak check
    pass unchecked (or compare letters); read as its record, it is one line naming the file, the list, the fix."""
    (tmp_path / SPLIT_FILE).write_text(text)
    with pytest.raises(DelibError, match=named) as err:
        check_init_split(tmp_path / "policy.pt", TrainConfig(), ["q1"])
    assert str(tmp_path / SPLIT_FILE) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("flags, named", [(("--init", "--seed"), "--init "),
                                          (("--policy", "--train-seed"), "--policy ")])
def test_a_leaking_start_policy_is_named_as_the_command_names_it(tmp_path, flags, named):
    """`delib train --init` and `delib iterate --policy` (whose training seed is --train-seed) start from a
    policy the same way: the refusal names the flags the user typed."""
    (tmp_path / "config.json").write_text('{"seed": 1, "val_fraction": 0.2}')
    with pytest.raises(DelibError) as err:
        check_init_split(tmp_path / "policy.pt", TrainConfig(seed=0), ["q1"], flags)
    assert str(err.value).startswith(named) and f"train with the same {flags[1]} and" in str(err.value)


def test_a_start_policy_of_other_features_is_refused_with_the_features_to_choose(tmp_path):
    from deliberation.engine.state import FEATURE_NAMES, FEATURE_VERSION
    from deliberation.policy.checkpoint import save_policy
    from deliberation.policy.network import MetaPolicyNet
    from deliberation.rl.pipeline import _start

    start = save_policy(tmp_path / "start.pt", MetaPolicyNet(len(FEATURE_NAMES)), FEATURE_NAMES, FEATURE_VERSION, {})
    wanted = TrainConfig(features="signals")
    with pytest.raises(DelibError) as err:
        _start(start, wanted.feature_set(), wanted.features, "--init")
    said = str(err.value)
    assert said.startswith(f"--init {start}: policy expects {len(FEATURE_NAMES)} features") and "\n" not in said
    assert said.endswith("start from a policy trained with --features signals, train with the --features it was "
                         "trained with, or drop --init")
