"""Random numbers with PyTorch's names: generators, and the sampling functions and
``Tensor`` methods that draw from them.

Every function takes ``generator=``: a :class:`Generator`, or None for the default
generator (``rustgrad.default_generator``, which ``manual_seed`` seeds). A seed gives the
same numbers on every run, whatever the number of threads; several threads may draw
from one generator. (``generator=`` also takes an int, a rustgrad extension: a seed for
a private generator used by that call only.)
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from rustgrad import _rustgrad
from rustgrad._creation import _check_device, _integer, _like, _real, _resolve_dtype, _shape, float32, int64
from rustgrad._rustgrad import Generator, Tensor
from rustgrad.errors import ArgumentTypeError

default_generator: Generator = _rustgrad.default_generator

_GeneratorLike = Union[Generator, int, None]


def manual_seed(seed: int) -> Generator:
    """Seeds the default generator, so the random numbers that follow repeat; returns it, as torch."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seeds the default generator with a non-deterministic seed; returns that seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator's current sequence started from."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state, a uint8 tensor for ``set_rng_state``."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restores the default generator's state from ``get_rng_state``."""
    default_generator.set_state(new_state)


def _size_arg(op: str, size: Any) -> Sequence[Any]:
    """torch's ``size`` argument of ``randint``/``normal``: a sequence of ints (an int is refused, as torch)."""
    if not isinstance(size, (tuple, list)):
        raise ArgumentTypeError(f"{op}(): argument 'size' must be a tuple of ints, not {type(size).__name__}")
    return size


def randint(*args: Any, low: Optional[int] = None, high: Optional[int] = None, size: Optional[Sequence[int]] = None,
            generator: _GeneratorLike = None, dtype: Any = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """``randint(high, size)`` or ``randint(low, high, size)``: integers drawn uniformly from
    [low, high) (low defaults to 0), int64 unless ``dtype`` says otherwise, as torch."""
    _check_device(device)
    given = {name: value for name, value in (("low", low), ("high", high), ("size", size)) if value is not None}
    if len(args) > 3:
        raise ArgumentTypeError(f"randint() takes at most 3 positional arguments (low, high, size), got {len(args)}")
    slots = {3: ("low", "high", "size"), 2: ("low", "high") if size is not None else ("high", "size"),
             1: ("low",) if high is not None else ("high",), 0: ()}[len(args)]
    for name, value in zip(slots, args):
        if name in given:
            raise ArgumentTypeError(f"randint() got multiple values for argument '{name}'")
        given[name] = value
    missing = [name for name in ("high", "size") if name not in given]
    if missing:
        raise ArgumentTypeError(f"randint() missing required argument(s) {', '.join(repr(m) for m in missing)}: "
                                "call randint(high, size) or randint(low, high, size)")
    lo = _integer("randint", "low", given.get("low", 0))
    hi = _integer("randint", "high", given["high"])
    dt = _resolve_dtype(dtype, int64)
    shape = _shape("randint", [_size_arg("randint", given["size"])], dt)
    return _rustgrad._random(shape, dt, "integers", lo, hi, requires_grad, generator, "randint")


def randint_like(input: Tensor, low: Optional[int] = None, high: Optional[int] = None, *,
                 generator: _GeneratorLike = None, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> Tensor:
    """``randint_like(input, high)`` or ``randint_like(input, low, high)``: ``randint`` in
    ``input``'s shape and (unless ``dtype`` says otherwise) dtype."""
    shape, dt = _like(input, dtype, "randint_like")
    if high is None:
        if low is None:
            raise ArgumentTypeError("randint_like() missing required argument 'high'")
        low, high = 0, low
    return randint(0 if low is None else low, high, shape, generator=generator, dtype=dt, device=device,
                   requires_grad=requires_grad)


def randperm(n: int, *, generator: _GeneratorLike = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """The integers 0 to n - 1 in random order, int64 unless ``dtype`` says otherwise."""
    _check_device(device)
    n = _integer("randperm", "n", n)
    return _rustgrad._randperm(n, _resolve_dtype(dtype, int64), requires_grad, generator)


def normal(mean: Union[Tensor, float] = 0.0, std: Union[Tensor, float] = 1.0, size: Optional[Sequence[int]] = None,
           *, generator: _GeneratorLike = None, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Samples from normal distributions, with torch's overloads: ``normal(mean, std)`` with a
    tensor for either (or both; they broadcast), one sample per element; or
    ``normal(mean, std, size)`` with two numbers. The samples carry no gradient."""
    _check_device(device)
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        if size is not None:
            raise ArgumentTypeError("normal(): size= goes with a float mean and std; with a tensor mean or std "
                                    "the output takes their (broadcast) shape")
        like = mean if isinstance(mean, Tensor) else std
        assert isinstance(like, Tensor)
        float_dtype = like.dtype if like.dtype.is_floating_point else float32
        m = mean if isinstance(mean, Tensor) else _rustgrad._full([], _real("normal", "mean", mean), float_dtype, False)
        s = std if isinstance(std, Tensor) else _rustgrad._full([], _real("normal", "std", std), float_dtype, False)
        return _rustgrad._normal(m, s, generator)
    if size is None:
        raise ArgumentTypeError("normal(): with a float mean and std, give the output's size: "
                                "normal(mean, std, size) (or pass a tensor mean or std)")
    dt = _resolve_dtype(dtype)
    shape = _shape("normal", [_size_arg("normal", size)], dt)
    m, s = _real("normal", "mean", mean), _real("normal", "std", std)
    return _rustgrad._random(shape, dt, "normal", m, s, requires_grad, generator, "normal")


def bernoulli(input: Tensor, p: Optional[float] = None, *, generator: _GeneratorLike = None) -> Tensor:
    """1 or 0 for each element: with probability ``input`` (a float tensor of values in [0, 1]),
    or ``p`` when given; in ``input``'s shape and dtype."""
    if p is None:
        return _rustgrad._bernoulli(input, generator)
    if not isinstance(input, Tensor):
        raise ArgumentTypeError(f"bernoulli(): argument 'input' must be a Tensor, got {type(input).__name__}")
    prob = _real("bernoulli", "p", p)
    return _rustgrad._random(list(input.shape), input.dtype, "bernoulli", prob, 0, False, generator, "bernoulli")


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: _GeneratorLike = None) -> Tensor:
    """For each row of weights (``input``, 1-D or 2-D, non-negative), ``num_samples`` category
    indices (int64) drawn with probabilities proportional to the weights; without
    ``replacement``, each category at most once per row."""
    return _rustgrad._multinomial(input, num_samples, replacement, generator)


def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ``input``'s shape and dtype; zero-filled, as ``rustgrad.empty``."""
    from rustgrad._creation import zeros

    shape, dt = _like(input, dtype, "empty_like")
    return zeros(shape, dtype=dt, device=device, requires_grad=requires_grad)


# ----- in-place sampling methods -----

def _uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator: _GeneratorLike = None) -> Tensor:
    """Overwrites the tensor with samples from U[a, b) (``from``/``to`` in torch's docs); returns it."""
    _rustgrad._fill_random(self, "uniform_", "uniform", a, b, generator)
    return self


def _normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: _GeneratorLike = None) -> Tensor:
    """Overwrites the tensor with samples from N(mean, std²); returns it."""
    _rustgrad._fill_random(self, "normal_", "normal", mean, std, generator)
    return self


def _bernoulli_(self: Tensor, p: Union[float, Tensor] = 0.5, *, generator: _GeneratorLike = None) -> Tensor:
    """Overwrites the tensor with 1 (probability ``p``, a number or a tensor that broadcasts to
    it) or 0; returns it."""
    if isinstance(p, Tensor):
        _rustgrad._bernoulli(p, generator, self)
    else:
        _rustgrad._fill_random(self, "bernoulli_", "bernoulli", p, 0, generator)
    return self


def _largest_random(dtype: Any) -> int:
    """The largest value ``random_()`` draws in ``dtype``: every integer the dtype holds exactly."""
    return {"float32": 2**24, "float64": 2**53, "int64": 2**63 - 1, "int32": 2**31 - 1, "uint8": 255,
            "bool": 1}[dtype.name]


def _random_(self: Tensor, from_: Optional[int] = None, to: Optional[int] = None, *,
             generator: _GeneratorLike = None) -> Tensor:
    """Overwrites the tensor with integers drawn uniformly: ``random_(from, to)`` from [from, to),
    ``random_(to)`` from [0, to), ``random_()`` from 0 to the largest integer its dtype holds
    exactly; returns it."""
    if to is None:
        low, high = (0, _largest_random(self.dtype) + 1) if from_ is None else (0, from_)
    else:
        low, high = (0 if from_ is None else from_), to
    low, high = _integer("random_", "from", low), _integer("random_", "to", high)
    _rustgrad._fill_random(self, "random_", "integers", low, high, generator)
    return self


def _bernoulli_method(self: Tensor, p: Optional[float] = None, *, generator: _GeneratorLike = None) -> Tensor:
    """``rustgrad.bernoulli(self, p)``."""
    return bernoulli(self, p, generator=generator)


def _multinomial_method(self: Tensor, num_samples: int, replacement: bool = False, *,
                        generator: _GeneratorLike = None) -> Tensor:
    """``rustgrad.multinomial(self, num_samples, replacement)``."""
    return multinomial(self, num_samples, replacement, generator=generator)


Tensor.uniform_ = _uniform_  # type: ignore[method-assign]
Tensor.normal_ = _normal_  # type: ignore[method-assign]
Tensor.bernoulli_ = _bernoulli_  # type: ignore[method-assign]
Tensor.random_ = _random_  # type: ignore[method-assign]
Tensor.bernoulli = _bernoulli_method  # type: ignore[method-assign]
Tensor.multinomial = _multinomial_method  # type: ignore[method-assign]
for _method in (_uniform_, _normal_, _bernoulli_, _random_, _bernoulli_method, _multinomial_method):
    _method.__name__ = _method.__qualname__ = _method.__name__.lstrip("_").removesuffix("_method")
