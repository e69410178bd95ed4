"""The demo (`python -m rustgrad`), its flags, and Session.run tracing behind `profile`."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

from rustgrad import static as tf


def demo(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rustgrad", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def losses(output: str, mode: str) -> list[float]:
    section = output.split(f"{mode} mode")[1].split("mode:")[0]
    return [float(line.split("loss")[1]) for line in section.splitlines() if line.strip().startswith("step ")]


def test_demo_trains_both_modes_to_the_same_falling_curve():
    done = demo("--steps", "40")
    assert done.returncode == 0, done.stderr
    eager, static = losses(done.stdout, "eager"), losses(done.stdout, "static")
    assert eager[-1] < eager[0] / 10
    np.testing.assert_allclose(eager, static, rtol=1e-4)
    assert done.stdout.count("µs per step") == 2


def test_demo_flags_select_mode_and_threads():
    done = demo("--steps", "5", "--mode", "eager", "--threads", "1")
    assert done.returncode == 0, done.stderr
    assert "eager mode" in done.stdout and "static mode" not in done.stdout
    assert "1 thread(s)" in done.stdout


def test_demo_rejects_bad_flags():
    done = demo("--steps", "0")
    assert done.returncode != 0 and "--steps must be at least 1" in done.stderr


def test_plot_writes_a_png_or_says_how_to_install_matplotlib(tmp_path):
    done = demo("--steps", "5", "--mode", "static", "--plot", str(tmp_path / "loss.png"))
    if importlib.util.find_spec("matplotlib") is None:
        assert done.returncode != 0 and "pip install 'rustgrad[plot]'" in done.stderr
    else:
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_profile_prints_the_slowest_nodes():
    done = demo("profile", "--steps", "3", "--top", "5")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "static demo step" in lines[0]
    assert len(lines) == 2 + 5 and any("MatMul" in line or "mm" in line for line in lines[2:])


def test_traced_run_reports_every_node_and_the_same_values():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, shape=(None, 3))
        y = tf.reduce_sum(tf.exp(x) * 2.0)
    with tf.Session(graph=graph) as sess:
        feed = {x: np.ones((2, 3), np.float32)}
        meta = tf.RunMetadata()
        traced = sess.run(y, feed_dict=feed, options=tf.RunOptions(trace=True), run_metadata=meta)
        assert traced == pytest.approx(sess.run(y, feed_dict=feed))
        ops = [op for _, op, _ in meta.node_times]
        assert ops == ["Feed", "exp", "mul", "sum"]
        assert all(seconds >= 0 for _, _, seconds in meta.node_times)
        assert meta.top(1)[0][2] == max(seconds for _, _, seconds in meta.node_times)
        untraced = tf.RunMetadata()
        sess.run(y, feed_dict=feed, run_metadata=untraced)
        assert untraced.node_times == []
