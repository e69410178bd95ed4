"""Session.run semantics of the static (TF1-shaped) API: gradients, fetch structures,
pruning, random draws, feeds, and the arrays a run returns.

Variables are tested in test_static_variables.py, graphs, tensor metadata and sessions as
objects in test_static_graphs.py; both take this module's fresh default graph per test."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.static.errors import InvalidArgumentError


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


# ---------------------------------------------------------------- gradients


def test_gradients_none_for_unconnected_xs():
    x = tf.placeholder(tf.float32, shape=(3,))
    z = tf.placeholder(tf.float32, shape=(3,))
    y = tf.reduce_sum(x * 2.0)
    later = tf.placeholder(tf.float32, shape=(3,))  # created after y
    w = tf.Variable(np.ones(3, np.float32))
    grads = tf.gradients(y, [x, z, later, w])
    assert grads[1:] == [None, None, None]
    assert isinstance(grads[0], tf.Tensor)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(grads[0], {x: np.zeros(3)}), [2.0, 2.0, 2.0])


def test_gradients_of_a_downstream_only_dependency_is_none():
    x = tf.placeholder(tf.float32, shape=(2,))
    y = x * 3.0
    z = y + 1.0  # depends on x, but x does not depend on z
    assert tf.gradients(x, [z]) == [None]
    assert tf.gradients(y, [z]) == [None]


def test_gradients_single_x_not_in_list_returns_list():
    x = tf.placeholder(tf.float64, shape=(2,))
    grads = tf.gradients(tf.reduce_sum(tf.square(x)), x)
    assert isinstance(grads, list) and len(grads) == 1
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(grads[0], {x: [1.0, -3.0]}), [2.0, -6.0])


def test_gradients_of_several_ys_are_summed():
    x = tf.placeholder(tf.float64, shape=(3,))
    y1 = tf.reduce_sum(x * 2.0)
    y2 = tf.reduce_sum(tf.square(x))
    (g,) = tf.gradients([y1, y2], [x])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {x: [1.0, 2.0, 3.0]}), [4.0, 6.0, 8.0])


def test_gradients_grad_ys():
    x = tf.placeholder(tf.float64, shape=(2, 3))
    y = tf.square(x)
    upstream = np.arange(6.0).reshape(2, 3) - 2.0
    (g,) = tf.gradients(y, [x], grad_ys=upstream)
    (g_list,) = tf.gradients([y], [x], grad_ys=[tf.constant(upstream, dtype=tf.float64)])
    xv = np.linspace(-1, 1, 6).reshape(2, 3)
    with tf.Session() as sess:
        gv, glv = sess.run([g, g_list], {x: xv})
    np.testing.assert_allclose(gv, 2 * xv * upstream)
    np.testing.assert_allclose(glv, 2 * xv * upstream)


def test_gradients_grad_ys_placeholder():
    x = tf.placeholder(tf.float32, shape=(3,))
    gy = tf.placeholder(tf.float32, shape=(3,))
    (g,) = tf.gradients(tf.exp(x), [x], grad_ys=[gy])
    with tf.Session() as sess:
        out = sess.run(g, {x: [0.0, 1.0, 2.0], gy: [1.0, 10.0, 100.0]})
    np.testing.assert_allclose(out, np.exp([0.0, 1.0, 2.0]) * [1.0, 10.0, 100.0], rtol=1e-6)


def test_gradients_wrt_variable_and_through_assign_is_none():
    v = tf.Variable(np.array([1.0, 2.0], np.float32))
    a = v.assign(v * 2.0)
    loss = tf.reduce_sum(v * v)
    (gv,) = tf.gradients(loss, [v])
    assert tf.gradients(tf.reduce_sum(a), [v]) == [None]  # assigns pass no gradient (as in TF)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(gv), [2.0, 4.0])


# ---------------------------------------------------------------- fetch structures


@pytest.fixture
def small_graph():
    x = tf.placeholder(tf.float32, shape=(2,), name="x")
    a = tf.add(x, 1.0, name="a")
    b = tf.multiply(x, 3.0, name="b")
    v = tf.Variable(np.array([5.0, 6.0], np.float32), name="v")
    init = tf.global_variables_initializer()
    return x, a, b, v, init


def test_fetch_list_tuple_dict_and_nested(small_graph):
    x, a, b, v, init = small_graph
    feed = {x: [1.0, 2.0]}
    with tf.Session() as sess:
        sess.run(init)
        out_list = sess.run([a, b], feed)
        out_tuple = sess.run((a, b), feed)
        out_dict = sess.run({"a": a, "b": b}, feed)
        nested = sess.run({"pair": (a, [b, {"v": v}]), "list": [[a]], "empty": []}, feed)
    assert isinstance(out_list, list) and len(out_list) == 2
    assert isinstance(out_tuple, tuple) and len(out_tuple) == 2
    assert isinstance(out_dict, dict) and set(out_dict) == {"a", "b"}
    for got in (out_list, out_tuple, [out_dict["a"], out_dict["b"]]):
        np.testing.assert_array_equal(got[0], [2.0, 3.0])
        np.testing.assert_array_equal(got[1], [3.0, 6.0])
    assert set(nested) == {"pair", "list", "empty"}
    assert isinstance(nested["pair"], tuple) and isinstance(nested["pair"][1], list)
    np.testing.assert_array_equal(nested["pair"][0], [2.0, 3.0])
    np.testing.assert_array_equal(nested["pair"][1][0], [3.0, 6.0])
    np.testing.assert_array_equal(nested["pair"][1][1]["v"], [5.0, 6.0])
    assert isinstance(nested["list"], list) and isinstance(nested["list"][0], list)
    np.testing.assert_array_equal(nested["list"][0][0], [2.0, 3.0])
    assert nested["empty"] == []


def test_fetch_namedtuple_keeps_its_type(small_graph):
    x, a, b, _, _ = small_graph
    Pair = namedtuple("Pair", ["first", "second"])
    with tf.Session() as sess:
        out = sess.run(Pair(a, b), {x: [0.0, 1.0]})
    assert isinstance(out, Pair)
    np.testing.assert_array_equal(out.first, [1.0, 2.0])
    np.testing.assert_array_equal(out.second, [0.0, 3.0])


def test_every_fetch_structure_gives_the_same_values_when_run_again(small_graph):
    """The second run of a fetch structure takes the resolved fetches the first one kept."""
    x, a, b, v, init = small_graph
    Pair = namedtuple("Pair", ["first", "second"])
    structures = [a, "b:0", a.op, [a, b], (a, "b:0"), [a, init], Pair(a, b), {"a": a}, [[a], b], []]
    with tf.Session() as sess:
        sess.run(init)
        first = [sess.run(s, {x: [1.0, 2.0]}) for s in structures]
        again = [sess.run(s, {x: [1.0, 2.0]}) for s in structures]
    assert repr(first) == repr(again)
    assert isinstance(again[1], np.ndarray) and again[2] is None and again[5][1] is None
    assert type(again[4]) is tuple and type(again[6]) is Pair and type(again[8][0]) is list
    np.testing.assert_array_equal(again[3][1], [3.0, 6.0])


def test_a_fetch_list_changed_between_runs_fetches_what_it_holds_now(small_graph):
    x, a, b, _, _ = small_graph
    fetches = [a]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(fetches, {x: [1.0, 2.0]})[0], [2.0, 3.0])
        fetches[0] = b
        np.testing.assert_array_equal(sess.run(fetches, {x: [1.0, 2.0]})[0], [3.0, 6.0])
        fetches.append(a)
        assert len(sess.run(fetches, {x: [1.0, 2.0]})) == 2


def test_a_bad_feed_after_good_runs_of_the_same_keys_raises_as_the_first_time(small_graph):
    x, a, _, _, _ = small_graph
    with tf.Session() as sess:
        for _ in range(2):
            np.testing.assert_array_equal(sess.run(a, {x: [1.0, 2.0]}), [2.0, 3.0])
        expected = "Cannot feed value of type str for Tensor 'x:0' of dtype float32"
        with pytest.raises(InvalidArgumentError, match=expected):
            sess.run(a, {x: "not a number"})
        np.testing.assert_array_equal(sess.run(a, {"x:0": np.array([0.0, 0.0])}), [1.0, 1.0])
        assert sess.run(a, {x: [0.0, 0.0]}).dtype == np.float32  # the kept dtype converts the value


def test_the_resolved_fetches_a_session_keeps_are_bounded(small_graph):
    from rustgrad.static._session import RESOLVED_CAPACITY

    x, a, _, _, _ = small_graph
    with tf.Session() as sess:
        for i in range(3 * RESOLVED_CAPACITY):
            sess.run(tf.add(a, float(i)), {x: [1.0, 2.0]})
        assert 0 < len(sess._known_fetches) <= RESOLVED_CAPACITY


def test_fetch_same_tensor_twice(small_graph):
    x, a, _, _, _ = small_graph
    with tf.Session() as sess:
        r1, r2 = sess.run([a, a], {x: [1.0, 1.0]})
    np.testing.assert_array_equal(r1, [2.0, 2.0])
    np.testing.assert_array_equal(r2, [2.0, 2.0])
    r1[0] = 100.0
    assert r2[0] == 2.0, "two fetches of one tensor must not share memory"


def test_fetch_variables_and_operations(small_graph):
    x, a, _, v, init = small_graph
    with tf.Session() as sess:
        assert sess.run(init) is None
        assert sess.run(v.initializer) is None
        out = sess.run([v, init, a, tf.group(a)], {x: [0.0, 0.0]})
    np.testing.assert_array_equal(out[0], [5.0, 6.0])
    assert out[0].dtype == np.float32
    assert out[1] is None
    np.testing.assert_array_equal(out[2], [1.0, 1.0])
    assert out[3] is None


def test_fetch_by_name(small_graph):
    x, a, b, v, init = small_graph
    assert a.name == "a:0" and b.name == "b:0" and init.name == "init"
    with tf.Session() as sess:
        assert sess.run("init") is None  # an operation name: runs it, no value
        out = sess.run(["a:0", "b:0", "v:0"], {x: [1.0, 2.0]})
    np.testing.assert_array_equal(out[0], [2.0, 3.0])
    np.testing.assert_array_equal(out[1], [3.0, 6.0])
    np.testing.assert_array_equal(out[2], [5.0, 6.0])


def test_fetch_operation_by_name_gives_none_like_the_operation(small_graph):
    """A bare name ("a", no ":0") is the Operation, and fetching an Operation gives None."""
    x, a, _, _, init = small_graph
    with tf.Session() as sess:
        sess.run(init)
        assert sess.run(a.op, {x: [1.0, 2.0]}) is None
        by_name = sess.run(["a", "a:0"], {x: [1.0, 2.0]})
    np.testing.assert_array_equal(by_name[1], [2.0, 3.0])
    assert by_name[0] is None


def test_get_tensor_and_operation_by_name(small_graph):
    x, a, _, _, _ = small_graph
    g = tf.get_default_graph()
    t = g.get_tensor_by_name("a:0")
    assert t.name == "a:0" and t.op == a.op
    assert g.get_operation_by_name("a") == a.op
    with pytest.raises(InvalidArgumentError):
        g.get_tensor_by_name("nope:0")
    with pytest.raises(InvalidArgumentError):
        g.get_operation_by_name("nope")


def test_zero_d_fetch_is_numpy_scalar():
    x = tf.placeholder(tf.float32, shape=(None,))
    s = tf.reduce_sum(x)
    c = tf.constant(2.5, dtype=tf.float64)
    with tf.Session() as sess:
        sv, cv = sess.run([s, c], {x: [1.0, 2.0, 3.5]})
        single = sess.run(s, {x: [1.0]})
    assert isinstance(sv, np.float32) and sv == 6.5
    assert isinstance(cv, np.float64) and cv == 2.5
    assert isinstance(single, np.float32) and single == 1.0
    assert not isinstance(sv, np.ndarray)


def test_one_element_1d_fetch_stays_an_array():
    x = tf.placeholder(tf.float32, shape=(1,))
    with tf.Session() as sess:
        out = sess.run(x * 2.0, {x: [3.0]})
    assert isinstance(out, np.ndarray) and out.shape == (1,)


# ---------------------------------------------------------------- pruning


def test_run_that_needs_no_placeholder_needs_no_feed():
    x = tf.placeholder(tf.float32, shape=(None, 3))
    _ = tf.matmul(x, tf.ones((3, 2)))
    c = tf.constant([1.0, 2.0]) * 2.0
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(c), [2.0, 4.0])


def test_fetch_needing_only_one_placeholder():
    x = tf.placeholder(tf.float32, shape=(2,))
    y = tf.placeholder(tf.float32, shape=(2,))
    both = x * y
    x1 = x + 1.0
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(x1, {x: [1.0, 2.0]}), [2.0, 3.0])
        np.testing.assert_array_equal(sess.run(both, {x: [1.0, 2.0], y: [3.0, 4.0]}), [3.0, 8.0])
        # Feeding more than needed is fine.
        np.testing.assert_array_equal(sess.run(x1, {x: [0.0, 0.0], y: [9.0, 9.0]}), [1.0, 1.0])


def test_uninitialised_variable_not_needed_by_fetch_is_fine():
    v = tf.Variable(np.ones(2, np.float32))
    c = tf.constant(3.0) + 1.0
    with tf.Session() as sess:
        assert sess.run(c) == 4.0
        _ = v  # never initialised, never read


def test_feeding_an_intermediate_tensor_prunes_its_inputs():
    x = tf.placeholder(tf.float32, shape=(2,))
    h = x * 2.0
    out = h + 1.0
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(out, {h: [10.0, 20.0]}), [11.0, 21.0])


def test_unfetched_assign_does_not_run():
    v = tf.Variable(np.float32(1.0))
    _ = v.assign(v + 100.0)
    read = v * 1.0
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(read) == 1.0
        assert sess.run(read) == 1.0


# ---------------------------------------------------------------- random


def test_random_normal_seeded_reproducible_across_sessions():
    r = tf.random_normal((5,), seed=42)
    with tf.Session() as s1:
        a1, a2 = s1.run(r), s1.run(r)
    with tf.Session() as s2:
        b1, b2 = s2.run(r), s2.run(r)
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    assert not np.array_equal(a1, a2), "each run draws fresh samples"
    assert a1.dtype == np.float32 and a1.shape == (5,)


def test_random_normal_statistics_and_params():
    r = tf.random_normal((20000,), mean=3.0, stddev=0.5, dtype=tf.float64, seed=1)
    u = tf.random_uniform((20000,), minval=-1.0, maxval=2.0, seed=2)
    with tf.Session() as sess:
        rv, uv = sess.run([r, u])
    assert rv.dtype == np.float64
    assert abs(rv.mean() - 3.0) < 0.02 and abs(rv.std() - 0.5) < 0.02
    assert uv.min() >= -1.0 and uv.max() <= 2.0 and abs(uv.mean() - 0.5) < 0.05


def test_random_normal_one_value_per_run():
    """Two consumers of one random node in one run see the same sample."""
    r = tf.random_normal((4,), seed=3)
    a = r * 1.0
    b = r * 2.0
    with tf.Session() as sess:
        av, bv = sess.run([a, b])
    np.testing.assert_array_equal(bv, av * 2.0)


# ---------------------------------------------------------------- feeds


def test_feed_float64_numpy_to_float32_placeholder():
    x = tf.placeholder(tf.float32, shape=(None, 2))
    value = np.array([[0.1, 1e-8], [1.0 / 3.0, 2.0]], dtype=np.float64)
    with tf.Session() as sess:
        out = sess.run(x * 1.0, {x: value})
        ident = sess.run(x, {x: value})
    assert out.dtype == np.float32 and ident.dtype == np.float32
    np.testing.assert_array_equal(out, value.astype(np.float32))
    np.testing.assert_array_equal(ident, value.astype(np.float32))


def test_feed_float32_to_float64_placeholder_and_ints():
    x = tf.placeholder(tf.float64, shape=(3,))
    with tf.Session() as sess:
        out = sess.run(x + 0.0, {x: np.array([1, 2, 3], dtype=np.int64)})
        out32 = sess.run(x, {x: np.array([0.1, 0.2, 0.3], dtype=np.float32)})
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
    assert out32.dtype == np.float64
    np.testing.assert_array_equal(out32, np.array([0.1, 0.2, 0.3], dtype=np.float32).astype(np.float64))


def test_feed_lists_and_scalars():
    x = tf.placeholder(tf.float32, shape=(None,))
    s = tf.placeholder(tf.float32, shape=())
    m = tf.placeholder(tf.float64, shape=(2, 2))
    with tf.Session() as sess:
        out = sess.run(x * s, {x: [1, 2, 3], s: 2.5})
        np.testing.assert_array_equal(out, [2.5, 5.0, 7.5])
        assert sess.run(s, {s: 4}) == 4.0
        assert isinstance(sess.run(s, {s: 4}), np.float32)
        np.testing.assert_array_equal(sess.run(m, {m: [[1.0, 2.0], [3.0, 4.0]]}), [[1, 2], [3, 4]])


def test_feed_non_contiguous_array():
    x = tf.placeholder(tf.float64, shape=(3, 2))
    base = np.arange(6.0).reshape(2, 3)
    with tf.Session() as sess:
        out = sess.run(x * 1.0, {x: base.T})
    np.testing.assert_array_equal(out, base.T)


def test_feed_by_name_string():
    x = tf.placeholder(tf.float32, shape=(2,), name="inp")
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(x + 1.0, {"inp:0": [1.0, 2.0]}), [2.0, 3.0])


# ---------------------------------------------------------------- returned arrays are owned


def test_mutating_a_returned_array_does_not_affect_later_runs():
    v = tf.Variable(np.array([1.0, 2.0], np.float32))
    c = tf.constant([5.0, 6.0])
    x = tf.placeholder(tf.float32, shape=(2,))
    y = x * 2.0
    with tf.Session() as sess:
        sess.run(v.initializer)
        for t in (v, c):
            first = sess.run(t)
            expected = first.copy()
            first[...] = -1.0
            np.testing.assert_array_equal(sess.run(t), expected)
        out = sess.run(y, {x: [1.0, 2.0]})
        out[0] = 123.0
        np.testing.assert_array_equal(sess.run(y, {x: [1.0, 2.0]}), [2.0, 4.0])
        # The returned arrays are writeable, ordinary arrays.
        assert out.flags.writeable


def test_later_run_does_not_overwrite_earlier_result():
    x = tf.placeholder(tf.float32, shape=(3,))
    y = tf.exp(x) * 1.0
    v = tf.Variable(np.zeros(3, np.float32))
    inc = v.assign_add([1.0, 1.0, 1.0])
    with tf.Session() as sess:
        a = sess.run(y, {x: [0.0, 0.0, 0.0]})
        b = sess.run(y, {x: [1.0, 1.0, 1.0]})
        np.testing.assert_array_equal(a, [1.0, 1.0, 1.0])
        np.testing.assert_allclose(b, np.exp([1.0, 1.0, 1.0]), rtol=1e-6)
        sess.run(v.initializer)
        r1 = sess.run(v)
        i1 = sess.run(inc)
        i2 = sess.run(inc)
        np.testing.assert_array_equal(r1, [0.0, 0.0, 0.0])
        np.testing.assert_array_equal(i1, [1.0, 1.0, 1.0])
        np.testing.assert_array_equal(i2, [2.0, 2.0, 2.0])


def test_mutating_fetched_variable_value_does_not_change_the_variable():
    v = tf.Variable(np.array([1.0, 2.0], np.float32))
    a = v.assign(v * 3.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        got = sess.run(v)
        got[:] = 0.0
        new = sess.run(a)
        new[:] = 0.0
        np.testing.assert_array_equal(sess.run(v), [3.0, 6.0])


# ---------------------------------------------------------------- more feeds and gradients


def test_feeding_a_variable_overrides_its_value_for_that_run():
    v = tf.Variable(np.ones(2, np.float32))
    out = v * 2.0
    with tf.Session() as sess:
        # No initializer needed: the fed value replaces the read.
        np.testing.assert_array_equal(sess.run(out, {v: [5.0, 6.0]}), [10.0, 12.0])
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(out), [2.0, 2.0])


def test_gradients_wrt_an_intermediate_tensor_and_feeding_it():
    x = tf.placeholder(tf.float32, shape=(2,))
    h = x * 3.0
    loss = tf.reduce_sum(h * h)
    gh, gx = tf.gradients(loss, [h, x])
    with tf.Session() as sess:
        ghv, gxv = sess.run([gh, gx], {x: [1.0, 2.0]})
        np.testing.assert_allclose(ghv, [6.0, 12.0])
        np.testing.assert_allclose(gxv, [18.0, 36.0])
        # Feeding h: gradients are evaluated at the fed h.
        np.testing.assert_allclose(sess.run(gx, {h: [1.0, 1.0]}), [6.0, 6.0])


def test_concurrent_runs_on_one_session():
    import threading

    x = tf.placeholder(tf.float64, shape=(None, 4))
    w = tf.Variable(np.arange(8.0).reshape(4, 2), dtype=tf.float64)
    y = tf.reduce_sum(tf.matmul(x, w), axis=1)
    errors_seen = []
    with tf.Session() as sess:
        sess.run(w.initializer)
        wv = np.arange(8.0).reshape(4, 2)

        def worker(seed):
            rs = np.random.RandomState(seed)
            try:
                for _ in range(30):
                    xv = rs.randn(rs.randint(1, 6), 4)
                    got = sess.run(y, {x: xv})
                    np.testing.assert_allclose(got, (xv @ wv).sum(axis=1), rtol=1e-12)
            except Exception as e:  # noqa: BLE001 - reported below
                errors_seen.append(e)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors_seen, errors_seen[:1]


def test_group_runs_all_its_inputs():
    a = tf.Variable(np.float32(1.0))
    b = tf.Variable(np.float32(10.0))
    train = tf.group(a.assign_add(1.0), b.assign_sub(1.0))
    assert train.type == "NoOp"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(train) is None
        assert sess.run(train) is None
        assert sess.run([a, b]) == [3.0, 8.0]


def test_eval_with_feed_dict_and_explicit_session():
    x = tf.placeholder(tf.float32, shape=(2,))
    y = x * 4.0
    sess = tf.Session()
    try:
        np.testing.assert_array_equal(y.eval(feed_dict={x: [1.0, 2.0]}, session=sess), [4.0, 8.0])
    finally:
        sess.close()
    with tf.Session():
        np.testing.assert_array_equal(y.eval({x: [0.5, 0.25]}), [2.0, 1.0])


def test_float64_feeds_to_float32_placeholders_are_rounded_once_and_left_unchanged():
    x = tf.placeholder(tf.float32, shape=(None, 3))
    y = tf.identity(x) * 1.0
    fed = np.array([[0.1, 1 / 3, 1e-46], [2.0**24 + 1, -0.7, 3.4e38]], np.float64)
    before = fed.copy()
    with tf.Session() as sess:
        (out,) = sess.run([y], feed_dict={x: fed})
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, fed.astype(np.float32))
    np.testing.assert_array_equal(fed, before)
