"""Nested structures, as TF's ``tf.nest``: lists, tuples, namedtuples and dicts (by sorted
key) are structure; everything else (tensors, numbers, None) is a leaf."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

from rustgrad.errors import ArgumentTypeError, InvalidArgumentError


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def is_nested(value: Any) -> bool:
    return isinstance(value, (list, tuple, dict))


def _children(value: Any) -> list:
    if isinstance(value, dict):
        return [value[k] for k in sorted(value)]
    return list(value)


def _leaves(value: Any) -> Iterator[Any]:
    if is_nested(value):
        for child in _children(value):
            yield from _leaves(child)
    else:
        yield value


def flatten(structure: Any) -> list:
    """The leaves of ``structure``, depth first (dict values by sorted key)."""
    return list(_leaves(structure))


def _rebuild(like: Any, children: list) -> Any:
    if isinstance(like, dict):
        keys = sorted(like)
        return type(like)((k, children[keys.index(k)]) for k in like)
    if _is_namedtuple(like):
        return type(like)(*children)
    return type(like)(children)


def _pack(structure: Any, leaves: Sequence[Any], start: int) -> tuple[Any, int]:
    if not is_nested(structure):
        return leaves[start], start + 1
    children = []
    for child in _children(structure):
        packed, start = _pack(child, leaves, start)
        children.append(packed)
    return _rebuild(structure, children), start


def pack_sequence_as(structure: Any, flat_sequence: Sequence[Any]) -> Any:
    """``flat_sequence`` in the nesting of ``structure``."""
    count = len(flatten(structure))
    if count != len(flat_sequence):
        raise InvalidArgumentError(
            f"Could not pack sequence. Structure had {count} elements, but flat_sequence had "
            f"{len(flat_sequence)} elements.  Structure: {structure}, flat_sequence: {flat_sequence}."
        )
    return _pack(structure, list(flat_sequence), 0)[0]


def _sequence_kind(value: Any) -> Any:
    """What TF compares for ``check_types``: lists and tuples by type, namedtuples by class."""
    return dict if isinstance(value, dict) else type(value)


def _check(first: Any, second: Any, check_types: bool, whole: tuple[Any, Any]) -> None:
    if is_nested(first) != is_nested(second):
        raise InvalidArgumentError(
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: {whole[0]}\n\nSecond structure: {whole[1]}\n\n"
            f"More specifically: Substructure \"{first if is_nested(first) else second}\" is a sequence, while "
            f"substructure \"{second if is_nested(first) else first}\" is not"
        )
    if not is_nested(first):
        return
    if check_types and _sequence_kind(first) is not _sequence_kind(second):
        raise ArgumentTypeError(
            "The two structures don't have the same sequence type. First structure has type "
            f"{type(first)}, while second structure has type {type(second)}."
        )
    if isinstance(first, dict) and sorted(first) != sorted(second):
        raise InvalidArgumentError(
            "The two dictionaries don't have the same set of keys. First structure has keys "
            f"{sorted(first)}, while second structure has keys {sorted(second)}."
        )
    a, b = _children(first), _children(second)
    if len(a) != len(b):
        raise InvalidArgumentError(
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: {whole[0]}\n\nSecond structure: {whole[1]}\n\n"
            f"More specifically: The two namedtuples don't have the same sequence length. First "
            f"structure has length {len(a)}, while second structure has length {len(b)}."
            if _is_namedtuple(first) else
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: {whole[0]}\n\nSecond structure: {whole[1]}\n\n"
            f"More specifically: Substructure \"{first}\" has length {len(a)}, while "
            f"substructure \"{second}\" has length {len(b)}"
        )
    for x, y in zip(a, b):
        _check(x, y, check_types, whole)


def assert_same_structure(first: Any, second: Any, check_types: bool = True) -> None:
    """Raises (ValueError, or TypeError for differing sequence types) unless both have one nesting."""
    _check(first, second, check_types, (first, second))


def map_structure(fn: Callable[..., Any], *structures: Any) -> Any:
    """``fn`` applied to the leaves of ``structures`` (of one nesting), in that nesting."""
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    columns = zip(*(flatten(s) for s in structures))
    return pack_sequence_as(structures[0], [fn(*leaves) for leaves in columns])
