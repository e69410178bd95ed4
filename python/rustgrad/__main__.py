"""``python -m rustgrad``: train the reference two-layer net and report the loss and speed.

``python -m rustgrad profile`` prints the slowest graph nodes of the static step, and
``python -m rustgrad profile --memory`` its memory plan: the values each step stores, the plan
buffers they use, and how long they live.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any, Optional, Sequence

import rustgrad
from rustgrad._demo import Problem, Run, progress_bar, train_eager, train_static

# Every subcommand, with the one-line description that `--help` lists.
SUBCOMMANDS = {
    "profile": "print the slowest graph nodes of the static demo step (--memory: its buffers and lifetimes)",
    "digits": "train a small CNN on scikit-learn's handwritten digits, --mode eager (default) or static "
              "(needs rustgrad[examples])",
    # mpistatic (issue 17)
    "distributed": "under mpiexec -n 2: data-parallel training over MPI in eager and static modes "
                   "(needs rustgrad[mpi])",
}


def _subcommands_help() -> str:
    width = max(len(name) for name in SUBCOMMANDS)
    lines = [f"  {name:<{width}}  {text}" for name, text in SUBCOMMANDS.items()]
    return "subcommands:\n" + "\n".join(lines) + "\n\n`python -m rustgrad SUBCOMMAND --help` shows its options."


def _parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m rustgrad",
        usage=f"python -m rustgrad [options]\n       python -m rustgrad {{{','.join(SUBCOMMANDS)}}} [options]",
        description="Without a subcommand: train the reference two-layer network (64x1000x100x10)\n"
        "with rustgrad in eager and static modes, and report the loss and the speed.",
        epilog=_subcommands_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--steps", type=int, default=500, help="training steps (default 500)")
    parser.add_argument("--mode", choices=["eager", "static", "both"], default="both",
                        help="which API to train with (default both)")
    parser.add_argument("--threads", type=int, default=None, help="kernel threads (default: all cores)")
    parser.add_argument("--plot", metavar="PNG", default=None, help="write the loss curves to this file")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and initial weights (default 0)")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    return args


def _report(run: Run) -> None:
    print(f"\n{run.mode} mode: loss every {max(len(run.losses) // 10, 1)} steps")
    stride = max(len(run.losses) // 10, 1)
    for t in list(range(0, len(run.losses), stride)) + [len(run.losses) - 1]:
        print(f"  step {t:>5}  loss {run.losses[t]:.6g}")
    print(f"  {run.us_per_step:.1f} µs per step ({run.seconds:.3f} s for {len(run.losses)} steps)")


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only backend, or exit saying how to install it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("--plot needs matplotlib, which is not installed: pip install 'rustgrad[plot]' "
                 "(or pip install matplotlib)")
    return plt


def _check_plot_path(path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        sys.exit(f"--plot {path}: the folder {folder} does not exist")


def curves_coincide(runs: Sequence[Run]) -> bool:
    """Whether every run has the same loss curve (to plotting precision)."""
    first = runs[0].losses
    return len(runs) > 1 and all(
        len(run.losses) == len(first) and all(math.isclose(a, b, rel_tol=1e-4) for a, b in zip(run.losses, first))
        for run in runs[1:]
    )


def curve_styles(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """matplotlib line options, one per run: identical curves stay visible as a solid and a dashed line."""
    looks = [{"linestyle": "-", "linewidth": 3.0, "alpha": 0.55},
             {"linestyle": "--", "linewidth": 1.6, "alpha": 0.95, "marker": "o", "markevery": 0.1}]
    return [{**looks[index % len(looks)], "label": f"{run.mode} ({run.us_per_step:.0f} µs/step)"}
            for index, run in enumerate(runs)]


def loss_title(runs: Sequence[Run]) -> str:
    title = "rustgrad: reference two-layer network"
    if curves_coincide(runs):
        title += f"\n(the {' and '.join(run.mode for run in runs)} loss curves coincide)"
    return title


def loss_figure(runs: Sequence[Run], plt: Any) -> Any:
    fig, ax = plt.subplots(figsize=(7, 4))
    for run, style in zip(runs, curve_styles(runs)):
        ax.plot(run.losses, **style)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (sum of squared errors)")
    ax.set_title(loss_title(runs))
    ax.legend()
    fig.tight_layout()
    return fig


def _plot(runs: list[Run], path: str) -> None:
    plt = _pyplot()
    fig = loss_figure(runs, plt)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"\nwrote {path}")


def profile(argv: Sequence[str]) -> int:
    """Traces the static demo step and prints its slowest nodes (mean over the runs)."""
    parser = argparse.ArgumentParser(prog="python -m rustgrad profile",
                                     description=SUBCOMMANDS["profile"].capitalize() + ".")
    parser.add_argument("--steps", type=int, default=50, help="traced runs to average (default 50)")
    parser.add_argument("--top", type=int, default=12, help="nodes to print (default 12)")
    parser.add_argument("--memory", action="store_true",
                        help="print the plan's stored values, their buffers and lifetimes instead of times")
    parser.add_argument("--sizes", default="64,1000,100,10", metavar="N,D_IN,H,D_OUT",
                        help="batch and layer sizes of the demo step (default 64,1000,100,10)")
    args = parser.parse_args(argv)
    sizes = _sizes(parser, args.sizes)
    from rustgrad import static as tf
    from rustgrad._demo import build_static

    problem = Problem.make(0, sizes)
    graph, t = build_static(problem)
    if args.memory:
        return _profile_memory(tf, graph, t, problem, sizes)
    totals: dict[tuple[str, str], float] = {}
    with tf.Session(graph=graph) as sess:
        sess.run(t["init"])
        feed = {t["x"]: problem.x, t["y"]: problem.y}
        sess.run([t["loss"], *t["train"]], feed_dict=feed)  # compile the plan outside the measurement
        for _ in range(args.steps):
            meta = tf.RunMetadata()
            sess.run([t["loss"], *t["train"]], feed_dict=feed, options=tf.RunOptions(trace=True),
                     run_metadata=meta)
            for name, op, seconds in meta.node_times:
                totals[(name, op)] = totals.get((name, op), 0.0) + seconds
    step = sum(totals.values()) / args.steps
    print(f"static demo step: {step * 1e6:.1f} µs in nodes (mean of {args.steps} traced runs)")
    print(f"{'node':<40} {'op':<22} {'µs':>8} {'share':>6}")
    for (name, op), total in sorted(totals.items(), key=lambda kv: kv[1], reverse=True)[:args.top]:
        mean = total / args.steps
        print(f"{name:<40} {op:<22} {mean * 1e6:8.1f} {mean / step:6.1%}")
    return 0


def _sizes(parser: argparse.ArgumentParser, text: str) -> tuple[int, int, int, int]:
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        sizes = ()
    if len(sizes) != 4 or min(sizes) < 1:
        parser.error(f"--sizes takes four positive integers N,D_IN,H,D_OUT, got {text!r}")
    return sizes  # type: ignore[return-value]


def _profile_memory(tf: Any, graph: Any, t: dict, problem: Problem, sizes: Sequence[int]) -> int:
    """Runs the static demo step twice (the second run reuses the plan's buffers) and prints the
    second run's stored values and lifetimes."""
    from rustgrad._memory_profile import human, report

    with tf.Session(graph=graph) as sess:
        sess.run(t["init"])
        feed = {t["x"]: problem.x, t["y"]: problem.y}
        fetches = [t["loss"], *t["train"]]
        sess.run(fetches, feed_dict=feed)
        meta = tf.RunMetadata()
        sess.run(fetches, feed_dict=feed, options=tf.RunOptions(trace=True), run_metadata=meta)
    shape = "x".join(map(str, sizes))
    print(report(meta.node_memory, f"memory of the static demo step ({shape}), one run after the first"))
    weights = problem.w1.nbytes + problem.w2.nbytes
    feeds = problem.x.nbytes + problem.y.nbytes
    print(f"besides: variables {human(weights)} (w1, w2), fed x and y {human(feeds)} (shared, not copied); "
          f"the fetched assigns return copies of the new weights, {human(weights)}")
    return 0


def digits(argv: Sequence[str]) -> int:
    """``--mode eager`` (the default) runs rustgrad/_digits.py, ``--mode static`` rustgrad/_digits_tf1.py;
    the other options go to the program."""
    chooser = argparse.ArgumentParser(prog="python -m rustgrad digits", add_help=False)
    chooser.add_argument("--mode", choices=["eager", "static"], default="eager")
    chosen, rest = chooser.parse_known_args(argv)
    if chosen.mode == "static":
        from rustgrad._digits_tf1 import main as digits_main
    else:
        from rustgrad._digits import main as digits_main
    return digits_main(rest)


def distributed(argv: Sequence[str]) -> int:
    """Runs rustgrad/_distributed_demo.py (on every rank of the mpiexec job)."""
    from rustgrad._distributed_demo import main as distributed_main

    return distributed_main(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return {"profile": profile, "digits": digits, "distributed": distributed}[argv[0]](argv[1:])
    args = _parse(argv)
    if args.plot:  # fail before training, not after it
        _pyplot()
        _check_plot_path(args.plot)
    if args.threads:
        rustgrad.set_num_threads(args.threads)
    problem = Problem.make(args.seed)
    print(f"rustgrad {rustgrad.__version__}: two-layer net 64x1000x100x10, float32, "
          f"{args.steps} steps, {rustgrad.get_num_threads()} thread(s)")
    runs = []
    if args.mode in ("eager", "both"):
        runs.append(train_eager(problem, args.steps, progress_bar("eager")))
    if args.mode in ("static", "both"):
        runs.append(train_static(problem, args.steps, progress_bar("static")))
    for run in runs:
        _report(run)
    if args.plot:
        _plot(runs, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
