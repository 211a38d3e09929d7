"""`delib collect` then `delib train` end to end on the scripted backend; bad input refused cleanly."""

import gzip
import json

import pytest

from deliberation.cli import main


@pytest.fixture(scope="module")
def rollouts(tmp_path_factory):
    out = tmp_path_factory.mktemp("rollouts")
    assert main(["collect", "--benchmark", "gsm8k", "--split", "train", "--limit", "40", "--samples", "4",
                 "--backend", "scripted", "--out", str(out), "--quiet"]) == 0
    return out


def test_sft_then_softrankpo(tmp_path, rollouts, capsys):
    sft = tmp_path / "sft"
    assert main(["train", "--algo", "sft", "--rollouts", str(rollouts), "--out", str(sft), "--epochs", "3"]) == 0
    assert {p.name for p in sft.iterdir()} == {"policy.pt", "config.json", "metrics.jsonl", "held_out.json"}
    assert json.loads((sft / "config.json").read_text())["algo"] == "sft"
    srpo = tmp_path / "srpo"
    assert main(["train", "--algo", "softrankpo", "--rollouts", str(rollouts), "--init", str(sft / "policy.pt"),
                 "--out", str(srpo), "--epochs", "2", "--reward-scale", "10"]) == 0
    rows = [json.loads(x) for x in (srpo / "metrics.jsonl").read_text().splitlines()]
    assert rows and all(set(r) >= {"loss", "kl", "entropy", "mean_advantage", "val_accuracy"} for r in rows)
    assert "gain over the best constant" in capsys.readouterr().out
    compared = json.loads((srpo / "held_out.json").read_text())
    assert compared["start"]["decisions"] == compared["policy"]["decisions"] > 0
    assert compared["policy"]["oracle_reward"] >= max(compared["policy"]["fixed_rewards"])
    # the trained policy runs as mpdf's policy
    run = tmp_path / "run"
    assert main(["run", "--method", "mpdf", "--policy", str(srpo / "policy.pt"), "--backend", "scripted",
                 "--limit", "5", "--out", str(run), "--quiet"]) == 0
    assert json.loads((run / "config.json").read_text())["policy_used"] == str(srpo / "policy.pt")


@pytest.mark.parametrize("flags, message", [(["--group-size", "1"], "group_size"), (["--lr", "-1"], "lr")])
def test_bad_hyperparameters(tmp_path, rollouts, capsys, flags, message):
    out = tmp_path / "bad"
    assert main(["train", "--algo", "softrankpo", "--rollouts", str(rollouts), "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and not out.exists()


def test_empty_and_foreign_rollouts(tmp_path, capsys):
    empty = tmp_path / "empty"
    assert main(["collect", "--limit", "1", "--split", "train", "--backend", "scripted", "--out", str(empty),
                 "--quiet"]) == 0
    gzip.open(empty / "rollouts.jsonl.gz", "wt").close()  # stopped before its first question finished
    assert main(["train", "--algo", "sft", "--rollouts", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert "empty" in capsys.readouterr().err
    assert main(["train", "--algo", "sft", "--rollouts", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "manifest" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_init_trained_on_a_different_split_is_refused(tmp_path, rollouts, capsys):
    sft = tmp_path / "sft"
    assert main(["train", "--algo", "sft", "--rollouts", str(rollouts), "--out", str(sft), "--epochs", "1"]) == 0
    for flags in (["--seed", "1"], ["--val-fraction", "0.3"]):
        out = tmp_path / "pg"
        assert main(["train", "--rollouts", str(rollouts), "--init", str(sft / "policy.pt"), "--out", str(out),
                     "--epochs", "1", *flags]) == 2
        assert "leak into validation" in capsys.readouterr().err and not out.exists()
    assert main(["train", "--rollouts", str(rollouts), "--init", str(sft / "policy.pt"), "--out",
                 str(tmp_path / "ok"), "--epochs", "1", "--val-fraction", "0.1"]) == 0


def test_clip_none_gives_the_plain_gradient_where_only_ppo_clips(tmp_path, rollouts):
    """By default every algo clips (offline rollouts), so grpo and ppo coincide; --clip-eps none tells them apart."""
    def train(algo, *flags):
        out = tmp_path / "-".join((algo, *flags))
        assert main(["train", "--algo", algo, "--rollouts", str(rollouts), "--out", str(out), "--epochs", "2",
                     *flags]) == 0
        return [json.loads(x)["loss"] for x in (out / "metrics.jsonl").read_text().splitlines()]

    clipped = train("ppo")
    assert train("grpo") == clipped
    plain = train("grpo", "--clip-eps", "none")
    assert json.loads((tmp_path / "grpo---clip-eps-none" / "config.json").read_text())["clip_eps"] is None
    assert train("ppo", "--clip-eps", "none") == clipped and plain != clipped


def test_group_size_ablation_trains_on_fewer_samples(tmp_path, rollouts, capsys):
    out = tmp_path / "k2"
    assert main(["train", "--algo", "softrankpo", "--rollouts", str(rollouts), "--out", str(out),
                 "--epochs", "1", "--group-size", "2"]) == 0
    assert json.loads((out / "config.json").read_text())["group_size"] == 2
    assert main(["train", "--algo", "softrankpo", "--rollouts", str(rollouts), "--out", str(tmp_path / "k9"),
                 "--group-size", "9"]) == 2
    assert "more than the 4 samples" in capsys.readouterr().err and not (tmp_path / "k9").exists()
