"""Writers of the checkpoint formats earlier rustgrad versions wrote, kept so tests can check that
``rustgrad.load`` still reads them: ``save_npz_v2`` is ``rustgrad.save`` as it was before format
version 3 (an .npz archive with a ``__rustgrad__`` metadata member), line for line."""

from __future__ import annotations

import json

import numpy as np

from rustgrad import _npz
from rustgrad._rustgrad import Tensor
from rustgrad.errors import SerializationError

_META_MEMBER = "__rustgrad__.npy"


def _entries_of(obj):
    if isinstance(obj, Tensor):
        return "tensor", [("tensor", np.asarray(obj.detach().numpy(), order="C"), bool(obj.requires_grad))]
    return "dict", [(k, np.asarray(v.detach().numpy(), order="C"), bool(v.requires_grad)) for k, v in obj.items()]


def _member_names(keys):
    taken = {_META_MEMBER}
    names = [None] * len(keys)
    for i, key in enumerate(keys):
        name = f"{key}.npy"
        if name not in taken and _npz.zip_name_ok(name):
            names[i] = name
            taken.add(name)
    counter = 0
    for i, name in enumerate(names):
        if name is None:
            while f"arr_{counter}.npy" in taken:
                counter += 1
            names[i] = f"arr_{counter}.npy"
            taken.add(names[i])
    return names


def save_npz_v2(obj, f) -> None:
    """A tensor or a dict of str -> tensor, as format version 2 stored it."""
    kind, entries = _entries_of(obj)
    members = _member_names([key for key, _, _ in entries])
    meta = {
        "version": 2,
        "kind": kind,
        "entries": [[key, member, requires_grad] for (key, _, requires_grad), member in zip(entries, members)],
    }
    arrays = [(_META_MEMBER, np.array(json.dumps(meta)))]
    arrays += [(member, array) for (_, array, _), member in zip(entries, members)]
    _npz.write_npz(f, arrays, "save", SerializationError)
