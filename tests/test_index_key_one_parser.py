"""Index keys have one parser: eager reads, eager assignment and static graphs give the same
result, or the same exception type and message, for the same key."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import rustgrad as rg
import rustgrad.static as tf
from rustgrad import _rustgrad
from rustgrad.errors import IndexOutOfRangeError

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
STATIC_DIR = Path(tf.__file__).resolve().parent


class Index:
    """An object that is an integer only through ``__index__``."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


class Int(int):
    """An int subclass: an index as any int is, though the parser's shortcut takes only exact ints."""


KEYS = [
    0,
    -1,
    Int(1),
    Int(-7),
    (Int(1), slice(Int(1), None)),
    5,
    -7,
    2**70,
    -(2**70),
    np.int64(1),
    Index(1),
    Index(2**70),
    slice(None),
    slice(None, None, -1),
    slice(2**70, None),
    slice(-(2**70), 2**70, 2**70),
    slice(None, None, -(2**70)),
    slice(None, None, 0),
    slice(1.5, None),
    slice("a", None),
    slice(Index(1), Index(-1)),
    1.5,
    np.float32(1.0),
    "a",
    [0],
    object(),
    (0, 1, 2, 3),
    (..., ...),
    (..., 0, ...),
    ...,
    (..., 0),
    None,
    (None, 0, None),
    True,
    False,
    (0, True),
    (True, ..., False),
    np.True_,
    np.array(True),
    np.array(False),
    (slice(1, None, -1), None, ..., Index(1)),
    A > 5,
    A[0] > 5,
    np.array([True, False]),
    np.array([True, False, True]),
    (A > 5, 0),
    (0, A[0] > 5),
    np.array([0, 1]),
    [0.5],
    np.array([0.0, 1.0]),
    ([1, 0], ..., [3]),
    (slice(None), [[0], [2]], [1, 3]),
]


def outcome(action):
    try:
        result = action()
    except Exception as e:  # noqa: BLE001 - the point is to compare whatever is raised
        return ("raised", type(e), str(e))
    return ("value", result.shape, result.tolist())


def eager_read(key):
    return rg.tensor(A)[key].numpy()


def static_read(key):
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, A.shape)
        y = p[key]
        with tf.Session() as sess:
            return sess.run(y, {p: A})


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_eager_and_static_reads_agree_on_every_key(key):
    eager = outcome(lambda: eager_read(key))
    assert outcome(lambda: static_read(key)) == eager
    if eager[0] == "value":
        expected = A[key]
        assert eager[1:] == (expected.shape, expected.tolist())


# Keys that are bad whatever the shape: the parser itself rejects them.
BAD_KEYS = [
    2**70,
    -(2**70),
    Index(2**70),
    slice(1.5, None),
    slice("a", None),
    1.5,
    np.float32(1.0),
    "a",
    [0.5],
    object(),
    (..., ...),
    (..., 0, ...),
    np.array([0.0, 1.0]),
]


@pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
def test_the_shared_parser_rejects_a_bad_key_as_eager_reads_do(key):
    assert outcome(lambda: _rustgrad._parse_index_key(key)) == outcome(lambda: eager_read(key))


@pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
def test_eager_assignment_rejects_a_bad_key_as_a_read_does(key):
    def write():
        t = rg.tensor(A)
        t[key] = 0.0
        return t.numpy()

    assert outcome(write) == outcome(lambda: eager_read(key))


@pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
def test_static_assignment_rejects_a_bad_key_as_eager_does(key):
    def write():
        with tf.Graph().as_default():
            p = tf.placeholder(tf.float32, A.shape)
            p[key] = 0.0
            return p

    assert outcome(write) == outcome(lambda: eager_read(key))


def test_static_assignment_through_a_basic_key_gives_the_eager_values():
    eager = rg.tensor(A)
    eager[0, 1:] = -1.0
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, A.shape)
        q = p + 0.0
        q[0, 1:] = -1.0
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(q, {p: A}), eager.numpy())


@pytest.mark.parametrize("as_graph", [True, False], ids=["graph mask", "numpy mask"])
def test_mask_assignment_gives_the_same_values_in_both_modes(as_graph):
    mask = A > 5
    expected = np.where(mask, np.float32(-1.0), A)
    eager = rg.tensor(A)
    eager[mask] = -1.0
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, A.shape)
        q = p + 0.0
        q[tf.constant(mask) if as_graph else mask] = -1.0
        with tf.Session() as sess:
            static = sess.run(q, {p: A})
    np.testing.assert_array_equal(eager.numpy(), expected)
    np.testing.assert_array_equal(static, expected)


def test_two_ellipses_raise_in_a_static_graph_of_unknown_rank():
    with pytest.raises(IndexError, match=r"an index can only have a single ellipsis \('\.\.\.'\)"):
        tf.placeholder(tf.float32, None)[..., ...]


def test_a_numpy_mask_inside_a_tuple_picks_as_numpy_does_in_both_modes():
    assert rg.tensor(A)[A[:, :, 0] > 5, 0].tolist() == A[A[:, :, 0] > 5, 0].tolist()
    assert static_read((0, A[0] > 5)).tolist() == A[0, A[0] > 5].tolist()


def test_a_graph_tensor_mask_inside_a_tuple_picks_as_numpy_does():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [2, 3])
        y = p[p > 0, None]
        with tf.Session() as sess:
            got = sess.run(y, {p: A[0, :2, :3] - 2})
    np.testing.assert_array_equal(got, (A[0, :2, :3] - 2)[A[0, :2, :3] - 2 > 0, None])


def test_a_float_graph_tensor_key_raises_as_a_float_eager_tensor_key_does():
    with pytest.raises(IndexOutOfRangeError, match=r"tensors used as indices must be long, int, byte or bool") as eager:
        rg.tensor(A)[rg.tensor(A)]
    p = tf.placeholder(tf.float32, [2, 3, 4])
    with pytest.raises(IndexOutOfRangeError) as static:
        p[p]
    assert str(static.value) == str(eager.value)


def test_an_eager_bool_mask_indexes_a_graph_tensor():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, A.shape)
        y = p[rg.tensor(A > 5)]
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y, {p: A}), A[A > 5])


def test_a_graph_tensor_key_on_an_eager_tensor_says_to_run_it_first():
    mask = tf.placeholder(tf.bool, [2, 3, 4])
    with pytest.raises(IndexOutOfRangeError, match=r"static graph tensor cannot index an eager tensor"):
        rg.tensor(A)[mask]


def test_static_graph_indexing_calls_the_shared_parser(monkeypatch):
    seen = []
    shared = _rustgrad._parse_index_key

    def spy(key):
        seen.append(key)
        return shared(key)

    monkeypatch.setattr(_rustgrad, "_parse_index_key", spy)
    p = tf.placeholder(tf.float32, [2, 3])
    p[0, ::-1]
    p[p > 0] = 1.0
    assert seen[0] == (0, slice(None, None, -1))
    assert len(seen) == 2


def test_the_static_front_has_no_key_parser_of_its_own():
    # Any key parser must recognise slices and `...` by name: `isinstance(part, slice)`,
    # `type(part) is slice`, `part is Ellipsis`, or read ints through `operator.index` /
    # `__index__`. So no module of rustgrad.static (which also serves compat.v1) may name
    # `slice`, `Ellipsis`, `operator.index` or `__index__` in its code. (The `...` literal
    # is not checked: it is common in type annotations.) Keys go to
    # `_rustgrad._parse_index_key`, the parser eager tensors use; the spy test above
    # checks that static indexing really calls it.
    forbidden = {"slice", "Ellipsis", "__index__"}
    offences = []
    for path in sorted(STATIC_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
            if name in forbidden or (
                isinstance(node, ast.Attribute) and node.attr == "index" and getattr(node.value, "id", "") == "operator"
            ):
                offences.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not offences, "rustgrad.static parses index keys itself:\n" + "\n".join(offences)
