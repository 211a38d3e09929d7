"""Which policy `--method mpdf` runs: --policy, else the checkpoint shipped in the package, else the rule."""

from dataclasses import replace

import pytest

from deliberation.engine.state import FEATURE_NAMES, FEATURE_VERSION
from deliberation.errors import DelibError
from deliberation.methods import mpdf
from deliberation.methods.base import MethodConfig
from deliberation.policy import shipped as ckpt
from deliberation.policy.checkpoint import save_policy
from deliberation.policy.checkpoint import load_learned
from deliberation.policy.learned import TrainedPolicy
from deliberation.policy.rules import ConfidenceThreshold
from deliberation.policy.network import MetaPolicyNet


@pytest.fixture
def checkpoint(tmp_path):
    net = MetaPolicyNet(len(FEATURE_NAMES))
    return save_policy(tmp_path / "default.pt", net, FEATURE_NAMES, FEATURE_VERSION, {"algo": "test"})


def test_shipped_checkpoint_is_the_default_when_present(checkpoint, monkeypatch):
    monkeypatch.setattr(ckpt, "SHIPPED_POLICY", checkpoint)
    cfg = MethodConfig(benchmark="gsm8k")
    assert isinstance(mpdf.policy_for(cfg), TrainedPolicy)
    assert mpdf.policy_name(cfg) == f"shipped:default.pt {ckpt.content_hash(checkpoint)}"


def test_rule_when_nothing_ships(tmp_path, monkeypatch):
    monkeypatch.setattr(ckpt, "SHIPPED_POLICY", tmp_path / "absent.pt")
    cfg = MethodConfig(benchmark="gsm8k", confidence_threshold=0.6)
    policy = mpdf.policy_for(cfg)
    assert isinstance(policy, ConfidenceThreshold) and policy.threshold == 0.6
    assert mpdf.policy_name(cfg) == "rule:confidence-threshold"


def test_a_shipped_checkpoint_by_name():
    cfg = MethodConfig(benchmark="gsm8k", policy="qwen2.5-coder-1.5b")
    assert isinstance(mpdf.policy_for(cfg), TrainedPolicy)
    shipped = ckpt.SHIPPED / "qwen2.5-coder-1.5b.pt"
    assert mpdf.policy_name(cfg) == f"qwen2.5-coder-1.5b {ckpt.content_hash(shipped)}"
    listed = r"'nope' is neither a file nor a shipped policy \(default, grpo, qwen2\.5-coder-1\.5b, "
    with pytest.raises(DelibError, match=listed) as refused:
        mpdf.policy_for(replace(cfg, policy="nope"))
    assert "allocate-" not in str(refused.value)  # an allocator is not a policy mpdf can run
    with pytest.raises(DelibError, match="absent.pt not found"):  # a path keeps the loader's message
        mpdf.policy_for(replace(cfg, policy="runs/absent.pt"))


def test_explicit_policy_wins_over_the_shipped_one(checkpoint, tmp_path, monkeypatch):
    monkeypatch.setattr(ckpt, "SHIPPED_POLICY", tmp_path / "absent.pt")
    cfg = MethodConfig(benchmark="gsm8k", policy=str(checkpoint))
    assert isinstance(mpdf.policy_for(cfg), TrainedPolicy)
    assert mpdf.policy_name(cfg).startswith(f"{checkpoint} sha256:")


@pytest.mark.parametrize(("name", "algo"), [("default.pt", "softrankpo"), ("grpo.pt", "grpo")])
def test_shipped_checkpoints_load_with_this_builds_features(name, algo):
    """The checkpoints in the package match the features this build produces and stay blind to the
    critic's absolute confidence (README: trained on another model's P(Yes) scale)."""
    from deliberation.policy.checkpoint import load_meta, load_policy

    path = ckpt.SHIPPED_POLICY.with_name(name)
    policy = load_policy(path, FEATURE_NAMES, FEATURE_VERSION)
    assert policy.net.arch()["ignored"] == [FEATURE_NAMES.index("confidence")]
    assert load_meta(path)["config"]["algo"] == algo


def test_mpdf_runs_the_shipped_policy_by_default():
    cfg = MethodConfig(benchmark="gsm8k")
    assert ckpt.SHIPPED_POLICY.is_file()
    assert isinstance(mpdf.policy_for(cfg), TrainedPolicy)
    assert mpdf.policy_name(cfg).startswith("shipped:default.pt sha256:")


def test_resuming_after_the_checkpoint_changed_is_refused(checkpoint, tmp_path, monkeypatch):
    """A run's episodes come from one policy: retraining the checkpoint under a half-finished run must not
    mix two policies in one table row."""
    from deliberation.errors import DelibError
    from deliberation.runs.runner import RunSpec, execute

    monkeypatch.setattr(ckpt, "SHIPPED_POLICY", checkpoint)
    spec = RunSpec(method="mpdf", benchmark="gsm8k", limit=1, backend="scripted")
    execute(spec, str(tmp_path / "run"), progress=False)
    save_policy(checkpoint, MetaPolicyNet(len(FEATURE_NAMES)), FEATURE_NAMES, FEATURE_VERSION, {"algo": "other"})
    load_learned.cache_clear()
    with pytest.raises(DelibError, match="policy_used"):
        execute(replace(spec, limit=2), str(tmp_path / "run"), progress=False)
