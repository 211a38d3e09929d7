"""Loading a policy checkpoint verifies it: the archive's CRCs, the fields, the weights' keys and
shapes against the recorded arch, finite values; whatever is wrong is one DelibError line naming the file."""

from __future__ import annotations

import random
import zipfile
from pathlib import Path
from typing import Any

import pytest
import torch

from deliberation.allocate.network import load_allocator
from deliberation.errors import DelibError
from deliberation.engine.features import contract
from deliberation.policy.checkpoint import ALLOCATOR, load_learned, load_meta, load_policy, save_policy
from deliberation.policy.network import MetaPolicyNet
from deliberation.policy.shipped import SHIPPED

NAMES = ("a", "b", "c", "d", "e")


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, MetaPolicyNet]:
    torch.manual_seed(0)
    net = MetaPolicyNet(len(NAMES), hidden=16, heads=4)
    return save_policy(tmp_path / "policy.pt", net, NAMES, 1, {"algo": "x"}), net


def refused(path: Path, match: str) -> str:
    """The one-line DelibError that loading ``path`` raises (matching ``match``), naming the file."""
    with pytest.raises(DelibError, match=match) as err:
        load_policy(path, NAMES, 1)
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    return message


def rewrite(path: Path, change: Any) -> None:
    """Load the payload as torch reads it, let ``change`` edit it, save it back (a hand-made checkpoint)."""
    payload = torch.load(path, weights_only=True)
    change(payload)
    torch.save(payload, path)


def data_offset(path: Path, member_suffix: str) -> int:
    """Where the bytes of the zip member whose name ends with ``member_suffix`` start in the file."""
    with zipfile.ZipFile(path) as archive:
        info = next(i for i in archive.infolist() if i.filename.endswith(member_suffix))
    raw = path.read_bytes()
    name_len, extra_len = (int.from_bytes(raw[info.header_offset + at:info.header_offset + at + 2], "little")
                           for at in (26, 28))  # the local header's own lengths (APPNOTE 4.3.7)
    return info.header_offset + 30 + name_len + extra_len


@pytest.mark.parametrize("name", sorted(p.name for p in SHIPPED.glob("*.pt")))
def test_the_shipped_checkpoints_pass_every_check(name: str) -> None:
    """Each by the loader of its kind: a policy under its own feature contract (the paired experiment's may read
    the ``signals`` set), an allocator (``mpdf-allocate``'s) under the allocator's features."""
    kind = torch.load(SHIPPED / name, map_location="cpu", weights_only=True)["format"]
    if kind == ALLOCATOR.format:
        net = load_allocator(str(SHIPPED / name)).net
    else:
        policy = load_learned(str(SHIPPED / name))
        assert contract(policy.feature_names, policy.feature_version) is not None
        net = policy.net
    assert all(bool(torch.isfinite(p).all()) for p in net.parameters())


def test_a_flipped_byte_in_the_weights_fails_the_archive_checksum(saved) -> None:
    path, _ = saved
    raw = bytearray(path.read_bytes())
    raw[data_offset(path, "data/2") + 5] ^= 0x40  # an exponent bit of a float: 1e-1 becomes ~1e37
    path.write_bytes(bytes(raw))
    assert "fails its checksum" in refused(path, "cannot be used")
    with pytest.raises(DelibError, match="fails its checksum"):
        load_meta(path)


def test_flipped_bits_anywhere_never_load_other_weights(saved) -> None:
    """A few bits flipped at random: refused, or (a flip in bytes nothing reads) the very same weights."""
    path, net = saved
    original = path.read_bytes()
    for seed in range(40):
        rng, raw = random.Random(seed), bytearray(original)
        for _ in range(3):
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(raw))
        try:
            loaded = load_policy(path, NAMES, 1).net
        except DelibError as err:
            assert "\n" not in str(err) and str(path) in str(err)
            continue
        assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(), net.state_dict().values()))


@pytest.mark.parametrize("seed", range(12))
def test_random_bytes_are_refused(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    path = tmp_path / "random.pt"
    head = b"PK\x03\x04" if seed % 2 else b""  # half look like a zip archive at first glance
    path.write_bytes(head + bytes(rng.randrange(256) for _ in range(rng.randrange(10, 5000))))
    refused(path, "not a deliberation policy checkpoint")


def test_a_truncated_file_is_refused(saved) -> None:
    path, _ = saved
    whole = path.read_bytes()
    for keep in (len(whole) - 1, len(whole) - 30, len(whole) // 2, 100, 0):
        path.write_bytes(whole[:keep])
        refused(path, "not a deliberation policy checkpoint")


@pytest.mark.parametrize("field", ["arch", "state_dict", "feature_names", "feature_version", "meta"])
def test_a_hand_made_checkpoint_without_a_field_names_it(saved, field: str) -> None:
    path, _ = saved
    rewrite(path, lambda payload: payload.pop(field))
    refused(path, f"its '{field}' is missing")


def test_an_arch_that_builds_no_network_is_refused(saved) -> None:
    path, _ = saved
    rewrite(path, lambda payload: payload["arch"].update(hidden=15))  # not divisible by 4 heads
    refused(path, "its arch describes no network of its kind")
    rewrite(path, lambda payload: payload["arch"].pop("heads"))
    refused(path, "its arch describes no network of its kind")


def test_weights_of_the_wrong_shape_or_keys_are_refused(saved) -> None:
    path, _ = saved
    rewrite(path, lambda payload: payload["state_dict"].update({"query.weight": torch.zeros(16, 8)}))
    message = refused(path, r"weight query.weight is \(16, 8\), its arch needs a float tensor of \(16, 16\)")
    assert "cannot be used" in message
    rewrite(path, lambda payload: payload["state_dict"].pop("query.weight"))
    refused(path, "keys missing or extra: query.weight")
    rewrite(path, lambda payload: payload["state_dict"].update({"query.weight": torch.zeros(16, 16), "x": 1.0}))
    refused(path, r"keys missing or extra: x\)")
    rewrite(path, lambda payload: payload["state_dict"].pop("x"))
    rewrite(path, lambda payload: payload["state_dict"].update({"query.bias": torch.zeros(16, dtype=torch.long)}))
    refused(path, "weight query.bias is .* its arch needs a float tensor")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_weights_are_refused(saved, bad: float) -> None:
    path, _ = saved

    def poison(payload: dict[str, Any]) -> None:
        payload["state_dict"]["head.2.bias"][1] = bad

    rewrite(path, poison)
    refused(path, "weight head.2.bias holds NaN or infinite values")
