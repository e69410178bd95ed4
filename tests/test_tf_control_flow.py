"""tf.cond, tf.case and tf.switch_case with TF 1.15's semantics: only the taken branch runs."""

import collections

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError, RustgradError


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_cond_gives_the_value_of_the_branch_the_predicate_picks():
    x = tf.placeholder(tf.float32, [3])
    y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: tf.exp(x))
    assert y.name == "cond/Merge:0"
    with tf.Session() as sess:
        a = np.array([1.0, 2.0, -0.5], np.float32)
        np.testing.assert_allclose(sess.run(y, {x: a}), a * 2)
        np.testing.assert_allclose(sess.run(y, {x: -a}), np.exp(-a), rtol=1e-6)


def test_only_the_taken_branch_runs_an_assign_made_inside_it():
    v = tf.Variable(0.0)
    p = tf.placeholder(tf.bool, [])

    def bump():
        with tf.control_dependencies([v.assign_add(1.0)]):
            return tf.constant(1.0)

    out = tf.cond(p, bump, lambda: tf.constant(0.0))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(out, {p: False}) == 0.0
        assert sess.run(v) == 0.0, "the branch that was not taken ran its assign"
        assert sess.run(out, {p: True}) == 1.0
        assert sess.run(v) == 1.0


def test_an_op_created_outside_the_branch_functions_runs_regardless():
    v = tf.Variable(0.0)
    p = tf.placeholder(tf.bool, [])
    outside = v.assign_add(10.0)  # made outside: runs whenever the cond runs (TF1's surprise)
    out = tf.cond(p, lambda: tf.constant(1.0), lambda: outside)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(out, {p: True}) == 1.0
        assert sess.run(v) == 10.0, "an op made outside the branch functions did not run"


def test_an_assign_in_a_branch_that_nothing_returned_depends_on_does_not_run():
    v = tf.Variable(0.0)

    def forgets_its_assign():
        v.assign(5.0)
        return tf.constant(1.0)

    out = tf.cond(tf.constant(True), forgets_its_assign, lambda: tf.constant(0.0))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(out)
        assert sess.run(v) == 0.0


def test_a_branch_may_return_an_outer_tensor_and_python_numbers():
    x = tf.placeholder(tf.float32, [])
    y = tf.cond(x > 1.0, lambda: x, lambda: 7.0)
    with tf.Session() as sess:
        assert sess.run(y, {x: 3.0}) == 3.0
        assert sess.run(y, {x: 0.0}) == 7.0


def test_cond_keeps_nested_structures_and_unpacks_singletons_unless_strict():
    Pair = collections.namedtuple("Pair", "a b")
    x = tf.constant(2.0)
    out = tf.cond(x > 1.0, lambda: {"p": Pair(x, x * 3.0), "q": [x + 1.0]},
                  lambda: {"p": Pair(x, x), "q": [x]})
    assert isinstance(out["p"], Pair) and isinstance(out["q"], list)
    single = tf.cond(x > 1.0, lambda: [x], lambda: [x * 2.0])
    strict = tf.cond(x > 1.0, lambda: [x], lambda: [x * 2.0], strict=True)
    assert isinstance(single, tf.Tensor) and isinstance(strict, list)
    with tf.Session() as sess:
        got = sess.run(out)
        assert got["p"] == Pair(2.0, 6.0) and got["q"] == [3.0]


def test_cond_shape_is_the_most_specific_shape_of_both_branches():
    x = tf.placeholder(tf.float32, [2, 3])
    y = tf.cond(tf.constant(True), lambda: x, lambda: tf.zeros([4, 3]))
    assert y.shape.as_list() == [None, 3]


def test_cond_takes_tf1s_deprecated_fn1_and_fn2():
    x = tf.constant(1.0)
    with tf.Session() as sess:
        assert sess.run(tf.cond(x > 0.0, fn1=lambda: x + 1.0, fn2=lambda: x)) == 2.0


def test_cond_argument_errors_have_tf1s_types_and_texts():
    x = tf.constant(1.0)
    with pytest.raises(ArgumentTypeError, match="^true_fn must be callable.$"):
        tf.cond(x > 0.0, 3, lambda: x)
    with pytest.raises(TypeError, match=r"^cond\(\): true_fn and fn1 may not be set simultaneously.$"):
        tf.cond(x > 0.0, lambda: x, lambda: x, fn1=lambda: x)
    with pytest.raises(TypeError, match=r"^cond\(\): false_fn argument required$"):
        tf.cond(x > 0.0, lambda: x)
    with pytest.raises(TypeError, match="^pred must not be a Python bool$"):
        tf.cond(True, lambda: x, lambda: x)
    with pytest.raises(ValueError, match="^true_fn must have a return value.$"):
        tf.cond(x > 0.0, lambda: None, lambda: x)


def test_branches_of_different_dtypes_or_structures_are_refused():
    x = tf.constant(1.0)
    with pytest.raises(ValueError, match="^Outputs of true_fn and false_fn must have the same type: float32, int32$"):
        tf.cond(x > 0.0, lambda: x, lambda: tf.constant(0))
    with pytest.raises(ValueError, match="^Incompatible return values of true_fn and false_fn: The two structures"):
        tf.cond(x > 0.0, lambda: (x, x), lambda: x)


def test_a_failed_cond_adds_nothing_to_the_graph():
    x = tf.constant(1.0)
    pred = x > 0.0
    before = len(tf.get_default_graph().get_operations())
    with pytest.raises(ValueError):
        tf.cond(pred, lambda: x * 2.0, lambda: tf.constant(0))
    assert len(tf.get_default_graph().get_operations()) == before


def test_a_tensor_made_in_a_branch_cannot_be_used_or_fetched_outside():
    x = tf.constant(1.0)
    inside = []

    def keep():
        inside.append(x * 2.0)
        return inside[0]

    tf.cond(x > 0.0, keep, lambda: x)
    with pytest.raises(InvalidArgumentError, match="^Cannot use 'cond/Mul' as input to 'Add' because 'cond/Mul' is in "
                                                   "a cond branch.$"):
        inside[0] + 1.0
    with tf.Session() as sess, pytest.raises(InvalidArgumentError, match="cannot be fetched"):
        sess.run(inside[0])


def test_nested_conds_run_only_the_branches_taken():
    v = tf.Variable(0)
    a, b = tf.placeholder(tf.bool, []), tf.placeholder(tf.bool, [])

    def count(k):
        def fn():
            with tf.control_dependencies([v.assign_add(k)]):
                return tf.constant(k)
        return fn

    out = tf.cond(a, lambda: tf.cond(b, count(1), count(10)), count(100))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for pa, pb, want in [(True, True, 1), (True, False, 10), (False, True, 100)]:
            assert sess.run(out, {a: pa, b: pb}) == want
        assert sess.run(v) == 111


def test_a_non_scalar_predicate_is_refused():
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        tf.cond(tf.constant([True, False]), lambda: 1.0, lambda: 2.0)


def test_the_gradient_flows_only_into_the_branch_that_ran():
    x = tf.placeholder(tf.float64, [3])
    w = tf.placeholder(tf.float64, [3])
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: tf.reduce_sum(tf.exp(x) * w), lambda: tf.reduce_sum(x * x))
    gx, gw = tf.gradients(y, [x, w])
    a, b = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, 3.0])
    with tf.Session() as sess:
        got_x, got_w = sess.run([gx, gw], {x: a, w: b, p: True})
        np.testing.assert_allclose(got_x, np.exp(a) * b)
        np.testing.assert_allclose(got_w, np.exp(a))
        got_x, got_w = sess.run([gx, gw], {x: a, w: b, p: False})
        np.testing.assert_allclose(got_x, 2 * a)
        np.testing.assert_array_equal(got_w, np.zeros(3)), "w is unused by the branch that ran"


def test_gradients_through_cond_match_finite_differences():
    x = tf.placeholder(tf.float64, [])
    y = tf.cond(x > 1.0, lambda: tf.sin(x) * x, lambda: x * x * x) * x
    (g,) = tf.gradients(y, [x])

    def f(v):
        return (np.sin(v) * v if v > 1.0 else v ** 3) * v

    with tf.Session() as sess:
        for v in (0.3, 2.5):
            numeric = (f(v + 1e-6) - f(v - 1e-6)) / 2e-6
            np.testing.assert_allclose(sess.run(g, {x: v}), numeric, rtol=1e-6)


def test_gradients_through_case_and_switch_case():
    x = tf.placeholder(tf.float64, [])
    i = tf.placeholder(tf.int32, [])
    y = tf.switch_case(i, [lambda: x * 2.0, lambda: x * x, lambda: tf.exp(x)])
    (g,) = tf.gradients(y, [x])
    with tf.Session() as sess:
        assert [sess.run(g, {x: 3.0, i: k}) for k in (0, 1)] == [2.0, 6.0]
        np.testing.assert_allclose(sess.run(g, {x: 3.0, i: 9}), np.exp(3.0))


def test_case_runs_the_fn_of_the_first_true_predicate_or_the_default():
    x = tf.placeholder(tf.int32, [])
    out = tf.case([(x < 0, lambda: tf.constant(-1)), (x < 10, lambda: tf.constant(1))],
                  default=lambda: tf.constant(100))
    with tf.Session() as sess:
        assert [sess.run(out, {x: v}) for v in (-5, 5, 50)] == [-1, 1, 100]


def test_case_without_default_fails_a_run_where_no_predicate_is_true():
    x = tf.placeholder(tf.int32, [])
    out = tf.case([(x < 0, lambda: tf.constant(-1)), (x < 10, lambda: tf.constant(1))])
    with tf.Session() as sess:
        assert sess.run(out, {x: 5}) == 1
        assert sess.run(out, {x: -5}) == -1
        with pytest.raises(InvalidArgumentError, match="Input error: None of conditions evaluated as True:"):
            sess.run(out, {x: 50})


def test_case_exclusive_fails_a_run_where_two_predicates_are_true():
    x = tf.placeholder(tf.int32, [])
    out = tf.case([(x < 0, lambda: tf.constant(-1)), (x < 10, lambda: tf.constant(1))],
                  default=lambda: tf.constant(0), exclusive=True)
    with tf.Session() as sess:
        assert sess.run(out, {x: 5}) == 1
        with pytest.raises(InvalidArgumentError, match=r"Input error: exclusive=True: more than 1 conditions \(.*\) "
                                                       "evaluated as True:"):
            sess.run(out, {x: -5})


def test_case_argument_errors_have_tf1s_texts():
    with pytest.raises(TypeError, match="^pred_fn_pairs must be a list, tuple, or dict$"):
        tf.case(3)
    with pytest.raises(TypeError, match="^Each entry in pred_fn_pairs must be a 2-tuple$"):
        tf.case([(tf.constant(True),)])
    with pytest.raises(TypeError, match="^pred must be Tensor of type bool: one:0$"):
        tf.case([(tf.constant(1, name="one"), lambda: 1)])


def test_switch_case_picks_by_index_and_falls_back_to_the_default():
    i = tf.placeholder(tf.int32, [])
    fns = [lambda: tf.constant(10.0), lambda: tf.constant(20.0)]
    out = tf.switch_case(i, fns, default=lambda: tf.constant(-1.0))
    last = tf.switch_case(i, {0: fns[0], 1: fns[1]})
    with tf.Session() as sess:
        assert [sess.run(out, {i: k}) for k in (0, 1, 2, -3)] == [10.0, 20.0, -1.0, -1.0]
        assert [sess.run(last, {i: k}) for k in (0, 1, 7)] == [10.0, 20.0, 20.0]


def test_control_flow_errors_are_rustgrad_errors():
    with pytest.raises(RustgradError):
        tf.switch_case(tf.constant(0.5), [lambda: 1.0])
