"""DistributedSampler without MPI (explicit num_replicas and rank): torch's partition rules."""

from __future__ import annotations

import pytest

import rustgrad
from rustgrad.distributed import DistributedError
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError, RustgradError
from rustgrad.utils.data import DataLoader, TensorDataset
from rustgrad.utils.data.distributed import DistributedSampler


def shares(n, replicas, **kwargs):
    return [list(DistributedSampler(range(n), replicas, rank, **kwargs)) for rank in range(replicas)]


def test_without_shuffle_each_rank_takes_every_num_replicas_th_index_padded_from_the_start():
    # torch: [0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]
    assert shares(10, 3, shuffle=False) == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]


def test_drop_last_drops_the_tail_that_does_not_divide_evenly():
    assert shares(10, 3, shuffle=False, drop_last=True) == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    assert len(DistributedSampler(range(10), 3, 0, drop_last=True)) == 3


def test_more_replicas_than_samples_repeats_the_indices():
    assert shares(2, 5, shuffle=False) == [[0], [1], [0], [1], [0]]


def test_an_evenly_divisible_dataset_is_a_partition_and_lengths_match():
    parts = shares(12, 4, seed=3)
    assert sorted(i for part in parts for i in part) == list(range(12))
    assert all(len(p) == len(DistributedSampler(range(12), 4, 0)) == 3 for p in parts)


def test_shuffled_shares_are_disjoint_and_padding_repeats_the_permutation_head():
    parts = shares(10, 4, seed=7)  # 3 each, total 12: two indices repeated
    flat = [i for part in parts for i in part]
    assert sorted(set(flat)) == list(range(10)) and len(flat) == 12
    order = [parts[r][k] for k in range(3) for r in range(4)]  # rank r takes positions r, r + 4, ...
    assert order[10:] == order[:2]


def test_the_order_depends_on_seed_plus_epoch_only():
    a = DistributedSampler(range(50), 2, 0, seed=1)
    b = DistributedSampler(range(50), 2, 0, seed=1)
    assert list(a) == list(b)
    a.set_epoch(1)
    assert list(a) != list(b)
    c = DistributedSampler(range(50), 2, 0, seed=0)
    c.set_epoch(2)
    d = DistributedSampler(range(50), 2, 0, seed=2)
    assert list(c) == list(d)
    assert shares(6, 2, shuffle=False) == [[0, 2, 4], [1, 3, 5]]


def test_it_feeds_a_dataloader_its_share():
    ds = TensorDataset(rustgrad.arange(10.0))
    loader = DataLoader(ds, batch_size=2, sampler=DistributedSampler(ds, 2, 1, shuffle=False))
    assert [batch[0].tolist() for batch in loader] == [[1.0, 3.0], [5.0, 7.0], [9.0]]


def test_a_rank_outside_the_replicas_raises_value_error():
    with pytest.raises(InvalidArgumentError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), 2, 2)
    with pytest.raises(ValueError, match="num_replicas must be at least 1"):
        DistributedSampler(range(4), 0, 0)
    with pytest.raises(ArgumentTypeError, match="rank must be an int, got str"):
        DistributedSampler(range(4), 2, "0")


def test_without_a_process_group_the_defaults_raise_distributed_error():
    with pytest.raises(DistributedError, match=r"get_world_size: the default process group has not been initialized"):
        DistributedSampler(range(4))
    assert issubclass(DistributedError, RustgradError) and issubclass(DistributedError, RuntimeError)


def test_importable_from_utils_data_as_in_torch():
    assert rustgrad.utils.data.DistributedSampler is DistributedSampler
