"""What a traced Session.run records of memory (RunMetadata.node_memory), and the
`python -m rustgrad profile --memory` table built from it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from rustgrad import static as tf
from rustgrad._memory_profile import StoredValue, buffer_bytes, peak_live_bytes, stored_values


def traced(sess, fetches, feed):
    meta = tf.RunMetadata()
    sess.run(fetches, feed_dict=feed, options=tf.RunOptions(trace=True), run_metadata=meta)
    return meta


def test_every_step_is_recorded_with_the_bytes_it_allocates_and_when_they_are_freed():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, shape=(None, 3))
        e = tf.exp(x)
        y = tf.reduce_sum(e * 2.0)
    with tf.Session(graph=graph) as sess:
        meta = traced(sess, y, {x: np.ones((5, 3), np.float32)})
    ops = [op for _, _, op, _, _ in meta.node_memory]
    assert ops == ["Feed", "exp", "mul", "sum"]
    steps = {op: (step, stored, released) for step, _, op, stored, released in meta.node_memory}
    feed_step, exp_step, mul_step, sum_step = (steps[op][0] for op in ops)
    # The fed array is shared, not copied: the feed stores nothing.
    assert steps["Feed"][1] == []
    assert [(s, b) for s, b, _ in steps["exp"][1]] == [(exp_step, 5 * 3 * 4)]
    assert [(s, b) for s, b, _ in steps["mul"][1]] == [(mul_step, 5 * 3 * 4)]
    assert [(s, b) for s, b, _ in steps["sum"][1]] == [(sum_step, 4)]
    # exp's value is freed after mul reads it, mul's after sum; the fetched sum is kept.
    assert exp_step in steps["mul"][2] and mul_step in steps["sum"][2]
    assert all(sum_step not in released for _, _, _, _, released in meta.node_memory)
    assert meta.node_times and len(meta.node_times) == len(meta.node_memory)


def test_an_untraced_run_records_nothing():
    graph = tf.Graph()
    with graph.as_default():
        y = tf.reduce_sum(tf.ones((2, 2)))
    with tf.Session(graph=graph) as sess:
        meta = tf.RunMetadata()
        sess.run(y, run_metadata=meta)
    assert meta.node_memory == []


def test_lifetimes_peak_and_buffers_from_records():
    # step 0 stores a (100 bytes, buffer 0); step 1 stores b (50, buffer 1) and frees a;
    # step 2 stores c (100, buffer 0: a's buffer, reused) and frees b; c is fetched.
    records = [
        (0, "a", "exp", [(0, 100, 0)], []),
        (1, "b", "mul", [(1, 50, 1)], [0]),
        (2, "c", "add", [(2, 100, 0)], [1]),
    ]
    values = stored_values(records)
    assert values == [
        StoredValue(0, "a", "exp", 100, 0, 0, 1),
        StoredValue(1, "b", "mul", 50, 1, 1, 2),
        StoredValue(2, "c", "add", 100, 0, 2, None),
    ]
    # a and b are alive together at step 1 (150); b and c at step 2 (150, not higher).
    assert peak_live_bytes(values) == (150, 1)
    assert buffer_bytes(values) == {0: 100, 1: 50}
    assert peak_live_bytes([]) == (0, None)


def test_profile_memory_prints_the_fused_products_and_their_lifetimes():
    done = subprocess.run([sys.executable, "-m", "rustgrad", "profile", "--memory"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "memory of the static demo step (64x1000x100x10)" in out
    # The hidden layer (64x100 float32) is stored by the fused product: 25,600 bytes.
    rows = [line for line in out.splitlines() if "25.0 KiB" in line]
    assert rows, out
    assert "plan buffers kept between runs" in out and "peak of values alive at once" in out


def test_profile_memory_rejects_bad_sizes():
    done = subprocess.run([sys.executable, "-m", "rustgrad", "profile", "--memory", "--sizes", "4,5"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "--sizes takes four positive integers N,D_IN,H,D_OUT, got '4,5'" in done.stderr
