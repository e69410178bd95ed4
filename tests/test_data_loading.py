"""rustgrad.utils.data: datasets, samplers, default collation (torch's rules), DataLoader options,
seeded shuffling, worker threads (same order and values, errors re-raised, no thread left) and
the TensorDataset fast path (same batches as stacking the samples)."""

from __future__ import annotations

import collections
import gc
import threading

import numpy as np
import pytest

import rustgrad
from rustgrad.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)


def _tensor_dataset(n=10):
    x = rustgrad.arange(float(n * 3)).reshape(n, 3)
    y = rustgrad.arange(n)
    return TensorDataset(x, y)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return {"x": np.full(2, float(i), np.float32), "y": i * i, "name": f"s{i}"}


def _values(batches):
    out = []
    for batch in batches:
        if isinstance(batch, dict):
            out.append({k: v.tolist() if isinstance(v, rustgrad.Tensor) else v for k, v in batch.items()})
        else:
            out.append([t.tolist() for t in batch])
    return out


def test_tensor_dataset_subset_concat():
    ds = _tensor_dataset(4)
    x, y = ds[2]
    assert x.tolist() == [6.0, 7.0, 8.0] and int(y) == 2 and len(ds) == 4
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        TensorDataset(rustgrad.zeros(3), rustgrad.zeros(4))
    sub = Subset(ds, [3, 0])
    assert len(sub) == 2 and int(sub[0][1]) == 3
    cat = ds + sub
    assert isinstance(cat, ConcatDataset) and len(cat) == 6
    assert int(cat[4][1]) == 3 and int(cat[-1][1]) == 0 and cat.cumulative_sizes == [4, 6]
    with pytest.raises(ValueError, match="datasets should not be an empty iterable"):
        ConcatDataset([])


def test_random_split_lengths_fractions_and_generator():
    ds = _tensor_dataset(10)
    a, b = random_split(ds, [7, 3], generator=rustgrad.Generator().manual_seed(1))
    indices = sorted(a.indices + b.indices)
    assert indices == list(range(10)) and len(a) == 7 and len(b) == 3
    again = random_split(ds, [7, 3], generator=rustgrad.Generator().manual_seed(1))
    assert again[0].indices == a.indices
    parts = random_split(range(10), [0.5, 0.3, 0.2], generator=rustgrad.Generator().manual_seed(2))
    assert [len(p) for p in parts] == [5, 3, 2]
    parts = random_split(range(11), [0.5, 0.5])
    assert [len(p) for p in parts] == [6, 5]  # the remainder goes to the first split, as torch
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(ds, [3, 3])


def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    order = list(RandomSampler(range(20), generator=rustgrad.Generator().manual_seed(3)))
    assert sorted(order) == list(range(20)) and order != list(range(20))
    assert order == list(RandomSampler(range(20), generator=rustgrad.Generator().manual_seed(3)))
    g = rustgrad.Generator().manual_seed(4)
    drawn = list(RandomSampler(range(5), replacement=True, num_samples=50, generator=g))
    assert len(drawn) == 50 and set(drawn) <= set(range(5))
    assert list(BatchSampler(range(7), 3, drop_last=False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, drop_last=False)) == 3
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(7), 0, False)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(range(3), num_samples=0)


Point = collections.namedtuple("Point", ["x", "y"])


def test_default_collate_follows_torch_rules():
    batch = default_collate([(rustgrad.ones(2), 1, 2.5, True, "a"), (rustgrad.zeros(2), 2, 3.5, False, "b")])
    assert isinstance(batch, list) and len(batch) == 5  # a tuple sample gives a list, as torch
    assert batch[0].tolist() == [[1.0, 1.0], [0.0, 0.0]]
    assert batch[1].dtype == rustgrad.int64 and batch[1].tolist() == [1, 2]
    assert batch[2].dtype == rustgrad.float64 and batch[2].tolist() == [2.5, 3.5]
    assert batch[3].dtype == rustgrad.bool and batch[3].tolist() == [True, False]
    assert batch[4] == ["a", "b"]
    arrays = default_collate([np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32)])
    assert arrays.dtype == rustgrad.int32 and tuple(arrays.shape) == (2, 3)
    scalars = default_collate([np.float32(1.5), np.float32(2.5)])
    assert scalars.dtype == rustgrad.float32 and scalars.tolist() == [1.5, 2.5]
    od = default_collate([collections.OrderedDict(b=1, a=[1.0, 2.0])] * 2)
    assert isinstance(od, collections.OrderedDict) and list(od) == ["b", "a"]
    assert [t.tolist() for t in od["a"]] == [[1.0, 1.0], [2.0, 2.0]]
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3] and p.y.dtype == rustgrad.float64
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                                        "or lists; found <class 'object'>"):
        default_collate([object()])
    converted = default_convert((np.ones(2), "s", 3))
    assert isinstance(converted[0], rustgrad.Tensor) and converted[1:] == ["s", 3]


def test_loader_batches_drop_last_len_and_custom_collate():
    ds = _tensor_dataset(10)
    loader = DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [tuple(b[0].shape) for b in batches] == [(4, 3), (4, 3), (2, 3)]
    assert batches[2][1].tolist() == [8, 9]
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert len(list(DataLoader(ds, batch_size=4, drop_last=True))) == 2
    sizes = list(DataLoader(ds, batch_size=3, collate_fn=len))
    assert sizes == [3, 3, 3, 1]
    one = list(DataLoader(ds, batch_size=None))
    assert len(one) == 10 and isinstance(one[0], list) and one[0][0].tolist() == [0.0, 1.0, 2.0]
    dicts = list(DataLoader(Squares(5), batch_size=2))
    assert dicts[0]["y"].tolist() == [0, 1] and dicts[0]["name"] == ["s0", "s1"]
    assert dicts[2]["x"].tolist() == [[4.0, 4.0]]
    by_batch_sampler = list(DataLoader(ds, batch_sampler=[[1, 2], [0]]))
    assert [b[1].tolist() for b in by_batch_sampler] == [[1, 2], [0]]


def test_seeded_shuffle_repeats_and_covers_every_sample():
    ds = _tensor_dataset(50)

    def order(seed):
        loader = DataLoader(ds, batch_size=8, shuffle=True, generator=rustgrad.Generator().manual_seed(seed))
        return [i for _, y in loader for i in y.tolist()]

    assert order(5) == order(5) and sorted(order(5)) == list(range(50))
    assert order(5) != order(6) and order(5) != list(range(50))
    rustgrad.manual_seed(3)
    first = [i for _, y in DataLoader(ds, batch_size=8, shuffle=True) for i in y.tolist()]
    rustgrad.manual_seed(3)
    assert first == [i for _, y in DataLoader(ds, batch_size=8, shuffle=True) for i in y.tolist()]


def test_the_tensor_dataset_fast_path_gives_the_stacked_batches():
    ds = _tensor_dataset(30)
    fast = DataLoader(ds, batch_size=7, shuffle=True, generator=rustgrad.Generator().manual_seed(0))
    assert fast._fast_tensors
    slow = DataLoader(ds, batch_size=7, shuffle=True, generator=rustgrad.Generator().manual_seed(0),
                      collate_fn=lambda b: default_collate(b))
    assert not slow._fast_tensors
    for a, b in zip(fast, slow):
        assert isinstance(a, list) and len(a) == len(b) == 2
        for ta, tb in zip(a, b):
            assert ta.dtype == tb.dtype and tuple(ta.shape) == tuple(tb.shape)
            np.testing.assert_array_equal(ta.numpy(), tb.numpy())
    subset = Subset(Subset(ds, list(range(29, -1, -1))), [3, 0, 7, 7, 12])
    fast_subset = DataLoader(subset, batch_size=2)
    assert fast_subset._fast_tensors
    assert [b[1].tolist() for b in fast_subset] == [[26, 29], [22, 22], [17]]
    assert [b[1].tolist() for b in DataLoader(subset, batch_size=2, collate_fn=lambda b: default_collate(b))] == [
        [26, 29], [22, 22], [17]]
    batch = next(iter(DataLoader(ds, batch_size=4)))
    batch[0].add_(100.0)  # a batch is a copy, not a view of the dataset
    assert ds.tensors[0][0].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("batch_size, drop_last, num_workers", [(7, False, 0), (7, True, 0), (10, False, 0),
                                                                 (30, True, 0), (64, False, 0), (7, False, 2)])
def test_sequential_batches_of_a_tensor_dataset_are_slices_with_the_stacked_values(batch_size, drop_last, num_workers):
    ds = _tensor_dataset(30)
    fast = DataLoader(ds, batch_size=batch_size, drop_last=drop_last, num_workers=num_workers)
    assert all(isinstance(r, range) for r in fast._index_iter())
    slow = DataLoader(ds, batch_size=batch_size, drop_last=drop_last, collate_fn=lambda b: default_collate(b))
    fast_batches, slow_batches = list(fast), list(slow)
    assert len(fast_batches) == len(slow_batches) == len(fast)
    for a, b in zip(fast_batches, slow_batches):
        for ta, tb in zip(a, b):
            assert ta.dtype == tb.dtype and tuple(ta.shape) == tuple(tb.shape) and ta.is_contiguous()
            np.testing.assert_array_equal(ta.numpy(), tb.numpy())
    fast_batches[0][0].add_(100.0)  # a sliced batch is a copy too
    assert ds.tensors[0][0].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("num_workers, prefetch_factor", [(1, 1), (2, None), (3, 4)])
def test_worker_threads_give_the_same_batches_in_the_same_order(num_workers, prefetch_factor):
    for ds in (_tensor_dataset(37), Squares(23)):
        kwargs = dict(batch_size=5, shuffle=True)
        serial = list(DataLoader(ds, generator=rustgrad.Generator().manual_seed(9), **kwargs))
        threaded_loader = DataLoader(ds, generator=rustgrad.Generator().manual_seed(9), num_workers=num_workers,
                                     prefetch_factor=prefetch_factor, **kwargs)
        threaded = list(threaded_loader)
        assert _values(threaded) == _values(serial)
        assert len(threaded) == len(threaded_loader)
    assert not [t for t in threading.enumerate() if t.name.startswith("DataLoader worker")]


class _Failing(Dataset):
    def __len__(self):
        return 20

    def __getitem__(self, i):
        if i == 13:
            raise KeyError(f"sample {i} is missing")
        return float(i)


def test_an_error_in_a_worker_is_raised_with_its_traceback_and_stops_the_workers():
    loader = DataLoader(_Failing(), batch_size=2, num_workers=2)
    got = []
    with pytest.raises(KeyError, match=r"Caught KeyError in DataLoader worker thread 0") as info:
        for batch in loader:
            got.append(batch.tolist())
    assert got == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0], [8.0, 9.0], [10.0, 11.0]]
    text = str(info.value)
    assert "Original Traceback (most recent call last)" in text and "__getitem__" in text
    assert "sample 13 is missing" in text
    assert isinstance(info.value.__cause__, KeyError)
    assert not [t for t in threading.enumerate() if t.name.startswith("DataLoader worker")]


def test_dropping_a_loader_iterator_early_stops_its_threads():
    it = iter(DataLoader(_tensor_dataset(100), batch_size=2, num_workers=3))
    next(it)
    assert [t for t in threading.enumerate() if t.name.startswith("DataLoader worker")]
    del it
    gc.collect()
    assert not [t for t in threading.enumerate() if t.name.startswith("DataLoader worker")]


def test_worker_init_fn_and_get_worker_info_in_each_worker():
    seen = []

    def init(worker_id):
        info = get_worker_info()
        seen.append((worker_id, info.id, info.num_workers))

    list(DataLoader(range(10), batch_size=2, num_workers=2, worker_init_fn=init))
    assert sorted(seen) == [(0, 0, 2), (1, 1, 2)]
    assert get_worker_info() is None


class _Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))  # each worker its share

    def __len__(self):
        return self.n


def test_iterable_datasets_batch_and_shard_across_workers():
    assert [b.tolist() for b in DataLoader(_Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(DataLoader(_Stream(7), batch_size=3)) == 3
    batches = [b.tolist() for b in DataLoader(_Stream(9), batch_size=2, num_workers=2)]
    # torch's order: a batch from each worker in turn
    assert batches == [[0, 2], [1, 3], [4, 6], [5, 7], [8]]
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(_Stream(3), shuffle=True)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_workers=-1), "num_workers option should be non-negative"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multiprocessing"),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(sampler=[0, 1], shuffle=True), "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive with batch_size"),
        (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
    ],
)
def test_bad_loader_options_raise_torch_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DataLoader(_tensor_dataset(4), **kwargs)


def test_pin_memory_warns_that_it_has_no_effect():
    with pytest.warns(UserWarning, match="no accelerator is found"):
        DataLoader(_tensor_dataset(4), pin_memory=True)


def test_a_worker_that_takes_too_long_raises_a_timeout():
    import time

    class Slow(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            time.sleep(0.5)
            return i

    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.05 seconds"):
        list(DataLoader(Slow(), batch_size=1, num_workers=1, timeout=0.05))
