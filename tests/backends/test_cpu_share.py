"""The llamacpp backend's default thread count leaves cores that other work keeps busy
(docs/design.md, section Models and speed)."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from deliberation.backends import cpu_share


def test_busy_cores_come_off_the_allowed_ones_with_a_warning(monkeypatch, caplog) -> None:
    monkeypatch.setattr(cpu_share, "allowed_cpus", lambda: {0, 1})
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


def test_busy_cores_count_only_the_cpus_this_process_may_use(monkeypatch, tmp_path) -> None:
    """Pinned to CPUs 2 and 3 of four: CPU 0 fully busy must not count, CPU 2 half busy does."""
    stat = tmp_path / "stat"
    # cumulative (busy, idle) jiffies of cpu0..cpu3 at the two reads: cpu0 all busy, cpu2 half, cpu3 idle
    readings = iter([[(0, 100)] * 4, [(100, 100), (0, 200), (50, 150), (0, 200)]])

    def write() -> None:
        rows = [f"cpu{i} {busy} 0 0 {idle} 0 0 0" for i, (busy, idle) in enumerate(next(readings))]
        stat.write_text("cpu 0 0 0 0\n" + "\n".join(rows) + "\n")

    write()
    monkeypatch.setattr(cpu_share, "PROC_STAT", stat)
    monkeypatch.setattr(cpu_share, "allowed_cpus", lambda: {2, 3})
    monkeypatch.setattr(cpu_share.time, "sleep", lambda _: write())
    assert cpu_share.busy_cores(0.0) == pytest.approx(0.5)  # cpu2: 50 of 100 jiffies; cpu3 idle


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
