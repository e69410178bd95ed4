"""The one TensorBoard writer behind ``rustgrad.static.summary`` and ``rustgrad.utils.tensorboard``.

Everything TensorBoard reads is built from the ``tensorboard`` package's own protocol
buffers and written by its ``EventFileWriter`` (the optional extra
``pip install 'rustgrad[tensorboard]'``); images are PNG-encoded by Pillow, a
dependency of ``tensorboard``. The package is imported only when a summary is made,
so ``import rustgrad`` never needs it.
"""

from __future__ import annotations

import io
import sys
import time
from types import SimpleNamespace
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from rustgrad.errors import InvalidArgumentError, ShapeError

INSTALL_HINT = "pip install 'rustgrad[tensorboard]'"


def modules(what: str) -> SimpleNamespace:
    """The ``tensorboard`` modules rustgrad uses; ``what`` names the caller for the error."""
    try:
        from PIL import Image
        from tensorboard.compat.proto import (
            attr_value_pb2,
            event_pb2,
            graph_pb2,
            node_def_pb2,
            summary_pb2,
            tensor_pb2,
            tensor_shape_pb2,
            types_pb2,
            versions_pb2,
        )
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as err:
        from rustgrad.utils.tensorboard import TensorBoardNotFoundError

        missing = (getattr(err, "name", None) or "tensorboard").split(".")[0]
        raise TensorBoardNotFoundError(
            f"{what} writes TensorBoard files with the `tensorboard` package, which is not installed "
            f"(importing {missing!r} failed: {err}); install it with {INSTALL_HINT}",
            name=missing,
        ) from err
    return SimpleNamespace(
        Image=Image, attr_value_pb2=attr_value_pb2, event_pb2=event_pb2, graph_pb2=graph_pb2,
        node_def_pb2=node_def_pb2, summary_pb2=summary_pb2, tensor_pb2=tensor_pb2,
        tensor_shape_pb2=tensor_shape_pb2, types_pb2=types_pb2, versions_pb2=versions_pb2,
        EventFileWriter=EventFileWriter,
    )


# ----- summary values -----


def scalar_value(tag: str, value: Any) -> Any:
    pb = modules("a scalar summary").summary_pb2
    return pb.Summary.Value(tag=tag, simple_value=float(value))


def _tf_bucket_limits() -> np.ndarray:
    """TF's default histogram buckets (``histogram.cc``): +-1e-12 growing by 10% up to 1e20, then
    +-DBL_MAX, and 0 between the two halves."""
    positive = []
    v = 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    positive.append(sys.float_info.max)
    negative = [-p for p in reversed(positive)]
    return np.array(negative + [0.0] + positive, dtype=np.float64)


_TF_LIMITS = _tf_bucket_limits()


def tf_histogram(values: np.ndarray) -> Any:
    """A ``HistogramProto`` as TF1's ``HistogramSummary`` makes it: each finite value counted in the
    first default bucket whose limit exceeds it, runs of empty buckets squashed into one."""
    pb = modules("a histogram summary").summary_pb2
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    counts = np.bincount(np.searchsorted(_TF_LIMITS, flat, side="right"), minlength=len(_TF_LIMITS))
    limits: list[float] = []
    buckets: list[float] = []
    i = 0
    while i < len(counts):
        end, count, j = _TF_LIMITS[i], counts[i], i + 1
        while count <= 0 and j < len(counts) and counts[j] <= 0:
            end, count, j = _TF_LIMITS[j], counts[j], j + 1
        limits.append(float(end))
        buckets.append(float(count))
        i = j
    empty = flat.size == 0
    return pb.HistogramProto(
        min=sys.float_info.max if empty else float(flat.min()),
        max=-sys.float_info.max if empty else float(flat.max()),
        num=float(flat.size), sum=float(flat.sum()), sum_squares=float(flat @ flat),
        bucket_limit=limits, bucket=buckets,
    )


def torch_default_bins() -> list[float]:
    """torch's ``SummaryWriter`` bins for ``bins='tensorflow'``: TF's buckets without +-DBL_MAX."""
    return [float(v) for v in _TF_LIMITS[1:-1]]


def numpy_histogram(values: np.ndarray, bins: Any, max_bins: Optional[int] = None) -> Any:
    """A ``HistogramProto`` as torch's ``SummaryWriter.add_histogram`` makes it: ``np.histogram``
    counts (runs of buckets summed to at most ``max_bins``), trimmed to the non-empty range with one
    empty bucket on the left (TensorBoard keeps only right limits)."""
    pb = modules("add_histogram").summary_pb2
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    if flat.size == 0:
        raise ShapeError("add_histogram: the values have no element; a histogram needs at least one")
    counts, limits = np.histogram(flat, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        counts, limits = _coarser(counts, limits, len(counts) // int(max_bins))
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:
        raise InvalidArgumentError(f"add_histogram: none of the {flat.size} values falls within the bins (from "
                         f"{limits[0]} to {limits[-1]}); pass bins that cover them")
    start, end = int(nonzero[0]), int(nonzero[-1]) + 1
    kept = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    return pb.HistogramProto(
        min=float(flat.min()), max=float(flat.max()), num=float(flat.size), sum=float(flat.sum()),
        sum_squares=float(flat @ flat), bucket_limit=limits[start:end + 1].tolist(), bucket=kept.tolist(),
    )


def _coarser(counts: np.ndarray, limits: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ``step`` buckets summed into one (the last padded with empty ones), as torch's ``max_bins``."""
    padded = np.pad(counts, (0, -len(counts) % step))
    coarse = padded.reshape(-1, step).sum(axis=1)
    return coarse, np.append(limits[:-1:step], limits[-1])


def histogram_value(tag: str, histo: Any) -> Any:
    return modules("a histogram summary").summary_pb2.Summary.Value(tag=tag, histo=histo)


def image_value(tag: str, hwc: np.ndarray) -> Any:
    """A PNG image summary of a uint8 array of shape (height, width, 1 | 3 | 4)."""
    tb = modules("an image summary")
    height, width, channels = hwc.shape
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[channels]
    buffer = io.BytesIO()
    tb.Image.fromarray(hwc[:, :, 0] if channels == 1 else hwc, mode).save(buffer, format="PNG")
    image = tb.summary_pb2.Summary.Image(height=height, width=width, colorspace=channels,
                                         encoded_image_string=buffer.getvalue())
    return tb.summary_pb2.Summary.Value(tag=tag, image=image)


def text_value(tag: str, strings: np.ndarray) -> Any:
    """A text summary as TF1's ``tf.summary.text`` writes it: a string tensor for the text plugin."""
    tb = modules("a text summary")
    array = np.asarray(strings, dtype=object)
    encoded = [s if isinstance(s, bytes) else str(s).encode("utf-8") for s in array.reshape(-1)]
    shape = tb.tensor_shape_pb2.TensorShapeProto(
        dim=[tb.tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in array.shape])
    tensor = tb.tensor_pb2.TensorProto(dtype=tb.types_pb2.DT_STRING, tensor_shape=shape, string_val=encoded)
    metadata = tb.summary_pb2.SummaryMetadata(
        plugin_data=tb.summary_pb2.SummaryMetadata.PluginData(plugin_name="text"))
    return tb.summary_pb2.Summary.Value(tag=tag, metadata=metadata, tensor=tensor)


def summary(values: Iterable[Any]) -> Any:
    return modules("a summary").summary_pb2.Summary(value=list(values))


# ----- graphs -----


_DATA_TYPES = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "int32": "DT_INT32", "int64": "DT_INT64",
               "uint8": "DT_UINT8", "bool": "DT_BOOL"}


def node_def(name: str, op: str, inputs: Sequence[str], dtype: Optional[str] = None,
             shapes: Optional[Sequence[Optional[Sequence[Optional[int]]]]] = None) -> Any:
    """A ``NodeDef``; ``dtype`` is a rustgrad dtype name, ``shapes`` the output shapes (None dims unknown)."""
    tb = modules("add_graph")
    attr = {}
    if dtype is not None and dtype in _DATA_TYPES:
        attr["dtype"] = tb.attr_value_pb2.AttrValue(type=tb.types_pb2.DataType.Value(_DATA_TYPES[dtype]))
    if shapes is not None:
        attr["_output_shapes"] = tb.attr_value_pb2.AttrValue(list=tb.attr_value_pb2.AttrValue.ListValue(
            shape=[_shape_proto(tb, s) for s in shapes]))
    return tb.node_def_pb2.NodeDef(name=name, op=op, input=list(inputs), attr=attr)


def _shape_proto(tb: SimpleNamespace, shape: Optional[Sequence[Optional[int]]]) -> Any:
    proto = tb.tensor_shape_pb2.TensorShapeProto
    if shape is None:
        return proto(unknown_rank=True)
    return proto(dim=[proto.Dim(size=-1 if d is None else int(d)) for d in shape])


def graph_def(nodes: Sequence[Any]) -> Any:
    tb = modules("add_graph")
    return tb.graph_pb2.GraphDef(node=list(nodes), versions=tb.versions_pb2.VersionDef(producer=22))


# ----- the event file -----


class _NoFile:
    """The event file of a rank that does not write (see ``EventWriter``)."""

    _file_name = None

    def add_event(self, event: Any) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class EventWriter:
    """An event file in ``logdir``, written by TensorBoard's ``EventFileWriter`` (asynchronously,
    flushed every ``flush_secs`` seconds, on ``flush()`` and on ``close()``). On ranks other than 0
    of an initialized ``rustgrad.distributed`` process group nothing is written, so that a
    data-parallel job logs one run, not one per rank."""

    def __init__(self, logdir: str, flush_secs: float = 120, filename_suffix: str = "",
                 max_queue: int = 10, what: str = "a summary writer") -> None:
        from rustgrad.distributed._group import writes_here

        self._tb = modules(what)
        self._writer: Any = (self._tb.EventFileWriter(logdir, max_queue, flush_secs, filename_suffix or "")
                             if writes_here() else _NoFile())
        self.logdir = logdir

    @property
    def file_name(self) -> Optional[str]:
        """The event file's path; None on a rank that does not write."""
        return self._writer._file_name

    def add_event(self, event: Any) -> None:
        self._writer.add_event(event)

    def add_summary(self, summary_proto: Any, step: Optional[int] = None, walltime: Optional[float] = None) -> None:
        event = self._tb.event_pb2.Event(summary=summary_proto)
        self._stamp(event, step, walltime)
        self._writer.add_event(event)

    def add_graph_def(self, graph: Any, step: Optional[int] = None, walltime: Optional[float] = None) -> None:
        event = self._tb.event_pb2.Event(graph_def=graph.SerializeToString())
        self._stamp(event, step, walltime)
        self._writer.add_event(event)

    def add_session_start(self, step: int) -> None:
        """A ``SessionLog.START`` event at ``step``: TensorBoard drops earlier events at later steps."""
        log = self._tb.event_pb2.SessionLog(status=self._tb.event_pb2.SessionLog.START)
        event = self._tb.event_pb2.Event(session_log=log)
        self._stamp(event, step, None)
        self._writer.add_event(event)

    def _stamp(self, event: Any, step: Optional[int], walltime: Optional[float]) -> None:
        event.wall_time = time.time() if walltime is None else float(walltime)
        if step is not None:
            event.step = int(step)

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
