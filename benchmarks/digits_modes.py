"""The digits CNN's training step, eager (rustgrad/_digits.py) against static (rustgrad/_digits_tf1.py),
measured in one process: ``python benchmarks/digits_modes.py``.

Both programs' own step functions (``_digits.train_step``, ``_digits_tf1.train_step``) run the same
batches of 64 training images, in the same order, from freshly built models. After ``--warmup``
steps each, the two modes take turns (``--rounds`` rounds of ``--steps`` steps each, so a busy
machine slows both alike); the per-step time of a mode is its median over the rounds. It prints
both and their ratio (static / eager). ``--data-format`` and ``--weight-decay`` choose the static
network's layout and regularizer, ``--threads`` the kernel threads.
Needs scikit-learn.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable, Optional, Sequence

import numpy as np

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad import _digits, _digits_tf1

BATCH = 64


def batch_order(size: int, count: int) -> list[np.ndarray]:
    """``count`` batches of indices, epoch after epoch of seeded shuffles."""
    out: list[np.ndarray] = []
    epoch = 0
    while len(out) < count:
        out += _digits_tf1.batches(size, BATCH, 0, epoch)
        epoch += 1
    return out[:count]


def eager_steps(total: int) -> tuple[Callable[[int], float], Callable[[], None]]:
    """A function running step ``i`` of the eager program, and its cleanup."""
    rustgrad.manual_seed(0)
    images, labels, _, _ = _digits.split_arrays(*_digits.load_digits())
    order = batch_order(len(images), total)
    feeds = [(rustgrad.from_numpy(images[b]), rustgrad.from_numpy(labels[b])) for b in order]
    model, optimizer, scheduler, loss_fn = _digits.setup(epochs=1, steps_per_epoch=total)

    def step(i: int) -> float:
        return _digits.train_step(model, optimizer, scheduler, loss_fn, *feeds[i])

    return step, lambda: None


def static_steps(total: int, data_format: str,
                 weight_decay: float) -> tuple[Callable[[int], float], Callable[[], None]]:
    """A function running step ``i`` of the static program, and closing its session."""
    data = _digits_tf1.Data.load(data_format)
    order = batch_order(len(data.train_images), total)
    feeds = [(data.train_images[b], data.train_labels[b]) for b in order]
    model = _digits_tf1.build(total, data_format=data_format, weight_decay=weight_decay)
    sess = tf.Session(graph=model.graph)
    with model.graph.as_default():
        sess.run(tf.global_variables_initializer())

    def step(i: int) -> float:
        return _digits_tf1.train_step(sess, model, *feeds[i])

    return step, sess.close


def timed(step: Callable[[int], float], start: int, count: int) -> float:
    """Seconds per step of steps ``start`` .. ``start + count``."""
    began = time.perf_counter()
    for i in range(start, start + count):
        step(i)
    return (time.perf_counter() - began) / count


def compare(steps: int, rounds: int, warmup: int, data_format: str = "channels_first",
            weight_decay: float = _digits_tf1.WEIGHT_DECAY) -> tuple[list[float], list[float]]:
    total = warmup + steps * rounds
    modes = {"eager": eager_steps(total), "static": static_steps(total, data_format, weight_decay)}
    times: dict[str, list[float]] = {name: [] for name in modes}
    for step, _ in modes.values():
        timed(step, 0, warmup)
    for r in range(rounds):
        for name, (step, _) in (modes.items() if r % 2 == 0 else reversed(modes.items())):
            times[name].append(timed(step, warmup + r * steps, steps))
    for _, close in modes.values():
        close()
    return times["eager"], times["static"]


def static_profile(runs: int, data_format: str, weight_decay: float) -> dict[tuple[str, str], float]:
    """Mean seconds per static step of each node (name, op), from ``runs`` traced runs after a warm-up."""
    data = _digits_tf1.Data.load(data_format)
    order = batch_order(len(data.train_images), 20 + runs)
    model = _digits_tf1.build(20 + runs, data_format=data_format, weight_decay=weight_decay)
    totals: dict[tuple[str, str], float] = {}
    with tf.Session(graph=model.graph) as sess:
        with model.graph.as_default():
            sess.run(tf.global_variables_initializer())
        for i, batch in enumerate(order):
            feed = {model.images: data.train_images[batch], model.labels: data.train_labels[batch]}
            meta = tf.RunMetadata()
            sess.run([model.train_op, model.loss], feed_dict=feed, options=tf.RunOptions(trace=True),
                     run_metadata=meta)
            if i >= 20:
                for name, op, seconds in meta.node_times:
                    totals[(name, op)] = totals.get((name, op), 0.0) + seconds / runs
    return totals


def eager_split(runs: int) -> tuple[float, float]:
    """Mean seconds of the eager step's zero_grad + forward + backward, and of its optimizer step."""
    rustgrad.manual_seed(0)
    images, labels, _, _ = _digits.split_arrays(*_digits.load_digits())
    x, y = rustgrad.from_numpy(images[:BATCH]), rustgrad.from_numpy(labels[:BATCH])
    model, optimizer, _, loss_fn = _digits.setup(epochs=1, steps_per_epoch=1)
    backward = optimizer_step = 0.0
    for i in range(20 + runs):
        began = time.perf_counter()
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        middle = time.perf_counter()
        optimizer.step()
        if i >= 20:
            backward += (middle - began) / runs
            optimizer_step += (time.perf_counter() - middle) / runs
    return backward, optimizer_step


def print_profile(runs: int, top: int, data_format: str, weight_decay: float) -> None:
    totals = static_profile(runs, data_format, weight_decay)
    by_op: dict[str, float] = {}
    for (_, op), seconds in totals.items():
        by_op[op] = by_op.get(op, 0.0) + seconds
    print(f"\nstatic step: {sum(totals.values()) * 1e6:.1f} µs in {len(totals)} nodes (mean of {runs} traced runs)")
    biggest = sorted(by_op.items(), key=lambda kv: -kv[1])[:top]
    print(f"  by op (µs): {', '.join(f'{op} {seconds * 1e6:.0f}' for op, seconds in biggest)}")
    for (name, op), seconds in sorted(totals.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {name:<40} {op:<20} {seconds * 1e6:8.1f} µs")
    backward, optimizer_step = eager_split(runs)
    print(f"eager step: zero_grad + forward + backward {backward * 1e6:.1f} µs, "
          f"AdamW step {optimizer_step * 1e6:.1f} µs")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100, help="steps per round (default 100)")
    parser.add_argument("--rounds", type=int, default=6, help="rounds per mode (default 6)")
    parser.add_argument("--warmup", type=int, default=30, help="untimed steps per mode first (default 30)")
    parser.add_argument("--data-format", choices=["channels_first", "channels_last"], default="channels_first")
    parser.add_argument("--weight-decay", type=float, default=_digits_tf1.WEIGHT_DECAY,
                        help="the static program's L2 regularizer scale (0: no regularizer nodes)")
    parser.add_argument("--profile", type=int, default=0, metavar="RUNS",
                        help="then trace RUNS static steps and print where their time goes")
    parser.add_argument("--top", type=int, default=12, help="nodes the profile prints (default 12)")
    parser.add_argument("--threads", type=int, default=None, help="kernel threads (default: all cores)")
    args = parser.parse_args(argv)
    if args.threads:
        rustgrad.set_num_threads(args.threads)
    eager, static = compare(args.steps, args.rounds, args.warmup, args.data_format, args.weight_decay)
    e, s = statistics.median(eager), statistics.median(static)
    print(f"rustgrad {rustgrad.__version__}, {rustgrad.get_num_threads()} thread(s), batch {BATCH}, "
          f"{args.rounds} rounds of {args.steps} steps after {args.warmup} warm-up steps; "
          f"static {args.data_format}, weight decay {args.weight_decay:g}")
    print(f"eager  step: {e * 1e6:8.1f} µs (median; rounds {', '.join(f'{t * 1e6:.0f}' for t in eager)})")
    print(f"static step: {s * 1e6:8.1f} µs (median; rounds {', '.join(f'{t * 1e6:.0f}' for t in static)})")
    print(f"static / eager: {s / e:.2f}")
    if args.profile:
        print_profile(args.profile, args.top, args.data_format, args.weight_decay)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
