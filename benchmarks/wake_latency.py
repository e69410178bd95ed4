"""What handing work to a waiting thread costs on this machine, the price our spin helpers
pay when they park (see docs/performance.md, "Mixed with numpy").

    python benchmarks/wake_latency.py [--rounds 300] [--gap-us 1000]

A native probe (wake_latency.c, built like fma_probe.c) pins a waiting thread to another CPU
than the caller's, keeps the caller busy for ``--gap-us`` µs, then hands the waiter work, over
and over: the waiter either parked in the kernel (a futex wait, as a parked helper waits),
spinning with a yield between looks (as a helper does in its spin time), or napping (sleeping
10 µs between looks, with a timer slack of 1 µs: the dozing that docs/performance.md rejects).
It prints the mean µs the hand-over cost the caller (the wake-up system call, for a parked
waiter) and the mean µs until the waiter ran. Linux only.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fma_probe  # noqa: E402

SOURCE = Path(__file__).resolve().parent / "wake_latency.c"
MODES = {"parked": 0, "spinning": 1, "napping": 2}


def measure(mode: str, rounds: int, gap_us: float, build_dir: Path = fma_probe.BUILD_DIR) -> tuple[float, float]:
    """(µs the hand-over cost the caller, µs until the waiter ran), means over ``rounds``."""
    lib = ctypes.CDLL(str(fma_probe.build(build_dir, source=SOURCE)))
    lib.wake_latency_us.restype = ctypes.c_double
    lib.wake_latency_us.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_double, ctypes.POINTER(ctypes.c_double)]
    caller = ctypes.c_double()
    started = lib.wake_latency_us(MODES[mode], rounds, gap_us, ctypes.byref(caller))
    if started < 0:
        raise fma_probe.ProbeUnavailable("the probe could not start its waiting thread")
    return caller.value, started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--gap-us", type=float, default=1000.0, help="the caller's busy time before each hand-over")
    args = parser.parse_args()
    if not sys.platform.startswith("linux"):
        sys.exit("wake_latency.py: the probe uses Linux futexes; run it on Linux")
    print(f"handing work to a thread on another CPU, {args.rounds} times, each after {args.gap_us:g} µs busy:")
    print(f"  {'the waiter':<10} {'cost to the caller':>20} {'until the waiter ran':>22}")
    for mode in MODES:
        try:
            caller, started = measure(mode, args.rounds, args.gap_us)
        except fma_probe.ProbeUnavailable as err:
            sys.exit(f"wake_latency.py: {err}")
        print(f"  {mode:<10} {caller:17.2f} µs {started:19.1f} µs")


if __name__ == "__main__":
    main()
