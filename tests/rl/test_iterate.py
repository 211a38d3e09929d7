"""`delib iterate`: collect with the current policy, train, repeat; resumable (scripted backend)."""

import json
import re

import pytest

from deliberation.cli.main import build_parser, main
from deliberation.errors import DelibError
from deliberation.rl.collect import CollectSpec
from deliberation.rl.config import TrainConfig
from deliberation.rl.iterate import IterateSpec, policy_file
from deliberation.rl.pipeline import ROLLOUTS_HOLD


def iterate_cmd(out):
    return ["iterate", "--benchmark", "gsm8k", "math", "--limit", "6", "--joint-actions", "2", "--iterations", "2",
            "--backend", "scripted", "--epochs", "2", "--out", str(out), "--quiet"]


def manifest(out, i, bench):
    return json.loads((out / f"iter-{i}" / "rollouts" / bench / "manifest.json").read_text())


@pytest.mark.needs_split("gsm8k/train")
def test_each_iteration_collects_with_the_previous_policy_and_trains_from_it(tmp_path, capsys):
    out = tmp_path / "it"
    assert main(iterate_cmd(out)) == 0
    assert "last policy" in capsys.readouterr().out
    assert manifest(out, 0, "math")["policy"] is None and manifest(out, 0, "gsm8k")["seed"] == 0
    assert manifest(out, 1, "gsm8k")["policy"] == str(policy_file(out, 0)) and manifest(out, 1, "math")["seed"] == 1
    stages = {json.loads(line)["stage"] for line in (out / "iter-1" / "policy" / "metrics.jsonl").open()}
    assert stages == {"softrankpo"}  # iteration 1 starts from iteration 0's policy: no SFT stage
    first = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.suffix in {".pt", ".gz"}}
    assert len(first) == 6
    assert main(iterate_cmd(out)) == 0  # resume: nothing left to do, nothing rewritten
    assert {p: p.read_bytes() for p in first} == first
    other = iterate_cmd(out)
    other[other.index("--epochs") + 1] = "3"
    assert main(other) == 2  # a policy trained under other settings is not taken as this command's
    assert "holds a policy trained with other settings (epochs 2 there, 3 here)" in capsys.readouterr().err
    assert main([*iterate_cmd(out), "--hidden", "32"]) == 2  # no start policy set the width: the flags did
    assert "(hidden 64 there, 32 here)" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in first} == first


def test_bad_settings_are_refused_before_anything_runs():
    for kwargs, message in (({"algo": "sft"}, "policy-gradient"), ({"lr": -1.0}, "lr must be > 0"),
                            ({"group_size": 9}, "--group-size 9 is more than the --joint-actions 8"),
                            ({"ignore_features": ("nope",)}, "unknown features"),
                            ({"reward": "episode"}, "--reward episode is not in the rollouts"),
                            ({"reward_components": "local"}, "--reward-components local is not in the rollouts"),
                            ({"actions": "resample"}, "--actions resample is not in the rollouts"),
                            ({"features": "signals"}, "--features signals is not in the rollouts")):
        with pytest.raises(DelibError, match=message):
            IterateSpec(CollectSpec(backend="scripted"), ("gsm8k",), 1, TrainConfig(**kwargs))
    with pytest.raises(DelibError, match="iterations"):
        IterateSpec(CollectSpec(backend="scripted"), ("gsm8k",), 0)
    with pytest.raises(DelibError, match="benchmark"):
        IterateSpec(CollectSpec(backend="scripted"), (), 1)
    with pytest.raises(DelibError, match="--benchmark names gsm8k twice"):
        IterateSpec(CollectSpec(backend="scripted"), ("gsm8k", "math", "gsm8k"), 1)


@pytest.mark.parametrize("flag, other", [("--reward", "episode"), ("--reward-components", "local"),
                                         ("--actions", "resample"), ("--features", "signals")])
def test_the_command_line_does_not_offer_what_its_rollouts_fix(flag, other, tmp_path, capsys):
    """What rollouts fix is not in `delib iterate --help`; given another value, it is refused before anything
    is collected (an older command that names the one rollouts hold still runs)."""
    with pytest.raises(SystemExit):
        main(["iterate", "--help"])
    assert f"{flag} " not in capsys.readouterr().out
    assert main(["iterate", "--iterations", "1", "--backend", "scripted", "--out", str(tmp_path / "it"), flag,
                 other]) == 2
    assert f"{flag} {other} is not in the rollouts" in capsys.readouterr().err and not (tmp_path / "it").exists()
    field = flag[2:].replace("-", "_")
    held = ROLLOUTS_HOLD[field].value
    args = build_parser().parse_args(["iterate", "--iterations", "1", "--out", str(tmp_path / "it"), flag, held])
    assert getattr(args, field) == held


def test_a_start_policy_blind_to_other_features_is_refused_before_collecting(tmp_path, capsys):
    from deliberation.engine.state import FEATURE_NAMES, FEATURE_VERSION
    from deliberation.policy.checkpoint import save_policy
    from deliberation.policy.network import MetaPolicyNet

    start = save_policy(tmp_path / "start.pt", MetaPolicyNet(len(FEATURE_NAMES)), FEATURE_NAMES, FEATURE_VERSION, {})
    out = tmp_path / "it"
    assert main([*iterate_cmd(out), "--policy", str(start), "--ignore-features", "confidence"]) == 2
    err = capsys.readouterr().err.strip()
    assert "confidence" in err and "\n" not in err and not out.exists()


def test_a_shipped_policy_starts_an_iteration_by_name():
    """`delib iterate --policy default` starts from the shipped checkpoint, as `delib run --policy` takes it
    (it was trained blind to feature 2, which the iteration's training must then be too)."""
    from deliberation.engine.state import FEATURE_NAMES

    with pytest.raises(DelibError, match="the start policy ignores feature columns"):
        IterateSpec(CollectSpec(backend="scripted", policy="default"), ("gsm8k",), 1)
    blind = TrainConfig(ignore_features=(FEATURE_NAMES[2],))
    assert IterateSpec(CollectSpec(backend="scripted", policy="default"), ("gsm8k",), 1, blind).train == blind


def test_a_start_policy_trained_on_questions_this_run_holds_out_is_refused_before_collecting(tmp_path):
    """The first training holds questions out by their hash; a --policy whose split.json trained on one of
    them is refused before hours of collection, one that did not is taken."""
    from deliberation import benchmarks
    from deliberation.benchmarks.selection import load_selected
    from deliberation.engine.state import FEATURE_NAMES, FEATURE_VERSION
    from deliberation.policy.checkpoint import save_policy
    from deliberation.policy.network import MetaPolicyNet
    from deliberation.rl.data import held_out_names
    from deliberation.policy.split import split_of, write_split

    start = save_policy(tmp_path / "start.pt", MetaPolicyNet(len(FEATURE_NAMES)), FEATURE_NAMES, FEATURE_VERSION, {})
    spec = CollectSpec(backend="scripted", limit=6, policy=str(start))
    asked = [e.id for bench in ("gsm8k", "math")
             for e in load_selected(benchmarks.get(bench), "train", 6, spec.selection)]
    held = held_out_names(asked, TrainConfig().val_fraction, TrainConfig().seed)
    assert held and len(held) < len(asked)
    write_split(tmp_path, split_of(sorted(set(asked) - held), sorted(held)))
    IterateSpec(spec, ("gsm8k", "math"), 1)  # trained on what this run trains on: taken
    write_split(tmp_path, split_of(asked, []))
    with pytest.raises(DelibError, match=re.escape(f"--policy {start} trained on {len(held)} of this run's held-out")):
        IterateSpec(spec, ("gsm8k", "math"), 1)


@pytest.mark.needs_split("gsm8k/train")
def test_a_resume_asking_other_questions_is_refused_before_it_collects(tmp_path, capsys):
    """Rollouts added to an iteration whose policy was trained without them would never be trained on: a rerun
    with another benchmark list or limit is refused once the first iteration has collected, and changes
    nothing."""
    out = tmp_path / "it"
    one = iterate_cmd(out)
    one[one.index("--iterations") + 1] = "1"
    assert main(one) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != ".writer.lock"}
    fewer = [a for a in one if a != "math"]
    more = [*one[:one.index("--limit") + 1], "8", *one[one.index("--limit") + 2:]]
    for other, named in ((fewer, "(benchmarks ['gsm8k', 'math'] there, ['gsm8k'] here)"),
                         (more, "(limit 6 there, 8 here)")):
        assert main(other) == 2
        assert f"holds iterations with other settings {named}; rerun with those settings" in capsys.readouterr().err
        assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != ".writer.lock"} == before
    assert main(one) == 0
