"""``rustgrad.autograd.functional``: Jacobians, Hessians and their products with vectors.

The names, arguments, result nesting and error texts are torch's. Everything is built on
``autograd.grad``: forward-mode products (``jvp``) use the double-backward trick, so no dual
numbers are involved, and every function here works on any op whose backward is differentiable.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from rustgrad._creation import ones_like, zeros, zeros_like
from rustgrad._generated_ops import stack
from rustgrad._grad_mode import enable_grad
from rustgrad._rustgrad import Tensor, grad
from rustgrad.errors import ArgumentTypeError, GradientError, ShapeError

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]

_STRATEGIES = ("reverse-mode", "forward-mode")


def _as_tuple(value: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple[Tensor, ...]]:
    """(was it a tuple, the tensors as a tuple); anything but tensors is refused by name."""
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for index, item in enumerate(items):
        if not isinstance(item, Tensor):
            where = f"the value at index {index}" if is_tuple else f"the given {arg_name}"
            raise ArgumentTypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                f"{where} has type {type(item)}."
            )
    return is_tuple, items


def _unpack(result: Any, was_tuple: Any) -> Any:
    """Undoes `_as_tuple`; `was_tuple` is one flag, or (outer, inner) for nested results."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            result = tuple(item[0] for item in result)
        if not outer:
            result = result[0]
        return result
    return result if was_tuple else result[0]


def _grad_preprocess(inputs: Sequence[Tensor], create_graph: bool, need_graph: bool) -> tuple[Tensor, ...]:
    """Fresh tensor objects, so that tensors the function captures are told apart from its inputs."""
    fresh = []
    for value in inputs:
        if create_graph and value.requires_grad:
            fresh.append(value.view_as(value))
        else:
            fresh.append(value.detach().requires_grad_(need_graph))
    return tuple(fresh)


def _grad_postprocess(values: Any, create_graph: bool) -> Any:
    if isinstance(values[0], Tensor):
        return values if create_graph else tuple(value.detach() for value in values)
    return tuple(_grad_postprocess(inner, create_graph) for inner in values)


def _validate_v(v: Sequence[Tensor], like: Sequence[Tensor], like_is_tuple: bool) -> None:
    if len(v) != len(like):
        if like_is_tuple:
            raise ShapeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(v)}.")
        raise ShapeError("The given v should contain a single Tensor.")
    for index, (given, expected) in enumerate(zip(v, like)):
        if tuple(given.shape) != tuple(expected.shape):
            prefix = f"Entry {index} in " if like_is_tuple else ""
            raise ShapeError(
                f"{prefix}v has invalid size: should be {tuple(expected.shape)} but got {tuple(given.shape)}."
            )


def _check_requires_grad(values: Sequence[Optional[Tensor]], kind: str, strict: bool) -> None:
    """torch's strict-mode checks: every output (or gradient) must depend on the inputs."""
    if not strict:
        return
    for index, value in enumerate(values):
        if value is None:
            raise GradientError(
                f"The output of the user-provided function is independent of input {index}. "
                "This is not allowed in strict mode."
            )
        if value.requires_grad:
            continue
        if kind == "hessian":
            raise GradientError(
                f"The hessian of the user-provided function with respect to input {index} is independent "
                "of the input. This is not allowed in strict mode. You should ensure that your function "
                "is thrice differentiable and that the hessian depends on the inputs."
            )
        if kind == "jacobian":
            raise GradientError(
                "While computing the hessian, found that the jacobian of the user-provided function with "
                f"respect to input {index} is independent of the input. This is not allowed in strict "
                "mode. You should ensure that your function is twice differentiable and that the jacobian "
                "depends on the inputs (this would be violated by a linear function for example)."
            )
        if kind == "grad_inputs":
            raise GradientError(
                f"The gradient with respect to input {index} is independent of the inputs of the "
                "user-provided function. This is not allowed in strict mode."
            )
        raise GradientError(
            f"Output {index} of the user-provided function does not require gradients. The outputs must "
            "be computed in a differentiable manner from the input when running in strict mode."
        )


def _autograd_grad(outputs: Sequence[Optional[Tensor]], inputs: Sequence[Tensor],
                   grad_outputs: Optional[Sequence[Optional[Tensor]]] = None, create_graph: bool = False,
                   retain_graph: Optional[bool] = None) -> tuple[Optional[Tensor], ...]:
    """`autograd.grad` over the outputs that require grad; None for inputs nothing reaches."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept = [(out, g) for out, g in zip(outputs, grad_outputs) if out is not None and out.requires_grad]
    if not kept:
        return (None,) * len(inputs)
    return tuple(grad([out for out, _ in kept], list(inputs), [g for _, g in kept], retain_graph=retain_graph,
                      create_graph=create_graph, allow_unused=True))


_ZERO_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in "
            "strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs "
                  "when using the double backward trick to compute forward mode gradients. This is not "
                  "allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not "
                   "allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the "
                         "double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads: Sequence[Optional[Tensor]], refs: Sequence[Tensor], strict: bool,
                   create_graph: bool, stage: str) -> tuple[Tensor, ...]:
    """None gradients become zeros (the mathematical value), or errors in strict mode."""
    filled = []
    for index, g in enumerate(grads):
        if g is None:
            if strict:
                raise GradientError(_ZERO_MESSAGES[stage].format(i=index))
            g = zeros_like(refs[index])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise GradientError(
                f"The {what} of the user-provided function is independent of input {index}. This is not "
                "allowed in strict mode when create_graph=True."
            )
        filled.append(g)
    return tuple(filled)


def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(inputs), vᵀ·J): the vector-Jacobian product at `inputs`.

    `v` has the outputs' shapes; it may be omitted when the function returns one single-element tensor.
    """
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, outputs_tuple)
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise GradientError("The vector v can only be None if the user-provided function returns a single "
                                "Tensor with a single element.")
        grads = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "back")
    return (_unpack(_grad_postprocess(outputs, create_graph), outputs_tuple),
            _unpack(_grad_postprocess(result, create_graph), inputs_tuple))


def _input_vector(v: Any, inputs: tuple[Tensor, ...], inputs_tuple: bool, fn_name: str,
                  create_graph: bool) -> tuple[Tensor, ...]:
    """The `v` of a product on the input side; may be omitted only for one single-element input."""
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise GradientError("The vector v can only be None if the input to the user-provided function is a "
                                "single Tensor with a single element.")
        return (ones_like(inputs[0]),)
    _, v = _as_tuple(v, "v", fn_name)
    v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
    _validate_v(v, inputs, inputs_tuple)
    return v


def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(inputs), J·v): the Jacobian-vector product at `inputs`.

    Computed with the double-backward trick (two reverse passes, no dual numbers): with `u` a free
    vector of the outputs' shape, `g(u) = uᵀJ` is linear in `u`, and the gradient of `g(u)·v` with
    respect to `u` is `J·v`.
    """
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _input_vector(v, inputs, inputs_tuple, "jvp", create_graph)
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # The backward is linear in u, so u's value never shows in the result; zeros avoid inf and nan.
        free = tuple(zeros_like(out).requires_grad_(True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, free, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
        products = _autograd_grad(grad_inputs, free, v, create_graph=create_graph)
        result = _fill_in_zeros(products, outputs, strict, create_graph, "back_trick")
    return (_unpack(_grad_postprocess(outputs, create_graph), outputs_tuple),
            _unpack(_grad_postprocess(result, create_graph), outputs_tuple))


def _check_strategy(fn_name: str, strategy: str) -> None:
    if strategy not in _STRATEGIES:
        raise ArgumentTypeError(
            f'{fn_name}: expected strategy to be either "forward-mode" or "reverse-mode", got {strategy!r}.'
        )


def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of `func` at `inputs`; entry (i, j) has shape `outputs[i].shape + inputs[j].shape`.

    One reverse pass per output element (`strategy="reverse-mode"`), or one double-backward
    Jacobian-vector product per input element (`strategy="forward-mode"`); both give the same values.
    `vectorize` is a speed hint in torch; here it is accepted and the products run one by one.
    """
    _check_strategy("jacobian", strategy)
    if strict and vectorize:
        raise GradientError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                            "supported together. Please either set `strict=False` or `vectorize=False`.")
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if strategy == "forward-mode":
            blocks = _jacobian_by_columns(outputs, inputs, create_graph, strict)
        else:
            blocks = tuple(_jacobian_rows(i, out, inputs, create_graph, strict) for i, out in enumerate(outputs))
    return _unpack(_grad_postprocess(blocks, create_graph), (outputs_tuple, inputs_tuple))


def _jacobian_rows(out_index: int, out: Tensor, inputs: Sequence[Tensor], create_graph: bool,
                   strict: bool) -> tuple[Tensor, ...]:
    """d out / d inputs[j] for every j, one reverse pass per element of `out`."""
    rows: list[list[Tensor]] = [[] for _ in inputs]
    flat = out.reshape(-1)
    for k in range(out.numel()):
        grads = _autograd_grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
        for j, (g, x) in enumerate(zip(grads, inputs)):
            if g is None:
                if strict:
                    raise GradientError(f"Output {out_index} of the user-provided function is independent of "
                                        f"input {j}. This is not allowed in strict mode.")
                g = zeros_like(x)
            elif strict and create_graph and not g.requires_grad:
                raise GradientError(f"The jacobian of the user-provided function is independent of input "
                                    f"{out_index}. This is not allowed in strict mode when create_graph=True.")
            rows[j].append(g)
    return tuple(_stacked(r, tuple(out.shape) + tuple(x.shape), x) for r, x in zip(rows, inputs))


def _stacked(parts: list[Tensor], shape: tuple[int, ...], like: Tensor) -> Tensor:
    if not parts:
        return zeros(shape, dtype=like.dtype)
    return stack(parts, 0).reshape(shape)


def _jacobian_by_columns(outputs: Sequence[Tensor], inputs: Sequence[Tensor], create_graph: bool,
                         strict: bool) -> tuple[tuple[Tensor, ...], ...]:
    """The Jacobian one column at a time: J·e_k through the double-backward trick."""
    free = tuple(zeros_like(out).requires_grad_(True) for out in outputs)
    grad_inputs = _autograd_grad(outputs, inputs, free, create_graph=True)
    columns: list[list[list[Tensor]]] = [[[] for _ in inputs] for _ in outputs]
    for j, x in enumerate(inputs):
        for k in range(x.numel()):
            basis = zeros_like(x).reshape(-1)
            basis[k] = 1.0
            seeds = [basis.reshape(tuple(x.shape)) if m == j else zeros_like(inputs[m]) for m in range(len(inputs))]
            products = _autograd_grad(grad_inputs, free, seeds, create_graph=create_graph, retain_graph=True)
            products = _fill_in_zeros(products, outputs, strict, create_graph, "back_trick")
            for i, p in enumerate(products):
                columns[i][j].append(p)
    blocks = []
    for i, out in enumerate(outputs):
        row = []
        for j, x in enumerate(inputs):
            cols = columns[i][j]
            shape = tuple(x.shape) + tuple(out.shape)
            by_input = _stacked(cols, shape, x)
            # Columns stack along the input axis first; move the output axes to the front.
            n_in = len(x.shape)
            order = tuple(range(n_in, n_in + len(out.shape))) + tuple(range(n_in))
            row.append(by_input.permute(*order) if order else by_input)
        blocks.append(tuple(row))
    return tuple(blocks)


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a scalar function: entry (i, j) has shape `inputs[i].shape + inputs[j].shape`.

    The Jacobian of the Jacobian, with the inner one built differentiably (`create_graph=True`).
    """
    _check_strategy("hessian", outer_jacobian_strategy)
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def single_output(*args: Tensor) -> Tensor:
        _, (out,) = _scalar_output(func, args, "hessian", strict)
        return out.squeeze()

    def jacobian_of_func(*args: Tensor) -> Any:
        jac = jacobian(single_output, args, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    result = jacobian(jacobian_of_func, inputs, create_graph=create_graph, strict=strict,
                      vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _unpack(result, (inputs_tuple, inputs_tuple))


def _scalar_output(func: Callable[..., Any], inputs: tuple[Tensor, ...], fn_name: str,
                   strict: bool) -> tuple[bool, tuple[Tensor, ...]]:
    outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    if outputs_tuple:
        raise GradientError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise GradientError(f"The Tensor returned by the function given to {fn_name} should contain a single "
                            "element")
    return outputs_tuple, outputs


def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(inputs), vᵀ·H) for a scalar function: two reverse passes, the second through the first."""
    return _hessian_product("vhp", func, inputs, v, create_graph, strict)


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(inputs), H·v) for a scalar function.

    The Hessian of a twice continuously differentiable scalar function is symmetric, so H·v equals
    vᵀ·H; this computes it the way `vhp` does, with two reverse passes (torch's hvp takes a third).
    """
    return _hessian_product("hvp", func, inputs, v, create_graph, strict)


def _hessian_product(fn_name: str, func: Callable[..., Any], inputs: Any, v: Any, create_graph: bool,
                     strict: bool) -> tuple[Any, Any]:
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _input_vector(v, inputs, inputs_tuple, fn_name, create_graph)
        outputs_tuple, outputs = _scalar_output(func, inputs, fn_name, strict)
        first = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(first, "jacobian", strict)
        second = _autograd_grad(first, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(second, inputs, strict, create_graph, "double_back")
    return (_unpack(_grad_postprocess(outputs, create_graph), outputs_tuple),
            _unpack(_grad_postprocess(result, create_graph), inputs_tuple))
