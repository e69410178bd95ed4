"""Eager random numbers and creation ops: the samplers (randint, randperm, normal,
bernoulli, multinomial, the in-place uniform_/normal_/bernoulli_/random_) checked
statistically with fixed seeds, integer creation (arange, full_like, empty_like), and
torch's errors for bad arguments. Generators are tested in test_random_generators.py and
TF1's creation and random ops in test_tf_random_creation.py, with this module's helpers.

Every statistical check draws from a fixed seed, so it gives the same verdict on every run;
its bounds are loose enough for any correct sampler and tight enough to catch a wrong one
(a shifted mean, a missing category, a biased coin). Chi-square statistics are compared with
the distribution's 99.99% quantile."""

from __future__ import annotations

import math
from itertools import permutations

import numpy as np
import pytest

import rustgrad
from rustgrad import errors

# ---------------------------------------------------------------- helpers


def chi2_bound(df: int) -> float:
    """The chi-square distribution's 99.99% quantile (Wilson-Hilferty approximation)."""
    z = 3.719
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def chi2(observed: np.ndarray, expected: np.ndarray) -> float:
    return float(((observed - expected) ** 2 / expected).sum())


def gen(seed: int) -> rustgrad.Generator:
    return rustgrad.Generator().manual_seed(seed)


# ---------------------------------------------------------------- continuous distributions


def test_rand_is_uniform_on_zero_one_in_float32_and_float64():
    for dtype in (rustgrad.float32, rustgrad.float64):
        u = rustgrad.rand(200_000, dtype=dtype, generator=gen(1)).numpy()
        assert u.dtype == dtype.as_numpy_dtype
        assert u.min() >= 0.0 and u.max() < 1.0
        assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
        counts = np.histogram(u, bins=20, range=(0, 1))[0]
        assert chi2(counts, np.full(20, len(u) / 20)) < chi2_bound(19)


def test_randn_is_standard_normal():
    z = rustgrad.randn(400, 500, dtype=rustgrad.float64, generator=gen(2)).numpy()
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    assert abs((np.abs(z) < 1).mean() - 0.6827) < 0.005


def test_normal_with_floats_and_size():
    x = rustgrad.normal(2.0, 3.0, size=(100_000,), generator=gen(3))
    assert x.dtype is rustgrad.float32 and x.shape == (100_000,)
    assert abs(x.numpy().mean() - 2) < 0.05 and abs(x.numpy().std() - 3) < 0.05
    assert rustgrad.normal(0, 1, (3, 2), dtype=rustgrad.float64).dtype is rustgrad.float64


def test_normal_with_tensors_broadcasts_mean_and_std():
    mean = rustgrad.tensor([[-5.0], [0.0], [10.0]], dtype=rustgrad.float64)
    std = rustgrad.tensor([[0.5], [1.0], [2.0], [4.0]], dtype=rustgrad.float64) * rustgrad.ones(1, 5000,
                                                                                             dtype=rustgrad.float64)
    # mean (3, 1, 1) against std (4, 5000): out (3, 4, 5000)
    out = rustgrad.normal(mean.reshape(3, 1, 1), std, generator=gen(4)).numpy()
    assert out.shape == (3, 4, 5000) and out.dtype == np.float64
    assert np.allclose(out.mean(axis=(1, 2)), [-5, 0, 10], atol=0.05)
    assert np.allclose(out.std(axis=2), np.broadcast_to([0.5, 1, 2, 4], (3, 4)), rtol=0.05)
    one_side = rustgrad.normal(rustgrad.full((2, 3), 7.0), 0.0)
    assert one_side.tolist() == [[7.0] * 3] * 2
    other_side = rustgrad.normal(1.0, rustgrad.zeros(4, dtype=rustgrad.float64))
    assert other_side.dtype is rustgrad.float64 and other_side.tolist() == [1.0] * 4


def test_normal_samples_carry_no_gradient():
    mean = rustgrad.zeros(3, requires_grad=True)
    assert not rustgrad.normal(mean, 1.0).requires_grad


def test_uniform_and_normal_in_place_fill_the_tensor_and_return_it():
    x = rustgrad.empty(100_000, dtype=rustgrad.float64)
    assert x.uniform_(-2, 5, generator=gen(5)) is x
    v = x.numpy()
    assert v.min() >= -2 and v.max() < 5 and abs(v.mean() - 1.5) < 0.05
    assert x.normal_(3, 0.5, generator=gen(6)) is x
    v = x.numpy()
    assert abs(v.mean() - 3) < 0.01 and abs(v.std() - 0.5) < 0.01
    view = rustgrad.zeros(4, 6)[:, ::2]
    view.uniform_(10, 11)
    assert ((view.numpy() >= 10) & (view.numpy() < 11)).all()


def test_in_place_sampling_of_a_leaf_that_requires_grad_is_refused_unless_under_no_grad():
    w = rustgrad.zeros(3, 4, requires_grad=True)
    with pytest.raises(errors.GradientError, match="uniform_: a leaf Variable that requires grad"):
        w.uniform_()
    with rustgrad.no_grad():
        w.uniform_(-0.1, 0.1)
        w.normal_(0, 0.01)
    assert w.requires_grad and w.is_leaf and w.abs().max().item() > 0


# ---------------------------------------------------------------- integers


@pytest.mark.parametrize("low, high", [(0, 10), (-7, 3), (1000, 1005)])
def test_randint_is_uniform_over_its_range(low, high):
    x = rustgrad.randint(low, high, (100_000,), generator=gen(7)).numpy()
    assert x.dtype == np.int64 and x.min() == low and x.max() == high - 1
    counts = np.bincount(x - low, minlength=high - low)
    assert chi2(counts, np.full(high - low, len(x) / (high - low))) < chi2_bound(high - low - 1)


def test_randint_overloads_follow_torch():
    g = gen(9)
    assert rustgrad.randint(5, (3, 2), generator=g).shape == (3, 2)
    assert rustgrad.randint(2, 5, (4,)).numpy().min() >= 2
    assert rustgrad.randint(low=2, high=5, size=(4,)).shape == (4,)
    assert rustgrad.randint(10, size=(6,)).shape == (6,)
    assert rustgrad.randint(3, 10, size=[2, 2]).shape == (2, 2)
    big = rustgrad.randint(2**62, 2**63 - 1, (1000,)).numpy()
    assert big.min() >= 2**62


@pytest.mark.parametrize("dtype, high", [("int32", 1000), ("uint8", 256), ("float32", 50), ("float64", 50),
                                         ("bool", 2), ("int64", 7)])
def test_randint_takes_any_dtype_that_holds_the_range(dtype, high):
    dt = getattr(rustgrad, dtype)
    x = rustgrad.randint(high, (20_000,), dtype=dt)
    assert x.dtype is dt
    values = x.numpy().astype(np.int64)
    assert values.min() == 0 and values.max() == high - 1
    assert np.array_equal(x.numpy(), x.numpy().astype(np.int64))


def test_randint_like_takes_the_input_shape_and_dtype():
    like = rustgrad.zeros(3, 4, dtype=rustgrad.int32)
    x = rustgrad.randint_like(like, 10)
    assert x.shape == (3, 4) and x.dtype is rustgrad.int32 and 0 <= x.numpy().min() <= x.numpy().max() < 10
    y = rustgrad.randint_like(rustgrad.zeros(50), 5, 8)
    assert y.dtype is rustgrad.float32 and set(y.tolist()) <= {5.0, 6.0, 7.0}


def test_random_in_place_draws_integers_from_torchs_ranges():
    x = rustgrad.zeros(20_000, dtype=rustgrad.int64)
    assert set(np.unique(x.random_(3, 6).numpy())) == {3, 4, 5}
    assert set(np.unique(x.random_(4).numpy())) == {0, 1, 2, 3}
    u8 = rustgrad.zeros(20_000, dtype=rustgrad.uint8).random_()
    assert u8.numpy().max() == 255 and u8.numpy().min() == 0
    f = rustgrad.zeros(1000).random_()
    assert (f.numpy() == np.floor(f.numpy())).all() and f.numpy().max() > 2**20


def test_randperm_is_a_uniformly_random_permutation():
    p = rustgrad.randperm(1000, generator=gen(10))
    assert p.dtype is rustgrad.int64 and sorted(p.tolist()) == list(range(1000))
    g = gen(11)
    index = {perm: i for i, perm in enumerate(permutations(range(4)))}
    counts = np.zeros(24)
    for _ in range(6000):
        counts[index[tuple(rustgrad.randperm(4, generator=g).tolist())]] += 1
    assert chi2(counts, np.full(24, 6000 / 24)) < chi2_bound(23)
    assert rustgrad.randperm(0).tolist() == [] and rustgrad.randperm(1).tolist() == [0]
    assert rustgrad.randperm(5, dtype=rustgrad.float32).dtype is rustgrad.float32
    assert sorted(rustgrad.randperm(256, dtype=rustgrad.uint8).tolist()) == list(range(256))


# ---------------------------------------------------------------- bernoulli and multinomial


def test_bernoulli_flips_each_element_with_its_probability():
    p = rustgrad.tensor([0.0, 0.1, 0.5, 0.9, 1.0], dtype=rustgrad.float64).reshape(5, 1) * rustgrad.ones(1, 40_000,
                                                                                                    dtype=rustgrad.float64)
    flips = rustgrad.bernoulli(p, generator=gen(12))
    assert flips.dtype is rustgrad.float64 and flips.shape == (5, 40_000)
    rates = flips.numpy().mean(axis=1)
    assert rates[0] == 0 and rates[4] == 1
    assert np.allclose(rates[1:4], [0.1, 0.5, 0.9], atol=0.01)
    assert set(np.unique(flips.numpy())) == {0.0, 1.0}


def test_bernoulli_with_p_ignores_the_values_and_keeps_the_dtype():
    x = rustgrad.bernoulli(rustgrad.full((50_000,), 7.0), 0.25, generator=gen(13))
    assert x.dtype is rustgrad.float32 and abs(x.numpy().mean() - 0.25) < 0.01
    ints = rustgrad.zeros(10, dtype=rustgrad.int64).bernoulli(0.5)
    assert ints.dtype is rustgrad.int64 and set(ints.tolist()) <= {0, 1}


def test_bernoulli_in_place_takes_a_number_or_a_tensor_that_broadcasts():
    x = rustgrad.empty(3, 20_000)
    assert x.bernoulli_(0.75, generator=gen(14)) is x
    assert abs(x.numpy().mean() - 0.75) < 0.01
    x.bernoulli_(rustgrad.tensor([[0.0], [0.5], [1.0]]))
    rates = x.numpy().mean(axis=1)
    assert rates[0] == 0 and rates[2] == 1 and abs(rates[1] - 0.5) < 0.02


def test_multinomial_with_replacement_follows_the_weights():
    weights = rustgrad.tensor([[1.0, 2.0, 0.0, 7.0], [5.0, 0.0, 5.0, 0.0]])
    s = rustgrad.multinomial(weights, 20_000, replacement=True, generator=gen(15))
    assert s.dtype is rustgrad.int64 and s.shape == (2, 20_000)
    first, second = (np.bincount(row, minlength=4) for row in s.numpy())
    assert first[2] == 0 and second[1] == 0 and second[3] == 0
    assert chi2(first[[0, 1, 3]], 20_000 * np.array([0.1, 0.2, 0.7])) < chi2_bound(2)
    assert chi2(second[[0, 2]], np.array([10_000, 10_000])) < chi2_bound(1)
    one_d = rustgrad.multinomial(rustgrad.tensor([0.2, 0.8]), 3, True)
    assert one_d.shape == (3,)


def test_multinomial_without_replacement_draws_distinct_categories_in_weighted_order():
    weights = rustgrad.tensor([1.0, 2.0, 3.0, 4.0], dtype=rustgrad.float64)
    g = gen(16)
    firsts = np.zeros(4)
    for _ in range(4000):
        s = rustgrad.multinomial(weights, 3, generator=g).tolist()
        assert len(set(s)) == 3
        firsts[s[0]] += 1
    assert chi2(firsts, 4000 * np.array([0.1, 0.2, 0.3, 0.4])) < chi2_bound(3)
    everything = rustgrad.multinomial(rustgrad.rand(5, 10) + 0.1, 10)
    assert all(sorted(row) == list(range(10)) for row in everything.tolist())
    exactly_the_nonzero = rustgrad.multinomial(rustgrad.tensor([0.0, 3.0, 0.0, 1.0]), 2).tolist()
    assert sorted(exactly_the_nonzero) == [1, 3]


def test_tensor_methods_call_the_functions():
    w = rustgrad.tensor([0.0, 1.0])
    assert w.multinomial(4, True).tolist() == [1, 1, 1, 1]
    assert rustgrad.tensor([1.0, 0.0]).bernoulli().tolist() == [1.0, 0.0]


# ---------------------------------------------------------------- creation and dtypes


def test_arange_is_int64_for_ints_and_float32_otherwise_as_torch():
    cases = [((5,), "int64", np.arange(5)), ((2, 9, 3), "int64", np.arange(2, 9, 3)),
             ((5, 0, -2), "int64", np.arange(5, 0, -2)), ((0.0, 2), "float32", np.arange(0.0, 2)),
             ((0, 1, 0.25), "float32", np.arange(0, 1, 0.25)),
             ((2**40, 2**40 + 3), "int64", np.arange(2**40, 2**40 + 3))]
    for args, dtype, expected in cases:
        x = rustgrad.arange(*args)
        assert x.dtype is getattr(rustgrad, dtype), args
        assert x.tolist() == expected.tolist(), args
    assert rustgrad.arange(4, dtype=rustgrad.int32).dtype is rustgrad.int32
    assert rustgrad.arange(1, 4, dtype=rustgrad.float64).tolist() == [1.0, 2.0, 3.0]
    assert rustgrad.arange(0, 3.5, dtype=rustgrad.long).tolist() == [0, 1, 2, 3]


def test_integer_factories_and_likes():
    assert rustgrad.zeros(2, 3, dtype=rustgrad.long).dtype is rustgrad.int64
    assert rustgrad.ones(2, dtype=rustgrad.uint8).tolist() == [1, 1]
    labels = rustgrad.tensor([3, 1], dtype=rustgrad.int32)
    assert rustgrad.full_like(labels, 7).dtype is rustgrad.int32
    assert rustgrad.full_like(labels, 7).tolist() == [7, 7]
    assert rustgrad.full_like(labels, 2.9).tolist() == [2, 2]  # torch truncates into the int dtype
    assert rustgrad.full((2,), 5).dtype is rustgrad.int64
    e = rustgrad.empty_like(labels)
    assert e.dtype is rustgrad.int32 and e.shape == (2,) and e.tolist() == [0, 0]
    assert rustgrad.empty_like(labels, dtype=rustgrad.float64).dtype is rustgrad.float64


def test_float_samplers_refuse_integer_and_bool_dtypes():
    for call in (lambda: rustgrad.randn(2, dtype=rustgrad.int64), lambda: rustgrad.rand(2, dtype=rustgrad.bool),
                 lambda: rustgrad.zeros(2, dtype=rustgrad.int32).normal_(),
                 lambda: rustgrad.normal(0.0, 1.0, (2,), dtype=rustgrad.uint8)):
        with pytest.raises(errors.DTypeError, match="normal and uniform samples are floats"):
            call()


def test_requires_grad_is_for_float_samples_only():
    assert rustgrad.randint(3, (2,), dtype=rustgrad.float32, requires_grad=True).requires_grad
    assert rustgrad.randperm(3, dtype=rustgrad.float64, requires_grad=True).requires_grad
    with pytest.raises(errors.GradientError, match="Only Tensors of floating point"):
        rustgrad.randint(3, (2,), requires_grad=True)


# ---------------------------------------------------------------- eager errors

ERRORS = {
    "randint_empty_range": (lambda: rustgrad.randint(5, 3, (2,)), errors.InvalidArgumentError,
                            r"random_ expects 'from' to be less than 'to', but got from=5 >= to=3"),
    "randint_equal_bounds": (lambda: rustgrad.randint(0, 0, (2,)), errors.InvalidArgumentError,
                             r"from=0 >= to=0"),
    "randint_int_size": (lambda: rustgrad.randint(10, 5), errors.ArgumentTypeError,
                         r"randint\(\): argument 'size' must be a tuple of ints, not int"),
    "randint_float_high": (lambda: rustgrad.randint(2.5, (3,)), errors.ArgumentTypeError,
                           r"randint\(\): high must be an integer, got float"),
    "randint_missing_size": (lambda: rustgrad.randint(10), errors.ArgumentTypeError,
                             r"missing required argument\(s\) 'size'"),
    "randint_twice": (lambda: rustgrad.randint(1, 2, (3,), high=4), errors.ArgumentTypeError,
                      "got multiple values for argument 'high'"),
    "randint_uint8_range": (lambda: rustgrad.randint(0, 300, (2,), dtype=rustgrad.uint8),
                            errors.InvalidArgumentError, r"\[0, 300\) does not fit in uint8"),
    "randint_negative_size": (lambda: rustgrad.randint(3, (-1,)), errors.ShapeError, "negative dimension -1"),
    "randperm_negative": (lambda: rustgrad.randperm(-1), errors.ShapeError, "n must be non-negative, got -1"),
    "randperm_too_large": (lambda: rustgrad.randperm(300, dtype=rustgrad.uint8), errors.InvalidArgumentError,
                           "n is too large for result tensor type uint8"),
    "randperm_bool": (lambda: rustgrad.randperm(2, dtype=rustgrad.bool), errors.DTypeError, "cannot be bool"),
    "multinomial_too_many": (lambda: rustgrad.multinomial(rustgrad.ones(3), 4), errors.InvalidArgumentError,
                             r"cannot sample n_sample > prob_dist.size\(-1\) samples without replacement"),
    "multinomial_not_enough_nonzero": (lambda: rustgrad.multinomial(rustgrad.tensor([0.0, 1.0, 0.0]), 2),
                                       errors.InvalidArgumentError,
                                       r"with replacement=False, not enough non-negative category to sample"),
    "multinomial_negative": (lambda: rustgrad.multinomial(rustgrad.tensor([1.0, -0.5]), 1),
                             errors.InvalidArgumentError,
                             "probability tensor contains either `inf`, `nan` or element < 0"),
    "multinomial_nan": (lambda: rustgrad.multinomial(rustgrad.tensor([1.0, float("nan")]), 1, True),
                        errors.InvalidArgumentError, "contains either `inf`, `nan`"),
    "multinomial_zero_sum": (lambda: rustgrad.multinomial(rustgrad.zeros(2, 3), 1, True),
                             errors.InvalidArgumentError, r"sum of probabilities <= 0"),
    "multinomial_no_samples": (lambda: rustgrad.multinomial(rustgrad.ones(3), 0), errors.InvalidArgumentError,
                               "cannot sample n_sample <= 0 samples"),
    "multinomial_3d": (lambda: rustgrad.multinomial(rustgrad.ones(2, 2, 2), 1), errors.ShapeError,
                       "prob_dist must be 1 or 2 dim"),
    "multinomial_int": (lambda: rustgrad.multinomial(rustgrad.tensor([1, 2]), 1), errors.DTypeError,
                        "multinomial only supports floating-point dtypes for input, got int64"),
    "normal_negative_std": (lambda: rustgrad.normal(0.0, -1.0, (2,)), errors.InvalidArgumentError,
                            "normal expects std >= 0.0, but found std -1"),
    "normal_negative_std_tensor": (lambda: rustgrad.normal(rustgrad.zeros(2), rustgrad.tensor([1.0, -1.0])),
                                   errors.InvalidArgumentError, "normal expects all elements of std >= 0.0"),
    "normal_int_mean": (lambda: rustgrad.normal(rustgrad.tensor([1, 2]), 1.0), errors.DTypeError,
                        "normal expects a floating point mean, but got a int64 tensor"),
    "normal_no_size": (lambda: rustgrad.normal(0.0, 1.0), errors.ArgumentTypeError,
                       r"normal\(\): with a float mean and std, give the output's size"),
    "normal_shapes": (lambda: rustgrad.normal(rustgrad.zeros(2), rustgrad.ones(3)), errors.ShapeError,
                      "normal: the size of tensor a"),
    "bernoulli_p_range": (lambda: rustgrad.bernoulli(rustgrad.tensor([0.5, 1.5])), errors.InvalidArgumentError,
                          r"expected every probability in \[0, 1\], but element 1 is 1.5"),
    "bernoulli_scalar_p": (lambda: rustgrad.bernoulli(rustgrad.zeros(2), -0.1), errors.InvalidArgumentError,
                           r"bernoulli expects p to be in \[0, 1\], but got p=-0.1"),
    "bernoulli_int": (lambda: rustgrad.bernoulli(rustgrad.tensor([0, 1])), errors.DTypeError,
                      "bernoulli: expected a float tensor but got int64"),
    "uniform_reversed": (lambda: rustgrad.zeros(2).uniform_(2, 1), errors.InvalidArgumentError,
                         r"uniform_ expects to return a \[from, to\) range, but found from=2 > to=1"),
    "normal_in_place_std": (lambda: rustgrad.zeros(2).normal_(0, -2), errors.InvalidArgumentError,
                            "normal_: normal expects std >= 0.0"),
    "bernoulli_in_place_shape": (lambda: rustgrad.zeros(2, 3).bernoulli_(rustgrad.full((4,), 0.5)),
                                 errors.ShapeError, r"size of tensor a \(4\) must match the size of tensor b \(3\)"),
}


@pytest.mark.parametrize("call, kind, message", ERRORS.values(), ids=ERRORS.keys())
def test_bad_arguments_raise_torchs_errors(call, kind, message):
    with pytest.raises(kind, match=message):
        call()


def test_error_classes_are_the_builtin_ones_torch_raises_or_close():
    assert issubclass(errors.ShapeError, RuntimeError)  # randperm(-1), multinomial of 3-D weights
    assert issubclass(errors.InvalidArgumentError, ValueError)
    assert issubclass(errors.ArgumentTypeError, TypeError)
