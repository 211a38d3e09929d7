"""``delib train --init`` takes a training directory of ``delib train`` as well as the policy.pt inside it."""

import json

import pytest

from deliberation.cli.main import main

pytestmark = pytest.mark.needs_split("gsm8k/train")  # its questions come from GSM8K train (no package ships it)


@pytest.fixture(scope="module")
def rollouts(tmp_path_factory):
    out = tmp_path_factory.mktemp("rollouts")
    assert main(["collect", "--benchmark", "gsm8k", "--split", "train", "--limit", "20", "--joint-actions", "4",
                 "--backend", "scripted", "--out", str(out), "--quiet"]) == 0
    return out


def train(rollouts, out, *args):
    return main(["train", "--rollouts", str(rollouts), "--out", str(out), "--epochs", "1", *args])


def test_init_takes_the_training_directory_or_its_policy_pt(tmp_path, rollouts):
    sft = tmp_path / "sft"
    assert train(rollouts, sft, "--algo", "sft") == 0
    assert train(rollouts, tmp_path / "from-file", "--init", str(sft / "policy.pt")) == 0
    assert train(rollouts, tmp_path / "from-dir", "--init", str(sft)) == 0
    held_out = [json.loads((tmp_path / d / "held_out.json").read_text()) for d in ("from-file", "from-dir")]
    assert held_out[0] == held_out[1] and held_out[0]["start"] is not None


def test_a_directory_without_a_policy_is_refused_in_one_line(tmp_path, rollouts, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "out"
    assert train(rollouts, out, "--init", str(empty)) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"delib: error: --init {empty} is a directory without a policy.pt; pass a training directory "
                   "of `delib train` or a policy.pt")
    assert not out.exists()


def test_an_empty_init_or_a_file_that_is_no_checkpoint_is_named_for_what_it_is(tmp_path, rollouts, capsys):
    """An empty --init would read as none (a run from scratch nobody asked for); a run's config.json as --init
    is named as no checkpoint, not judged by the run's settings beside it."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"seed": 0}))
    for init, says in (("", "--init is empty; name a policy.pt or a training directory"),
                       (str(run / "config.json"), "is not a deliberation policy checkpoint")):
        assert train(rollouts, tmp_path / "out", "--init", init, "--val-fraction", "0.2") == 2
        err = capsys.readouterr().err.strip()
        assert says in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out").exists()
