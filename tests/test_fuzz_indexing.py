"""Fuzzing index keys against numpy.

Keys mix ints (negative, out of range, beyond 64 bits), bools, slices (huge,
negative and zero steps, huge bounds), None, Ellipsis (also twice) and whole-key
bool masks, on small arrays of random shapes including zero-size dims. For each,
rustgrad (eager reads and writes, and static graphs) must give numpy's values and
shape, or, where numpy raises IndexError/ValueError/TypeError, raise a
RustgradError that is the same builtin. Never InternalError, never another type.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad import errors

EXAMPLES = max(300, settings().max_examples)
BUILTINS = (IndexError, ValueError, TypeError)

HUGE = [2**62, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**70, -(2**70)]

shapes = st.lists(st.integers(0, 4), max_size=4).map(tuple)
ints = st.one_of(st.integers(-6, 6), st.sampled_from(HUGE))
bounds = st.one_of(st.none(), ints)
steps = st.one_of(st.none(), st.integers(-4, 4), st.sampled_from(HUGE))
slices = st.builds(slice, bounds, bounds, steps)
bools = st.one_of(st.booleans(), st.sampled_from([np.True_, np.False_]), st.booleans().map(np.array))
items = st.one_of(ints, slices, st.none(), st.just(Ellipsis), bools)
basic_keys = st.one_of(items, st.lists(items, max_size=6).map(tuple))


@st.composite
def masks(draw, shape):
    """A whole-key bool mask: usually over some leading dims of `shape`, sometimes of another shape."""
    lead = draw(st.integers(0, len(shape)))
    mask_shape = shape[:lead] if draw(st.integers(0, 4)) else draw(shapes.filter(bool))
    return (
        np.asarray(draw(st.lists(st.booleans(), min_size=int(np.prod(mask_shape)), max_size=int(np.prod(mask_shape)))))
        .reshape(mask_shape)
        .astype(bool)
    )


def builtin_of(error: BaseException) -> type:
    return next(b for b in BUILTINS if isinstance(error, b))


def numpy_outcome(action):
    """(result, None) or (None, the builtin class numpy raised)."""
    try:
        return action(), None
    except BUILTINS as e:
        return None, builtin_of(e)
    except OverflowError:
        # numpy says this for an int index beyond 64 bits on a 0-d array (IndexError on
        # any other); rustgrad says IndexError on all.
        return None, IndexError


def expect(action, expected, raised, what):
    if raised is None:
        got = np.asarray(action())
        assert got.shape == np.shape(expected), what
        np.testing.assert_array_equal(got, expected, err_msg=what)
        return
    with pytest.raises(errors.RustgradError) as info:
        action()
    assert isinstance(info.value, raised), f"{what}: numpy raised {raised.__name__}, rustgrad {info.value!r}"
    assert not isinstance(info.value, errors.InternalError), f"{what}: {info.value!r}"


def array_of(shape):
    return np.arange(1, int(np.prod(shape)) + 1, dtype=np.float64).reshape(shape)


def static_index(a, key):
    graph = tf.Graph()
    with graph.as_default():
        p = tf.placeholder(tf.float64, a.shape)
        out = p[key]
        with tf.Session() as sess:
            return sess.run(out, {p: a})


@settings(max_examples=EXAMPLES, deadline=None)
@given(shape=shapes, key=basic_keys)
def test_reading_a_basic_key_matches_numpy(shape, key):
    a = array_of(shape)
    expected, raised = numpy_outcome(lambda: a[key])
    what = f"x{list(shape)}[{key!r}]"
    expect(lambda: rustgrad.tensor(a)[key], expected, raised, what)
    expect(lambda: static_index(a, key), expected, raised, f"static {what}")


@settings(max_examples=EXAMPLES, deadline=None)
@given(shape=shapes, key=basic_keys, value=st.sampled_from([-1.0, 0.5]))
def test_writing_through_a_basic_key_matches_numpy(shape, key, value):
    a = array_of(shape)

    def numpy_write():
        a[key] = value
        return a

    expected, raised = numpy_outcome(numpy_write)
    x = rustgrad.tensor(array_of(shape))

    def write():
        x[key] = value
        return x

    expect(write, expected, raised, f"x{list(shape)}[{key!r}] = {value}")
    if raised is not None:
        assert np.array_equal(np.asarray(x), array_of(shape)), "a failed assignment changed the tensor"


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data(), shape=shapes)
def test_a_bool_mask_key_matches_numpy(data, shape):
    a = array_of(shape)
    mask = data.draw(masks(shape))
    expected, raised = numpy_outcome(lambda: a[mask])
    if mask.shape != shape[: mask.ndim]:
        # numpy lets an empty mask of another shape through; PyTorch raises IndexError, as rustgrad does.
        expected, raised = None, IndexError
    what = f"x{list(shape)}[mask of shape {mask.shape}]"
    expect(lambda: rustgrad.tensor(a)[mask], expected, raised, what)
    expect(lambda: rustgrad.tensor(a)[rustgrad.tensor(mask)], expected, raised, f"{what} (tensor mask)")

    def numpy_write():
        b = a.copy()
        b[mask] = -1.0
        return b

    expected, raised = numpy_outcome(numpy_write)
    if mask.shape != shape[: mask.ndim]:
        expected, raised = None, IndexError
    x = rustgrad.tensor(a)

    def write():
        x[mask] = -1.0
        return x

    expect(write, expected, raised, f"{what} = -1")
