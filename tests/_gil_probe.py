"""Whether one call releases the GIL, decided by counting, never by timing.

With the switch interval at 1000 s the interpreter never takes the GIL from the main
thread, so a helper thread that counts (and gives the GIL back at each `time.sleep(0)`)
can only move while the main thread has released the GIL: a call that holds it leaves
the count unchanged however long it runs, a call that releases it lets the count grow.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable

JOIN_TIMEOUT = 60.0


class GilProbe:
    """Use as a context manager in the main thread; `count_during(call)` is the proof."""

    def __init__(self) -> None:
        self.count = 0
        self._stop = False
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._previous_interval = sys.getswitchinterval()

    def _run(self) -> None:
        self._started.set()
        while not self._stop:
            self.count += 1
            time.sleep(0)  # releases the GIL, so the main thread can take it back

    def __enter__(self) -> GilProbe:
        sys.setswitchinterval(1000)
        self._thread.start()
        assert self._started.wait(JOIN_TIMEOUT), "the counting thread did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop = True
        self._thread.join(JOIN_TIMEOUT)
        sys.setswitchinterval(self._previous_interval)
        assert not self._thread.is_alive(), "the counting thread did not stop"

    def count_during(self, call: Callable[[], Any]) -> int:
        """How often the other thread counted while `call` ran here (0: the GIL was held throughout)."""
        before = self.count
        call()
        return self.count - before

    def releases_the_gil(self, call: Callable[[], Any], attempts: int = 10) -> list[int]:
        """The counts of up to `attempts` calls, stopping at the first that moved: a busy machine
        may not schedule the other thread during one call, a call that holds the GIL never lets it run."""
        counts: list[int] = []
        while len(counts) < attempts and not any(counts):
            counts.append(self.count_during(call))
        return counts


def python_busy_loop(iterations: int = 300_000) -> int:
    """Pure Python work (about 10 ms): holds the GIL throughout, the probe's negative control."""
    total = 0
    for i in range(iterations):
        total += i
    return total
