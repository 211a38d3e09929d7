"""The plain-value channel between a sandboxed function and its trusted tests: built-in values arrive as
themselves (type included), subclasses as their base type's value, anything else as an opaque value."""

from __future__ import annotations

import json
import math

import pytest

from deliberation.benchmarks.sandbox.calls import Opaque, decode, encode

PLAIN = [None, True, False, 0, -7, 2**5000, 1.5, -0.0, "text\nwith a newline", [1, [2, "x"]], (1, (2,)), (),
         {"a": 1, 2: [3]}, {(1, 2): {3}}, {1, 2}, frozenset({"a"}), b"\x00\xff", complex(1, -2)]  # fmt: skip


def travel(value: object) -> object:
    return decode(json.loads(json.dumps(encode(value))))


@pytest.mark.parametrize("value", PLAIN, ids=[repr(v)[:20] for v in PLAIN])
def test_plain_values_arrive_with_their_type(value: object) -> None:
    back = travel(value)
    assert back == value and type(back) is type(value)


def test_nan_and_infinities_travel() -> None:
    assert math.isnan(travel(float("nan"))) and travel(float("inf")) == float("inf")


def test_a_subclass_arrives_as_its_base_value_not_its_methods() -> None:
    class Liar(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    class Text(str):
        pass

    back = travel([Liar(3), Text("a")])
    assert back == [3, "a"] and type(back[0]) is int and type(back[1]) is str and back[0] != 4


def test_other_objects_arrive_opaque_and_equal_nothing() -> None:
    back = travel(lambda x: x)
    assert isinstance(back, Opaque) and back != back.type_name and back != Opaque("function")


@pytest.mark.parametrize("data, error, match", [
    ({"exec": "x"}, ValueError, "unknown tag 'exec'"),
    ({"tuple": [1], "set": [2]}, ValueError, "a tagged value has one key"),
    ({"set": [[1]]}, TypeError, "unhashable type"),  # a set of lists: encode writes none
    ({"int": "zz"}, ValueError, "invalid literal for int"),
])
def test_decode_rejects_what_encode_never_writes(data: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        decode(data)
