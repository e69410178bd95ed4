"""Each thread's context switches and CPU time, from ``/proc/self/task`` (Linux only): what
``mixed_switches.py`` and ``step_windows.py`` read to see which thread ran and which parked."""

from __future__ import annotations

import os
from pathlib import Path

TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def thread_counters(caller: int) -> dict[str, tuple[int, int, float]]:
    """Per thread (name:tid): voluntary and involuntary switches, and CPU ms."""
    counters = {}
    for tid in os.listdir("/proc/self/task"):
        base = f"/proc/self/task/{tid}"
        try:
            name = "caller" if int(tid) == caller else Path(f"{base}/comm").read_text().strip()
            status = dict(
                line.split(":\t") for line in Path(f"{base}/status").read_text().splitlines() if "ctxt" in line
            )
            stat = Path(f"{base}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        cpu_ms = (int(stat[11]) + int(stat[12])) * TICK_MS
        counters[f"{name}:{tid}"] = (
            int(status["voluntary_ctxt_switches"]),
            int(status["nonvoluntary_ctxt_switches"]),
            cpu_ms,
        )
    return counters
