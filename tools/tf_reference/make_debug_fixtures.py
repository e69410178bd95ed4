"""Writes ``tests/fixtures/tf1/debug_ops.json``: what TF1's debugging ops print and raise.

Run OFFLINE with TF 2.x's ``tf.compat.v1`` in its own virtualenv (see make_tf1_fixtures.py;
never a test dependency, the tests only read the JSON)::

    /work/venv-tfref/bin/python tools/tf_reference/make_debug_fixtures.py

* ``print``: the text ``tf.Print`` writes to file descriptor 2 (captured by redirecting fd 2
  to a file around ``Session.run``) for tensors of each dtype, rank 0..3, empty ones, and
  ``summarize`` 2/3/-1/large; ``first_n``: the lines of five runs with ``first_n=2``.
* ``assert``: the messages of ``tf.Assert``, ``tf.assert_*`` (run-time ``InvalidArgumentError``,
  statically known ``InvalidArgumentError``/``ValueError``/``TypeError``) and
  ``tf.check_numerics``. Run-time messages are TF1's: TF 2's session prefix ("Graph execution
  error" and where the node was defined) and the ``\\n\\t [[{{node ...}}]]`` suffix are cut.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1
tf1.disable_eager_execution()
tf.get_logger().setLevel("ERROR")

OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "tf1" / "debug_ops.json"

FLOATS = [0.5, 1e-7, float("nan"), float("inf"), -float("inf"), 1 / 3, 0.1, -2.0, 123456789.0, 1e20, 0.0]

# name -> (values, dtype)
TENSORS = {
    "int32_vector": ([1, 2, 3, 4, 5], "int32"),
    "int64_matrix": ([[1, -2, 3], [4, 5, 6]], "int64"),
    "float32_specials": (FLOATS, "float32"),
    "float64_specials": (FLOATS, "float64"),
    "bool_matrix": ([[True, False], [False, True]], "bool"),
    "int32_scalar": (7, "int32"),
    "float32_scalar": (2.5, "float32"),
    "bool_scalar": (False, "bool"),
    "float32_rank3": (np.arange(24).reshape(2, 3, 4) / 4.0, "float32"),
    "int32_rank3_small": (np.arange(8).reshape(2, 2, 2), "int32"),
    "uint8_vector": ([0, 255, 7], "uint8"),
    "int8_vector": ([-1, 2, 3], "int8"),
    "float16_vector": ([0.5, 0.1, 1 / 3], "float16"),
    "empty_vector": (np.zeros((0,)), "float32"),
    "empty_matrix": (np.zeros((0, 3)), "float32"),
    "empty_inner": (np.zeros((2, 0)), "int32"),
    "column": ([[1], [2], [3], [4]], "int32"),
}
SUMMARIZES = [None, 2, 3, -1, 100, 0]


def capture_fd2(run) -> str:
    """What ``run()`` writes to file descriptor 2."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 2)
        try:
            run()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        return f.read().decode()


def print_cases() -> list:
    cases = []
    for name, (values, dtype) in TENSORS.items():
        for summarize in SUMMARIZES:
            g = tf1.Graph()
            with g.as_default():
                x = tf1.constant(np.asarray(values), dtype=dtype)
                out = tf1.Print(x, [x], message="m: ", summarize=summarize)
                with tf1.Session() as sess:
                    text = capture_fd2(lambda sess=sess, out=out: sess.run(out))
            cases.append({"tensor": name, "summarize": summarize, "stderr": text})
    return cases


def print_several() -> dict:
    g = tf1.Graph()
    with g.as_default():
        a = tf1.constant([1.5, 2.0])
        b = tf1.constant([[1, 2], [3, 4]])
        out = tf1.Print(a, [a, b, a], message="several: ")
        plain = tf1.Print(a, [b])
        limited = tf1.Print(a, [a], message="first_n ", first_n=2)
        with tf1.Session() as sess:
            several = capture_fd2(lambda: sess.run(out))
            no_message = capture_fd2(lambda: sess.run(plain))

            def five():
                for _ in range(5):
                    sess.run(limited)

            first_n = capture_fd2(five)
        with tf1.Session() as sess:
            new_session = capture_fd2(lambda: sess.run(limited))
    return {"several": several, "no_message": no_message, "first_n_2_five_runs": first_n,
            "first_n_new_session": new_session, "op_type": out.op.type, "op_name": out.op.name}


def error_text(e: BaseException) -> dict:
    message = getattr(e, "message", str(e)).split("\n\t [[")[0]
    if message.startswith("Graph execution error:"):
        # TF 2's session adds where the node was defined; TF1's message is the last line.
        message = message.rsplit("\n", 1)[-1]
    return {"type": type(e).__name__, "message": message}


def run_error(build, feed=None) -> dict:
    g = tf1.Graph()
    with g.as_default():
        try:
            op, feed_dict = build(), {}
            if feed:
                feed_dict = {g.get_tensor_by_name(k): v for k, v in feed.items()}
            with tf1.Session() as sess:
                sess.run(op, feed_dict)
            return {"type": None, "message": None, "op_type": getattr(op, "type", None)}
        except Exception as e:  # noqa: BLE001
            return error_text(e)


def ph(dtype, shape=None, name=None):
    return tf1.placeholder(dtype, shape, name=name)


def assert_cases() -> dict:
    c = {}
    c["assert_false_mixed"] = run_error(
        lambda: tf1.Assert(ph(tf.bool, [], "cond"), ["x is", ph(tf.float32, [None], "x"), "and", 3]),
        {"cond:0": False, "x:0": np.array([1.0, 0.5, 2.0, 4.0], np.float32)})
    c["assert_false_summarize_1"] = run_error(
        lambda: tf1.Assert(ph(tf.bool, [], "cond"), [ph(tf.int32, [None], "x")], summarize=1),
        {"cond:0": False, "x:0": np.array([1, 2, 3], np.int32)})
    c["assert_true"] = run_error(
        lambda: tf1.Assert(ph(tf.bool, [], "cond"), ["never"]), {"cond:0": True})
    c["assert_condition_vector"] = run_error(
        lambda: tf1.Assert(ph(tf.bool, [None], "cond"), ["v"]), {"cond:0": np.array([True, False])})
    c["assert_condition_int"] = run_error(lambda: tf1.Assert(ph(tf.int32, [], "cond"), ["v"]))
    c["assert_equal_runtime"] = run_error(
        lambda: tf1.assert_equal(ph(tf.int32, [None], "x"), ph(tf.int32, [None], "y")),
        {"x:0": np.array([1, 2], np.int32), "y:0": np.array([1, 3], np.int32)})
    c["assert_equal_runtime_message"] = run_error(
        lambda: tf1.assert_equal(ph(tf.int32, [None], "x"), ph(tf.int32, [None], "y"), message="hello"),
        {"x:0": np.array([1, 2], np.int32), "y:0": np.array([1, 3], np.int32)})
    c["assert_equal_static"] = run_error(lambda: tf1.assert_equal(tf1.constant([1, 2]), tf1.constant([1, 3])))
    c["assert_equal_static_true_type"] = run_error(
        lambda: tf1.assert_equal(tf1.constant([1, 2]), tf1.constant([1, 2])))
    c["assert_none_equal_runtime"] = run_error(
        lambda: tf1.assert_none_equal(ph(tf.float32, [None], "x"), ph(tf.float32, [None], "y")),
        {"x:0": np.array([1, 2], np.float32), "y:0": np.array([1, 3], np.float32)})
    c["assert_less_runtime"] = run_error(
        lambda: tf1.assert_less(ph(tf.float32, [None], "x"), ph(tf.float32, [None], "y"), summarize=1),
        {"x:0": np.array([1, 4], np.float32), "y:0": np.array([2, 3], np.float32)})
    c["assert_less_equal_static"] = run_error(
        lambda: tf1.assert_less_equal(tf1.constant([1.5, 4.0]), tf1.constant(3.0), message="m"))
    c["assert_greater_runtime"] = run_error(
        lambda: tf1.assert_greater(ph(tf.int32, [None], "x"), 2),
        {"x:0": np.array([3, 1], np.int32)})
    c["assert_greater_equal_runtime"] = run_error(
        lambda: tf1.assert_greater_equal(ph(tf.int32, [None], "x"), 2),
        {"x:0": np.array([3, 1], np.int32)})
    c["assert_positive_runtime"] = run_error(
        lambda: tf1.assert_positive(ph(tf.float32, [None], "x")), {"x:0": np.array([1, -1], np.float32)})
    c["assert_positive_runtime_message"] = run_error(
        lambda: tf1.assert_positive(ph(tf.float32, [None], "x"), message="must be positive"),
        {"x:0": np.array([1, -1], np.float32)})
    c["assert_positive_static"] = run_error(lambda: tf1.assert_positive(tf1.constant([1.0, -1.0])))
    c["assert_negative_runtime"] = run_error(
        lambda: tf1.assert_negative(ph(tf.int32, [None], "x")), {"x:0": np.array([-1, 0], np.int32)})
    c["assert_non_negative_runtime"] = run_error(
        lambda: tf1.assert_non_negative(ph(tf.int32, [None], "x")), {"x:0": np.array([-1, 0], np.int32)})
    c["assert_non_positive_runtime"] = run_error(
        lambda: tf1.assert_non_positive(ph(tf.int32, [None], "x")), {"x:0": np.array([1, 0], np.int32)})
    c["assert_rank_static"] = run_error(lambda: tf1.assert_rank(ph(tf.float32, [2, 3], "x"), 1))
    c["assert_rank_static_message"] = run_error(
        lambda: tf1.assert_rank(ph(tf.float32, [2, 3], "x"), 3, message="bad"))
    c["assert_rank_static_true_type"] = run_error(lambda: tf1.assert_rank(ph(tf.float32, [2, 3], "x"), 2))
    c["assert_rank_runtime"] = run_error(
        lambda: tf1.assert_rank(ph(tf.float32, None, "x"), 1), {"x:0": np.zeros((2, 3), np.float32)})
    c["assert_rank_at_least_static"] = run_error(
        lambda: tf1.assert_rank_at_least(ph(tf.float32, [2], "x"), 2))
    c["assert_rank_at_least_runtime"] = run_error(
        lambda: tf1.assert_rank_at_least(ph(tf.float32, None, "x"), 3), {"x:0": np.zeros((2, 3), np.float32)})
    c["assert_type"] = run_error(lambda: tf1.assert_type(ph(tf.float32, [2], "x"), tf.int32))
    c["assert_type_message"] = run_error(
        lambda: tf1.assert_type(ph(tf.float32, [2], "x"), tf.int32, message="m"))
    c["check_numerics_nan"] = run_error(
        lambda: tf1.check_numerics(ph(tf.float32, [None], "x"), "bad x"), {"x:0": np.array([1, np.nan], np.float32)})
    c["check_numerics_inf"] = run_error(
        lambda: tf1.check_numerics(ph(tf.float32, [None], "x"), "bad x"), {"x:0": np.array([1, np.inf], np.float32)})
    c["check_numerics_both"] = run_error(
        lambda: tf1.check_numerics(ph(tf.float64, [None], "x"), "both"),
        {"x:0": np.array([np.inf, np.nan], np.float64)})
    c["check_numerics_int"] = run_error(lambda: tf1.check_numerics(ph(tf.int32, [None], "x"), "int"))
    c["verify_tensor_all_finite_nan"] = run_error(
        lambda: tf1.verify_tensor_all_finite(ph(tf.float32, [None], "x"), "msg"),
        {"x:0": np.array([np.nan], np.float32)})
    c["print_summarize_invalid"] = run_error(lambda: tf1.Print(tf1.constant(1), [tf1.constant(1)], summarize=-2))
    c["print_first_n_float"] = run_error(lambda: tf1.Print(tf1.constant(1), [tf1.constant(1)], first_n=1.5))
    c["assert_summarize_invalid"] = run_error(
        lambda: tf1.Assert(ph(tf.bool, [], "cond"), ["v"], summarize=-2), {"cond:0": False})
    c["assert_shapes_static"] = run_error(
        lambda: tf1.debugging.assert_shapes([(ph(tf.float32, [2, 3], "x"), ("N", "Q")),
                                             (ph(tf.float32, [3], "y"), ("N",))]))
    c["assert_shapes_rank_static"] = run_error(
        lambda: tf1.debugging.assert_shapes([(ph(tf.float32, [2, 3], "x"), ("N",))]))
    c["assert_shapes_runtime"] = run_error(
        lambda: tf1.debugging.assert_shapes([(ph(tf.float32, [None, 3], "x"), ("N", "Q")),
                                   (ph(tf.float32, [None], "y"), ("N",))]),
        {"x:0": np.zeros((2, 3), np.float32), "y:0": np.zeros((3,), np.float32)})
    return c


def main() -> None:
    fixture = {
        "versions": {"tensorflow": tf.__version__, "numpy": np.__version__, "python": sys.version.split()[0]},
        "tensors": {k: {"values": np.asarray(v).tolist(), "dtype": d} for k, (v, d) in TENSORS.items()},
        "print": print_cases(),
        "print_several": print_several(),
        "assert": assert_cases(),
    }
    OUT.write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
