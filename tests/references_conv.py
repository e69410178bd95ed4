"""References of the convolutions and poolings: ``conv1d``, ``conv2d`` (TF ``nn.conv2d``,
NHWC or NCHW with an HWIO filter), ``conv_transpose2d``, ``max_pool2d`` and its indices,
``avg_pool2d`` and ``adaptive_avg_pool2d``.

The numpy references are written independently of the kernels: sums over the windows of a
padded input for the convolutions, a scatter of each input element for the transposed one, and
loops over each window for the poolings. The same drawn arrays serve both fronts, so the shapes
are drawn to fit both torch's layout (NCHW input, OIHW weight) and TF's (NHWC input, HWIO
filter): an input (n, c, h, c) with a weight (o, c/groups, c, kw) is valid either way.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from _op_reference import TableReference
from hypothesis import strategies as st
from references_products import small_floats

# ---------------------------------------------------------------- convolutions


def conv_nchw(x: np.ndarray, w: np.ndarray, stride: tuple, pads: tuple, dilation: tuple, groups: int) -> np.ndarray:
    """Cross-correlation of an NCHW input with an OIHW weight; ``pads`` is ((top, bottom), (left, right))."""
    n, c, h, wd = x.shape
    o, cig, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), pads[0], pads[1]))
    oh = (h + sum(pads[0]) - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + sum(pads[1]) - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow), dtype=np.result_type(x, w))
    cog = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                top, left = i * dilation[0], j * dilation[1]
                patch = xp[:, g * cig:(g + 1) * cig,
                           top:top + stride[0] * (oh - 1) + 1:stride[0], left:left + stride[1] * (ow - 1) + 1:stride[1]]
                out[:, g * cog:(g + 1) * cog] += np.einsum("nchw,oc->nohw", patch, w[g * cog:(g + 1) * cog, :, i, j])
    return out


def _pair(v: Any) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else tuple(v)


def _torch_pads(padding: Any, kernel: tuple, dilation: tuple) -> tuple:
    if padding == "valid":
        return ((0, 0), (0, 0))
    if padding == "same":
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    p = _pair(padding)
    return ((p[0], p[0]), (p[1], p[1]))


def conv2d_reference(x, w, stride=1, padding=0, dilation=1, groups=1):
    dilation = _pair(dilation)
    return conv_nchw(x, w, _pair(stride), _torch_pads(padding, w.shape[2:], dilation), dilation, groups)


def _tf_spatial(values: Any, channels_last: bool, rank: int = 4) -> list[int]:
    """TF's strides or dilations (one int, one per spatial dim, or one per dim) per spatial dim."""
    if isinstance(values, int):
        return [values] * (rank - 2)
    values = list(values)
    if len(values) == rank:
        return values[1:-1] if channels_last else values[2:]
    return values * (rank - 2) if len(values) == 1 else values


def _tf_same(size: int, k: int, s: int, d: int) -> tuple[int, int]:
    out = -(-size // s)
    total = max((out - 1) * s + d * (k - 1) + 1 - size, 0)
    return total // 2, total - total // 2


def conv2d_tf_reference(x, w, strides, padding, data_format="NHWC", dilations=(1, 1, 1, 1), use_cudnn_on_gpu=True):
    nhwc = data_format == "NHWC"
    xc = np.moveaxis(x, -1, 1) if nhwc else x
    wc = np.transpose(w, (3, 2, 0, 1))
    s, d = _tf_spatial(strides, nhwc), _tf_spatial(dilations, nhwc)
    if padding == "VALID":
        pads = ((0, 0), (0, 0))
    elif padding == "SAME":
        pads = tuple(_tf_same(xc.shape[2 + a], wc.shape[2 + a], s[a], d[a]) for a in range(2))
    else:
        spatial = padding[1:3] if nhwc else padding[2:]
        pads = tuple(tuple(p) for p in spatial)
    out = conv_nchw(xc, wc, s, pads, d, 1)
    return np.moveaxis(out, 1, -1) if nhwc else out


def conv2d_shapes(data: Any) -> list[tuple[int, ...]]:
    c = data.draw(st.integers(1, 3))
    groups = data.draw(st.sampled_from([g for g in (1, 2, 3) if c % g == 0]))
    o = groups * data.draw(st.integers(1, c // groups))
    h = data.draw(st.integers(c, 4))
    n = data.draw(st.integers(1, 2))
    kw = data.draw(st.integers(1, c))
    return [(n, c, h, c), (o, c // groups, c, kw)]


def conv2d_args(data: Any, shapes: list) -> dict:
    (_, c, h, wd), (_, cig, kh, kw) = shapes
    stride = data.draw(st.sampled_from([1, 2, (1, 2)]))
    choices = [0, 1, (1, 0), "valid"] + (["same"] if stride == 1 else [])
    padding = data.draw(st.sampled_from(choices))
    pads = _torch_pads(padding, (kh, kw), (1, 1))
    fits = [d for d in (1, 2, (2, 1)) if all(
        _pair(d)[a] * ((kh, kw)[a] - 1) + 1 <= (h, wd)[a] + sum(pads[a]) for a in range(2))]
    dilation = data.draw(st.sampled_from(fits)) if padding != "same" else 1
    return {"stride": stride, "padding": padding, "dilation": dilation, "groups": c // cig}


def conv2d_tf_args(data: Any, kwargs: dict) -> dict:
    stride = data.draw(st.sampled_from([1, 2]))
    data_format = data.draw(st.sampled_from(["NHWC", "NCHW"]))
    strides = data.draw(st.sampled_from([
        [1, stride, stride, 1] if data_format == "NHWC" else [1, 1, stride, stride], stride, [stride, stride]]))
    padding = data.draw(st.sampled_from(["SAME", "VALID", "EXPLICIT"]))
    if padding == "EXPLICIT":
        top, left = data.draw(st.integers(0, 1)), data.draw(st.integers(0, 1))
        spatial = [[top, 1 - top], [left, 0]]
        padding = [[0, 0], *spatial, [0, 0]] if data_format == "NHWC" else [[0, 0], [0, 0], *spatial]
    return {"strides": strides, "padding": padding, "data_format": data_format}


def conv1d_reference(x, w, stride=1, padding=0, dilation=1, groups=1):
    padding = padding if isinstance(padding, str) else (0, _single(padding))
    out = conv2d_reference(x[:, :, None, :], w[:, :, None, :], (1, _single(stride)), padding, (1, _single(dilation)),
                           groups)
    return out[:, :, 0, :]


def _single(v: Any) -> int:
    return v if isinstance(v, int) else v[0]


def conv1d_tf_reference(x, w, stride, padding, dilations=1, data_format=None, use_cudnn_on_gpu=None):
    xc = np.moveaxis(x, -1, 1)[:, :, None, :]
    wc = np.transpose(w, (2, 1, 0))[:, :, None, :]
    s, d = _single(stride) if isinstance(stride, int) or len(stride) == 1 else stride[1], _single(dilations)
    if padding == "VALID":
        pads = ((0, 0), (0, 0))
    else:
        pads = ((0, 0), _tf_same(xc.shape[3], wc.shape[3], s, d))
    return np.moveaxis(conv_nchw(xc, wc, (1, s), pads, (1, d), 1)[:, :, 0, :], 1, -1)


def conv1d_shapes(data: Any) -> list[tuple[int, ...]]:
    c = data.draw(st.integers(1, 4))
    groups = data.draw(st.sampled_from([g for g in (1, 2) if c % g == 0]))
    o = groups * data.draw(st.integers(1, c // groups))
    length = c // groups
    k = data.draw(st.integers(1, length))
    return [(data.draw(st.integers(1, 2)), c, length), (o, c // groups, k)]


def conv1d_args(data: Any, shapes: list) -> dict:
    (_, c, length), (_, cig, k) = shapes
    stride = data.draw(st.sampled_from([1, 2]))
    padding = data.draw(st.sampled_from([0, 1, "valid"] + (["same"] if stride == 1 else [])))
    pad = 0 if isinstance(padding, str) else padding
    dilation = data.draw(st.sampled_from([d for d in (1, 2) if d * (k - 1) + 1 <= length + 2 * pad]))
    return {"stride": stride, "padding": padding, "dilation": 1 if padding == "same" else dilation,
            "groups": c // cig}


def conv1d_tf_args(data: Any, kwargs: dict) -> dict:
    return {"stride": data.draw(st.sampled_from([1, 2])), "padding": data.draw(st.sampled_from(["SAME", "VALID"]))}


def conv_transpose2d_reference(x, w, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    s, p, op, d = _pair(stride), _pair(padding), _pair(output_padding), _pair(dilation)
    n, cin, h, wd = x.shape
    _, cog, kh, kw = w.shape
    full = [(h - 1) * s[0] + d[0] * (kh - 1) + 1 + op[0], (wd - 1) * s[1] + d[1] * (kw - 1) + 1 + op[1]]
    out = np.zeros((n, cog * groups, *full), dtype=np.result_type(x, w))
    cig = cin // groups
    for ci in range(cin):
        g = ci // cig
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * d[0], i * d[0] + s[0] * (h - 1) + 1, s[0])
                cols = slice(j * d[1], j * d[1] + s[1] * (wd - 1) + 1, s[1])
                out[:, g * cog:(g + 1) * cog, rows, cols] += (
                    x[:, ci, None, :, :] * w[ci, :, i, j][None, :, None, None])
    return out[:, :, p[0]:full[0] - p[0], p[1]:full[1] - p[1]]


def conv_transpose2d_shapes(data: Any) -> list[tuple[int, ...]]:
    groups = data.draw(st.integers(1, 2))
    cin = groups * data.draw(st.integers(1, 2))
    n, h, w = (data.draw(st.integers(1, 2)) for _ in range(3))
    return [(n, cin, h, w), (cin, data.draw(st.integers(1, 2)), data.draw(st.integers(1, 3)),
                             data.draw(st.integers(1, 2)))]


def conv_transpose2d_args(data: Any, shapes: list) -> dict:
    (_, cin, _, _), (_, _, kh, kw) = shapes
    groups = data.draw(st.sampled_from([g for g in (1, 2) if cin % g == 0]))
    stride = data.draw(st.sampled_from([1, 2, (2, 1)]))
    dilation = data.draw(st.sampled_from([1, 2]))
    padding = data.draw(st.sampled_from([p for p in (0, 1, (1, 0)) if all(
        2 * _pair(p)[a] <= dilation * ((kh, kw)[a] - 1) for a in range(2))]))
    output_padding = data.draw(st.sampled_from([0] + ([1, (1, 0)] if _pair(stride) == (2, 2) else [])))
    return {"stride": stride, "padding": padding, "output_padding": output_padding, "groups": groups,
            "dilation": dilation}


# ---------------------------------------------------------------- pooling


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    span = d * (k - 1) + 1
    out = (size + 2 * p - span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _windows(size: int, out: int, k: int, s: int, before: int, d: int) -> list[list[int]]:
    """The input positions (inside 0..size) each output position reads."""
    return [[o * s - before + i * d for i in range(k) if 0 <= o * s - before + i * d < size] for o in range(out)]


def _pool_planes(x: np.ndarray, rows: list, cols: list, reduce: Any) -> np.ndarray:
    n, c, h, w = x.shape
    out = np.zeros((n, c, len(rows), len(cols)), dtype=x.dtype if x.dtype.kind == "f" else np.float64)
    for a in range(n):
        for b in range(c):
            for i, rs in enumerate(rows):
                for j, cs in enumerate(cols):
                    out[a, b, i, j] = reduce(x[a, b], rs, cs, i, j)
    return out


def _max(plane: np.ndarray, rs: list, cs: list, *_: Any) -> float:
    return np.max(plane[np.ix_(rs, cs)])


def _argmax(plane: np.ndarray, rs: list, cs: list, *_: Any) -> int:
    window = plane[np.ix_(rs, cs)].ravel()
    flat = [r * plane.shape[1] + c for r in rs for c in cs]
    return flat[int(np.argmax(window))]


def _torch_max_pool(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, reduce=_max):
    k, p, d = _pair(kernel_size), _pair(padding), _pair(dilation)
    s = k if stride is None else _pair(stride)
    rows, cols = (_windows(x.shape[2 + a], _pool_out(x.shape[2 + a], k[a], s[a], p[a], d[a], ceil_mode),
                           k[a], s[a], p[a], d[a]) for a in range(2))
    return _pool_planes(x, rows, cols, reduce)


def max_pool2d_reference(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    return _torch_max_pool(x, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d_indices_reference(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    return _torch_max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, _argmax).astype(np.int64)


def _tf_pool(x, ksize, strides, padding, data_format, reduce):
    nhwc = data_format == "NHWC"
    xc = np.moveaxis(x, -1, 1) if nhwc else x
    k, s = _tf_spatial(ksize, nhwc), _tf_spatial(strides, nhwc)
    axes = []
    for a in range(2):
        size = xc.shape[2 + a]
        if padding == "SAME":
            out = -(-size // s[a])
            before = _tf_same(size, k[a], s[a], 1)[0]
        else:
            out = -(-(size - k[a] + 1) // s[a])
            before = 0
        axes.append(_windows(size, out, k[a], s[a], before, 1))
    out = _pool_planes(xc, axes[0], axes[1], reduce)
    return np.moveaxis(out, 1, -1) if nhwc else out


def max_pool_tf_reference(x, ksize, strides, padding, data_format="NHWC"):
    return _tf_pool(x, ksize, strides, padding, data_format, _max)


def max_pool_indices_tf_reference(x, ksize, strides, padding, data_format="NHWC"):
    return _tf_pool(x, ksize, strides, padding, data_format, _argmax).astype(np.int64)


def _mean(plane: np.ndarray, rs: list, cs: list, *_: Any) -> float:
    return np.sum(plane[np.ix_(rs, cs)]) / (len(rs) * len(cs))


def avg_pool_tf_reference(x, ksize, strides, padding, data_format="NHWC"):
    return _tf_pool(x, ksize, strides, padding, data_format, _mean)


def avg_pool2d_reference(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                         divisor_override=None):
    k, p = _pair(kernel_size), _pair(padding)
    s = k if stride is None else _pair(stride)
    h, w = x.shape[2:]
    outs = [_pool_out((h, w)[a], k[a], s[a], p[a], 1, ceil_mode) for a in range(2)]
    rows, cols = (_windows((h, w)[a], outs[a], k[a], s[a], p[a], 1) for a in range(2))

    def divisor(rs: list, cs: list, i: int, j: int) -> int:
        if divisor_override:
            return divisor_override
        if not count_include_pad:
            return len(rs) * len(cs)
        spans = [min(o * s[a] - p[a] + k[a], (h, w)[a] + p[a]) - (o * s[a] - p[a]) for a, o in enumerate((i, j))]
        return spans[0] * spans[1]

    return _pool_planes(x, rows, cols, lambda plane, rs, cs, i, j:
                        np.sum(plane[np.ix_(rs, cs)]) / divisor(rs, cs, i, j))


def adaptive_avg_pool2d_reference(x, output_size):
    oh, ow = _pair(output_size)
    h, w = x.shape[2:]
    rows = [list(range(i * h // oh, math.ceil((i + 1) * h / oh))) for i in range(oh)]
    cols = [list(range(j * w // ow, math.ceil((j + 1) * w / ow))) for j in range(ow)]
    return _pool_planes(x, rows, cols, _mean)


def pool_shapes(data: Any) -> list[tuple[int, ...]]:
    return [tuple(data.draw(st.integers(1, 2)) for _ in range(2)) + tuple(data.draw(st.integers(1, 4))
                                                                          for _ in range(2))]


def _fitting_kernel(data: Any, h: int, w: int, dilation: int = 1) -> tuple[int, int]:
    return tuple(data.draw(st.integers(1, max(1, (size - 1) // dilation + 1))) for size in (h, w))


def max_pool2d_args(data: Any, shapes: list) -> dict:
    _, _, h, w = shapes[0]
    dilation = data.draw(st.sampled_from([1, 2]))
    kernel = _fitting_kernel(data, h, w, dilation)
    padding = tuple(data.draw(st.integers(0, k // 2)) for k in kernel)
    stride = data.draw(st.sampled_from([None, 1, 2, (2, 1)]))
    return {"kernel_size": kernel if data.draw(st.booleans()) or kernel[0] != kernel[1] else kernel[0],
            "stride": stride, "padding": padding, "dilation": dilation, "ceil_mode": data.draw(st.booleans())}


def tf_pool_args(data: Any, kwargs: dict) -> dict:
    data_format = data.draw(st.sampled_from(["NHWC", "NCHW"]))
    padding = data.draw(st.sampled_from(["SAME", "VALID"]))
    k = data.draw(st.integers(1, 2 if padding == "VALID" else 3))
    s = data.draw(st.integers(1, 2))
    full = (lambda v: [1, v, v, 1]) if data_format == "NHWC" else (lambda v: [1, 1, v, v])
    return {"ksize": data.draw(st.sampled_from([full(k), k])), "strides": data.draw(st.sampled_from([full(s), s])),
            "padding": padding, "data_format": data_format}


def pool_inputs_for_tf(data: Any) -> list[tuple[int, ...]]:
    """Pool inputs whose every dim is at least 2, so that VALID windows of size 2 fit both layouts."""
    return [tuple(data.draw(st.integers(2, 3)) for _ in range(4))]


def avg_pool2d_args(data: Any, shapes: list) -> dict:
    _, _, h, w = shapes[0]
    kernel = _fitting_kernel(data, h, w)
    padding = tuple(data.draw(st.integers(0, k // 2)) for k in kernel)
    return {"kernel_size": kernel, "stride": data.draw(st.sampled_from([None, 1, 2, (1, 2)])), "padding": padding,
            "ceil_mode": data.draw(st.booleans()), "count_include_pad": data.draw(st.booleans()),
            "divisor_override": data.draw(st.sampled_from([None, 3]))}


def distinct_values(data: Any, shapes: list) -> list[np.ndarray]:
    """Distinct values 0.25 apart (shuffled), so a max's finite differences never straddle a tie."""
    out = []
    for shape in shapes:
        size = int(np.prod(shape))
        order = data.draw(st.permutations(list(range(size))))
        out.append((np.array(order, dtype=np.float64).reshape(shape) - size / 2) * 0.25)
    return out


REFERENCES = {
    "conv2d": TableReference(
        conv2d_reference, conv2d_args, conv2d_tf_args, shapes=conv2d_shapes, float32_tolerance=1e-4,
        draw_inputs=small_floats, tf_numpy=conv2d_tf_reference),
    "conv1d": TableReference(
        conv1d_reference, conv1d_args, conv1d_tf_args, shapes=conv1d_shapes, float32_tolerance=1e-4,
        draw_inputs=small_floats, tf_numpy=conv1d_tf_reference),
    "conv_transpose2d": TableReference(
        conv_transpose2d_reference, conv_transpose2d_args, lambda data, kwargs: dict(kwargs),
        shapes=conv_transpose2d_shapes, float32_tolerance=1e-4, draw_inputs=small_floats),
    "max_pool2d": TableReference(
        max_pool2d_reference, max_pool2d_args, lambda data, kwargs: tf_pool_args(data, kwargs),
        shapes=pool_inputs_for_tf, tf_numpy=max_pool_tf_reference, grad_inputs=distinct_values,
        integer_inputs=False),
    "max_pool2d_indices": TableReference(
        max_pool2d_indices_reference, max_pool2d_args, lambda data, kwargs: tf_pool_args(data, kwargs),
        shapes=pool_inputs_for_tf, tf_numpy=max_pool_indices_tf_reference, result_dtype=np.int64,
        integer_inputs=False),
    "avg_pool2d": TableReference(
        avg_pool2d_reference, avg_pool2d_args, lambda data, kwargs: tf_pool_args(data, kwargs),
        shapes=pool_inputs_for_tf, tf_numpy=avg_pool_tf_reference, integer_inputs=False),
    "adaptive_avg_pool2d": TableReference(
        adaptive_avg_pool2d_reference,
        lambda data, shapes: {"output_size": data.draw(st.sampled_from([1, 2, 3, (1, 2), (3, 1), (5, 2)]))},
        lambda data, kwargs: dict(kwargs), shapes=pool_shapes, integer_inputs=False),
}
