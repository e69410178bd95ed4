"""``rustgrad.compile`` (``torch.compile``): an eager function run as a cached, traced program.

The first calls run eagerly while the Rust core records the kernels they run (``rust/compile/``).
Two calls that trace the same program make it an entry of the cache; later calls whose guards
match replay it in one Rust call, with the same kernels on the same values, so the results are
bitwise eager's. Anything the trace cannot replay makes that call, and later calls with the same
guards, run eagerly, with one warning saying why. docs/performance.md ("compile") has the contract.
"""

from __future__ import annotations

import functools
import operator
import os
import sys
import threading
import types
import warnings
from typing import Any, Callable, Optional

from rustgrad import _rustgrad
from rustgrad.errors import ArgumentTypeError, CompileError

__all__ = ["compile", "CompiledFunction"]

#: Most entries (guard sets) one compiled function keeps, as torch's ``cache_size_limit``.
CACHE_SIZE_LIMIT = 8
#: Traces with the same guards that may differ before the call is judged to change every time.
UNSTABLE_LIMIT = 4
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
BACKENDS = ("inductor", "eager")
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_LOG_RECOMPILES = "recompiles" in os.environ.get("RUSTGRAD_LOG", "").split(",")


#: The category of compile's warnings (a call runs eagerly; the message says why).
CompileWarning = UserWarning


class _Trace:
    """One tracing call: whether it may fall back, and whether it is still running."""

    def __init__(self, fullgraph: bool) -> None:
        self.fullgraph = fullgraph
        self.active = True


_tracing = threading.local()


def _current() -> Optional[_Trace]:
    return getattr(_tracing, "trace", None)


def _user_frame() -> Optional[types.FrameType]:
    """The innermost frame outside the rustgrad package."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return frame


def _site(frame: Optional[types.FrameType]) -> str:
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _source_excerpt(frame: Optional[types.FrameType]) -> str:
    if frame is None:
        return ""
    import linecache

    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    code = frame.f_code
    return f'\n\nfrom user code:\n   File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}\n    {line}'


def _data_read(what: str) -> None:
    """Called by the Rust bindings when tensor data reaches Python while tracing."""
    trace = _current()
    frame = _user_frame()
    if trace is not None and trace.fullgraph:
        _rustgrad._compile_stop(f"data-dependent Python: {what}")
        raise CompileError(
            "Data-dependent branching\n"
            f"  Explanation: Detected data-dependent Python ({what}, e.g. `if my_tensor.sum() > 0:` or "
            "`if loss.item() > 1:`). rustgrad.compile does not support tracing dynamic control flow with "
            "fullgraph=True.\n"
            "  Hint: Use rustgrad.where to express it with tensor ops, or compile without fullgraph=True "
            "(the call then runs eagerly, with a warning)." + _source_excerpt(frame)
        )
    _rustgrad._compile_stop(
        f"data-dependent Python control flow: {what} reads a tensor's value into Python at {_site(frame)}"
    )


class _TracedScalar:
    """What ``Tensor.item()`` of a float tensor returns while tracing: the value, plus the slot it came from.

    Returning it is replayable (the value is read out of the replay). Any other use in Python
    (comparisons, arithmetic, formatting, ``float()``, ``math.isnan``) makes the call data-dependent:
    the trace stops. It is deliberately not a ``float`` subclass: C code reads a float subclass's value
    directly, so ``if math.isnan(loss.item()): ...`` would go unnoticed and be baked into the replay.
    """

    __slots__ = ("_value", "_slot", "_trace")

    def __init__(self, value: float, slot: int, trace: Optional[_Trace]) -> None:
        self._value = value
        self._slot = slot
        self._trace = trace

    def __reduce__(self) -> Any:
        return (float, (self._value,))


def _guarded(name: str) -> Callable[..., Any]:
    plain = getattr(float, name)

    def method(self: _TracedScalar, *args: Any) -> Any:
        if self._trace is not None and self._trace.active:
            _data_read(f"a Tensor.item() value used in Python (`{name}`)")
        return plain(self._value, *args)

    method.__name__ = name
    return method


for _name in (
    "__bool__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__add__", "__radd__", "__sub__",
    "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__",
    "__mod__", "__rmod__", "__pow__", "__rpow__", "__neg__", "__pos__", "__abs__", "__float__", "__int__",
    "__round__", "__trunc__", "__floor__", "__ceil__", "__format__", "__str__", "__repr__", "__divmod__",
    "__rdivmod__", "is_integer", "hex", "as_integer_ratio", "conjugate",
):  # fmt: skip
    setattr(_TracedScalar, _name, _guarded(_name))
_TracedScalar.__hash__ = _guarded("__hash__")  # type: ignore[method-assign]


def _traced_item(value: float, slot: int) -> _TracedScalar:
    """Called by ``Tensor.item()`` while tracing."""
    return _TracedScalar(value, slot, _current())


# ----- guards -----


def _value_key(value: Any, feeds: list, keep: dict) -> Any:
    """What a call's behaviour may depend on in an argument or captured value."""
    kind = type(value)
    if kind is float:
        return (float, value.hex())
    if kind in (int, bool, str, type(None)):
        return (kind, value)
    if isinstance(value, _rustgrad.Tensor):
        feeds.append(value)
        return ("tensor", tuple(value.shape), value.dtype, value.requires_grad)
    if kind in (tuple, list):
        return (kind, tuple(_value_key(v, feeds, keep) for v in value))
    if kind is dict:
        return (dict, tuple((k, _value_key(v, feeds, keep)) for k, v in value.items()))
    keep[id(value)] = value
    return ("id", id(value))


def _state_key(value: Any, keep: dict) -> Any:
    """A captured value's guard: numbers by value, optimizers by their hyperparameters, others by identity."""
    kind = type(value)
    if kind is float:
        return (float, value.hex())
    if kind in (int, bool, str, type(None)):
        return (kind, value)
    if isinstance(value, types.ModuleType):
        return "module"
    keep[id(value)] = value
    groups = getattr(value, "param_groups", None)
    if isinstance(groups, list) and kind.__module__.startswith("rustgrad.optim"):
        hyper = tuple(
            tuple((k, _state_key(v, keep) if k != "params" else tuple(map(id, v))) for k, v in g.items())
            for g in groups
        )
        return ("optimizer", id(value), hyper)
    return ("id", id(value))


def _code_names(code: types.CodeType) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _watched(fn: Callable) -> list:
    """Where the function reads captured values: its closure cells and the globals its code names."""
    target = getattr(fn, "__func__", fn)
    code = getattr(target, "__code__", None)
    if code is None:
        return []
    cells = list(zip(code.co_freevars, target.__closure__ or ()))
    glob = getattr(target, "__globals__", {})
    names = sorted(n for n in _code_names(code) if n in glob)
    return [("cell", name, cell) for name, cell in cells] + [("global", name, glob) for name in names]


_NO_KWARGS_KEY = (dict, ())


def _read(kind: str, name: str, where: Any) -> Any:
    if kind == "global":
        return where.get(name)
    try:
        return where.cell_contents
    except ValueError:  # an empty cell
        return None


# ----- the cache -----


class _Entry:
    """The programs traced under one set of guards."""

    def __init__(self) -> None:
        self.programs: list = []
        self.pending: Optional[str] = None
        self.unstable = 0
        self.eager_reason: Optional[str] = None
        self.stopped = 0


def _template(obj: Any, outputs: list) -> Any:
    if isinstance(obj, _TracedScalar):
        outputs.append(obj._slot)
        return ("item", len(outputs) - 1)
    if isinstance(obj, _rustgrad.Tensor):
        if obj.requires_grad and obj.grad_fn is not None:
            raise CompileError(
                "it returns a tensor that requires grad (compile replays no autograd graph; call backward() "
                "inside the compiled function)"
            )
        outputs.append(obj)
        return ("tensor", len(outputs) - 1)
    kind = type(obj)
    if kind in (tuple, list):
        return (kind, [_template(v, outputs) for v in obj])
    if kind is dict:
        return (dict, [(k, _template(v, outputs)) for k, v in obj.items()])
    if obj is None or kind in (int, float, bool, str):
        return ("literal", obj)
    raise CompileError(f"it returns a {kind.__name__}, which compile cannot replay")


def _rebuild(template: Any, outputs: list) -> Any:
    kind, body = template
    if kind == "tensor":
        return outputs[body]
    if kind == "item":
        return outputs[body].item()
    if kind == "literal":
        return body
    if kind is dict:
        return {k: _rebuild(v, outputs) for k, v in body}
    return kind(_rebuild(v, outputs) for v in body)


def _plain(obj: Any) -> Any:
    """The traced call's result with every traced ``item()`` value a plain float."""
    if isinstance(obj, _TracedScalar):
        return obj._value
    kind = type(obj)
    if kind in (tuple, list):
        return kind(_plain(v) for v in obj)
    if kind is dict:
        return {k: _plain(v) for k, v in obj.items()}
    return obj


class CompiledFunction:
    """A function compiled by :func:`rustgrad.compile`; call it as the function."""

    def __init__(self, fn: Callable, *, fullgraph: bool, eager: bool) -> None:
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._fullgraph = fullgraph
        self._eager = eager
        self._entries: dict = {}
        self._watch = _watched(fn)
        self._keep: dict = {}
        self._warned: set = set()
        self._eager_reason: Optional[str] = None
        self._last_reason = ""
        # The captured values of the last call and their guard key; while each is the same object and
        # none is an optimizer (whose hyperparameters can change in place), the key is the same.
        self._last_state: tuple = ((), (), True)
        #: Calls that traced, replayed and ran eagerly without tracing.
        self.stats = {"traced": 0, "replayed": 0, "eager": 0}

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def _where(self) -> str:
        code = getattr(getattr(self._fn, "__func__", self._fn), "__code__", None)
        name = getattr(self._fn, "__name__", type(self._fn).__name__)
        if code is None:
            return f"'{name}'"
        return f"'{name}' ({code.co_filename}:{code.co_firstlineno})"

    def _warn_once(self, reason: str) -> None:
        if reason not in self._warned:
            self._warned.add(reason)
            warnings.warn(f"rustgrad.compile: {self._where()} runs eagerly: {reason}", CompileWarning, stacklevel=3)

    def _eagerly(self, args: tuple, kwargs: dict) -> Any:
        self.stats["eager"] += 1
        return self._fn(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._eager or self._eager_reason is not None or _rustgrad._compile_tracing():
            return self._eagerly(args, kwargs)
        feeds: list = []
        keep = self._keep
        key = (
            _rustgrad.is_grad_enabled(),
            _value_key(args, feeds, keep),
            _value_key(kwargs, feeds, keep) if kwargs else _NO_KWARGS_KEY,
            self._captured_key(keep),
        )
        entry = self._entries.get(key)
        if entry is None:
            if len(self._entries) >= CACHE_SIZE_LIMIT:
                self._hit_limit(self._reason_for(key))
                return self._eagerly(args, kwargs)
            if self._entries and _LOG_RECOMPILES:
                print(f"rustgrad.compile: recompiling {self._where()}: {self._reason_for(key)}", file=sys.stderr)
            entry = self._entries[key] = _Entry()
            self._last_key = key
        if entry.eager_reason is not None:
            return self._eagerly(args, kwargs)
        for program, template in entry.programs:
            outputs = program.run(feeds)
            if outputs is not None:
                self.stats["replayed"] += 1
                return _rebuild(template, outputs)
        return self._trace(entry, feeds, args, kwargs)

    def _captured_key(self, keep: dict) -> tuple:
        values = [_read(kind, name, where) for kind, name, where in self._watch]
        last_values, last_key, recompute = self._last_state
        if not recompute and all(map(operator.is_, values, last_values)):
            return last_key
        key = tuple(_state_key(value, keep) for value in values)
        has_optimizer = any(type(k) is tuple and k[0] == "optimizer" for k in key)
        self._last_state = (values, key, has_optimizer)
        return key

    def _reason_for(self, key: tuple) -> str:
        last = getattr(self, "_last_key", None)
        if last is None:
            return "first call"
        names = ("grad mode", "positional arguments", "keyword arguments", "captured values")
        changed = [n for n, a, b in zip(names, last, key) if a != b]
        return f"{' and '.join(changed) or 'guards'} changed"

    def _hit_limit(self, reason: str) -> None:
        self._eager_reason = "cache size limit"
        warnings.warn(
            f"rustgrad.compile hit the cache size limit ({CACHE_SIZE_LIMIT}); this function runs eagerly from now "
            f"on\n   function: {self._where()}\n   last reason: {reason}\n"
            "To log all recompilation reasons, set RUSTGRAD_LOG=recompiles.",
            CompileWarning,
            stacklevel=3,
        )

    def _trace(self, entry: _Entry, feeds: list, args: tuple, kwargs: dict) -> Any:
        self.stats["traced"] += 1
        trace = _Trace(self._fullgraph)
        _rustgrad._compile_begin(feeds)
        _tracing.trace = trace
        try:
            result = self._fn(*args, **kwargs)
        except BaseException:
            _rustgrad._compile_abort()
            raise
        finally:
            trace.active = False
            _tracing.trace = None
        outputs: list = []
        unsupported = None
        try:
            template = _template(result, outputs)
        except CompileError as e:
            unsupported, outputs = str(e), []
        program, reason = _rustgrad._compile_end(outputs)
        reason = unsupported or reason
        if reason is not None:
            if self._fullgraph:
                raise CompileError(
                    f"Unsupported: {reason}. With fullgraph=True rustgrad.compile raises instead of running the "
                    "function eagerly (this call has run eagerly)."
                )
            # A first call may differ (state made lazily inside it): one more trace before giving up.
            entry.stopped += 1
            if entry.stopped >= 2:
                entry.eager_reason = reason
                self._warn_once(reason)
            return _plain(result)
        signature = program.signature + repr(template)
        if entry.pending == signature:
            entry.programs.append((program, template))
            entry.pending = None
        else:
            entry.pending = signature
            entry.unstable += 1
            if entry.unstable > UNSTABLE_LIMIT:
                entry.eager_reason = (
                    f"its trace changed on each of {entry.unstable} calls with the same guards: a Python number "
                    "baked into the step (a step count, a learning rate computed in Python) changes between "
                    "calls, or the step changes Python state; hold such numbers in tensors"
                )
                self._warn_once(entry.eager_reason)
        return _plain(result)


def compile(
    model: Optional[Callable] = None,
    *,
    fullgraph: bool = False,
    dynamic: Optional[bool] = None,
    backend: Any = "inductor",
    mode: Optional[str] = None,
    options: Optional[dict] = None,
    disable: bool = False,
) -> Any:
    """Compiles ``model`` (a function or any callable) into a cached, traced program; as ``torch.compile``.

    The first calls run eagerly and are traced; once two calls trace the same program, calls with matching
    guards (the tensor arguments' shapes, dtypes and ``requires_grad``, Python numbers among the arguments,
    closure cells and globals by value, other captured objects by identity, optimizer hyperparameters, grad
    mode, the ``.grad`` state of the leaves it touches) replay it in one Rust call, bitwise equal to eager.
    What cannot be replayed (data-dependent Python such as ``if loss.item() > 1``, random ops, hooks,
    ``numpy()``) runs eagerly with one ``UserWarning``, or raises :class:`rustgrad.errors.CompileError`
    with ``fullgraph=True``. ``mode`` is accepted for torch compatibility and changes nothing: every mode gives
    the same plan. ``dynamic`` is accepted; shapes are always specialized (a new shape re-traces).
    ``backend="eager"`` runs the function uncompiled; ``disable=True`` returns it unchanged.
    """
    if mode is not None and options is not None:
        raise CompileError("Either options or mode can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in MODES:
        raise CompileError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    if not (isinstance(backend, str) and backend in BACKENDS):
        raise CompileError(
            f"Invalid backend: {backend!r}, see `rustgrad.compile`'s documentation for available backends: "
            + ", ".join(repr(b) for b in BACKENDS)
        )

    def wrap(fn: Callable) -> Any:
        if not callable(fn):
            raise ArgumentTypeError(f"compile(): expected a callable to compile, got {type(fn).__name__}")
        if disable:
            return fn
        return CompiledFunction(fn, fullgraph=bool(fullgraph), eager=backend == "eager")

    return wrap if model is None else wrap(model)
