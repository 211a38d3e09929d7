"""The benchmark registry: one shared instance per process, whose resources ``close_all`` releases."""

from __future__ import annotations

import threading

from deliberation import benchmarks


def test_get_returns_one_instance_per_name():
    assert benchmarks.get("math") is benchmarks.get("math")
    assert benchmarks.get("math") is not benchmarks.get("gsm8k")


def test_close_all_stops_the_math_verifier_worker_and_it_restarts_on_use():
    """Outside the main thread MATH checks answers in a worker process; close_all stops it."""
    math = benchmarks.get("math")
    keys = []
    worker = threading.Thread(target=lambda: keys.append(math.answer_key("\\frac{1}{2}")))
    worker.start()
    worker.join(60)
    assert keys == [math.answer_key("0.5")]
    assert math._worker._pool is not None
    benchmarks.close_all()
    assert math._worker._pool is None
