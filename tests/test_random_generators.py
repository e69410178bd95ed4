"""Random generators: seeds, states, a generator shared across threads, and the same
values whatever the thread count, for every eager random function and method."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest
from _child import child_env
from test_random_creation import gen

import rustgrad
from rustgrad import errors

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
