"""How many CPU cores are free right now: the llamacpp backend's default thread count
(docs/design.md, section Models and speed).

llama.cpp's worker threads spin at every barrier of a forward pass, so two processes each running as many
threads as there are cores do not share the machine: each waits on threads the other has descheduled. On
the 2-core machine two runs side by side took 148 s for one 48-token call each, against 1.4 s with one
thread each. The default is therefore the cores this process may use less those busy with other work,
sampled from the kernel's CPU counters (``/proc/stat``) over a short window; where those counters do not
exist every allowed core is used.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

LOG = logging.getLogger("deliberation")
WINDOW_S = 0.25
PROC_STAT = Path("/proc/stat")


def allowed_cpus() -> set[int]:
    """Ids of the CPUs this process may run on."""
    return set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))


def allowed_cores() -> int:
    """Cores this process may run on."""
    return len(allowed_cpus())


def busy_cores(window_s: float = WINDOW_S) -> float | None:
    """Of the CPUs this process may use, how many were busy over the next ``window_s`` seconds (None where
    unknown): their per-CPU counters, so other CPUs of a larger machine (a cpuset, a container) do not count."""
    cpus = allowed_cpus()
    first = _counters(cpus)
    if first is None:
        return None
    time.sleep(window_s)
    second = _counters(cpus)
    if second is None:
        return None
    total, idle = second[0] - first[0], second[1] - first[1]
    return len(cpus) * (total - idle) / total if total > 0 else 0.0


def _counters(cpus: set[int]) -> tuple[int, int] | None:
    """(all jiffies, idle + iowait jiffies) summed over ``cpus``, from their ``cpuN`` lines of /proc/stat."""
    try:
        lines = PROC_STAT.read_text().splitlines()
    except OSError:
        return None
    total = idle = 0
    for line in lines:
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            values = [int(x) for x in fields]
            total, idle = total + sum(values), idle + values[3] + (values[4] if len(values) > 4 else 0)
    return (total, idle) if total else None


def free_threads(busy: float | None = None) -> int:
    """Threads for a new llama.cpp context: the allowed cores less the busy ones (at least one), with a
    warning naming the override when other work takes some."""
    cores = allowed_cores()
    busy = busy_cores() if busy is None else busy
    if busy is None:
        return cores
    threads = max(1, min(cores, round(cores - busy)))
    if threads < cores:
        LOG.warning("%.1f of %d cores are busy with other work: llama.cpp will use %d thread(s); "
                    "pass option n_threads=N to choose", busy, cores, threads)
    return threads
