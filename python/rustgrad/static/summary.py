"""``tf.summary`` (TF1): summaries of graph tensors, and ``FileWriter`` for TensorBoard event files.

``scalar``, ``histogram``, ``image`` and ``text`` return a summary value of the graph;
``Session.run`` of it (alone, in a list, or merged with ``merge``/``merge_all``) returns
the serialized ``Summary`` protocol buffer as ``bytes``, as TF1's string tensor does, and
``FileWriter.add_summary`` writes it. The values are ordinary graph tensors fetched in the
same run. Each summary adds one node to the graph (an ``Identity`` of its tensor, a
``NoOp`` for text and merges) whose unique name gives the tag, as TF1's op name does.

Writing needs the optional ``tensorboard`` package (``pip install 'rustgrad[tensorboard]'``);
its protocol buffers and event-file writer do all the encoding.
"""

from __future__ import annotations

import re
import warnings
from typing import Any, Callable, Optional, Sequence

import numpy as np

from rustgrad import _tensorboard as tb
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError
from rustgrad.static._control import group
from rustgrad.static._graph import Graph, Tensor, convert_to_tensor, get_default_graph
from rustgrad.static._ops import identity
from rustgrad.static._session import CompositeFetch, get_default_session

# Also ``Summary`` and ``Event``, TensorBoard's protocol buffer classes, loaded on first use.
__all__ = ["FileWriter", "FileWriterCache", "SUMMARIES", "histogram", "image", "merge", "merge_all", "scalar", "text"]

#: ``tf.GraphKeys.SUMMARIES``: the collection every summary joins unless ``collections`` says otherwise.
SUMMARIES = "summaries"


class SummaryValue(CompositeFetch):
    """A summary in the graph. ``Session.run`` returns its serialized ``Summary`` (``bytes``)."""

    def __init__(self, graph: Graph, name: str, parts: Sequence[Tensor],
                 make: Callable[[list[Any]], list[Any]]) -> None:
        self.graph = graph
        self._name = name
        self._fetch_parts = list(parts)
        self._make = make

    @property
    def name(self) -> str:
        return f"{self._name}:0"

    @property
    def op(self) -> Any:
        return self.graph.get_operation_by_name(self._name)

    def _values(self, fetched: list[Any]) -> list[Any]:
        return self._make(fetched)

    def _from_fetched(self, fetched: list[Any]) -> bytes:
        return tb.summary(self._values(fetched)).SerializeToString()

    def eval(self, feed_dict: Optional[dict] = None, session: Any = None) -> bytes:
        return (session or get_default_session()).run(self, feed_dict=feed_dict)

    def __repr__(self) -> str:
        return f"<rustgrad.static.summary '{self.name}'>"


# Until tf.GraphKeys collections exist (Graph.add_to_collection / get_collection), summaries are kept here.
def summaries_of(graph: Graph, key: str) -> list[SummaryValue]:
    """The summaries in collection ``key`` of ``graph``."""
    return list(graph.get_collection(key))


def _add_to_collections(graph: Graph, value: SummaryValue, collections: Optional[Sequence[str]]) -> None:
    for key in [SUMMARIES] if collections is None else collections:
        graph.add_to_collection(key, value)


def _clean_tag(name: Optional[str]) -> Optional[str]:
    """TF1's ``clean_tag``: characters other than letters, digits, ``_-/.`` become ``_``."""
    if name is None:
        return None
    cleaned = re.sub(r"[^-/\w\.]", "_", str(name)).lstrip("/")
    if cleaned != name:
        warnings.warn(f"Summary name {name} is illegal; using {cleaned} instead.", stacklevel=3)
    return cleaned


def _anchor(graph: Graph, name: str, family: Optional[str], tensor: Optional[Tensor]) -> tuple[str, str]:
    """The summary's node (an Identity of ``tensor``, or a NoOp) and its tag, from the node's unique name."""
    clean_name, clean_family = _clean_tag(name), _clean_tag(family)
    base = clean_name if clean_family is None else f"{clean_family}/{clean_name}"
    op_name = _noop(graph, base) if tensor is None else identity(tensor, name=base).op.name
    return op_name, op_name if clean_family is None else f"{clean_family}/{op_name}"


def _noop(graph: Graph, name: str) -> str:
    """The unique name of a new NoOp node of ``graph``, made by ``tf.group`` so it follows its naming."""
    with graph.as_default():
        return group(name=name).name


def _as_tensor(value: Any, what: str) -> Tensor:
    if isinstance(value, SummaryValue):
        raise ArgumentTypeError(f"tf.summary.{what}: got a summary; pass the graph tensor it summarises")
    return convert_to_tensor(value)


def _undone_on_failure(value: Any) -> Any:
    """A block whose new nodes (a constant made of ``value``, the summary's node) go if it raises."""
    graph = value.graph if isinstance(value, Tensor) else get_default_graph()
    return graph._undo_on_failure()


def _register(graph: Graph, op_name: str, parts: Sequence[Tensor], make: Callable[[list[Any]], list[Any]],
              collections: Optional[Sequence[str]]) -> SummaryValue:
    value = SummaryValue(graph, op_name, parts, make)
    _add_to_collections(graph, value, collections)
    return value


def scalar(name: str, tensor: Any, collections: Optional[Sequence[str]] = None,
           family: Optional[str] = None) -> SummaryValue:
    """A summary of one real number (a tensor of shape ``[]``), shown in TensorBoard's scalars tab."""
    tb.modules("tf.summary.scalar")
    with _undone_on_failure(tensor):
        tensor = _as_tensor(tensor, "scalar")
        if tensor.shape.rank not in (None, 0):
            raise InvalidArgumentError(
                f"tf.summary.scalar '{name}': tags and values not the same shape: [] != {tensor.shape.as_list()} "
                "(a scalar summary takes a tensor of shape []; reduce it, e.g. with tf.reduce_mean)")
        op_name, tag = _anchor(tensor.graph, name, family, tensor)

    def make(fetched: list[Any]) -> list[Any]:
        value = np.asarray(fetched[0])
        if value.size != 1:
            raise InvalidArgumentError(
                f"tf.summary.scalar '{op_name}': tags and values not the same shape: [] != {list(value.shape)}")
        return [tb.scalar_value(tag, value.reshape(()))]

    return _register(tensor.graph, op_name, [tensor], make, collections)


def histogram(name: str, values: Any, collections: Optional[Sequence[str]] = None,
              family: Optional[str] = None) -> SummaryValue:
    """A histogram of all elements of ``values``, with TF1's exponential buckets."""
    tb.modules("tf.summary.histogram")
    with _undone_on_failure(values):
        tensor = _as_tensor(values, "histogram")
        op_name, tag = _anchor(tensor.graph, name, family, tensor)

    def make(fetched: list[Any]) -> list[Any]:
        array = np.asarray(fetched[0], dtype=np.float64)
        if not np.isfinite(array).all():
            raise InvalidArgumentError(f"Nan in summary histogram for: {op_name}")
        return [tb.histogram_value(tag, tb.tf_histogram(array))]

    return _register(tensor.graph, op_name, [tensor], make, collections)


_BAD_COLOR = np.array([255, 0, 0, 255], dtype=np.uint8)


def _image_as_uint8(image: np.ndarray) -> np.ndarray:
    """One HWC image as TF1's image summary encodes it (``NormalizeFloatImage``): uint8 kept; floats
    scaled so the largest value is 255 (no value < 0), or so 0 is 128 and the largest magnitude is
    127 away from it, computed in the image's dtype over the pixels whose channels are all finite;
    other pixels red."""
    if image.dtype == np.uint8:
        return image
    pixel_ok = np.isfinite(image).all(axis=-1)
    values = image[pixel_ok]
    low, high = (float(values.min()), float(values.max())) if values.size else (np.inf, -np.inf)
    if low < 0:
        largest = max(abs(low), abs(high))
        scale, offset = (0.0 if largest < 1e-6 else 127.0 / largest), 128.0
    else:
        scale, offset = (0.0 if high < 1e-6 else 255.0 / high), 0.0
    kind = image.dtype.type
    out = (np.where(pixel_ok[..., None], image, 0) * kind(scale) + kind(offset)).astype(np.uint8)
    out[~pixel_ok] = _BAD_COLOR[: image.shape[-1]]
    return out


def image(name: str, tensor: Any, max_outputs: int = 3, collections: Optional[Sequence[str]] = None,
          family: Optional[str] = None) -> SummaryValue:
    """Up to ``max_outputs`` images of a ``[batch, height, width, channels]`` tensor (channels 1, 3
    or 4; uint8, or floats normalized per image as TF1 does), tagged ``name/image/i``
    (``name/image`` when ``max_outputs`` is 1)."""
    tb.modules("tf.summary.image")
    if int(max_outputs) < 1:
        raise InvalidArgumentError(f"tf.summary.image '{name}': max_outputs must be positive, got {max_outputs}")
    with _undone_on_failure(tensor):
        tensor = _as_tensor(tensor, "image")
        _check_image(name, tensor)
        op_name, tag = _anchor(tensor.graph, name, family, tensor)

    def make(fetched: list[Any]) -> list[Any]:
        batch = np.asarray(fetched[0])
        if batch.ndim != 4 or batch.shape[3] not in (1, 3, 4):
            raise InvalidArgumentError(
                f"Tensor must be 4-D with last dim 1, 3, or 4, not {list(batch.shape)} (summary {op_name})")
        count = min(int(max_outputs), batch.shape[0])
        return [tb.image_value(f"{tag}/image" if max_outputs == 1 else f"{tag}/image/{i}",
                               _image_as_uint8(batch[i])) for i in range(count)]

    return _register(tensor.graph, op_name, [tensor], make, collections)


def _check_image(name: str, tensor: Tensor) -> None:
    shape = tensor.shape
    if shape.rank not in (None, 4) or (shape.rank == 4 and shape[3] not in (None, 1, 3, 4)):
        raise InvalidArgumentError(
            f"tf.summary.image '{name}': Tensor must be 4-D with last dim 1, 3, or 4, not "
            f"{shape.as_list() if shape.rank is not None else 'unknown'}")
    if tensor.dtype.name not in ("uint8", "float32", "float64"):
        raise InvalidArgumentError(
            f"tf.summary.image '{name}': images must be uint8, float32 or float64, not {tensor.dtype.name}")


def text(name: str, tensor: Any, collections: Optional[Sequence[str]] = None) -> SummaryValue:
    """A text summary (TensorBoard's text tab, Markdown) of a string or a list or array of strings."""
    tb.modules("tf.summary.text")
    if isinstance(tensor, Tensor):
        raise InvalidArgumentError(
            f"tf.summary.text '{name}': Expected tensor {tensor.name} to have dtype string, got {tensor.dtype.name}; "
            "rustgrad graph tensors hold numbers, not strings: pass the text as a Python str, or a list or "
            "numpy array of them")
    strings = np.asarray(tensor, dtype=object)
    if not all(isinstance(s, (str, bytes)) for s in strings.reshape(-1)):
        raise InvalidArgumentError(f"tf.summary.text '{name}': Expected strings (a str, or a list or array of them), "
                                   f"got {tensor!r}")
    graph = get_default_graph()
    op_name, tag = _anchor(graph, name, None, None)
    return _register(graph, op_name, [], lambda fetched: [tb.text_value(tag, strings)], collections)


def merge(inputs: Sequence[SummaryValue], collections: Optional[Sequence[str]] = None,
          name: Optional[str] = None) -> SummaryValue:
    """One summary holding the values of all ``inputs``; a tag in two of them is an error at run time."""
    inputs = list(inputs)
    bad = [i for i in inputs if not isinstance(i, SummaryValue)]
    if bad or not inputs:
        raise ArgumentTypeError(
            f"tf.summary.merge: expected a non-empty list of summaries (from tf.summary.scalar, histogram, "
            f"image, text or merge), got {bad[0]!r}" if bad else "tf.summary.merge: got no summaries to merge")
    graph = inputs[0].graph
    if any(i.graph is not graph for i in inputs):
        raise InvalidArgumentError("tf.summary.merge: all summaries must be from the same graph")
    op_name = _noop(graph, f"{name or 'Merge'}/MergeSummary")
    sizes = [len(i._fetch_parts) for i in inputs]

    def make(fetched: list[Any]) -> list[Any]:
        values, tags, start = [], set(), 0
        for item, size in zip(inputs, sizes):
            for value in item._values(fetched[start:start + size]):
                if value.tag and not value.HasField("tensor"):
                    if value.tag in tags:
                        raise InvalidArgumentError(f"Duplicate tag {value.tag} found in summary inputs ({op_name})")
                    tags.add(value.tag)
                values.append(value)
            start += size
        return values

    value = SummaryValue(graph, op_name, [p for i in inputs for p in i._fetch_parts], make)
    if collections:
        _add_to_collections(graph, value, collections)
    return value


def merge_all(key: str = SUMMARIES, scope: Optional[str] = None, name: Optional[str] = None) -> Optional[SummaryValue]:
    """All summaries of collection ``key`` of the default graph merged, or None when there are none.
    ``scope`` keeps those whose name starts with it (a regular expression, as TF1's)."""
    found = summaries_of(get_default_graph(), key)
    if scope is not None:
        found = [s for s in found if re.match(scope, s._name)]
    if not found:
        return None
    return merge(found, name=name)


# ----- writing event files -----


def _graph_def(graph: Graph) -> Any:
    """A ``GraphDef`` of every node: name, op type, inputs by node name, dtype and output shape."""
    nodes = []
    for op in graph.get_operations():
        outputs = op.outputs
        dtype = outputs[0].dtype.name if outputs else None
        shapes = [outputs[0].shape.as_list() if outputs[0].shape.rank is not None else None] if outputs else None
        nodes.append(tb.node_def(op.name, op.type, [t.op.name for t in op.inputs], dtype, shapes))
    return tb.graph_def(nodes)


class FileWriter:
    """Writes summaries and the graph to a TensorBoard event file in ``logdir`` (TF1's ``tf.summary.FileWriter``).

    Events are queued and written in the background: every ``flush_secs`` seconds, when the
    queue holds ``max_queue`` events, and on ``flush()`` and ``close()``.
    """

    def __init__(self, logdir: Any, graph: Any = None, max_queue: int = 10, flush_secs: float = 120,
                 graph_def: Any = None, filename_suffix: Optional[str] = None, session: Any = None) -> None:
        self._logdir = str(logdir)
        self._options = (flush_secs, filename_suffix or "", max_queue)
        self._writer: Optional[tb.EventWriter] = None
        self.reopen()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self) -> str:
        return self._logdir

    def reopen(self) -> None:
        """After ``close()``, starts a new event file in the same logdir."""
        if self._writer is None:
            flush_secs, suffix, max_queue = self._options
            self._writer = tb.EventWriter(self._logdir, flush_secs, suffix, max_queue, "tf.summary.FileWriter")

    def _open_writer(self) -> Optional[tb.EventWriter]:
        if self._writer is None:
            warnings.warn("Attempting to use a closed FileWriter. The operation will be a noop unless the "
                          "FileWriter is explicitly reopened.", stacklevel=3)
        return self._writer

    def add_summary(self, summary: Any, global_step: Optional[int] = None) -> None:
        """Writes a ``Summary``: the bytes ``Session.run`` returns for a summary, or a ``Summary`` proto."""
        if isinstance(summary, SummaryValue):
            raise ArgumentTypeError(
                "FileWriter.add_summary: got the summary op itself; pass what sess.run(summary) returns")
        pb = tb.modules("tf.summary.FileWriter").summary_pb2
        if isinstance(summary, (bytes, bytearray)):
            summary = pb.Summary.FromString(bytes(summary))
        elif not isinstance(summary, pb.Summary):
            raise ArgumentTypeError(
                f"FileWriter.add_summary: expected the bytes of a Summary (from sess.run) or a Summary proto, "
                f"got {type(summary).__name__}")
        writer = self._open_writer()
        if writer is not None:
            writer.add_summary(summary, None if global_step is None else int(global_step))

    def add_graph(self, graph: Any, global_step: Optional[int] = None, graph_def: Any = None) -> None:
        """Writes a graph for TensorBoard's graph tab: a ``Graph`` (``sess.graph``) or a ``GraphDef`` proto."""
        if graph is not None and graph_def is not None:
            raise InvalidArgumentError("FileWriter.add_graph: pass graph or graph_def, not both")
        if isinstance(graph, Graph):
            proto = _graph_def(graph)
        else:
            proto = graph if graph is not None else graph_def
            if type(proto).__name__ != "GraphDef":
                raise ArgumentTypeError(
                    f"FileWriter.add_graph: expected a rustgrad.static.Graph or a GraphDef, got {type(proto).__name__}")
        writer = self._open_writer()
        if writer is not None:
            writer.add_graph_def(proto, None if global_step is None else int(global_step))

    def add_event(self, event: Any) -> None:
        """Writes an ``Event`` proto as it is."""
        writer = self._open_writer()
        if writer is not None:
            writer.add_event(event)

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FileWriterCache:
    """One ``FileWriter`` per logdir, shared (TF1's ``tf.summary.FileWriterCache``)."""

    _cache: dict[str, FileWriter] = {}

    @staticmethod
    def get(logdir: Any) -> FileWriter:
        key = str(logdir)
        if key not in FileWriterCache._cache:
            FileWriterCache._cache[key] = FileWriter(key, graph=get_default_graph())
        return FileWriterCache._cache[key]

    @staticmethod
    def clear() -> None:
        for writer in FileWriterCache._cache.values():
            writer.close()
        FileWriterCache._cache.clear()


def __getattr__(name: str) -> Any:
    """``tf.summary.Summary`` and ``tf.summary.Event``: TensorBoard's protocol buffer classes."""
    if name == "Summary":
        return tb.modules("tf.summary.Summary").summary_pb2.Summary
    if name == "Event":
        return tb.modules("tf.summary.Event").event_pb2.Event
    raise AttributeError(f"module 'rustgrad.static.summary' has no attribute '{name}'")
