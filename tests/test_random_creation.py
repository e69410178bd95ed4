"""Random numbers and creation ops: generators (seeds, states, sharing across threads,
independence from the thread count), the eager samplers (randint, randperm, normal,
bernoulli, multinomial, the in-place uniform_/normal_/bernoulli_/random_) checked
statistically with fixed seeds, integer creation (arange, full_like, empty_like), TF1's
range, fill, truncated_normal, random_shuffle, integer random_uniform and graph seeds,
and torch's and TF1's errors for bad arguments.

Every statistical check draws from a fixed seed, so it gives the same verdict on every run;
its bounds are loose enough for any correct sampler and tight enough to catch a wrong one
(a shifted mean, a missing category, a biased coin). Chi-square statistics are compared with
the distribution's 99.99% quantile."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
import threading
from itertools import permutations

import numpy as np
import pytest
from _child import child_env

import rustgrad
import rustgrad.compat.v1 as tf
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


# Every eager random function and method, drawing from generator ``g``.
DRAWS = {
    "rand": lambda g: rustgrad.rand(50, generator=g),
    "randn": lambda g: rustgrad.randn(5, 10, generator=g),
    "rand_like": lambda g: rustgrad.rand_like(rustgrad.zeros(7), generator=g),
    "randn_like": lambda g: rustgrad.randn_like(rustgrad.zeros(7, dtype=rustgrad.float64), generator=g),
    "randint": lambda g: rustgrad.randint(-5, 5, (40,), generator=g),
    "randint_like": lambda g: rustgrad.randint_like(rustgrad.zeros(9, dtype=rustgrad.int32), 100, generator=g),
    "randperm": lambda g: rustgrad.randperm(30, generator=g),
    "normal_tensors": lambda g: rustgrad.normal(rustgrad.zeros(3, 1), rustgrad.ones(4), generator=g),
    "normal_floats": lambda g: rustgrad.normal(1.0, 2.0, (20,), generator=g),
    "bernoulli": lambda g: rustgrad.bernoulli(rustgrad.full((40,), 0.5), generator=g),
    "bernoulli_p": lambda g: rustgrad.bernoulli(rustgrad.zeros(40), 0.5, generator=g),
    "multinomial": lambda g: rustgrad.multinomial(rustgrad.ones(3, 10), 5, generator=g),
    "uniform_": lambda g: rustgrad.zeros(30).uniform_(-1, 1, generator=g),
    "normal_": lambda g: rustgrad.zeros(30).normal_(2, 3, generator=g),
    "bernoulli_": lambda g: rustgrad.zeros(30).bernoulli_(0.5, generator=g),
    "random_": lambda g: rustgrad.zeros(30, dtype=rustgrad.int64).random_(1000, generator=g),
}


# ---------------------------------------------------------------- generators


def test_manual_seed_returns_the_default_generator():
    assert rustgrad.manual_seed(3) is rustgrad.default_generator
    assert rustgrad.initial_seed() == 3
    assert isinstance(rustgrad.default_generator, rustgrad.Generator)


def test_a_new_generator_starts_from_torchs_default_seed_and_repeats():
    a, b = rustgrad.Generator(), rustgrad.Generator("cpu")
    assert a.initial_seed() == 67280421310721
    assert rustgrad.randn(10, generator=a).tolist() == rustgrad.randn(10, generator=b).tolist()
    assert a.device == rustgrad.device("cpu")


@pytest.mark.parametrize("draw", DRAWS.values(), ids=DRAWS.keys())
def test_the_same_seed_gives_the_same_values_and_the_sequence_moves_on(draw):
    g = gen(11)
    first, second = draw(g).tolist(), draw(g).tolist()
    assert first != second
    g.manual_seed(11)
    assert draw(g).tolist() == first and draw(g).tolist() == second
    assert draw(gen(12)).tolist() != first


@pytest.mark.parametrize("draw", DRAWS.values(), ids=DRAWS.keys())
def test_the_default_generator_is_what_manual_seed_seeds(draw):
    rustgrad.manual_seed(5)
    first = draw(None).tolist()
    rustgrad.manual_seed(5)
    assert draw(None).tolist() == first
    assert draw(gen(5)).tolist() == first  # the default generator is a Generator like any other


def test_generators_do_not_disturb_each_other():
    g1 = gen(1)
    expected = [rustgrad.randn(8, generator=g1).tolist() for _ in range(3)]
    g1.manual_seed(1)
    g2 = gen(1)
    got = []
    for _ in range(3):
        got.append(rustgrad.randn(8, generator=g1).tolist())
        rustgrad.randn(100, generator=g2)
        rustgrad.rand(100)
    assert got == expected


def test_get_state_and_set_state_replay_the_sequence():
    g = gen(21)
    rustgrad.rand(5, generator=g)
    state = g.get_state()
    assert state.dtype is rustgrad.uint8 and state.shape == (16,)
    after = [rustgrad.randint(100, (6,), generator=g).tolist() for _ in range(2)]
    assert g.set_state(state) is g
    assert [rustgrad.randint(100, (6,), generator=g).tolist() for _ in range(2)] == after
    saved = rustgrad.get_rng_state()
    values = rustgrad.randn(4).tolist()
    rustgrad.set_rng_state(saved)
    assert rustgrad.randn(4).tolist() == values


def test_seed_picks_a_fresh_seed_that_initial_seed_reports():
    g = rustgrad.Generator()
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s and 0 <= s < 2**64
    assert rustgrad.rand(6, generator=g).tolist() == rustgrad.rand(6, generator=gen(s)).tolist()
    top = rustgrad.seed()
    assert rustgrad.initial_seed() == top


def test_set_state_refuses_a_state_of_the_wrong_size_or_dtype():
    g = rustgrad.Generator()
    with pytest.raises(errors.InvalidArgumentError, match="RNG state is wrong size: expected 16 bytes"):
        g.set_state(rustgrad.zeros(5056, dtype=rustgrad.uint8))
    with pytest.raises(errors.DTypeError, match="expected a uint8 tensor"):
        g.set_state(rustgrad.zeros(16))
    with pytest.raises(errors.ArgumentTypeError, match="must be a Tensor"):
        g.set_state([0] * 16)
    assert g.initial_seed() == 67280421310721


def test_generator_refuses_other_devices_and_bad_seeds():
    with pytest.raises(errors.DeviceError, match="CPU only"):
        rustgrad.Generator("cuda")
    with pytest.raises(errors.ArgumentTypeError, match="manual_seed: argument 'seed' must be an int"):
        rustgrad.Generator().manual_seed(1.5)
    with pytest.raises(errors.ArgumentTypeError, match="must be an int seed or a rustgrad.Generator, got str"):
        rustgrad.randint(3, (2,), generator="g")


def test_a_failed_call_leaves_the_generator_where_it_was():
    g = gen(8)
    expected = rustgrad.rand(5, generator=g).tolist()
    g.manual_seed(8)
    for bad in (
        lambda: rustgrad.randint(5, 3, (2,), generator=g),
        lambda: rustgrad.multinomial(rustgrad.tensor([1.0, -1.0]), 1, generator=g),
        lambda: rustgrad.normal(rustgrad.zeros(2), rustgrad.tensor([1.0, -1.0]), generator=g),
        lambda: rustgrad.bernoulli(rustgrad.tensor([0.5, 2.0]), generator=g),
        lambda: rustgrad.zeros(2).uniform_(1, 0, generator=g),
    ):
        with pytest.raises(errors.RustgradError):
            bad()
    assert rustgrad.rand(5, generator=g).tolist() == expected


def test_threads_sharing_a_generator_each_get_their_own_draws():
    """Eight threads draw from one generator at once: no draw is lost or repeated, so together
    they get exactly the draws one thread would make in some order."""
    shared, rounds, threads = gen(99), 25, 8
    results: list[tuple] = []
    lock = threading.Lock()

    def work():
        for _ in range(rounds):
            values = tuple(rustgrad.randn(64, generator=shared).tolist())
            with lock:
                results.append(values)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    alone = gen(99)
    sequential = [tuple(rustgrad.randn(64, generator=alone).tolist()) for _ in range(rounds * threads)]
    assert sorted(results) == sorted(sequential)
    assert len(set(results)) == rounds * threads


THREAD_COUNT_SCRIPT = r"""
import hashlib, json, sys
import rustgrad, rustgrad.compat.v1 as tf
if len(sys.argv) > 1:
    rustgrad.set_num_threads(int(sys.argv[1]))
def h(t):
    return hashlib.sha256(t.numpy().tobytes()).hexdigest()
g = rustgrad.Generator().manual_seed(2024)
out = {
    "randn": h(rustgrad.randn(700, 1000, generator=g)),
    "rand64": h(rustgrad.rand(600_000, dtype=rustgrad.float64, generator=g)),
    "randint": h(rustgrad.randint(-50, 50, (500_000,), generator=g)),
    "normal": h(rustgrad.normal(rustgrad.zeros(400, 1), rustgrad.ones(1, 1000), generator=g)),
    "bernoulli": h(rustgrad.bernoulli(rustgrad.full((300_000,), 0.3), generator=g)),
    "multinomial": h(rustgrad.multinomial(rustgrad.ones(3000, 200), 50, generator=g)),
    "randperm": h(rustgrad.randperm(300_000, generator=g)),
    "uniform_": h(rustgrad.zeros(400_000).uniform_(generator=g)),
}
r = tf.truncated_normal((500, 1000), seed=3)
with tf.Session() as sess:
    out["truncated_normal"] = hashlib.sha256(sess.run(r).tobytes()).hexdigest()
print(json.dumps({"threads": rustgrad.get_num_threads(), "hashes": out}))
"""


def _hashes_with(threads: int) -> dict:
    proc = subprocess.run([sys.executable, "-c", THREAD_COUNT_SCRIPT, str(threads)], capture_output=True,
                          text=True, timeout=120, env=child_env(RAYON_NUM_THREADS="1"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["threads"] == threads
    return result["hashes"]


def test_a_seed_gives_the_same_values_whatever_the_thread_count():
    one, four = _hashes_with(1), _hashes_with(4)
    assert one == four
    assert len(set(one.values())) == len(one)


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


# ---------------------------------------------------------------- TF1: range and fill


@pytest.mark.parametrize("args, kwargs, dtype, expected", [
    ((5,), {}, "int32", np.arange(5)),
    ((1, 10, 3), {}, "int32", np.arange(1, 10, 3)),
    ((5, 0, -2), {}, "int32", np.arange(5, 0, -2)),
    ((0, 1, 0.25), {}, "float32", np.arange(0, 1, 0.25)),
    ((1, 2.5), {}, "float32", np.arange(1, 2.5)),
    ((4,), {"dtype": "int64"}, "int64", np.arange(4)),
    ((4,), {"dtype": "float64"}, "float64", np.arange(4.0)),
    ((np.int64(3),), {}, "int64", np.arange(3)),
    ((2**31, 2**31 + 3), {}, "int64", np.arange(2**31, 2**31 + 3)),
    ((3, 3), {}, "int32", np.arange(3, 3)),
])
def test_tf_range_of_numbers_is_a_constant_typed_as_tf1(args, kwargs, dtype, expected):
    with tf.Graph().as_default():
        if "dtype" in kwargs:
            kwargs = {"dtype": getattr(tf, kwargs["dtype"])}
        r = tf.range(*args, **kwargs)
        assert r.dtype is getattr(tf, dtype)
        assert r.op.name == "range"
        assert r.shape.as_list() == [len(expected)]
        with tf.Session() as sess:
            value = sess.run(r)
        assert value.dtype == getattr(np, dtype) and value.tolist() == expected.tolist()


def test_tf_range_of_graph_tensors_is_computed_at_run_time():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        start = tf.placeholder(tf.int64, [])
        r = tf.range(n)
        assert r.dtype is tf.int32 and r.shape.as_list() == [None] and r.op.type == "Range"
        wide = tf.range(start, 10, 2)  # Python ints join the tensor's int64
        mixed = tf.range(n, 4.5)  # int32 and float32: float32, as TF1
        assert wide.dtype is tf.int64 and mixed.dtype is tf.float32
        with tf.Session() as sess:
            assert sess.run(r, {n: 4}).tolist() == [0, 1, 2, 3]
            assert sess.run(wide, {start: 3}).tolist() == [3, 5, 7, 9]
            assert sess.run(mixed, {n: 2}).tolist() == [2.0, 3.0, 4.0]
            with pytest.raises(errors.InvalidArgumentError, match="Requires start <= limit when delta > 0"):
                sess.run(tf.range(n, 0), {n: 3})


def test_tf_range_errors_are_tf1s():
    with tf.Graph().as_default():
        with pytest.raises(errors.InvalidArgumentError, match="Requires delta != 0"):
            tf.range(0, 5, 0)
        with pytest.raises(errors.InvalidArgumentError, match="Requires start <= limit when delta > 0: 5/3"):
            tf.range(5, 3)
        with pytest.raises(errors.InvalidArgumentError, match="Requires start >= limit when delta < 0"):
            tf.range(3, 5, -1)
        with pytest.raises(errors.DTypeError, match="Expected int32, got 2.5"):
            tf.range(2.5, dtype=tf.int32)
        d = tf.placeholder(tf.int32, [])
        with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError, match="Requires delta != 0"):
            sess.run(tf.range(0, 5, d), {d: 0})


def test_tf_fill_with_numbers_tensors_and_its_gradient():
    with tf.Graph().as_default():
        c = tf.fill([2, 3], 7)
        f = tf.fill([2], 1.5)
        assert c.dtype is tf.int32 and c.shape.as_list() == [2, 3] and f.dtype is tf.float32
        dims = tf.placeholder(tf.int32, [2])
        value = tf.placeholder(tf.float64, [])
        by_dims = tf.fill(dims, value)
        assert by_dims.shape.as_list() == [None, None] and by_dims.dtype is tf.float64
        known = tf.fill([4, 5], value)
        assert known.shape.as_list() == [4, 5]
        (grad,) = tf.gradients(tf.reduce_sum(known * 3.0), [value])
        variable = tf.Variable(tf.fill([3], 0.5))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(c).tolist() == [[7] * 3] * 2
            assert sess.run(by_dims, {dims: [1, 2], value: 2.0}).tolist() == [[2.0, 2.0]]
            assert sess.run(grad, {value: 1.0}) == pytest.approx(60.0)
            assert sess.run(variable).tolist() == [0.5] * 3
            with pytest.raises(errors.InvalidArgumentError, match="dimensions must be >= 0, got -1"):
                sess.run(by_dims, {dims: [-1, 2], value: 1.0})
        with pytest.raises(errors.InvalidArgumentError, match=r"fill: dims must be >= 0, got \[2, -3\]"):
            tf.fill([2, -3], 1.0)
        with pytest.raises(errors.ShapeError, match="fill: value must be a scalar"):
            tf.fill([2], tf.placeholder(tf.float32, [3]))


# ---------------------------------------------------------------- TF1: random ops and seeds


def test_tf_truncated_normal_stays_within_two_standard_deviations():
    with tf.Graph().as_default():
        t = tf.truncated_normal((400, 500), mean=3.0, stddev=2.0, dtype=tf.float64, seed=1)
        assert t.op.type == "TruncatedNormal" and t.shape.as_list() == [400, 500]
        with tf.Session() as sess:
            v = sess.run(t)
    assert v.dtype == np.float64 and np.abs(v - 3.0).max() <= 4.0
    assert abs(v.mean() - 3.0) < 0.01
    # A standard normal cut at +-2 has standard deviation 0.8796.
    assert abs(v.std() - 2 * 0.8796) < 0.01
    assert np.abs(v - 3.0).max() > 3.9  # the tails up to the cut are there


def test_tf_random_uniform_of_integers_needs_maxval_and_is_uniform():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Must specify maxval for integer dtype int32"):
            tf.random_uniform([3], dtype=tf.int32)
        with pytest.raises(errors.InvalidArgumentError, match="Need minval < maxval: 5 >= 5"):
            tf.random_uniform([3], 5, 5, dtype=tf.int64)
        with pytest.raises(errors.DTypeError, match="float32, float64, int32 or int64, got uint8"):
            tf.random_uniform([3], maxval=5, dtype=tf.uint8)
        u = tf.random_uniform([50_000], minval=-3, maxval=4, dtype=tf.int32, seed=2)
        assert u.dtype is tf.int32 and u.op.type == "RandomUniformInt"
        with tf.Session() as sess:
            v = sess.run(u)
    assert v.dtype == np.int32 and v.min() == -3 and v.max() == 3
    assert chi2(np.bincount(v + 3), np.full(7, 50_000 / 7)) < chi2_bound(6)


def test_tf_random_shuffle_permutes_rows_anew_each_run():
    data = np.arange(60).reshape(20, 3)
    with tf.Graph().as_default():
        s = tf.random_shuffle(tf.constant(data))
        seeded = tf.random_shuffle(data, seed=4)
        assert s.op.type == "RandomShuffle" and s.shape.as_list() == [20, 3] and s.dtype is tf.int64
        with tf.Session() as sess:
            runs = [sess.run(s) for _ in range(3)]
            seeded_runs = [sess.run(seeded) for _ in range(2)]
        with tf.Session() as sess:
            seeded_again = [sess.run(seeded) for _ in range(2)]
    for run in runs:
        assert sorted(map(tuple, run.tolist())) == sorted(map(tuple, data.tolist()))
    assert not np.array_equal(runs[0], runs[1]) and not np.array_equal(runs[1], runs[2])
    assert all(np.array_equal(a, b) for a, b in zip(seeded_runs, seeded_again))
    assert not np.array_equal(seeded_runs[0], seeded_runs[1])


def test_unseeded_random_ops_draw_fresh_values_every_run():
    with tf.Graph().as_default():
        ops = [tf.random_normal([5]), tf.random_uniform([5]), tf.truncated_normal([5]),
               tf.random_uniform([5], maxval=1000, dtype=tf.int64)]
        with tf.Session() as sess:
            first, second = sess.run(ops), sess.run(ops)
    assert all(not np.array_equal(a, b) for a, b in zip(first, second))


def test_a_graph_seed_makes_every_random_op_repeat_per_session():
    def draw(seed):
        graph = tf.Graph()
        with graph.as_default():
            tf.set_random_seed(seed)
            a, b = tf.random_normal([4]), tf.random_normal([4])
            with tf.Session() as sess:
                runs = [sess.run([a, b]) for _ in range(2)]
        return runs

    first = draw(7)
    again = draw(7)
    other = draw(8)
    assert all(np.array_equal(x, y) for run1, run2 in zip(first, again) for x, y in zip(run1, run2))
    assert not np.array_equal(first[0][0], first[0][1])  # two ops, two sequences
    assert not np.array_equal(first[0][0], first[1][0])  # the sequence moves on within a session
    assert not np.array_equal(first[0][0], other[0][0])


def test_get_seed_follows_tf1():
    with tf.Graph().as_default() as graph:
        assert tf.get_seed(None) == (None, None)
        assert tf.get_seed(5) == (87654321, 5)
        tf.set_random_seed(3)
        assert graph.seed == 3
        tf.constant(1.0)
        assert tf.get_seed(None) == (3, graph._core.num_nodes())
        assert tf.get_seed(9) == (3, 9)
        tf.set_random_seed(0)
        assert tf.get_seed(0) == (0, 2**31 - 1)
    assert tf.Graph().seed is None


def test_random_ops_take_a_shape_tensor():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        dims = tf.placeholder(tf.int32, [2])
        noise = tf.random_normal(dims, seed=1)
        ints = tf.random_uniform(dims, maxval=3, dtype=tf.int32)
        assert noise.shape.as_list() == [None, None]
        y = x + noise
        with tf.Session() as sess:
            value = sess.run(y, {x: np.zeros((2, 3), np.float32), dims: [2, 3]})
            assert value.shape == (2, 3)
            assert sess.run(ints, {dims: [4, 1]}).shape == (4, 1)
            with pytest.raises(errors.InvalidArgumentError, match="dimensions must be >= 0"):
                sess.run(noise, {dims: [-2, 3]})


def test_tf_random_namespace_names_the_same_functions():
    assert tf.random.normal is tf.random_normal
    assert tf.random.uniform is tf.random_uniform
    assert tf.random.truncated_normal is tf.truncated_normal
    assert tf.random.shuffle is tf.random_shuffle
    assert tf.random.set_random_seed is tf.set_random_seed
    assert tf.random.get_seed is tf.get_seed


def test_tf_float_random_ops_refuse_integer_dtypes():
    with tf.Graph().as_default():
        with pytest.raises(errors.DTypeError, match="random_normal: dtype must be a float type"):
            tf.random_normal([2], dtype=tf.int32)
        with pytest.raises(errors.DTypeError, match="truncated_normal: dtype must be a float type"):
            tf.truncated_normal([2], dtype=tf.int64)


def _sha(array: np.ndarray) -> str:
    return hashlib.sha256(array.tobytes()).hexdigest()


def test_manual_seed_also_seeds_unseeded_graph_ops():
    with tf.Graph().as_default():
        r = tf.random_normal([6])
        rustgrad.manual_seed(77)
        with tf.Session() as sess:
            a = _sha(sess.run(r))
        rustgrad.manual_seed(77)
        with tf.Session() as sess:
            b = _sha(sess.run(r))
    assert a == b
