"""TF1's variable initializers (``tf.zeros_initializer``, ``tf.glorot_uniform_initializer``, ...).

Each is a class with TF1's name and default arguments; calling it with ``(shape, dtype=None,
partition_info=None)`` adds the nodes that make the initial value to the default graph.
Random ones draw with the graph's seeds as TF1's random ops do (``tf.set_random_seed``
makes them repeat run after run). Fans are TF1's: for a conv kernel ``[h, w, in, out]``
(HWIO), ``fan_in = h * w * in`` and ``fan_out = h * w * out``.
"""

from __future__ import annotations

import abc
import math
import types
from typing import Any, Optional, Sequence

import numpy as np

from rustgrad.errors import DTypeError, InvalidArgumentError, ShapeError
from rustgrad.static._dtypes import as_dtype, float32
from rustgrad.static._graph import Tensor, get_default_graph
from rustgrad.static._random import random_normal, random_uniform, truncated_normal
from rustgrad.static._variables import global_variables_initializer, variables_initializer

# The standard deviation of a unit normal truncated to [-2, 2] (scipy.stats.truncnorm(-2, 2).std()).
_TRUNCATED_STDDEV = 0.87962566103423978


def _shape(shape: Any) -> list[int]:
    dims = [shape] if isinstance(shape, int) else list(shape)
    if any(not hasattr(d, "__index__") or int(d) < 0 for d in dims):
        raise ShapeError(f"an initializer needs a fully known shape of non-negative ints, got {shape!r}")
    return [int(d) for d in dims]


def _float_dtype(initializer: str, dtype: Any) -> Any:
    dt = as_dtype(dtype)
    if not dt.is_floating:
        raise DTypeError(f"{initializer}: Expected floating point type, got {dt.name}.")
    return dt


class Initializer(abc.ABC):
    """Base of the initializers: ``__call__(shape, dtype=None, partition_info=None)``."""

    dtype: Any

    @abc.abstractmethod
    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        """The nodes that make an initial value of ``shape`` and ``dtype`` (the initializer's own by default)."""

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Initializer:
        return cls(**config)


class Zeros(Initializer):
    """Zeros of any dtype."""

    def __init__(self, dtype: Any = float32) -> None:
        self.dtype = as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        from rustgrad.static._ops import zeros

        return zeros(_shape(shape), as_dtype(self.dtype if dtype is None else dtype))

    def get_config(self) -> dict:
        return {"dtype": self.dtype.name}


class Ones(Initializer):
    """Ones of any dtype."""

    def __init__(self, dtype: Any = float32) -> None:
        self.dtype = as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        from rustgrad.static._ops import ones

        return ones(_shape(shape), as_dtype(self.dtype if dtype is None else dtype))

    def get_config(self) -> dict:
        return {"dtype": self.dtype.name}


class Constant(Initializer):
    """``value`` everywhere (a number), or ``value``'s elements in order, the last repeated
    to fill the shape when there are fewer, as TF1's ``tf.constant(value, shape=)``; more
    elements than the shape holds raise. With ``verify_shape=True`` the shapes must agree."""

    def __init__(self, value: Any = 0, dtype: Any = float32, verify_shape: bool = False) -> None:
        if not np.isscalar(value) and not isinstance(value, (list, tuple, np.ndarray)):
            raise DTypeError(
                f"Invalid type for initial value: {type(value).__name__} (expected Python scalar, list or "
                "tuple of values, or numpy.ndarray)."
            )
        self.value = value
        self.dtype = as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None,
                 verify_shape: Optional[bool] = None) -> Tensor:
        dims = _shape(shape)
        dt = as_dtype(self.dtype if dtype is None else dtype)
        values = np.asarray(self.value)
        verify = self._verify_shape if verify_shape is None else verify_shape
        if verify and list(values.shape) != dims:
            raise ShapeError(f"Expected Tensor's shape: {tuple(dims)}, got {values.shape}.")
        return get_default_graph()._constant(_filled(values, dims), dt, "Const")

    def get_config(self) -> dict:
        return {"value": self.value, "dtype": self.dtype.name, "verify_shape": self._verify_shape}


def _filled(values: np.ndarray, dims: list[int]) -> np.ndarray:
    size = math.prod(dims)
    if values.ndim == 0:
        return np.full(dims, values)
    flat = values.reshape(-1)
    if flat.size > size:
        raise InvalidArgumentError(f"Too many elements provided. Needed at most {size}, but received {flat.size}")
    if flat.size < size:
        if flat.size == 0:
            raise InvalidArgumentError(f"the initial value has no elements to fill a shape of {size} elements")
        flat = np.concatenate([flat, np.repeat(flat[-1:], size - flat.size)])
    return flat.reshape(dims)


class RandomUniform(Initializer):
    """Uniform in [minval, maxval) (maxval 1 for floats); ints need ``maxval``."""

    def __init__(self, minval: Any = 0, maxval: Any = None, seed: Optional[int] = None,
                 dtype: Any = float32) -> None:
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = as_dtype(self.dtype if dtype is None else dtype)
        return random_uniform(_shape(shape), self.minval, self.maxval, dt, self.seed, name="random_uniform")

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed, "dtype": self.dtype.name}


class _NormalInitializer(Initializer):
    """Normal with ``mean`` and ``stddev``, drawn by ``_sample`` as the op ``_name``; floats only."""

    _name: str
    _sample: Any

    def __init__(self, mean: float = 0.0, stddev: float = 1.0, seed: Optional[int] = None,
                 dtype: Any = float32) -> None:
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _float_dtype(f"{self._name}_initializer", dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = _float_dtype(f"{self._name}_initializer", self.dtype if dtype is None else dtype)
        return self._sample(_shape(shape), self.mean, self.stddev, dt, self.seed, name=self._name)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed, "dtype": self.dtype.name}


class RandomNormal(_NormalInitializer):
    """Normal with ``mean`` and ``stddev``; floats only."""

    _name = "random_normal"
    _sample = staticmethod(random_normal)


class TruncatedNormal(_NormalInitializer):
    """Normal with ``mean`` and ``stddev``, values past two stddevs drawn again; floats only."""

    _name = "truncated_normal"
    _sample = staticmethod(truncated_normal)


def _compute_fans(shape: Sequence[int]) -> tuple[int, int]:
    """TF1's fans: a vector's length both; a matrix ``[in, out]``; a conv kernel
    ``[..., in, out]`` times its receptive field (the product of the leading dims)."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive_field = math.prod(shape[:-2])
    return shape[-2] * receptive_field, shape[-1] * receptive_field


class VarianceScaling(Initializer):
    """Samples with variance ``scale / n``, ``n`` the fan in, the fan out or their mean
    (``mode``): ``truncated_normal`` (or ``normal``, its old name) with stddev
    ``sqrt(scale / n) / .8796``, ``untruncated_normal`` with stddev ``sqrt(scale / n)``, or
    ``uniform`` in ``[-sqrt(3 scale / n), sqrt(3 scale / n)]``, as TF1's."""

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("normal", "uniform", "truncated_normal", "untruncated_normal")

    def __init__(self, scale: float = 1.0, mode: str = "fan_in", distribution: str = "truncated_normal",
                 seed: Optional[int] = None, dtype: Any = float32) -> None:
        if scale <= 0.0:
            raise InvalidArgumentError("`scale` must be positive float.")
        if mode not in self._MODES:
            raise InvalidArgumentError(f"Invalid `mode` argument: {mode!r}; use one of {self._MODES}")
        distribution = str(distribution).lower()
        if distribution not in self._DISTRIBUTIONS:
            raise InvalidArgumentError(
                f"Invalid `distribution` argument: {distribution!r}; use one of {self._DISTRIBUTIONS}"
            )
        self.scale, self.mode, self.distribution, self.seed = float(scale), mode, distribution, seed
        self.dtype = _float_dtype("variance_scaling_initializer", dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dims = _shape(shape)
        dt = _float_dtype(type(self).__name__, self.dtype if dtype is None else dtype)
        full = _shape(partition_info.full_shape) if partition_info is not None else dims
        fan_in, fan_out = _compute_fans(full)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution in ("normal", "truncated_normal"):
            return truncated_normal(dims, 0.0, math.sqrt(scale) / _TRUNCATED_STDDEV, dt, self.seed,
                                    name="truncated_normal")
        if self.distribution == "untruncated_normal":
            return random_normal(dims, 0.0, math.sqrt(scale), dt, self.seed, name="random_normal")
        limit = math.sqrt(3.0 * scale)
        return random_uniform(dims, -limit, limit, dt, self.seed, name="random_uniform")

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed,
                "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    """Glorot (Xavier) uniform: ``VarianceScaling(1.0, "fan_avg", "uniform")``; ``get_variable``'s default."""

    def __init__(self, seed: Optional[int] = None, dtype: Any = float32) -> None:
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)

    def get_config(self) -> dict:
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Glorot (Xavier) normal: ``VarianceScaling(1.0, "fan_avg", "truncated_normal")``."""

    def __init__(self, seed: Optional[int] = None, dtype: Any = float32) -> None:
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)

    def get_config(self) -> dict:
        return {"seed": self.seed, "dtype": self.dtype.name}


def he_normal(seed: Optional[int] = None) -> VarianceScaling:
    """He normal: ``VarianceScaling(2.0, "fan_in", "truncated_normal")``."""
    return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed: Optional[int] = None) -> VarianceScaling:
    """He uniform: ``VarianceScaling(2.0, "fan_in", "uniform")``."""
    return VarianceScaling(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed: Optional[int] = None) -> VarianceScaling:
    """LeCun normal: ``VarianceScaling(1.0, "fan_in", "truncated_normal")``."""
    return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed: Optional[int] = None) -> VarianceScaling:
    """LeCun uniform: ``VarianceScaling(1.0, "fan_in", "uniform")``."""
    return VarianceScaling(1.0, "fan_in", "uniform", seed)


# TF1's ``tf.*_initializer`` names (classes, called with their arguments as TF1's are).
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal

# ``tf.initializers``: TF1's module of the same initializers.
initializers = types.ModuleType(
    "rustgrad.static.initializers", "TF1's ``tf.initializers``: the initializers of ``rustgrad.static``."
)
for _name, _value in {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "random_uniform": RandomUniform,
    "random_normal": RandomNormal, "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling,
    "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal, "he_normal": he_normal,
    "he_uniform": he_uniform, "lecun_normal": lecun_normal, "lecun_uniform": lecun_uniform,
    "Initializer": Initializer, "Zeros": Zeros, "Ones": Ones, "Constant": Constant,
    "RandomUniform": RandomUniform, "RandomNormal": RandomNormal, "TruncatedNormal": TruncatedNormal,
    "VarianceScaling": VarianceScaling, "GlorotUniform": GlorotUniform, "GlorotNormal": GlorotNormal,
    "global_variables": global_variables_initializer, "variables": variables_initializer,
}.items():
    setattr(initializers, _name, _value)
