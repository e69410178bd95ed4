"""How often does an idle machine take a yielding thread's core, and for how long? A spin
helper yields between looks at its slot, and counts a long gap between two looks as a core
lost to another program (`rust/kernels/spin_pool/spin_time.rs`). This spins the same way,
`sched_yield` in a loop pinned to one CPU, and counts every gap longer than 50 µs, with the
involuntary context switches it saw during the gap (0: an interrupt or the hypervisor; 1 or
more: another thread ran). Prints how many gaps of each length it saw, and how many gaps over
100 µs came within 200 ms of the one before (what makes a helper back off).

    python benchmarks/yield_gaps.py [--seconds 20] [--cpu 1]

Run it with nothing else busy on that CPU. Linux only (`RUSAGE_THREAD`, `sched_setaffinity`).
"""

from __future__ import annotations

import argparse
import os
import resource
import time


def involuntary_switches() -> int:
    return resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--cpu", type=int, default=1)
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.cpu})
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"{args.seconds:g} s of sched_yield on CPU {args.cpu}")
    gaps = []
    clock = time.perf_counter_ns
    end = clock() + int(args.seconds * 1e9)
    last, switches = clock(), involuntary_switches()
    while last < end:
        os.sched_yield()
        now = clock()
        if now - last > 50_000:
            after = involuntary_switches()
            gaps.append((now, now - last, after - switches))
            switches = after
        last = now
    buckets = [(50, 100), (100, 300), (300, 1000), (1000, 3000), (3000, None)]
    for low, high in buckets:
        inside = [g for g in gaps if g[1] > low * 1000 and (high is None or g[1] <= high * 1000)]
        switched = sum(1 for g in inside if g[2] > 0)
        label = f"{low}–{high} µs" if high else f"over {low} µs"
        print(f"{label:>14s}: {len(inside):5d} gaps ({len(inside) / args.seconds:6.2f} a second), "
              f"{switched} with a switch to another thread")
    long_ones = [at for at, gap, _ in gaps if gap > 100_000]
    repeats = sum(1 for before, after in zip(long_ones, long_ones[1:]) if after - before < 200_000_000)
    print(f"gaps over 100 µs that came within 200 ms of the one over 100 µs before: {repeats}")

if __name__ == "__main__":
    main()
