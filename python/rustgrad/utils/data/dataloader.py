"""``DataLoader``: batches from a dataset, as ``torch.utils.data.DataLoader``.

``num_workers > 0`` runs that many worker *threads* (rustgrad's kernels release the GIL, so
threads overlap loading with training without copying data between processes). They fetch
batches ahead of the training loop, at most ``prefetch_factor`` each, and the loader yields them
in the same order as ``num_workers=0``. An error in a worker is raised in the training loop with
the worker's traceback; the threads stop when the iteration ends, fails or is dropped.
"""

from __future__ import annotations

import itertools
import queue
import threading
import traceback
import warnings
from typing import Any, Callable, Iterable, Iterator, Optional

import numpy as np

from rustgrad import _rustgrad
from rustgrad._random import randint
from rustgrad._rustgrad import Generator
from rustgrad.errors import DataLoaderError, InvalidArgumentError
from rustgrad.utils.data._collate import default_collate, default_convert
from rustgrad.utils.data.dataset import IterableDataset, Subset, TensorDataset
from rustgrad.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "WorkerInfo", "get_worker_info"]


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: ``id``, ``num_workers``, ``seed`` and ``dataset``."""

    def __init__(self, id: int, num_workers: int, seed: int, dataset: Any) -> None:
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, dataset={self.dataset!r})"


_local = threading.local()


def get_worker_info() -> Optional[WorkerInfo]:
    """The current worker's ``WorkerInfo`` in a loader's worker thread, None elsewhere."""
    return getattr(_local, "info", None)


class DataLoader:
    """Iterates over ``dataset`` in batches, with torch's arguments and defaults.

    ``shuffle=True`` visits the samples in a random order drawn from ``generator`` (a seeded
    ``rustgrad.Generator`` gives the same order every run). ``collate_fn`` defaults to
    ``default_collate`` (``default_convert`` with ``batch_size=None``). ``pin_memory`` has no effect
    (rustgrad runs on the CPU) and warns, as torch does without an accelerator.
    """

    def __init__(self, dataset: Any, batch_size: Optional[int] = 1, shuffle: Optional[bool] = None,
                 sampler: Optional[Iterable[Any]] = None, batch_sampler: Optional[Iterable[list[Any]]] = None,
                 num_workers: int = 0, collate_fn: Optional[Callable[[Any], Any]] = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Optional[Callable[[int], None]] = None, generator: Optional[Generator] = None,
                 *, prefetch_factor: Optional[int] = None, persistent_workers: bool = False) -> None:
        if not isinstance(num_workers, int) or num_workers < 0:
            raise InvalidArgumentError("num_workers option should be non-negative; use num_workers=0 to disable "
                                       "multiprocessing.")
        if timeout < 0:
            raise InvalidArgumentError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise InvalidArgumentError(
                "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                "to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise InvalidArgumentError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise InvalidArgumentError("persistent_workers option needs num_workers > 0")
        if pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=2)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.persistent_workers = persistent_workers
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise InvalidArgumentError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                    f"shuffle={shuffle}"
                )
            if sampler is not None:
                raise InvalidArgumentError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                    f"sampler={sampler}"
                )
            if batch_sampler is not None:
                raise InvalidArgumentError(
                    f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                    f"got batch_sampler={batch_sampler}"
                )
        else:
            shuffle = bool(shuffle)
            if sampler is not None and shuffle:
                raise InvalidArgumentError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise InvalidArgumentError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                    "drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise InvalidArgumentError(
                "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
            )
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self._auto_collation = batch_sampler is not None or (self._iterable and batch_size is not None)
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        source = _tensor_source(dataset) if collate_fn is default_collate and batch_sampler is not None else None
        self._fast_tensors = source is not None
        self._tensors, self._index_map = source if source is not None else ((), None)

    def __len__(self) -> int:
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is None:
                return length
            return length // self.batch_size if self.drop_last else -(-length // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers == 0:
            return self._single_thread()
        return _WorkerIterator(self)

    # ---- fetching (also run by the worker threads)

    def _fetch(self, indices: Any) -> Any:
        """The batch (or, without auto-batching, the sample) at ``indices``."""
        if self._fast_tensors:
            # Index each tensor once with the batch's indices: the same values as stacking the samples.
            if isinstance(indices, range):
                return [t[indices.start:indices.stop].clone() for t in self._tensors]
            if self._index_map is not None:
                indices = [self._index_map[i] for i in indices]
            index = _rustgrad._from_numpy(np.array(indices, dtype=np.int64), False)
            return [t.index_select(0, index) for t in self._tensors]
        if self._auto_collation:
            return self.collate_fn([self.dataset[i] for i in indices])
        return self.collate_fn(self.dataset[indices])

    def _index_iter(self) -> Iterator[Any]:
        if self._fast_tensors and self._index_map is None and _sequential_batches(self.batch_sampler):
            # Consecutive rows: each batch is a slice of the tensors, with no list of indices.
            size, count, total = self.batch_sampler.batch_size, len(self.batch_sampler), len(self.sampler)
            return iter([range(start, min(start + size, total)) for start in range(0, count * size, size)])
        return iter(self.batch_sampler if self.batch_sampler is not None else self.sampler)  # type: ignore[arg-type]

    def _stream_batches(self, stream: Iterator[Any]) -> Iterator[Any]:
        """Batches of an IterableDataset's samples."""
        if not self._auto_collation:
            for sample in stream:
                yield self.collate_fn(sample)
            return
        assert self.batch_size is not None
        while True:
            batch = list(itertools.islice(stream, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield self.collate_fn(batch)

    def _single_thread(self) -> Iterator[Any]:
        if self._iterable:
            yield from self._stream_batches(iter(self.dataset))
            return
        for indices in self._index_iter():
            yield self._fetch(indices)


def _sequential_batches(batch_sampler: Any) -> bool:
    """Whether ``batch_sampler`` is a plain BatchSampler over a plain SequentialSampler."""
    return type(batch_sampler) is BatchSampler and type(batch_sampler.sampler) is SequentialSampler


def _tensor_source(dataset: Any) -> Optional[tuple[tuple[Any, ...], Optional[list[int]]]]:
    """For a TensorDataset, or Subsets of one: its tensors and the map from the dataset's indices to
    their rows (None for the identity). None for any other dataset."""
    index_map: Optional[list[int]] = None
    while type(dataset) is Subset:
        indices = [int(i) for i in dataset.indices]
        index_map = indices if index_map is None else [indices[i] for i in index_map]
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset or not dataset.tensors:
        return None
    return dataset.tensors, index_map


class _Failure:
    """An exception raised in a worker, carried to the main thread."""

    def __init__(self, worker_id: int, error: BaseException) -> None:
        self.error = error
        self.message = (f"Caught {type(error).__name__} in DataLoader worker thread {worker_id}.\nOriginal "
                        + "".join(traceback.format_exception(type(error), error, error.__traceback__)))

    def reraise(self) -> None:
        try:
            new = type(self.error)(self.message)
        except Exception:
            new = DataLoaderError(self.message)
        raise new from self.error


_DONE = object()


class _Workers:
    """The threads and their queues. The threads refer to this object only, not to the iterator
    using it, so dropping the iterator can stop them."""

    def __init__(self, loader: DataLoader) -> None:
        self.loader = loader
        n = loader.num_workers
        self.stop = threading.Event()
        self.results: list[queue.Queue[Any]] = [queue.Queue() for _ in range(n)]
        self.tasks: list[queue.Queue[Any]] = [queue.Queue() for _ in range(n)]
        base_seed = int(randint(0, 2**62, (1,)).item())
        self.threads = [
            threading.Thread(target=self._work, args=(i, base_seed + i), name=f"DataLoader worker {i}", daemon=True)
            for i in range(n)
        ]
        for thread in self.threads:
            thread.start()

    def _work(self, worker_id: int, seed: int) -> None:
        loader = self.loader
        _local.info = WorkerInfo(worker_id, loader.num_workers, seed, loader.dataset)
        out = self.results[worker_id]
        try:
            if loader.worker_init_fn is not None:
                loader.worker_init_fn(worker_id)
            if loader._iterable:
                for batch in loader._stream_batches(iter(loader.dataset)):
                    if not self._put(out, batch):
                        return
                self._put(out, _DONE)
                return
            while not self.stop.is_set():
                task = self.tasks[worker_id].get()
                if task is _DONE:
                    return
                out.put(loader._fetch(task))
        except BaseException as err:  # every failure goes to the main thread, which re-raises it
            out.put(_Failure(worker_id, err))

    def _put(self, out: queue.Queue[Any], item: Any) -> bool:
        """Puts into a result queue holding at most ``prefetch_factor`` batches; False once stopped."""
        limit = self.loader.prefetch_factor or 1
        while not self.stop.is_set():
            if out.qsize() < limit:
                out.put(item)
                return True
            self.stop.wait(0.002)
        return False

    def get(self, worker: int) -> Any:
        timeout = self.loader.timeout or None
        try:
            item = self.results[worker].get(timeout=timeout)
        except queue.Empty:
            self.shutdown(wait=False)
            raise DataLoaderError(
                f"DataLoader timed out after {self.loader.timeout} seconds waiting for a batch from worker "
                f"{worker}; pass a larger timeout= (0 waits as long as it takes)"
            ) from None
        if isinstance(item, _Failure):
            self.shutdown()
            item.reraise()
        return item

    def shutdown(self, wait: bool = True) -> None:
        if self.stop.is_set():
            return
        self.stop.set()
        for tasks in self.tasks:
            tasks.put(_DONE)
        if wait:
            for thread in self.threads:
                if thread is not threading.current_thread():
                    thread.join()


class _WorkerIterator:
    """Worker threads fetching batches ahead, yielded in the single-thread order.

    Map-style datasets: the main thread hands batch ``k`` to worker ``k % num_workers`` (each worker
    has a task queue and a result queue, so each worker's results come in its tasks' order) and keeps
    at most ``prefetch_factor * num_workers`` batches in flight. Iterable datasets: each worker runs
    its own ``iter(dataset)``; batches are taken from the workers in turn, as torch does.
    """

    def __init__(self, loader: DataLoader) -> None:
        self._workers = _Workers(loader)
        n = loader.num_workers
        self._active = list(range(n))
        self._next_worker = 0
        self._sent = self._received = 0
        self._indices: Optional[Iterator[Any]] = None if loader._iterable else loader._index_iter()
        if self._indices is not None:
            for _ in range(n * (loader.prefetch_factor or 0) or 1):
                if not self._dispatch():
                    break

    def _dispatch(self) -> bool:
        assert self._indices is not None
        indices = next(self._indices, _DONE)
        if indices is _DONE:
            return False
        tasks = self._workers.tasks
        tasks[self._sent % len(tasks)].put(indices)
        self._sent += 1
        return True

    def __iter__(self) -> _WorkerIterator:
        return self

    def __next__(self) -> Any:
        workers = self._workers
        if self._indices is not None:
            if self._received == self._sent:
                workers.shutdown()
                raise StopIteration
            item = workers.get(self._received % len(workers.threads))
            self._received += 1
            self._dispatch()
            return item
        while self._active:
            position = self._next_worker % len(self._active)
            item = workers.get(self._active[position])
            if item is _DONE:  # this worker's iterator ran out; the others go on in turn
                del self._active[position]
                self._next_worker = position
                continue
            self._next_worker = position + 1
            return item
        workers.shutdown()
        raise StopIteration

    def __del__(self) -> None:
        workers = getattr(self, "_workers", None)
        if workers is not None:
            workers.shutdown()
