"""``SummaryWriter`` (``rustgrad.utils.tensorboard``), with torch's methods and defaults."""

from __future__ import annotations

import os
import socket
from datetime import datetime
from typing import Any, Optional

import numpy as np

from rustgrad import _tensorboard as tb
from rustgrad._rustgrad import AccumulateGrad
from rustgrad._rustgrad import Tensor as EagerTensor
from rustgrad.errors import ArgumentTypeError, GradientError, InvalidArgumentError, ShapeError


def _numpy(value: Any) -> np.ndarray:
    if isinstance(value, EagerTensor):
        return value.detach().numpy()
    return np.asarray(value)


def default_log_dir(comment: str = "") -> str:
    """torch's default: ``runs/<Mon DD_HH-MM-SS>_<hostname><comment>``."""
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")


_LAYOUTS = {"CHW": (0, 1, 2), "HWC": (2, 0, 1), "HW": None}


def _image_hwc(img: Any, dataformats: str) -> np.ndarray:
    """An image as HWC with 1, 3 or 4 channels (torch's ``convert_to_HWC``, for one image)."""
    array = _numpy(img)
    layout = dataformats.upper()
    if layout not in _LAYOUTS:
        raise InvalidArgumentError(f"add_image: dataformats must be one of {sorted(_LAYOUTS)}, got {dataformats!r}")
    if array.ndim != len(layout):
        raise ShapeError(f"add_image: an image of dataformats {dataformats!r} must have {len(layout)} dims, "
                         f"got shape {list(array.shape)}")
    if layout == "HW":
        array = array[:, :, None]
    else:
        array = np.transpose(array, [layout.index(c) for c in "HWC"])
    if array.shape[2] not in (1, 3, 4):
        raise ShapeError(f"add_image: an image needs 1, 3 or 4 channels, got {array.shape[2]} "
                         f"(shape {list(_numpy(img).shape)}, dataformats {dataformats!r})")
    return array


def _grid_hwc(batch: Any, dataformats: str) -> np.ndarray:
    """A batch of images tiled row by row, 8 to a row, as one HWC image (torch's ``make_grid``);
    one-channel images become gray RGB."""
    array = _numpy(batch)
    layout = dataformats.upper()
    if layout not in ("NCHW", "NHWC"):
        raise InvalidArgumentError(f"add_images: dataformats must be 'NCHW' or 'NHWC', got {dataformats!r}")
    if array.ndim != 4:
        raise ShapeError(f"add_images: a batch of images needs 4 dims ({layout}), got shape {list(array.shape)}")
    if layout == "NCHW":
        array = np.transpose(array, (0, 2, 3, 1))
    if array.shape[3] == 1:
        array = np.repeat(array, 3, axis=3)
    count, height, width, channels = array.shape
    if count == 0 or channels not in (3, 4):
        raise ShapeError(f"add_images: needs at least one image with 1, 3 or 4 channels, got shape "
                         f"{list(_numpy(batch).shape)} ({layout})")
    columns = min(count, 8)
    rows = -(-count // columns)
    grid = np.zeros((rows * height, columns * width, channels), dtype=array.dtype)
    for i in range(count):
        row, column = divmod(i, columns)
        grid[row * height:(row + 1) * height, column * width:(column + 1) * width] = array[i]
    return grid


def _as_uint8(hwc: np.ndarray) -> np.ndarray:
    """torch's rule: uint8 images are kept, other images are taken to lie in [0, 1] and scaled by 255."""
    if hwc.dtype == np.uint8:
        return hwc
    return (hwc.astype(np.float32) * 255).clip(0, 255).astype(np.uint8)


class SummaryWriter:
    """Writes TensorBoard event files in ``log_dir`` (default ``runs/<date>_<hostname><comment>``),
    as ``torch.utils.tensorboard.SummaryWriter``. Use as a context manager, or call ``close()``.
    With ``purge_step``, TensorBoard hides the events of earlier runs in ``log_dir`` from that step on."""

    def __init__(self, log_dir: Optional[Any] = None, comment: str = "", purge_step: Optional[int] = None,
                 max_queue: int = 10, flush_secs: float = 120, filename_suffix: str = "") -> None:
        tb.modules("SummaryWriter")
        self.log_dir = str(log_dir) if log_dir else default_log_dir(comment)
        self._options = (flush_secs, filename_suffix, max_queue)
        self._writer: Optional[tb.EventWriter] = self._new_writer(self.log_dir)
        self._scalars_writers: dict[str, tb.EventWriter] = {}
        if purge_step is not None:
            # As torch's: TensorBoard hides the events of earlier runs from this step on.
            self._writer.add_session_start(int(purge_step))

    def _new_writer(self, log_dir: str) -> tb.EventWriter:
        flush_secs, suffix, max_queue = self._options
        return tb.EventWriter(log_dir, flush_secs, suffix, max_queue, "SummaryWriter")

    def get_logdir(self) -> str:
        return self.log_dir

    def _file_writer(self) -> tb.EventWriter:
        if self._writer is None:  # torch reopens a closed writer on the next write
            self._writer = self._new_writer(self.log_dir)
        return self._writer

    def _write(self, value: Any, global_step: Optional[int], walltime: Optional[float]) -> None:
        step = None if global_step is None else int(global_step)
        self._file_writer().add_summary(tb.summary([value]), step, walltime)

    def add_scalar(self, tag: str, scalar_value: Any, global_step: Optional[int] = None,
                   walltime: Optional[float] = None, new_style: bool = False, double_precision: bool = False) -> None:
        """One number (a Python number, or a tensor or array of one element), written as TensorBoard's
        float32 ``simple_value``; ``new_style`` and ``double_precision`` are accepted for torch's signature."""
        self._write(tb.scalar_value(tag, _scalar(tag, scalar_value)), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step: Optional[int] = None,
                    walltime: Optional[float] = None) -> None:
        """Several numbers on one chart: each key is written under tag ``main_tag`` to its own run,
        the folder ``<log_dir>/<main_tag>_<key>``, as torch does."""
        for key, value in tag_scalar_dict.items():
            folder = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{key}")
            if folder not in self._scalars_writers:
                self._scalars_writers[folder] = self._new_writer(folder)
            step = None if global_step is None else int(global_step)
            proto = tb.summary([tb.scalar_value(main_tag, _scalar(main_tag, value))])
            self._scalars_writers[folder].add_summary(proto, step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: Optional[int] = None, bins: Any = "tensorflow",
                      walltime: Optional[float] = None, max_bins: Optional[int] = None) -> None:
        """A histogram of all elements of ``values``; ``bins`` as ``np.histogram`` takes it, or
        ``'tensorflow'`` for TF's exponential buckets (torch's default); with ``max_bins``, runs of
        buckets are summed so that at most about that many remain (as torch's)."""
        array = _numpy(values).astype(np.float64).reshape(-1)
        if isinstance(bins, str) and bins == "tensorflow":
            bins = tb.torch_default_bins()
        if array.size and not np.isfinite(array).all():
            raise InvalidArgumentError(f"add_histogram '{tag}': the values hold NaN or infinity")
        self._write(tb.histogram_value(tag, tb.numpy_histogram(array, bins, max_bins)), global_step, walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: Optional[int] = None,
                  walltime: Optional[float] = None, dataformats: str = "CHW") -> None:
        """One image (``dataformats`` ``'CHW'``, ``'HWC'`` or ``'HW'``); uint8 values are kept, others
        are taken to be in [0, 1] (as torch's)."""
        self._write(tb.image_value(tag, _as_uint8(_image_hwc(img_tensor, dataformats))), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: Optional[int] = None,
                   walltime: Optional[float] = None, dataformats: str = "NCHW") -> None:
        """A batch of images (``'NCHW'`` or ``'NHWC'``) as one grid image, 8 per row (torch's ``make_grid``)."""
        self._write(tb.image_value(tag, _as_uint8(_grid_hwc(img_tensor, dataformats))), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: Optional[int] = None,
                 walltime: Optional[float] = None) -> None:
        """Markdown text, under tag ``<tag>/text_summary`` as torch writes it."""
        if not isinstance(text_string, (str, bytes)):
            raise ArgumentTypeError(f"add_text '{tag}': expected a str, got {type(text_string).__name__}")
        self._write(tb.text_value(f"{tag}/text_summary", np.array([text_string], dtype=object)), global_step, walltime)

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """The graph of one forward pass of ``model`` on ``input_to_model`` (a tensor or a tuple of
        them), read from the autograd graph it records (``grad_fn``/``next_functions``): only ops that
        record a gradient show. ``verbose`` and ``use_strict_trace`` are accepted for torch's signature."""
        self._file_writer().add_graph_def(trace_graph_def(model, input_to_model))

    def flush(self) -> None:
        for writer in [self._writer, *self._scalars_writers.values()]:
            if writer is not None:
                writer.flush()

    def close(self) -> None:
        for writer in [self._writer, *self._scalars_writers.values()]:
            if writer is not None:
                writer.close()
        self._writer = None
        self._scalars_writers = {}

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _scalar(tag: str, value: Any) -> float:
    array = _numpy(value)
    if array.size != 1:
        raise ShapeError(f"add_scalar '{tag}': expected one number, got a value of shape {list(array.shape)}")
    if array.dtype.kind not in "biuf":
        raise ArgumentTypeError(f"add_scalar '{tag}': expected a number, got {value!r}")
    return float(array.reshape(()))


# ----- the graph of a forward pass -----


def trace_graph_def(model: Any, input_to_model: Any) -> Any:
    """A ``GraphDef`` of one forward pass, read from the autograd graph it records: one node per
    backward node (op type its op, scoped by the innermost module whose output it is), a node per
    parameter (named by its module path) and per floating input, and one ``output`` node per output.
    Only what autograd records shows: ops on values that need no gradient (integer inputs, buffers)
    are left out."""
    import rustgrad

    inputs = input_to_model if isinstance(input_to_model, (tuple, list)) else (input_to_model,)
    if input_to_model is None or not all(isinstance(t, EagerTensor) for t in inputs):
        raise ArgumentTypeError(
            "add_graph: input_to_model must be a rustgrad tensor or a tuple of them (the graph is traced "
            f"from one forward pass), got {type(input_to_model).__name__}")
    traced = [t.detach().requires_grad_(True) if t.dtype.is_floating else t for t in inputs]
    depths: dict[Any, tuple[int, str]] = {}
    handles = _record_module_scopes(model, depths)
    try:
        with rustgrad.enable_grad():
            outputs = model(*traced)
    finally:
        for handle in handles:
            handle.remove()
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    leaves = {t.data_ptr(): f"input/input.{i}" for i, t in enumerate(traced) if t.requires_grad}
    for name, param in model.named_parameters():
        leaves.setdefault(param.data_ptr(), f"{type(model).__name__}/{name.replace('.', '/')}")
    scopes = {fn: label for fn, (_, label) in depths.items()}
    return tb.graph_def(_Tracer(leaves, scopes).nodes(outputs))


def _record_module_scopes(model: Any, scopes: dict[Any, tuple[int, str]]) -> list[Any]:
    """Forward hooks that map the grad_fn of each module's output to (depth, the module's path);
    the innermost module wins."""
    handles = []
    for path, module in model.named_modules():
        label = f"{type(model).__name__}/{path.replace('.', '/')}" if path else type(model).__name__
        depth = path.count(".") + 1 if path else 0

        def hook(_module: Any, _args: Any, output: Any, label: str = label, depth: int = depth) -> None:
            for out in output if isinstance(output, (tuple, list)) else (output,):
                fn = getattr(out, "grad_fn", None)
                if fn is not None and (fn not in scopes or scopes[fn][0] < depth):
                    scopes[fn] = (depth, label)

        handles.append(module.register_forward_hook(hook))
    return handles


class _Tracer:
    def __init__(self, leaves: dict[int, str], scopes: dict[Any, str]) -> None:
        self.leaves = leaves
        self.scopes = scopes
        self.names: dict[Any, str] = {}
        self.used: set[str] = set()
        self.out: list[Any] = []

    def _unique(self, name: str) -> str:
        candidate, i = name, 0
        while candidate in self.used:
            i += 1
            candidate = f"{name}_{i}"
        self.used.add(candidate)
        return candidate

    def _leaf(self, acc: Any) -> str:
        tensor = acc.variable
        key = ("leaf", tensor.data_ptr(), tuple(tensor.shape))
        if key not in self.names:
            label = self.leaves.get(tensor.data_ptr(), "leaf")
            kind = "IO Node" if label.startswith("input/") else "Parameter"
            self.names[key] = self._unique(label)
            self.out.append(tb.node_def(self.names[key], kind, [], tensor.dtype.name, [list(tensor.shape)]))
        return self.names[key]

    def _function(self, fn: Any) -> str:
        if fn in self.names:
            return self.names[fn]
        stack = [fn]
        while stack:  # depth first, so each node follows its inputs
            top = stack[-1]
            pending = [c for c, _ in top.next_functions
                       if c is not None and not isinstance(c, AccumulateGrad) and c not in self.names]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            if top in self.names:
                continue
            inputs = [self._leaf(c) if isinstance(c, AccumulateGrad) else self.names[c]
                      for c, _ in top.next_functions if c is not None]
            scope = self.scopes.get(top)
            name = self._unique(f"{scope}/{top.op_name}" if scope else top.op_name)
            self.names[top] = name
            self.out.append(tb.node_def(name, top.op_name, inputs, None, [list(s) for s in top.output_shapes]))
        return self.names[fn]

    def nodes(self, outputs: Any) -> list[Any]:
        traced = False
        for i, out in enumerate(outputs):
            if not isinstance(out, EagerTensor):
                continue
            source = []
            if out.grad_fn is not None:
                source = [self._function(out.grad_fn)]
                traced = True
            self.out.append(tb.node_def(self._unique(f"output/output.{i}"), "IO Node", source,
                                        out.dtype.name, [list(out.shape)]))
        if not traced:
            raise GradientError(
                "add_graph: the forward pass recorded no autograd graph, so there is nothing to trace: the "
                "model needs a parameter or floating input that requires grad, and must not run under no_grad")
        return self.out
