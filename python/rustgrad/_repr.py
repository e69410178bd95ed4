"""PyTorch-style ``repr`` for tensors."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

PREFIX = "tensor("

# numpy 1.x arrays have at most 32 dimensions (numpy 2: 64). Tensors of higher
# rank are laid out here, the way numpy lays out smaller ones.
_NUMPY_MAX_DIMS = 32


def _element_options(dtype: Any) -> dict[str, Any]:
    if np.dtype(dtype).kind in "biu":
        return {}
    return {"precision": 4, "suppress_small": False, "floatmode": "maxprec"}


def tensor_repr(t: Any) -> str:
    if t.dim() > _NUMPY_MAX_DIMS:
        flat = np.asarray(t.detach().reshape(-1))
        body = format_nested(flat, tuple(t.shape), **_element_options(flat.dtype))
        size = flat.size
    else:
        values = np.asarray(t.detach())
        body = np.array2string(values, separator=", ", prefix=PREFIX, **_element_options(values.dtype))
        size = values.size
    extras = []
    if size == 0:
        extras.append(f"size={tuple(t.shape)}")
    # As torch: a dtype other than the default of its kind (float32, int64, bool) is shown.
    if t.dtype.name not in ("float32", "int64", "bool"):
        extras.append(f"dtype=rustgrad.{t.dtype.name}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return PREFIX + ", ".join([body, *extras]) + ")"


def _shown_indices(length: int, summarise: bool, edge: int) -> list[int]:
    """The positions along one axis that are printed; -1 stands for the ``...``."""
    if summarise and length > 2 * edge:
        return [*range(edge), -1, *range(length - edge, length)]
    return list(range(length))


def format_nested(flat: np.ndarray, shape: tuple[int, ...], **options: Any) -> str:
    """What ``np.array2string(flat.reshape(shape), separator=", ", prefix="tensor(")`` gives, for any rank.

    Follows numpy's layout: the elements shown (all, or the edge items of each
    axis past the print threshold) share one format, rows wrap at the line
    width, and blocks of higher axes are separated by blank lines.
    """
    if flat.size == 0:
        return "[]"
    printing = np.get_printoptions()
    summarise = flat.size > printing["threshold"]
    edge = printing["edgeitems"]
    axes = [_shown_indices(n, summarise, edge) for n in shape]
    strides = [int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape))]

    offsets = np.zeros(1, dtype=np.int64)
    for positions, stride in zip(axes, strides):
        kept = np.array([p for p in positions if p >= 0], dtype=np.int64)
        offsets = (offsets[:, None] + kept[None, :] * stride).reshape(-1)
    # One call formats every shown element, so they share numpy's width and precision.
    text = np.array2string(flat[offsets], separator="|", max_line_width=sys.maxsize,
                           threshold=sys.maxsize, **options)
    words = iter(text[1:-1].split("|"))
    separator = ", "

    def extend(lines: str, line: str, word: str, width: int, indent: str) -> tuple[str, str]:
        if len(line) + len(word) > width and len(line) > len(indent):
            lines += line.rstrip() + "\n"
            line = indent
        return lines, line + word

    def nested(axis: int, indent: str, width: int) -> str:
        if axis == len(shape):
            return next(words)
        inner_indent, inner_width = indent + " ", width - 1
        positions = axes[axis]
        if axis == len(shape) - 1:
            element_width = width - max(len(separator.rstrip()), 1)
            lines, line = "", indent
            for k, p in enumerate(positions):
                word = "..." if p < 0 else nested(axis + 1, inner_indent, inner_width)
                lines, line = extend(lines, line, word, element_width, indent)
                if k < len(positions) - 1:
                    line += separator
            body = lines + line
        else:
            between = separator.rstrip() + "\n" * (len(shape) - axis - 1)
            body = between.join(
                indent + ("..." if p < 0 else nested(axis + 1, inner_indent, inner_width)) for p in positions
            )
        return "[" + body[len(indent):] + "]"

    return nested(0, " " * (1 + len(PREFIX)), printing["linewidth"])
