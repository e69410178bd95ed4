"""``default_collate`` and ``default_convert``: how a ``DataLoader`` turns samples into a batch,
with torch's rules."""

from __future__ import annotations

import collections.abc
from typing import Any

import numpy as np

from rustgrad._creation import as_tensor, tensor
from rustgrad._generated_ops import stack
from rustgrad._rustgrad import Tensor, float64
from rustgrad.errors import ArgumentTypeError, DTypeError, ShapeError

__all__ = ["default_collate", "default_convert"]

_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_namedtuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def _rebuild(like: Any, items: Any) -> Any:
    """A container of ``like``'s type holding ``items`` (a plain one when the type cannot be built so)."""
    try:
        return type(like)(items)
    except TypeError:
        return dict(items) if isinstance(like, collections.abc.Mapping) else list(items)


def default_collate(batch: list[Any]) -> Any:
    """Samples to a batch, as torch: tensors are stacked (a new first dimension); numpy arrays and
    numpy numbers become stacked tensors; Python floats a float64 tensor, ints an int64 tensor, bools
    a bool tensor; strings stay a list; dicts, namedtuples, tuples and lists are collated field by
    field (a tuple gives a list, as torch)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if isinstance(elem, np.ndarray) or isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_)):
        if elem.dtype.kind in "OSUV":
            raise DTypeError(_ERROR.format(elem.dtype))
        if isinstance(elem, np.ndarray) and elem.shape != ():
            return default_collate([as_tensor(b) for b in batch])
        return as_tensor(np.asarray(batch))
    if isinstance(elem, bool):
        return tensor(batch)
    if isinstance(elem, float):
        return tensor(batch, dtype=float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild(elem, [(key, default_collate([d[key] for d in batch])) for key in elem])
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(list(samples)) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise ShapeError(
                f"each element in list of batch should be of equal size (default_collate got sequences of lengths "
                f"{sorted({len(e) for e in batch})}); pad the samples to one length or pass a collate_fn"
            )
        transposed = [default_collate(list(samples)) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed
        return _rebuild(elem, transposed)
    raise ArgumentTypeError(_ERROR.format(type(elem)))


def default_convert(data: Any) -> Any:
    """One sample as the loader gives it without batching (``batch_size=None``): numpy arrays become
    tensors, containers are converted element by element, everything else is unchanged."""
    if isinstance(data, np.ndarray) or isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return data if data.dtype.kind in "OSUV" else as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, [(key, default_convert(data[key])) for key in data])
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, [default_convert(d) for d in data])
    return data
