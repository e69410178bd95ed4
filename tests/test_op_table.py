"""The op table (rust/ops/): every op is on both fronts under all its names, is in the stubs and
the API docs, the generated files are current, and each op's values and gradients are right.

Each unary op needs an entry in ``UNARY_REFERENCES``: its numpy reference and where its
gradient is checked. Each other op needs a ``TableReference`` in a ``tests/references_*.py``
module (see ``tests/_op_reference.py``). A test fails when an op of the table has none,
so a new op cannot ship untested.
"""

from __future__ import annotations

import importlib
import math
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from _op_reference import TableReference, torch_spelling
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_property_ops import (
    LAYOUTS,
    any_arrays,
    assert_same,
    check_grad,
    evaluate,
    f64_then,
    float_arrays,
    relayout,
    shapes,
)

import rustgrad
import rustgrad.static as tf
from rustgrad._rustgrad import ops

ROOT = Path(__file__).resolve().parent.parent
MODES = ["eager", "static"]


@dataclass(frozen=True)
class UnaryReference:
    numpy: Callable[[np.ndarray], np.ndarray]
    grad_lo: float = -2.0
    grad_hi: float = 2.0
    # Points where the op is not differentiable (or steps): gradient inputs stay 0.01 away.
    kinks: Callable[[float], bool] = lambda x: False


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _near_half_integer(x: float) -> bool:
    return abs(2 * x - round(2 * x)) < 0.02


UNARY_REFERENCES: dict[str, UnaryReference] = {
    "neg": UnaryReference(np.negative),
    "abs": UnaryReference(np.abs, kinks=lambda x: abs(x) < 0.01),
    "exp": UnaryReference(np.exp),
    "exp2": UnaryReference(np.exp2),
    "expm1": UnaryReference(np.expm1),
    "log": UnaryReference(np.log, 0.2, 3.0),
    "log1p": UnaryReference(np.log1p, -0.5, 3.0),
    "log2": UnaryReference(np.log2, 0.2, 3.0),
    "log10": UnaryReference(np.log10, 0.2, 3.0),
    "sqrt": UnaryReference(np.sqrt, 0.2, 3.0),
    "rsqrt": UnaryReference(lambda x: 1 / np.sqrt(x), 0.2, 3.0),
    "reciprocal": UnaryReference(np.reciprocal, 0.3, 3.0),
    "square": UnaryReference(np.square),
    "sin": UnaryReference(np.sin),
    "cos": UnaryReference(np.cos),
    "tan": UnaryReference(np.tan, -1.2, 1.2),
    "asin": UnaryReference(np.arcsin, -0.9, 0.9),
    "acos": UnaryReference(np.arccos, -0.9, 0.9),
    "atan": UnaryReference(np.arctan),
    "sinh": UnaryReference(np.sinh),
    "cosh": UnaryReference(np.cosh),
    "tanh": UnaryReference(np.tanh),
    "asinh": UnaryReference(np.arcsinh),
    "acosh": UnaryReference(np.arccosh, 1.2, 3.0),
    "atanh": UnaryReference(np.arctanh, -0.9, 0.9),
    "sigmoid": UnaryReference(lambda x: 1 / (1 + np.exp(-x))),
    "relu": UnaryReference(lambda x: np.maximum(x, 0), kinks=lambda x: abs(x) < 0.01),
    "erf": UnaryReference(_erf),
    "sign": UnaryReference(np.sign, kinks=lambda x: abs(x) < 0.01),
    "floor": UnaryReference(np.floor, kinks=_near_half_integer),
    "ceil": UnaryReference(np.ceil, kinks=_near_half_integer),
    "round": UnaryReference(np.round, kinks=_near_half_integer),
    "trunc": UnaryReference(np.trunc, kinks=_near_half_integer),
    "silu": UnaryReference(lambda x: x / (1 + np.exp(-x))),
    "selu": UnaryReference(lambda x: 1.0507009873554804934193349852946
                           * np.where(x > 0, x, 1.6732632423543772848170429916717 * np.expm1(x)),
                           kinks=lambda x: abs(x) < 0.01),
    "relu6": UnaryReference(lambda x: np.where(x < 0, 0.0, np.where(x > 6, 6.0, x)), -1.0, 7.0,
                            kinks=lambda x: abs(x) < 0.01 or abs(x - 6) < 0.01),
    "logsigmoid": UnaryReference(lambda x: -np.logaddexp(0.0, -x)),
}

UNARY = [spec for spec in ops.values() if spec.kind == "unary"]
TABLE = [spec for spec in ops.values() if spec.kind == "table"]


def _collect_references() -> dict[str, TableReference]:
    """Every ``REFERENCES`` of the ``tests/references_*.py`` modules; an op in two of them is an error."""
    merged: dict[str, TableReference] = {}
    for path in sorted(Path(__file__).parent.glob("references_*.py")):
        module = importlib.import_module(path.stem)
        for name, reference in module.REFERENCES.items():
            assert name not in merged, f"{name} has references in two modules (the second is {path.name})"
            merged[name] = reference
    return merged


TABLE_REFERENCES = _collect_references()


def _resolve(root: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        root = getattr(root, part)
    return root


def _tf_names(spec: Any) -> list[str]:
    """The op's names in rustgrad.static (``nn.relu(features)`` is ``nn.relu``)."""
    return [name.split("(")[0] for name in spec.tf] or [spec.name]


# ---------------------------------------------------------------- the table reaches everything


def test_every_unary_op_has_a_numpy_reference():
    assert sorted(UNARY_REFERENCES) == sorted(spec.name for spec in UNARY)


def test_every_op_with_arguments_has_a_numpy_reference():
    assert sorted(TABLE_REFERENCES) == sorted(spec.name for spec in TABLE)


def _eager(name: str) -> Callable[..., Any]:
    """An op's torch function: ``rustgrad.NAME``, or ``F.NAME`` for ops torch offers only there."""
    function = getattr(rustgrad, name, None)
    return function if function is not None else getattr(rustgrad.nn.functional, name)


# Functions of ``nn.functional`` written by hand over table ops (they take torch's extra arguments).
_HAND_WRITTEN_FUNCTIONAL = {"one_hot", "pad"}


def _has_method(spec: Any) -> bool:
    return not spec.inputs[0][2] and spec.torch_front[1]  # ops on a list of tensors are functions only


@pytest.mark.parametrize("spec", list(ops.values()), ids=lambda s: s.name)
def test_every_op_is_on_both_fronts_under_all_its_names(spec):
    function, method, functional, in_place = spec.torch_front
    assert function or functional, "an op must have a torch function"
    assert not in_place or _has_method(spec), "an in-place method needs the op to be a method"
    for name in [spec.name, *spec.torch_aliases]:
        assert not in_place or callable(getattr(rustgrad.Tensor, f"{name}_", None)), f"{name}_"
        assert (name in rustgrad.__all__) == function, name
        assert (name in rustgrad.nn.functional.__all__) == functional or name in _HAND_WRITTEN_FUNCTIONAL, name
        assert callable(_eager(name)), name
        assert _has_method(spec) == hasattr(rustgrad.Tensor, name), name
        assert _has_method(spec) == hasattr(tf.Tensor, name), name
    for dotted in _tf_names(spec):
        namespace, _, name = dotted.rpartition(".")
        module = _resolve(tf, namespace) if namespace else tf
        assert name in module.__all__, dotted
        assert callable(getattr(module, name)), dotted


@pytest.mark.parametrize("spec", list(ops.values()), ids=lambda s: s.name)
def test_every_op_is_in_the_stubs_and_the_api_docs(spec):
    stub = (ROOT / "python" / "rustgrad" / "_rustgrad.pyi").read_text(encoding="utf-8")
    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    for name in [spec.name, *spec.torch_aliases]:
        assert not _has_method(spec) or re.search(rf"    def {name}\(\s*self", stub), name
        first = spec.torch_order[0] if spec.torch_order else spec.inputs[0][0]
        module = "rustgrad" if spec.torch_front[0] else "rustgrad.nn.functional"
        assert f"### `{module}.{name}({first}" in api, name
    for dotted in _tf_names(spec):
        assert f"`rustgrad.static.{dotted}(" in api, dotted
    assert f"| `{spec.name}` |" in api, "missing from the op table in docs/api.md"


def test_ops_without_a_tf1_name_are_documented_as_extensions():
    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    for spec in ops.values():
        row = next(line for line in api.splitlines() if line.startswith(f"| `{spec.name}` |"))
        if not spec.tf:
            assert "extension" in row, row


def test_contributing_walks_through_the_real_sin_entry_and_test():
    """docs/contributing.md quotes the table entry and the test entry; they must be the real ones."""
    guide = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    rust_entry = guide.split("```rust\n")[1].split("```")[0]
    test_entry = guide.split("```text\n")[1].split("```")[0]
    assert rust_entry in (ROOT / "rust" / "ops" / "unary.rs").read_text(encoding="utf-8")
    assert test_entry in Path(__file__).read_text(encoding="utf-8")


def test_generated_files_are_current():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "generate.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_op_names_itself_in_the_graph_and_on_the_tape():
    x = rustgrad.tensor([0.5], requires_grad=True)
    assert rustgrad.sin(x).grad_fn.name() == "SinBackward0"
    with tf.Graph().as_default():
        assert tf.math.log1p(tf.constant([1.0])).name == "Log1p:0"
        assert tf.nn.relu(features=tf.constant([1.0])).name == "Relu:0"


def test_a_non_tensor_argument_names_the_op():
    with pytest.raises(rustgrad.errors.ArgumentTypeError, match="sin: argument 'input' must be a Tensor, got float"):
        rustgrad.sin(0.5)


def test_a_bool_tensor_is_refused_with_the_op_name_by_an_op_that_keeps_integers():
    # Float ops compute a bool tensor in float32, as torch; abs, neg, sign, square and relu
    # keep an integer dtype and have no bool kernel.
    assert rustgrad.tensor([True]).cos().dtype is rustgrad.float32
    with pytest.raises(rustgrad.errors.DTypeError, match="abs: expected an integer tensor but got bool"):
        rustgrad.tensor([True]).abs()


# ---------------------------------------------------------------- values and gradients


def _all_names(spec: Any, mode: str) -> list[Callable[[Any], Any]]:
    if mode == "eager":
        names = [spec.name, *spec.torch_aliases]
        methods = [lambda t, name=name: getattr(t, name)() for name in names] if _has_method(spec) else []
        return [_eager(name) for name in names] + methods
    tensor_method = [lambda t: getattr(t, spec.name)()] if _has_method(spec) else []
    return [_resolve(tf, dotted) for dotted in _tf_names(spec)] + tensor_method


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("spec", UNARY, ids=lambda s: s.name)
@given(data=st.data())
def test_unary_values_match_numpy(spec, mode, data):
    ref_in, given_in = data.draw(any_arrays())
    fn = data.draw(st.sampled_from(_all_names(spec, mode)))
    # Computed in float64 and rounded: what a correctly rounded float32 kernel gives.
    expected = f64_then(ref_in.dtype, UNARY_REFERENCES[spec.name].numpy, ref_in)
    tolerance = {"rtol": 2e-6, "atol": 1e-30} if ref_in.dtype == np.float32 else {"rtol": 1e-13, "atol": 1e-300}
    assert_same(evaluate(mode, data, fn, [given_in]), expected, ref_in.dtype, **tolerance)


def _grad_points(reference: UnaryReference) -> st.SearchStrategy:
    return st.floats(reference.grad_lo, reference.grad_hi).filter(lambda x: not reference.kinks(x))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("spec", UNARY, ids=lambda s: s.name)
@given(data=st.data())
def test_unary_gradients_match_finite_differences(spec, mode, data):
    reference = UNARY_REFERENCES[spec.name]
    shape = data.draw(shapes(max_dims=3, max_side=2))
    a = data.draw(hnp.arrays(np.float64, shape, elements=_grad_points(reference)))
    eager = _eager(spec.name)
    static = _resolve(tf, _tf_names(spec)[0])
    check_grad(mode, eager, static, reference.numpy, [a])


@pytest.mark.parametrize("spec", UNARY, ids=lambda s: s.name)
def test_unary_ops_read_strided_views(spec):
    base = np.linspace(0.3, 0.9, 24).reshape(4, 6)
    view = rustgrad.tensor(base).t()[1:, ::2]
    with np.errstate(invalid="ignore"):  # acosh is NaN below 1, on both sides
        expected = UNARY_REFERENCES[spec.name].numpy(base.T[1:, ::2].astype(np.float32).astype(np.float64))
    np.testing.assert_allclose(_eager(spec.name)(view).numpy(), expected.astype(np.float32), rtol=2e-6)


def _list_op(spec: Any) -> bool:
    return spec.inputs[0][2]


def _call(spec: Any, function: Callable[..., Any], kwargs: dict, by_name: bool = False) -> Callable[..., Any]:
    """``function`` taking the inputs as separate arguments, as ``evaluate`` and ``check_grad`` pass them.
    ``by_name``: the inputs after the first go by their torch names (for an op whose torch signature
    puts a param between tensors, such as ``gather(input, dim, index)``)."""
    if any(name.startswith("*") for name in spec.torch_order):  # einsum(equation, *operands)
        rest = dict(kwargs)
        leading = [rest.pop(name) for name in spec.torch_order if name in rest]
        return lambda *tensors: function(*leading, *tensors, **rest)
    if _list_op(spec):
        return lambda *tensors: function(list(tensors), **kwargs)
    if by_name and spec.torch_order:
        names = [torch for torch, _, _ in spec.inputs[1:]]
        return lambda first, *rest: function(first, **dict(zip(names, rest)), **kwargs)
    return lambda *tensors: function(*tensors, **kwargs)


def _with_indices(function: Callable[..., Any], indices: dict, make: Callable[[Any], Any]) -> Callable[..., Any]:
    """``function`` of all the op's inputs as a function of its data inputs: the index inputs
    (``TableReference.indices``) are made by ``make`` and put in their places."""
    if not indices:
        return function

    def call(*data_inputs: Any, **kwargs: Any) -> Any:
        rest = iter(data_inputs)
        every = [make(indices[i]) if i in indices else next(rest) for i in range(len(data_inputs) + len(indices))]
        return function(*every, **kwargs)

    return call


def _index_maker(mode: str) -> Callable[[np.ndarray], Any]:
    return rustgrad.tensor if mode == "eager" else tf.constant


def _draw_inputs(data: Any, reference: TableReference, shapes: list) -> list[tuple[np.ndarray, np.ndarray]]:
    if reference.draw_inputs is not None:
        return reference.draw_inputs(data, shapes)
    if reference.bool_inputs:
        arrays = [data.draw(hnp.arrays(np.bool_, shape)) for shape in shapes]
        return [(a, relayout(a, data.draw(st.sampled_from(LAYOUTS)))) for a in arrays]
    if len(shapes) == 1 and reference.integer_inputs:
        return [data.draw(any_arrays(shape=shapes[0]))]
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    return [data.draw(float_arrays(shape=shape, dtype=dtype)) for shape in shapes]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("spec", TABLE, ids=lambda s: s.name)
@given(data=st.data())
def test_ops_with_arguments_match_numpy(spec, mode, data):
    reference = TABLE_REFERENCES[spec.name]
    shapes_in = reference.shapes(data)
    pairs = _draw_inputs(data, reference, shapes_in)
    kwargs = reference.torch_args(data, shapes_in)
    numpy_reference = reference.numpy
    indices = reference.indices(data, shapes_in, kwargs) if reference.indices else {}
    if mode == "eager":
        name = data.draw(st.sampled_from([spec.name, *spec.torch_aliases]))
        as_method = _has_method(spec) and data.draw(st.booleans())
        fn = _call(spec, (lambda first, *rest, **kw: getattr(first, name)(*rest, **kw)) if as_method else
                   _eager(name), kwargs, by_name=True)
        expected_kwargs = kwargs
    else:
        tf_kwargs = reference.tf_args(data, kwargs)
        function = _resolve(tf, data.draw(st.sampled_from(_tf_names(spec))))
        if not _has_method(spec) or data.draw(st.booleans()):
            fn, expected_kwargs = _call(spec, function, tf_kwargs), torch_spelling(tf_kwargs)
            numpy_reference = reference.tf_numpy or numpy_reference
        else:
            method = _call(spec, lambda first, *rest, **kw: getattr(first, spec.name)(*rest, **kw), kwargs, True)
            fn, expected_kwargs = method, kwargs
    fn = _with_indices(fn, indices, _index_maker(mode))
    dtype = pairs[0][0].dtype if pairs else np.dtype(np.float64)
    with np.errstate(all="ignore"):
        wide = [r.astype(np.float64) if reference.reference_in_float64 else r for r, _ in pairs]
        expected = np.asarray(_with_indices(numpy_reference, indices, lambda a: a)(*wide, **expected_kwargs))
    got = evaluate(mode, data, fn, [given for _, given in pairs])
    result_dtype = np.dtype(reference.result_dtype or dtype)
    with np.errstate(over="ignore"):  # what overflows float32 is inf there too
        expected = expected.astype(result_dtype)
    if result_dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected, strict=True)
        return
    tolerance = reference.float32_tolerance if dtype == np.float32 else 1e-12
    assert_same(got, expected, result_dtype, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("spec", [spec for spec in TABLE if spec.differentiable], ids=lambda s: s.name)
@given(data=st.data())
def test_ops_with_arguments_have_gradients_matching_finite_differences(spec, mode, data):
    reference = TABLE_REFERENCES[spec.name]
    shapes_in = reference.shapes(data)
    bound = reference.grad_bound
    if reference.grad_inputs is not None:
        arrays = reference.grad_inputs(data, shapes_in)
    else:
        elements = st.floats(-bound, bound) if reference.grad_elements is None else reference.grad_elements
        arrays = [data.draw(hnp.arrays(np.float64, shape, elements=elements)) for shape in shapes_in]
    assume(sum(a.size for a in arrays) <= 40)  # finite differences cost one evaluation per element
    kwargs = reference.torch_args(data, shapes_in)
    indices = reference.indices(data, shapes_in, kwargs) if reference.indices else {}
    if mode == "eager":
        eager = _call(spec, _eager(spec.name), kwargs, by_name=True)
        check_grad(mode, _with_indices(eager, indices, rustgrad.tensor), None, None, arrays)
    else:
        tf_kwargs = reference.tf_args(data, kwargs)
        function = _resolve(tf, _tf_names(spec)[0])
        static = _with_indices(_call(spec, function, tf_kwargs), indices, tf.constant)
        numpy = _with_indices(reference.tf_numpy or reference.numpy, indices, lambda a: a)
        check_grad(mode, None, static, lambda *xs: numpy(*xs, **torch_spelling(tf_kwargs)), arrays)
