"""Peak memory (max RSS) of the reference programs, rustgrad against numpy.

    python benchmarks/memory.py [--steps 500]

Each program runs in a fresh process: import, then the training loop. The rustgrad programs
are the reference PyTorch and TF1 programs with their imports changed (examples/two_layer_eager.py
and examples/two_layer_static.py), so they import what a user's program imports.

The large static step runs in two forms: the reference form (tf.Variable of the numpy weights,
whose constant the graph keeps, and a run that fetches both assigns, whose values come back as
copies of the new weights), and the form TF1 programs use for large weights (variables loaded
through a placeholder, the grouped assigns fetched as an op).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

EXAMPLES = HERE.parent / "examples"

EAGER = f"""
import sys
sys.path.insert(0, {str(EXAMPLES)!r})
from two_layer_eager import main
main(int(sys.argv[1]))
"""

STATIC = f"""
import sys
sys.path.insert(0, {str(EXAMPLES)!r})
from two_layer_static import main
main(int(sys.argv[1]))
"""

# The same data as rustgrad._demo.Problem.make(0), made with numpy alone (no rustgrad import).
NUMPY = f"""
import sys
import numpy as np
sys.path.insert(0, {str(HERE)!r})
from numpy_steps import InPlaceNumpyStep
rng = np.random.default_rng(0)
x, y, w1, w2 = (rng.standard_normal(s).astype(np.float32) for s in ((64, 1000), (64, 10), (1000, 100), (100, 10)))
step = InPlaceNumpyStep(x, y, w1, w2)
for _ in range(int(sys.argv[1])):
    step()
"""


LARGE = (1024, 4096, 4096, 1000)

# The large step (1024x4096x4096x1000): numpy in place against the static Session step, each on
# the same problem (benchmarks/steps.py's scaled_problem) in a fresh process.
LARGE_NUMPY = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
from steps import numpy_step, scaled_problem
step = numpy_step(scaled_problem({LARGE!r}), in_place=True)
for _ in range(int(sys.argv[1])):
    step()
"""

LARGE_STATIC = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
from steps import static_step, scaled_problem
step = static_step(scaled_problem({LARGE!r}))
for _ in range(int(sys.argv[1])):
    step()
"""


# The same static step written as TF1 programs hold large weights: each variable is initialised
# from a placeholder fed once (so the graph holds no constant copy of the weights), the numpy
# weights are dropped after loading, and each run fetches the loss and the grouped assigns.
LARGE_STATIC_LOADED = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
from steps import scaled_problem
from rustgrad import static as tf
from rustgrad._demo import LEARNING_RATE
p = scaled_problem({LARGE!r})
graph = tf.Graph()
with graph.as_default():
    x = tf.placeholder(tf.float32, shape=(None, p.x.shape[1]))
    y = tf.placeholder(tf.float32, shape=(None, p.y.shape[1]))
    w1_value = tf.placeholder(tf.float32, shape=p.w1.shape)
    w2_value = tf.placeholder(tf.float32, shape=p.w2.shape)
    w1, w2 = tf.Variable(w1_value), tf.Variable(w2_value)
    y_pred = tf.matmul(tf.maximum(tf.matmul(x, w1), tf.zeros(1)), w2)
    loss = tf.reduce_sum((y - y_pred) ** 2.0)
    grad_w1, grad_w2 = tf.gradients(loss, [w1, w2])
    train = tf.group(w1.assign(w1 - LEARNING_RATE * grad_w1), w2.assign(w2 - LEARNING_RATE * grad_w2))
    init = tf.global_variables_initializer()
sess = tf.Session(graph=graph)
sess.run(init, feed_dict={{w1_value: p.w1, w2_value: p.w2}})
del p.w1, p.w2
for _ in range(int(sys.argv[1])):
    sess.run([loss, train], feed_dict={{x: p.x, y: p.y}})
"""


def peak_mib(code: str, steps: int) -> float:
    """ru_maxrss of `code` run in a fresh interpreter (its own child, so the peak is its alone)."""
    out = subprocess.run(
        [sys.executable, "-c",
         "import resource, subprocess, sys\n"
         "subprocess.run([sys.executable, '-c', sys.argv[1], sys.argv[2]], check=True)\n"
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
         code, str(steps)],
        check=True, capture_output=True, text=True).stdout
    return int(out.split()[-1]) / 1024


PROGRAMS = {"numpy in place": NUMPY, "rustgrad eager": EAGER, "rustgrad static": STATIC}
LARGE_PROGRAMS = {"numpy in place": LARGE_NUMPY, "rustgrad static, reference form": LARGE_STATIC,
                  "rustgrad static, weights loaded": LARGE_STATIC_LOADED}


def measure(steps: int, large_steps: int) -> dict[str, Any]:
    """Peak RSS in MiB of each program: ``{"seed": {name: MiB}, "large": {name: MiB}}`` (no "large"
    when ``large_steps`` is 0), with the step counts."""
    peaks: dict[str, Any] = {"steps": steps, "large_steps": large_steps,
                             "seed": {name: peak_mib(code, steps) for name, code in PROGRAMS.items()}}
    if large_steps:
        peaks["large"] = {name: peak_mib(code, large_steps) for name, code in LARGE_PROGRAMS.items()}
    return peaks


def print_table(title: str, peaks: dict[str, float]) -> None:
    base = peaks["numpy in place"]
    print(title)
    for name, mib in peaks.items():
        print(f"  {name:<34} {mib:7.1f} MiB   {mib / base:.2f}x numpy in place")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--large-steps", type=int, default=3, help="steps of the large step (0 skips it)")
    args = parser.parse_args()
    peaks = measure(args.steps, args.large_steps)
    print_table(f"peak RSS, import plus {args.steps} steps of the reference two-layer net", peaks["seed"])
    if "large" in peaks:
        print_table(f"peak RSS, {args.large_steps} steps of the large step {'x'.join(map(str, LARGE))}",
                    peaks["large"])


if __name__ == "__main__":
    main()
