"""How long Ctrl-C takes to stop a long kernel: the time from SIGINT to the
KeyboardInterrupt, for a 6000² product, repeated `exp` and `sum` over 2e8
elements, and a backward pass through a 6000² product. Each runs in a child
process that this script interrupts 0.3 s into the op.

    python benchmarks/ctrl_c_latency.py [--repeats 3]

(docs/performance.md quotes the range it prints.)
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time

CHILD = r"""
import sys, time
import rustgrad as rg
a = rg.ones(6000, 6000)
x = rg.ones(200_000_000)
ops = {
    "mm 6000²": lambda: a.mm(a),
    "exp of 2e8, repeated": lambda: [x.exp() for _ in range(20)],
    "sum of 2e8, repeated": lambda: [x.sum() for _ in range(50)],
    "backward through mm 6000²": lambda: a.clone().requires_grad_().mm(a).sum().backward(),
}
op = ops[sys.argv[1]]
print("ready", flush=True)
try:
    op()
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
"""

CASES = ["mm 6000²", "exp of 2e8, repeated", "sum of 2e8, repeated", "backward through mm 6000²"]


def latency_ms(case: str) -> float:
    child = subprocess.Popen([sys.executable, "-c", CHILD, case], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(0.3)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        words = child.stdout.readline().split()
        if not words or words[0] != "interrupted":
            raise SystemExit(f"{case}: the op was not interrupted ({words})")
        return (float(words[1]) - sent) * 1000
    finally:
        child.kill()
        child.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for case in CASES:
        times = sorted(latency_ms(case) for _ in range(args.repeats))
        print(f"  {case:<28} median {times[len(times) // 2]:6.1f} ms   (min {times[0]:.1f}, max {times[-1]:.1f})")


if __name__ == "__main__":
    main()
