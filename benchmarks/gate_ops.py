"""The elementwise ops of an LSTM's gates, and the LSTM step of the benchmark suite itself
(`test_bench_lstm.py`: 50 steps, batch 16, input 32, hidden 128, forward and backward),
against numpy: a number on the left (``1 - x``), binary and unary ops of gates narrowed out of
(T, N, 4H), and their copy. Each ``--build NAME=DIR`` and the installed build run in processes
of their own, alternating (see `product_rates.alternate`); numpy runs in each process.

    python benchmarks/gate_ops.py [--rounds 3] [--threads 2] [--build NAME=DIR ...]

Prints, per row, the median over the rounds of each process's median µs, and numpy's.
"""

from __future__ import annotations

from product_rates import compare_builds_with_numpy

CHILD = """
import json, sys
import numpy as np
import rustgrad
from call_timing import median_call_us
from test_bench_lstm import _problem, numpy_lstm_step, rustgrad_lstm_step

rustgrad.set_num_threads(int(sys.argv[1]))
gates_np = np.random.default_rng(0).random((50, 16, 512), dtype=np.float32)
gates = rustgrad.from_numpy(gates_np)
i, f = gates.narrow(2, 0, 128), gates.narrow(2, 128, 128)
i_np, f_np = gates_np[:, :, :128], gates_np[:, :, 128:256]
dense_np = np.ascontiguousarray(i_np)
dense = rustgrad.from_numpy(dense_np)
calls = {
    "1 - x, 50×16×128": (lambda: 1 - dense, lambda: 1 - dense_np),
    "x - 1, 50×16×128": (lambda: dense - 1, lambda: dense_np - 1),
    "gate * gate (views)": (lambda: i * f, lambda: i_np * f_np),
    "gate * dense": (lambda: i * dense, lambda: i_np * dense_np),
    "1 - gate": (lambda: 1 - i, lambda: 1 - i_np),
    "gate.tanh()": (lambda: i.tanh(), lambda: np.tanh(i_np)),
    "gate.contiguous()": (lambda: i.contiguous(), lambda: np.ascontiguousarray(i_np)),
}
problem = _problem()
lstm = (rustgrad_lstm_step(problem), numpy_lstm_step(problem))
# Ours first, then numpy's: after numpy's BLAS its worker spins on for about 0.1 s.
with rustgrad.no_grad():
    ours = {name: median_call_us(pair[0], 300, warmup=30) for name, pair in calls.items()}
ours["LSTM forward + backward"] = median_call_us(lstm[0], 20, warmup=3)
theirs = {name: median_call_us(pair[1], 300, warmup=30) for name, pair in calls.items()}
theirs["LSTM forward + backward"] = median_call_us(lstm[1], 20, warmup=3)
print(json.dumps({name: [ours[name], theirs[name]] for name in ours}))
"""


def main() -> None:
    compare_builds_with_numpy(__doc__.splitlines()[0], CHILD, [])


if __name__ == "__main__":
    main()
