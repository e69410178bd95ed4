"""``python -m rustgrad profile --memory``: the static demo step's memory plan, as lifetimes.

A traced ``Session.run`` records, for every step of the plan, the values the step stored in
memory its kernels allocated (bytes, and the number of the plan buffer the memory comes from)
and the values freed after it. This module turns those records into one row per stored value
(where it is stored, how large, which buffer, until which step it lives) and a summary: the
buffers the plan keeps between runs, and the peak of the values alive at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence


@dataclass
class StoredValue:
    """One value a step stored: its lifetime runs from ``stored_at`` to ``freed_after``
    (None: still held after the run, as a fetched value is)."""

    step: int
    name: str
    op: str
    nbytes: int
    buffer: Optional[int]
    stored_at: int
    freed_after: Optional[int]


def stored_values(node_memory: Sequence[tuple[int, str, str, list, list]]) -> list[StoredValue]:
    """The values of a traced run's ``RunMetadata.node_memory``, in the order they were stored."""
    freed_after = {value: step for step, _, _, _, released in node_memory for value in released}
    names = {step: (name, op) for step, name, op, _, _ in node_memory}
    values = []
    for step, _, _, stored, _ in node_memory:
        for value, nbytes, buffer in stored:
            name, op = names.get(value, ("?", "?"))
            values.append(StoredValue(value, name, op, nbytes, buffer, step, freed_after.get(value)))
    return values


def peak_live_bytes(values: Sequence[StoredValue]) -> tuple[int, Optional[int]]:
    """The most bytes of stored values alive at once, and the step at which that happens."""
    if not values:
        return 0, None
    last = max(max(v.stored_at, v.freed_after or v.stored_at) for v in values)
    live, peak, at = 0, 0, None
    for step in range(last + 1):
        live += sum(v.nbytes for v in values if v.stored_at == step)
        if live > peak:
            peak, at = live, step
        live -= sum(v.nbytes for v in values if v.freed_after == step)
    return peak, at


def buffer_bytes(values: Sequence[StoredValue]) -> dict[int, int]:
    """Each plan buffer's size: the largest value it held."""
    sizes: dict[int, int] = {}
    for v in values:
        if v.buffer is not None:
            sizes[v.buffer] = max(sizes.get(v.buffer, 0), v.nbytes)
    return sizes


def human(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if nbytes < 1024 or unit == "MiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    raise AssertionError("unreachable")


def report(node_memory: Sequence[Any], title: str) -> str:
    """The table ``profile --memory`` prints."""
    values = stored_values(node_memory)
    names = {step: name for step, name, _, _, _ in node_memory}
    lines = [title, f"{'step':>4}  {'node':<34} {'op':<26} {'bytes':>10} {'buffer':>6}  lives until"]
    for v in values:
        until = "after the run (fetched)" if v.freed_after is None else \
            f"step {v.freed_after} ({names.get(v.freed_after, '?')})"
        buffer = "-" if v.buffer is None else str(v.buffer)
        lines.append(f"{v.stored_at:>4}  {v.name[:34]:<34} {v.op[:26]:<26} {human(v.nbytes):>10} {buffer:>6}  {until}")
    sizes = buffer_bytes(values)
    peak, at = peak_live_bytes(values)
    lines.append(f"{len(values)} stored values, {human(sum(v.nbytes for v in values))} in all; "
                 f"{len(sizes)} plan buffers kept between runs, {human(sum(sizes.values()))}")
    if at is not None:
        lines.append(f"peak of values alive at once: {human(peak)}, at step {at} ({names.get(at, '?')})")
    return "\n".join(lines)
