"""`delib collect` then `delib train` end to end on the scripted backend; bad input refused cleanly."""

import gzip
import json
import shutil

import pytest

from deliberation.cli.main import main
from deliberation.rl.held_out_file import read_held_out


@pytest.fixture(scope="module")
def rollouts(tmp_path_factory):
    out = tmp_path_factory.mktemp("rollouts")
    assert main(["collect", "--benchmark", "gsm8k", "--split", "train", "--limit", "40", "--joint-actions", "4",
                 "--backend", "scripted", "--out", str(out), "--quiet"]) == 0
    return out


@pytest.mark.needs_split("gsm8k/train")
def test_sft_then_softrankpo(tmp_path, rollouts, capsys):
    sft = tmp_path / "sft"
    assert main(["train", "--algo", "sft", "--rollouts", str(rollouts), "--out", str(sft), "--epochs", "3"]) == 0
    assert {p.name for p in sft.iterdir()} == {"policy.pt", "config.json", "metrics.jsonl", "held_out.json",
                                               "split.json"}
    split = json.loads((sft / "split.json").read_text())
    assert split["held_out"] and split["train"] and not set(split["held_out"]) & set(split["train"])
    assert json.loads((sft / "config.json").read_text())["algo"] == "sft"
    srpo = tmp_path / "srpo"
    assert main(["train", "--algo", "softrankpo", "--rollouts", str(rollouts), "--init", str(sft / "policy.pt"),
                 "--out", str(srpo), "--epochs", "2", "--reward-scale", "10"]) == 0
    rows = [json.loads(x) for x in (srpo / "metrics.jsonl").read_text().splitlines()]
    assert rows and all(set(r) >= {"loss", "kl", "entropy", "mean_advantage", "val_accuracy"} for r in rows)
    assert "gain over the best constant" in capsys.readouterr().out
    scores = read_held_out(srpo)
    assert scores.start.decisions == scores.policy.decisions > 0 and scores.policy.rule_rewards is not None
    assert scores.policy.over_rule()[0] == scores.policy.best_rule in scores.policy.rule_rewards
    assert read_held_out(sft).start is None
    # the trained policy runs as mpdf's policy
    run = tmp_path / "run"
    assert main(["run", "--method", "mpdf", "--policy", str(srpo / "policy.pt"), "--backend", "scripted",
                 "--limit", "5", "--out", str(run), "--quiet"]) == 0
    assert json.loads((run / "config.json").read_text())["policy_used"].startswith(f"{srpo / 'policy.pt'} sha256:")
    # ... but not on the questions it trained on (its split.json's train list); on those it held out, it does
    trained, held = split["train"], split["held_out"]
    argv = ["run", "--method", "mpdf", "--policy", str(sft / "policy.pt"), "--backend", "scripted", "--split", "train",
            "--quiet"]
    assert main([*argv, "--ids", ",".join([held[0], trained[0]]), "--out", str(tmp_path / "in-sample")]) == 2
    err = capsys.readouterr().err
    assert f"was trained on 1 of these questions (e.g. {trained[0]}); answer other questions" in err
    assert not (tmp_path / "in-sample").exists()
    assert main([*argv, "--ids", ",".join(held), "--out", str(tmp_path / "held-out")]) == 0


@pytest.mark.parametrize("flags, message", [(["--group-size", "1"], "group_size"), (["--lr", "-1"], "lr")])
@pytest.mark.needs_split("gsm8k/train")
def test_bad_hyperparameters(tmp_path, rollouts, capsys, flags, message):
    out = tmp_path / "bad"
    assert main(["train", "--algo", "softrankpo", "--rollouts", str(rollouts), "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and not out.exists()


@pytest.mark.needs_split("gsm8k/train")
def test_empty_and_foreign_rollouts(tmp_path, capsys):
    empty = tmp_path / "empty"
    assert main(["collect", "--limit", "1", "--split", "train", "--backend", "scripted", "--out", str(empty),
                 "--quiet"]) == 0
    gzip.open(empty / "rollouts.jsonl.gz", "wt").close()  # stopped before its first question finished
    assert main(["train", "--algo", "sft", "--rollouts", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert "empty" in capsys.readouterr().err
    assert main(["train", "--algo", "sft", "--rollouts", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "manifest" in capsys.readouterr().err and not (tmp_path / "o").exists()


@pytest.mark.needs_split("gsm8k/train")
def test_init_trained_on_a_different_split_is_refused(tmp_path, rollouts, capsys):
    sft = tmp_path / "sft"
    assert main(["train", "--algo", "sft", "--rollouts", str(rollouts), "--out", str(sft), "--epochs", "1"]) == 0
    for flags in (["--seed", "1"], ["--val-fraction", "0.3"]):
        out = tmp_path / "pg"
        assert main(["train", "--rollouts", str(rollouts), "--init", str(sft / "policy.pt"), "--out", str(out),
                     "--epochs", "1", *flags]) == 2
        err = capsys.readouterr().err
        assert "of this run's held-out questions" in err and "leak into validation" in err and not out.exists()
    assert main(["train", "--rollouts", str(rollouts), "--init", str(sft / "policy.pt"), "--out",
                 str(tmp_path / "ok"), "--epochs", "1", "--val-fraction", "0.1"]) == 0
    # a start run from before split.json existed: judged by its seed and val_fraction
    (sft / "split.json").unlink()
    assert main(["train", "--rollouts", str(rollouts), "--init", str(sft / "policy.pt"), "--out",
                 str(tmp_path / "old"), "--epochs", "1", "--seed", "1"]) == 2
    assert "with seed 0" in capsys.readouterr().err and not (tmp_path / "old").exists()
    # sft trains from scratch: an --init it would ignore is refused
    out = tmp_path / "sft-init"
    assert main(["train", "--algo", "sft", "--rollouts", str(rollouts), "--init", str(sft / "policy.pt"),
                 "--out", str(out), "--epochs", "1"]) == 2
    assert "drop --init" in capsys.readouterr().err and not out.exists()


def test_collect_refuses_the_test_split_unless_asked(tmp_path, capsys):
    out = tmp_path / "test-split"
    args = ["collect", "--split", "test", "--limit", "1", "--joint-actions", "2", "--backend", "scripted", "--out",
            str(out), "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "--allow-test" in err and len(err.splitlines()) == 1 and not out.exists()
    assert main([*args, "--allow-test"]) == 0
    assert json.loads((out / "manifest.json").read_text())["split"] == "test"


@pytest.mark.needs_split("gsm8k/train")
def test_collect_takes_the_question_selection_of_delib_run(tmp_path):
    """--offset (and --ids, --subset) choose which train questions are collected, as in delib run and tree."""
    from deliberation.outputs.kinds import ROLLOUTS
    from deliberation.files import read_gzip_lines

    out = tmp_path / "offset"
    assert main(["collect", "--offset", "100", "--limit", "2", "--joint-actions", "2", "--backend", "scripted",
                 "--out", str(out), "--quiet"]) == 0
    ids = sorted(row["example_id"] for row in read_gzip_lines(out / ROLLOUTS, "delib collect"))  # a row a question
    assert ids == ["gsm8k/train/100", "gsm8k/train/101"]
    before = (out / "rollouts.jsonl.gz").read_bytes()
    assert main(["collect", "--limit", "3", "--joint-actions", "2", "--backend", "scripted", "--out", str(out),
                 "--quiet"]) == 2  # another selection into the same directory: refused, nothing appended
    assert (out / "rollouts.jsonl.gz").read_bytes() == before


@pytest.mark.parametrize("flags", [["--epsilon", "0.5"], ["--temperature", "0.3"]])
@pytest.mark.needs_split("gsm8k/train")
def test_resuming_a_collection_with_other_behaviour_settings_is_refused(tmp_path, capsys, flags):
    args = ["collect", "--limit", "1", "--joint-actions", "2", "--backend", "scripted", "--out", str(tmp_path),
            "--quiet"]
    assert main(args) == 0
    before = (tmp_path / "rollouts.jsonl.gz").read_bytes()
    assert main([*args, "--limit", "2", *flags]) == 2
    assert "other settings" in capsys.readouterr().err
    assert (tmp_path / "rollouts.jsonl.gz").read_bytes() == before


@pytest.mark.needs_split("gsm8k/train")
def test_a_collection_resumed_with_other_settings_is_refused_before_the_model_loads(tmp_path, capsys, monkeypatch):
    from deliberation.rl import collect

    args = ["collect", "--limit", "1", "--joint-actions", "2", "--backend", "scripted", "--out", str(tmp_path),
            "--quiet"]
    assert main(args) == 0
    loads = []
    monkeypatch.setattr(collect, "make_backend", lambda *a, **k: loads.append(a) or pytest.fail("model loaded"))
    assert main([*args, "--epsilon", "0.5"]) == 2
    assert "other settings (epsilon 0.2 there, 0.5 here)" in capsys.readouterr().err and loads == []
    assert main([*args, "--joint-actions", "3"]) == 2  # named as its flag names it, not as the file's key
    assert "other settings (joint_actions 2 there, 3 here)" in capsys.readouterr().err and loads == []


@pytest.mark.needs_split("gsm8k/train")
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


@pytest.mark.needs_split("gsm8k/train")
def test_group_size_ablation_trains_on_fewer_samples(tmp_path, rollouts, capsys):
    out = tmp_path / "k2"
    assert main(["train", "--algo", "softrankpo", "--rollouts", str(rollouts), "--out", str(out),
                 "--epochs", "1", "--group-size", "2"]) == 0
    assert json.loads((out / "config.json").read_text())["group_size"] == 2
    from deliberation.rl.rollout_files import load_decisions

    every = load_decisions([rollouts])
    assert f"softrankpo: {sum(d.sample < 2 for d in every)} decisions;" in capsys.readouterr().out
    assert main(["train", "--algo", "softrankpo", "--rollouts", str(rollouts), "--out", str(tmp_path / "k9"),
                 "--group-size", "9"]) == 2
    assert "more than the 4 joint actions" in capsys.readouterr().err and not (tmp_path / "k9").exists()


@pytest.mark.needs_split("gsm8k/train")
def test_ignore_features_is_recorded_and_blinds_the_policy(tmp_path, rollouts):
    import numpy as np

    from deliberation.engine.state import FEATURE_NAMES, FEATURE_VERSION
    from deliberation.policy.checkpoint import load_policy

    out = tmp_path / "blind"
    assert main(["train", "--algo", "sft", "--rollouts", str(rollouts), "--out", str(out), "--epochs", "1",
                 "--ignore-features", "confidence,log_tokens"]) == 0
    assert json.loads((out / "config.json").read_text())["ignore_features"] == ["confidence", "log_tokens"]
    policy = load_policy(out / "policy.pt", FEATURE_NAMES, FEATURE_VERSION)
    rng = np.random.default_rng(0)
    own, peers = rng.random((3, len(FEATURE_NAMES))), rng.random((3, 2, len(FEATURE_NAMES)))
    moved = own.copy()
    moved[:, FEATURE_NAMES.index("confidence")] += 0.5
    assert np.allclose(policy.probs(own, peers), policy.probs(moved, peers))


def train_policy_script(out, rollouts, **env):
    """Run experiments/train_policy.sh OUT ROLLOUTS with the extra environment ``env``."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    delib = shutil.which("delib", path=str(Path(sys.executable).parent)) or shutil.which("delib")
    assert delib, "the delib console script is not installed beside this Python; pip install -e ."
    script = Path(__file__).resolve().parents[2] / "experiments" / "train_policy.sh"
    env = {**os.environ, "DELIB": delib, **env}
    done = subprocess.run(["bash", str(script), str(out), str(rollouts)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
@pytest.mark.needs_split("gsm8k/train")
def test_train_policy_script_runs_sft_the_nine_ablation_runs_and_the_report(tmp_path, rollouts):
    """experiments/train_policy.sh, the pipeline behind the shipped policy, end to end (1 epoch each)."""
    out = tmp_path / "tp"
    train_policy_script(out, rollouts, TRAIN_ARGS="--epochs 1 --ignore-features confidence")
    runs = sorted(p.parent.name for p in out.glob("ablation/*/policy.pt"))
    assert runs == sorted(f"{a}-{s}" for a in ("softrankpo", "grpo", "reinforce") for s in ("0.1", "1", "10"))
    config = json.loads((out / "ablation" / "softrankpo-1" / "config.json").read_text())
    assert config["ignore_features"] == ["confidence"] and config["epochs"] == 1
    assert (out / "report" / "report.md").exists()


@pytest.mark.slow
@pytest.mark.needs_split("gsm8k/train")
def test_the_reward_scale_ablation_runs_with_the_full_information_objective(tmp_path, rollouts):
    out = tmp_path / "full"
    train_policy_script(out, rollouts, TRAIN_ARGS="--epochs 1", ALGOS="softrankpo-full")
    runs = sorted(p.parent.name for p in out.glob("ablation/*/policy.pt"))
    assert runs == [f"softrankpo-full-{s}" for s in ("0.1", "1", "10")]
    config = json.loads((out / "ablation" / "softrankpo-full-10" / "config.json").read_text())
    assert (config["algo"], config["reward_scale"]) == ("softrankpo-full", 10.0)
    assert "softrankpo-full" in (out / "report" / "report.md").read_text()



def test_config_records_the_size_of_the_net_it_saved(tmp_path):
    """An --init net keeps its own width, whatever TrainConfig's default says: config.json must say so."""
    from deliberation.engine.state import FEATURE_NAMES, FEATURE_VERSION
    from deliberation.policy.network import MetaPolicyNet
    from deliberation.rl.config import TrainConfig
    from deliberation.rl.trainer import write_training_outputs

    net = MetaPolicyNet(len(FEATURE_NAMES), hidden=16, heads=2)
    write_training_outputs(str(tmp_path / "out"), net, TrainConfig(), [], FEATURE_NAMES, FEATURE_VERSION)
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert (config["hidden"], config["heads"]) == (16, 2) != (TrainConfig().hidden, TrainConfig().heads)



@pytest.mark.needs_split("gsm8k/train")
def test_a_start_policy_keeps_its_own_sizes_and_says_so(tmp_path, rollouts, caplog):
    sft = tmp_path / "sft"
    assert main(["train", "--algo", "sft", "--rollouts", str(rollouts), "--hidden", "16", "--heads", "2", "--epochs",
                 "1", "--out", str(sft)]) == 0
    assert "keeps its own network" not in caplog.text
    assert main(["train", "--rollouts", str(rollouts), "--init", str(sft), "--epochs", "1", "--out",
                 str(tmp_path / "pg")]) == 0
    assert (f"the start policy {sft / 'policy.pt'} keeps its own network (hidden 16, heads 2); --hidden 64 and "
            "--heads 4 size a network trained from scratch") in caplog.text
    config = json.loads((tmp_path / "pg" / "config.json").read_text())
    assert (config["hidden"], config["heads"]) == (16, 2)

def damage(path, how):
    """The rollout file ``path`` cut inside a member, with bytes that are not gzip after its first member, or
    replaced by bytes that were never gzip."""
    from deliberation.files import gzip_members

    data, ends = path.read_bytes(), [end for end, _ in gzip_members(path)]
    middle = len(ends) // 2
    path.write_bytes({"cut in half": data[: (ends[middle - 1] + ends[middle]) // 2],
                      "garbage after a member": data[: ends[0]] + b"garbage" + data[ends[0]:],
                      "random bytes": bytes(range(256)) * 8}[how])


@pytest.mark.parametrize("how, expected", [("cut in half", "ends in an incomplete record"),
                                           ("garbage after a member", "is corrupt after byte"),
                                           ("random bytes", "is corrupt after byte 0")])
@pytest.mark.needs_split("gsm8k/train")
def test_a_damaged_rollout_file_is_refused_not_trained_on_in_part(tmp_path, rollouts, capsys, how, expected):
    copy = tmp_path / "copy"
    shutil.copytree(rollouts, copy)
    damage(copy / "rollouts.jsonl.gz", how)
    out = tmp_path / "o"
    assert main(["train", "--algo", "sft", "--rollouts", str(copy), "--out", str(out), "--epochs", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{copy / 'rollouts.jsonl.gz'} " in err and expected in err
    assert "delib collect" in err and not out.exists()


@pytest.mark.needs_split("gsm8k/train")
def test_a_corrupt_manifest_and_a_missing_path_are_named(tmp_path, rollouts, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(rollouts, copy)
    (copy / "manifest.json").write_text('{"model": "scripted-v1", ')
    out = tmp_path / "o"
    assert main(["train", "--algo", "sft", "--rollouts", str(copy), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{copy / 'manifest.json'} is not valid JSON" in err
    missing = tmp_path / "nonexistent"
    assert main(["train", "--algo", "sft", "--rollouts", str(missing), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"delib: error: {missing} does not exist; pass rollout directories made by `delib collect`"
    assert not out.exists()
