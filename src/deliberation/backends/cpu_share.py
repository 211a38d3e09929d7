"""How many CPU cores are free right now: the llamacpp backend's default thread count (issue 28, item 10).

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


def allowed_cores() -> int:
    """Cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def busy_cores(window_s: float = WINDOW_S) -> float | None:
    """Of the cores this process may use, how many were busy over the next ``window_s`` seconds (None
    where unknown): the machine's busy share (the kernel counts all cores) times the allowed cores."""
    first = _counters()
    if first is None:
        return None
    time.sleep(window_s)
    second = _counters()
    if second is None:
        return None
    total, idle = second[0] - first[0], second[1] - first[1]
    return allowed_cores() * (total - idle) / total if total > 0 else 0.0


def _counters() -> tuple[int, int] | None:
    """(all jiffies, idle + iowait jiffies) of the machine, from the first line of /proc/stat."""
    try:
        fields = [int(x) for x in PROC_STAT.read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(fields), fields[3] + (fields[4] if len(fields) > 4 else 0)


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
                    "pass --backend-opt n_threads=N to choose", busy, cores, threads)
    return threads
