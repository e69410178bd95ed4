"""tf.Print: its value is its input's; each run writes TF's line to file descriptor 2, from Rust.

Expected lines come from tests/fixtures/tf1/debug_ops.json, written by TF's tf.compat.v1
(tools/tf_reference/make_debug_fixtures.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import ArgumentTypeError

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "tf1" / "debug_ops.json").read_text())
DTYPES = {"int32": np.int32, "int64": np.int64, "float32": np.float32, "float64": np.float64,
          "bool": np.bool_, "uint8": np.uint8}


def _fixture_array(name: str) -> np.ndarray:
    spec = FIXTURE["tensors"][name]
    return np.asarray(spec["values"], dtype=DTYPES[spec["dtype"]])


PRINT_CASES = [c for c in FIXTURE["print"] if FIXTURE["tensors"][c["tensor"]]["dtype"] in DTYPES]


@pytest.mark.parametrize("case", PRINT_CASES, ids=lambda c: f"{c['tensor']}-summarize{c['summarize']}")
def test_print_writes_tf_summary_of_each_tensor(case, capfd):
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(_fixture_array(case["tensor"]))
        out = tf.Print(x, [x], message="m: ", summarize=case["summarize"])
        with tf.Session() as sess:
            capfd.readouterr()
            sess.run(out)
    assert capfd.readouterr().err == case["stderr"]


def test_print_writes_message_and_every_data_tensor_on_one_line(capfd):
    want = FIXTURE["print_several"]
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(np.array([1.5, 2.0], np.float32))
        b = tf.constant(np.array([[1, 2], [3, 4]], np.int32))
        out = tf.Print(a, [a, b, a], message="several: ")
        plain = tf.Print(a, [b])
        with tf.Session() as sess:
            capfd.readouterr()
            sess.run(out)
            assert capfd.readouterr().err == want["several"]
            sess.run(plain)
            assert capfd.readouterr().err == want["no_message"]
    assert (out.op.type, out.op.name) == (want["op_type"], want["op_name"])


def test_print_returns_its_input_value_dtype_and_shape(capfd):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, [None, 2], name="x")
        out = tf.Print(x * 2.0, [x], message="x=")
        assert (out.dtype, out.shape.as_list()) == (tf.float64, [None, 2])
        value = np.array([[1.0, 2.0], [3.0, 4.0]])
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(out, {x: value}), value * 2.0)
    assert capfd.readouterr().err == "x=[[1 2][3...]...]\n"


def test_first_n_prints_only_the_first_runs_of_each_session(capfd):
    want = FIXTURE["print_several"]
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(np.array([1.5, 2.0], np.float32))
        limited = tf.Print(a, [a], message="first_n ", first_n=2)
        with tf.Session() as sess:
            capfd.readouterr()
            for _ in range(5):
                sess.run(limited)
            assert capfd.readouterr().err == want["first_n_2_five_runs"]
        with tf.Session() as sess:
            sess.run(limited)
            assert capfd.readouterr().err == want["first_n_new_session"]


def test_a_negative_first_n_prints_every_run(capfd):
    with tf.Graph().as_default():
        out = tf.Print(tf.constant(1), [tf.constant(2)], first_n=-1)
        with tf.Session() as sess:
            capfd.readouterr()
            for _ in range(3):
                sess.run(out)
    assert capfd.readouterr().err == "[2]\n" * 3


def test_print_writes_to_file_descriptor_2_from_rust_not_to_sys_stderr(tmp_path):
    code = textwrap.dedent("""
        import io, sys
        import numpy as np
        import rustgrad.compat.v1 as tf
        replaced = io.StringIO()
        sys.stderr = replaced
        x = tf.constant(np.array([1, 2, 3, 4], np.int32))
        out = tf.Print(x, [x], message="from rust: ")
        with tf.Session() as sess:
            sess.run(out)
        sys.__stdout__.write("python stderr got %r\\n" % replaced.getvalue())
    """)
    err = tmp_path / "stderr.txt"
    with open(err, "wb") as f:
        done = subprocess.run([sys.executable, "-c", code], stderr=f, stdout=subprocess.PIPE, timeout=60)
    assert done.returncode == 0, err.read_text()
    assert done.stdout.decode().strip() == "python stderr got ''"
    assert err.read_text().splitlines() == ["from rust: [1 2 3...]"]


def test_lines_of_concurrent_runs_do_not_interleave(capfd):
    with tf.Graph().as_default():
        x = tf.constant(np.arange(200, dtype=np.int64))
        out = tf.Print(x, [x, x], message="line: ", summarize=-1)
        with tf.Session() as sess:
            capfd.readouterr()
            threads = [threading.Thread(target=lambda: [sess.run(out) for _ in range(20)]) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    full = "[" + " ".join(str(i) for i in range(200)) + "]"
    assert capfd.readouterr().err.splitlines() == ["line: " + full + full] * 80


def _numeric_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up) - f(down)) / (2 * eps)
    return grad


def test_gradient_passes_through_print_to_its_input_only(capfd):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [3], name="x")
        d = tf.placeholder(tf.float64, [3], name="d")
        printed = tf.Print(x * x, [x, d], message="p ")
        y = tf.reduce_sum(printed * tf.sin(x))
        gx, gd = tf.gradients(y, [x, d])
        assert gd is None
        value = np.array([0.3, -1.2, 2.0])
        with tf.Session() as sess:
            got = sess.run(gx, {x: value, d: value})
            numeric = _numeric_grad(lambda v: sess.run(y, {x: v, d: value}), value)
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, 2 * value * np.sin(value) + value**2 * np.cos(value), rtol=1e-12)


def test_a_printed_product_is_printed_before_its_activation_is_fused(capfd):
    with tf.Graph().as_default():
        a = tf.constant(np.array([[1.0, -2.0]], np.float32))
        b = tf.constant(np.array([[1.0, 0.0], [1.0, 1.0]], np.float32))
        h = tf.matmul(a, b)
        printed = tf.Print(h, [h], message="h ")
        r = tf.nn.relu(h)
        with tf.Session() as sess:
            capfd.readouterr()
            p, rv = sess.run([printed, r])
    np.testing.assert_array_equal(p, [[-1.0, -2.0]])
    np.testing.assert_array_equal(rv, [[0.0, 0.0]])
    assert capfd.readouterr().err == "h [[-1 -2]]\n"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"first_n": 1.5}, "'first_n' must be an int, got 1.5"),
        ({"summarize": "3"}, "'summarize' must be an int, got '3'"),
        ({"summarize": True}, "'summarize' must be an int, got True"),
        ({"message": 5}, "'message' must be a string, got int"),
    ],
)
def test_print_refuses_arguments_of_the_wrong_type(kwargs, match):
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        with pytest.raises(ArgumentTypeError, match=match) as info:
            tf.Print(x, [x], **kwargs)
    assert isinstance(info.value, TypeError)


def test_print_data_must_be_a_list():
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        with pytest.raises(TypeError, match="'data' must be a list of tensors, got Tensor"):
            tf.Print(x, x)


def test_print_is_in_the_compat_v1_namespace():
    import rustgrad.static as static

    assert tf.Print is static.Print
