"""The llamacpp backend's default thread count leaves cores that other work keeps busy (issue 28, item 10)."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from deliberation.backends import cpu_share


def test_busy_cores_come_off_the_allowed_ones_with_a_warning(monkeypatch, caplog) -> None:
    monkeypatch.setattr(cpu_share, "allowed_cores", lambda: 2)
    with caplog.at_level(logging.WARNING, logger="deliberation"):
        assert cpu_share.free_threads(busy=1.1) == 1
    assert "n_threads=N" in caplog.text and "1.1 of 2 cores are busy" in caplog.text
    assert cpu_share.free_threads(busy=1.9) == 1  # never fewer than one
    caplog.clear()
    assert cpu_share.free_threads(busy=0.2) == 2 and not caplog.text  # an idle machine: every core, silently


def test_without_cpu_counters_every_allowed_core_is_used(monkeypatch) -> None:
    monkeypatch.setattr(cpu_share, "PROC_STAT", cpu_share.Path("/nonexistent/stat"))
    assert cpu_share.busy_cores(0.01) is None
    assert cpu_share.free_threads() == cpu_share.allowed_cores()


def test_busy_cores_read_the_kernels_counters(monkeypatch) -> None:
    readings = iter([(1000, 600), (1400, 800)])  # 400 jiffies, 200 idle: half the machine busy
    monkeypatch.setattr(cpu_share, "_counters", lambda: next(readings))
    monkeypatch.setattr(cpu_share, "allowed_cores", lambda: 2)
    assert cpu_share.busy_cores(0.0) == pytest.approx(1.0)


def test_a_spinning_process_takes_a_thread_from_the_default() -> None:
    """Today's main gave llama.cpp every core whatever else ran; a busy loop beside it must cost one."""
    cores = cpu_share.allowed_cores()
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = cpu_share.busy_cores(0.5)
        threads = cpu_share.free_threads()
    finally:
        spinner.kill()
        spinner.wait()
    assert busy >= 0.7
    assert threads <= max(1, cores - 1)
