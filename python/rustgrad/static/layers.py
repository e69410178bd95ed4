"""``tf.layers`` (``rustgrad.static.layers``, also ``rustgrad.compat.v1.layers``): TF1's layers.

Each layer opens ``tf.variable_scope(name, default_name=<layer kind>)`` (``dense``, ``dense_1``, ...)
and makes its variables there with ``tf.get_variable``, so they land in the variable collections
and are shared by ``reuse=True``/``tf.AUTO_REUSE`` as TF1's. Regularizers (any callable taking the
variable and returning a scalar tensor) add their losses to ``REGULARIZATION_LOSSES``; batch
normalisation in training puts its moving-average updates in ``UPDATE_OPS`` (run them with the
train op: ``tf.control_dependencies`` or ``tf.group``). The maths is the static ``tf.nn`` kernels'.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, Optional, Sequence

from rustgrad.errors import ArgumentTypeError, InvalidArgumentError
from rustgrad.static._dtypes import float32
from rustgrad.static._graph import Tensor, convert_to_tensor
from rustgrad.static._layer_args import _activation, _data_format, _padding, _rate, _training_flag, _tuple

__all__ = [
    "AveragePooling2D", "BatchNormalization", "Conv2D", "Dense", "Dropout", "Flatten", "Layer", "MaxPooling2D",
    "average_pooling2d", "batch_normalization", "conv2d", "dense", "dropout", "flatten", "max_pooling2d",
]

def _tf() -> Any:
    from rustgrad import static

    return static


class Layer:
    """The base of ``tf.layers``' classes: a callable that makes its variables on the first call,
    under its own variable scope, and reuses them on the next calls."""

    _base_name = "layer"

    def __init__(self, trainable: bool = True, name: Optional[str] = None, dtype: Any = None,
                 _reuse: Any = None, activity_regularizer: Optional[Callable] = None) -> None:
        if name is not None and not isinstance(name, str):
            raise ArgumentTypeError(f"{type(self).__name__}: name must be a string, got {type(name).__name__}")
        self.trainable = bool(trainable)
        self._name = name
        self.dtype = None if dtype is None else _tf().as_dtype(dtype)
        self._reuse = _reuse
        self.activity_regularizer = activity_regularizer
        self._scope: Any = None
        self.built = False
        self._trainable_weights: list = []
        self._non_trainable_weights: list = []
        self._updates: list = []
        self._losses: list = []

    @property
    def name(self) -> Optional[str]:
        """The layer's variable scope's full name once called (``dense_1``), else the name given."""
        return self._scope.name if self._scope is not None else self._name

    @property
    def scope_name(self) -> Optional[str]:
        return self.name

    @property
    def trainable_weights(self) -> list:
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> list:
        if self.trainable:
            return list(self._non_trainable_weights)
        return list(self._trainable_weights) + list(self._non_trainable_weights)

    @property
    def weights(self) -> list:
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    @property
    def updates(self) -> list:
        """The update ops (batch normalisation's moving averages) made by the calls so far."""
        return list(self._updates)

    @property
    def losses(self) -> list:
        """The regularization losses of the layer's variables and outputs."""
        return list(self._losses)

    def add_weight(self, name: str, shape: Sequence[int], dtype: Any = None, initializer: Any = None,
                   regularizer: Optional[Callable] = None, trainable: bool = True) -> Any:
        """A variable ``<scope>/name`` made by ``tf.get_variable`` (or the existing one when the scope
        reuses); ``regularizer(variable)`` goes into ``REGULARIZATION_LOSSES`` when it is new."""
        tf = _tf()
        if regularizer is not None and not callable(regularizer):
            raise ArgumentTypeError(f"{type(self).__name__}: a regularizer must be a callable taking the "
                                    f"variable, got {type(regularizer).__name__}")
        trainable = bool(trainable) and self.trainable
        losses = tf.get_collection_ref(tf.GraphKeys.REGULARIZATION_LOSSES)
        before = len(losses)
        variable = tf.get_variable(name, shape=list(shape), dtype=dtype or self.dtype or float32,
                                   initializer=initializer, regularizer=regularizer, trainable=trainable)
        self._losses.extend(losses[before:])  # get_variable regularizes a new variable (as <var>/Regularizer/)
        (self._trainable_weights if trainable else self._non_trainable_weights).append(variable)
        return variable

    def _add_loss(self, loss: Any) -> None:
        if loss is None:
            return
        loss = convert_to_tensor(loss)
        self._losses.append(loss)
        _tf().add_to_collection(_tf().GraphKeys.REGULARIZATION_LOSSES, loss)

    def _add_update(self, update: Tensor) -> None:
        self._updates.append(update.op)
        _tf().add_to_collection(_tf().GraphKeys.UPDATE_OPS, update.op)

    def build(self, input_shape: Any) -> None:
        self.built = True

    def call(self, inputs: Tensor, **kwargs: Any) -> Tensor:
        return inputs

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Tensor:
        tf = _tf()
        x = convert_to_tensor(inputs)
        if "training" in kwargs:  # checked before any variable is made
            kwargs["training"] = _training_flag(kwargs["training"], type(self).__name__)
        if self.dtype is None:
            self.dtype = x.dtype if x.dtype.is_floating_point else float32
        if self._scope is None:
            with tf.variable_scope(self._name, default_name=self._base_name, reuse=self._reuse) as scope:
                self._scope = scope
                self.build(x.shape)
                self.built = True
                outputs = self.call(x, *args, **kwargs)
                self._regularize_activity(outputs)
                return outputs
        # Later calls share the variables and put their ops in the first call's name scope, as TF's.
        with tf.variable_scope(self._scope, reuse=True, auxiliary_name_scope=False), \
                tf.name_scope(self._scope.original_name_scope):
            outputs = self.call(x, *args, **kwargs)
            self._regularize_activity(outputs)
            return outputs

    def _regularize_activity(self, outputs: Tensor) -> None:
        if self.activity_regularizer is None:
            return
        tf = _tf()
        with tf.name_scope("ActivityRegularizer"):
            batch = tf.cast(tf.shape(outputs)[0], outputs.dtype)
            self._add_loss(self.activity_regularizer(outputs) / batch)

    def apply(self, inputs: Any, *args: Any, **kwargs: Any) -> Tensor:
        return self(inputs, *args, **kwargs)


def _known_dim(shape: Any, axis: int, message: str) -> int:
    dim = shape[axis] if shape.rank is not None else None
    if dim is None:
        raise InvalidArgumentError(message)
    return int(dim)


class Dense(Layer):
    """``activation(inputs @ kernel + bias)`` on the last dim of ``inputs``; ``kernel`` is
    (in, units), ``bias`` (units,)."""

    _base_name = "dense"

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True, kernel_initializer: Any = None,
                 bias_initializer: Any = None, kernel_regularizer: Optional[Callable] = None,
                 bias_regularizer: Optional[Callable] = None, activity_regularizer: Optional[Callable] = None,
                 trainable: bool = True, name: Optional[str] = None, dtype: Any = None, _reuse: Any = None) -> None:
        super().__init__(trainable, name, dtype, _reuse, activity_regularizer)
        if isinstance(units, bool) or not isinstance(units, numbers.Integral) or units <= 0:
            raise InvalidArgumentError(f"Dense: units must be a positive integer, got {units!r}")
        self.units = int(units)
        self.activation = _activation(activation, "Dense")
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = _tf().zeros_initializer() if bias_initializer is None else bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer

    def build(self, input_shape: Any) -> None:
        if input_shape.rank is not None and input_shape.rank < 2:
            raise InvalidArgumentError(f"Input 0 of layer {self._base_name} is incompatible with the layer: "
                                       f"expected min_ndim=2, found ndim={input_shape.rank}. Full shape received: "
                                       f"{input_shape}")
        last = _known_dim(input_shape, -1, "The last dimension of the inputs to `Dense` should be defined. Found "
                                           "`None`.")
        self.kernel = self.add_weight("kernel", [last, self.units], initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer)
        self.bias = self.add_weight("bias", [self.units], initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer) if self.use_bias else None

    def call(self, inputs: Tensor) -> Tensor:
        tf = _tf()
        rank = inputs.shape.rank
        if rank == 2:
            outputs = tf.matmul(inputs, self.kernel, name="MatMul")
        else:
            outputs = tf.tensordot(inputs, self.kernel, [[-1 if rank is None else rank - 1], [0]], name="Tensordot")
        if self.bias is not None:
            outputs = tf.nn.bias_add(outputs, self.bias)
        return self.activation(outputs) if self.activation is not None else outputs


class Conv2D(Layer):
    """2-D convolution of NHWC (``channels_last``) or NCHW inputs with a (kh, kw, in, filters) kernel,
    plus ``bias`` and ``activation``; ``padding`` 'valid' or 'same' (TF's, bottom/right first)."""

    _base_name = "conv2d"

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
                 data_format: str = "channels_last", dilation_rate: Any = (1, 1), activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
                 kernel_regularizer: Optional[Callable] = None, bias_regularizer: Optional[Callable] = None,
                 activity_regularizer: Optional[Callable] = None, trainable: bool = True,
                 name: Optional[str] = None, dtype: Any = None, _reuse: Any = None) -> None:
        super().__init__(trainable, name, dtype, _reuse, activity_regularizer)
        if isinstance(filters, bool) or not isinstance(filters, numbers.Integral) or filters <= 0:
            raise InvalidArgumentError(f"Conv2D: filters must be a positive integer, got {filters!r}")
        self.filters = int(filters)
        self.kernel_size = _tuple(kernel_size, 2, "kernel_size", "Conv2D")
        self.strides = _tuple(strides, 2, "strides", "Conv2D")
        self.padding = _padding(padding, "Conv2D").lower()
        self.data_format = _data_format(data_format, "Conv2D")
        self.dilation_rate = _tuple(dilation_rate, 2, "dilation_rate", "Conv2D")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise InvalidArgumentError("Conv2D: strides > 1 not supported in conjunction with dilation_rate > 1")
        self.activation = _activation(activation, "Conv2D")
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = _tf().zeros_initializer() if bias_initializer is None else bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer

    def _channel_axis(self) -> int:
        return 1 if self.data_format == "channels_first" else -1

    def build(self, input_shape: Any) -> None:
        if input_shape.rank is not None and input_shape.rank != 4:
            raise InvalidArgumentError(f"Input 0 of layer {self._base_name} is incompatible with the layer: "
                                       f"expected ndim=4, found ndim={input_shape.rank}. Full shape received: "
                                       f"{input_shape}")
        channels = _known_dim(input_shape, self._channel_axis(),
                              "The channel dimension of the inputs should be defined. Found `None`.")
        self.kernel = self.add_weight("kernel", [*self.kernel_size, channels, self.filters],
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer)
        self.bias = self.add_weight("bias", [self.filters], initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer) if self.use_bias else None

    def call(self, inputs: Tensor) -> Tensor:
        tf = _tf()
        nchw = self.data_format == "channels_first"
        fmt = "NCHW" if nchw else "NHWC"
        strides = [1, 1, *self.strides] if nchw else [1, *self.strides, 1]
        dilations = [1, 1, *self.dilation_rate] if nchw else [1, *self.dilation_rate, 1]
        outputs = tf.nn.conv2d(inputs, self.kernel, strides, self.padding.upper(), data_format=fmt,
                               dilations=dilations, name="Conv2D")
        if self.bias is not None:
            outputs = tf.nn.bias_add(outputs, self.bias, data_format=fmt)
        return self.activation(outputs) if self.activation is not None else outputs


class _Pooling2D(Layer):
    _kernel = ""

    def __init__(self, pool_size: Any, strides: Any, padding: str = "valid", data_format: str = "channels_last",
                 name: Optional[str] = None, **kwargs: Any) -> None:
        kind = type(self).__name__
        super().__init__(name=name, **kwargs)
        self.pool_size = _tuple(pool_size, 2, "pool_size", kind)
        self.strides = _tuple(strides, 2, "strides", kind)
        self.padding = _padding(padding, kind).lower()
        self.data_format = _data_format(data_format, kind)

    def build(self, input_shape: Any) -> None:
        if input_shape.rank is not None and input_shape.rank != 4:
            raise InvalidArgumentError(f"Input 0 of layer {self._base_name} is incompatible with the layer: "
                                       f"expected ndim=4, found ndim={input_shape.rank}. Full shape received: "
                                       f"{input_shape}")

    def call(self, inputs: Tensor) -> Tensor:
        nchw = self.data_format == "channels_first"
        window = [1, 1, *self.pool_size] if nchw else [1, *self.pool_size, 1]
        strides = [1, 1, *self.strides] if nchw else [1, *self.strides, 1]
        pool = getattr(_tf().nn, self._kernel)
        return pool(inputs, window, strides, self.padding.upper(), data_format="NCHW" if nchw else "NHWC",
                    name=self._op_name)


class MaxPooling2D(_Pooling2D):
    """The maximum of each ``pool_size`` window, every ``strides``."""

    _base_name = "max_pooling2d"
    _kernel = "max_pool"
    _op_name = "MaxPool"


class AveragePooling2D(_Pooling2D):
    """The mean of each ``pool_size`` window, every ``strides``; with 'same' padding, over the
    window's elements inside the input only, as TF's."""

    _base_name = "average_pooling2d"
    _kernel = "avg_pool"
    _op_name = "AvgPool"


class Flatten(Layer):
    """The inputs as (batch, everything else); ``channels_first`` inputs are first made channels-last,
    as TF's."""

    _base_name = "flatten"

    def __init__(self, data_format: str = "channels_last", name: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self.data_format = _data_format(data_format, "Flatten")

    def call(self, inputs: Tensor) -> Tensor:
        tf = _tf()
        rank = inputs.shape.rank
        if rank is not None and rank < 1:
            raise InvalidArgumentError(f"Flatten: the inputs must have a batch dim, got shape {inputs.shape}")
        if self.data_format == "channels_first" and rank is not None and rank > 2:
            inputs = tf.transpose(inputs, [0, *range(2, rank), 1])
        rest = list(inputs.shape)[1:] if rank is not None else [None]
        if rank == 1:
            return tf.expand_dims(inputs, 1)
        if all(d is not None for d in rest):
            size = 1
            for d in rest:
                size *= int(d)
            return tf.reshape(inputs, [-1, size], name="Reshape")
        return tf.reshape(inputs, [tf.shape(inputs)[0], -1], name="Reshape")


class Dropout(Layer):
    """In training, each element zeroed with probability ``rate`` and the others scaled by
    ``1/(1 - rate)``; otherwise the inputs. ``training`` is a Python bool or a bool tensor."""

    _base_name = "dropout"

    def __init__(self, rate: float = 0.5, noise_shape: Any = None, seed: Optional[int] = None,
                 name: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self.rate = _rate(rate, "Dropout")
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs: Tensor, training: Any = False) -> Tensor:
        tf = _tf()
        training = _training_flag(training, "Dropout")
        if training is False:
            return tf.identity(inputs)
        with tf.name_scope("dropout"):  # tf.nn.dropout's own scope in TF
            dropped = tf.nn.dropout(inputs, rate=self.rate, noise_shape=self.noise_shape, seed=self.seed)
        return dropped if training is True else tf.where(training, dropped, inputs)


class BatchNormalization(Layer):
    """Normalisation of each feature along ``axis`` (TF1's ``tf.layers.BatchNormalization``).

    In training, by the batch's mean and (population) variance, and the moving statistics move
    toward them by ``moving = momentum·moving + (1 - momentum)·batch`` through update ops put in
    ``UPDATE_OPS``. The 4-D case with the channels last or first is TF's fused kernel: its moving
    variance moves toward the batch's unbiased variance; other inputs use the population one, as
    TF's. In inference, by the moving statistics."""

    _base_name = "batch_normalization"

    def __init__(self, axis: int = -1, momentum: float = 0.99, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer: Any = None, gamma_initializer: Any = None,
                 moving_mean_initializer: Any = None, moving_variance_initializer: Any = None,
                 beta_regularizer: Optional[Callable] = None, gamma_regularizer: Optional[Callable] = None,
                 trainable: bool = True, name: Optional[str] = None, fused: Optional[bool] = None,
                 dtype: Any = None, _reuse: Any = None) -> None:
        super().__init__(trainable, name, dtype, _reuse)
        if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
            raise ArgumentTypeError(f"BatchNormalization: axis must be an int, got {type(axis).__name__}")
        for what, value in (("momentum", momentum), ("epsilon", epsilon)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ArgumentTypeError(f"BatchNormalization: {what} must be a float, got {type(value).__name__}")
        self.axis = int(axis)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        tf = _tf()
        self.beta_initializer = beta_initializer or tf.zeros_initializer()
        self.gamma_initializer = gamma_initializer or tf.ones_initializer()
        self.moving_mean_initializer = moving_mean_initializer or tf.zeros_initializer()
        self.moving_variance_initializer = moving_variance_initializer or tf.ones_initializer()
        self.beta_regularizer = beta_regularizer
        self.gamma_regularizer = gamma_regularizer
        self.fused = fused

    def build(self, input_shape: Any) -> None:
        rank = input_shape.rank
        if rank is None:
            raise InvalidArgumentError("BatchNormalization: the inputs' rank must be known when the graph is built")
        if not -rank <= self.axis < rank:
            raise InvalidArgumentError(f"Invalid axis: {self.axis} (the inputs have rank {rank})")
        self._rank = rank
        self._axis = self.axis % rank
        fusable = rank == 4 and self._axis in (1, 3)
        if self.fused and not fusable:
            raise InvalidArgumentError(f"BatchNormalization: fused=True needs 4-D inputs normalised along axis 1 or "
                                       f"3, got rank {rank} and axis {self.axis}")
        self._fused = fusable if self.fused is None else bool(self.fused)
        channels = _known_dim(input_shape, self._axis, f"Axis {self.axis} of input tensor should have a defined "
                                                      f"dimension but the layer received an input with shape "
                                                      f"{input_shape}.")
        shape = [channels]
        self.gamma = self.add_weight("gamma", shape, initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer) if self.scale else None
        self.beta = self.add_weight("beta", shape, initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer) if self.center else None
        self.moving_mean = self.add_weight("moving_mean", shape, initializer=self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", shape,
                                               initializer=self.moving_variance_initializer, trainable=False)

    def _params(self) -> tuple[Any, Any]:
        tf = _tf()
        gamma = self.gamma if self.gamma is not None else tf.ones_like(self.moving_mean)
        beta = self.beta if self.beta is not None else tf.zeros_like(self.moving_mean)
        return gamma, beta

    def _broadcast(self, value: Any) -> Any:
        if self._axis == self._rank - 1:
            return value
        shape = [1] * self._rank
        shape[self._axis] = -1
        return _tf().reshape(value, shape)

    def _normalize(self, inputs: Tensor, training: bool) -> tuple[Tensor, Any, Any]:
        """The output and, in training, the batch statistics the moving averages move toward."""
        tf = _tf()
        gamma, beta = self._params()
        if self._fused:
            fmt = "NHWC" if self._axis == 3 else "NCHW"
            if training:
                y, mean, variance = tf.nn.fused_batch_norm(inputs, gamma, beta, epsilon=self.epsilon,
                                                           data_format=fmt, is_training=True,
                                                           name="FusedBatchNormV3")
                return y, mean, variance
            y, _, _ = tf.nn.fused_batch_norm(inputs, gamma, beta, self.moving_mean, self.moving_variance,
                                             epsilon=self.epsilon, data_format=fmt, is_training=False,
                                             name="FusedBatchNormV3")
            return y, None, None
        if training:
            axes = [a for a in range(self._rank) if a != self._axis]
            mean, variance = tf.nn.moments(inputs, axes)
        else:
            mean, variance = self.moving_mean, self.moving_variance
        b = self._broadcast
        y = tf.nn.batch_normalization(inputs, b(mean), b(variance), b(beta), b(gamma), self.epsilon)
        return y, mean, variance

    def _update(self, variable: Any, value: Tensor, decay: Any) -> None:
        """``variable -= (variable - value)·decay``, the op named ``AssignMovingAvg`` (``_1``) as TF's."""
        delta = (variable - _tf().cast(value, variable.dtype)) * decay
        self._add_update(variable.assign_sub(delta, name="AssignMovingAvg"))

    def call(self, inputs: Tensor, training: Any = False) -> Tensor:
        tf = _tf()
        training = _training_flag(training, "BatchNormalization")
        if training is False:
            return self._normalize(inputs, False)[0]
        y_train, mean, variance = self._normalize(inputs, True)
        if training is True:
            outputs, decay = y_train, 1.0 - self.momentum
        else:
            outputs = tf.where(training, y_train, self._normalize(inputs, False)[0])
            decay = tf.where(training, tf.constant(1.0 - self.momentum, inputs.dtype), tf.constant(0.0, inputs.dtype))
        self._update(self.moving_mean, mean, decay)
        self._update(self.moving_variance, variance, decay)
        return outputs


def dense(inputs: Any, units: int, activation: Any = None, use_bias: bool = True, kernel_initializer: Any = None,
          bias_initializer: Any = None, kernel_regularizer: Optional[Callable] = None,
          bias_regularizer: Optional[Callable] = None, activity_regularizer: Optional[Callable] = None,
          trainable: bool = True, name: Optional[str] = None, reuse: Any = None) -> Tensor:
    """``Dense(units, ...)(inputs)``: a fully connected layer with variables ``<name>/kernel`` and
    ``<name>/bias`` (name ``dense``, ``dense_1``, ... by default)."""
    layer = Dense(units, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                  bias_regularizer, activity_regularizer, trainable, name, _reuse=reuse)
    return layer(inputs)


def conv2d(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
           data_format: str = "channels_last", dilation_rate: Any = (1, 1), activation: Any = None,
           use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
           kernel_regularizer: Optional[Callable] = None, bias_regularizer: Optional[Callable] = None,
           activity_regularizer: Optional[Callable] = None, trainable: bool = True, name: Optional[str] = None,
           reuse: Any = None) -> Tensor:
    """``Conv2D(filters, kernel_size, ...)(inputs)``: variables ``<name>/kernel`` (kh, kw, in, filters)
    and ``<name>/bias``."""
    layer = Conv2D(filters, kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                   kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
                   activity_regularizer, trainable, name, _reuse=reuse)
    return layer(inputs)


def max_pooling2d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                  data_format: str = "channels_last", name: Optional[str] = None) -> Tensor:
    """The maximum of each ``pool_size`` window of ``inputs``, every ``strides``."""
    return MaxPooling2D(pool_size, strides, padding, data_format, name)(inputs)


def average_pooling2d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                      data_format: str = "channels_last", name: Optional[str] = None) -> Tensor:
    """The mean of each ``pool_size`` window of ``inputs``, every ``strides``."""
    return AveragePooling2D(pool_size, strides, padding, data_format, name)(inputs)


def flatten(inputs: Any, name: Optional[str] = None, data_format: str = "channels_last") -> Tensor:
    """``inputs`` reshaped to (batch, the product of the other dims)."""
    return Flatten(data_format, name)(inputs)


def dropout(inputs: Any, rate: float = 0.5, noise_shape: Any = None, seed: Optional[int] = None,
            training: Any = False, name: Optional[str] = None) -> Tensor:
    """Dropout when ``training`` (a Python bool or a bool tensor; False by default, as TF1's), else
    the inputs."""
    return Dropout(rate, noise_shape, seed, name)(inputs, training=training)


def batch_normalization(inputs: Any, axis: int = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                        center: bool = True, scale: bool = True, beta_initializer: Any = None,
                        gamma_initializer: Any = None, moving_mean_initializer: Any = None,
                        moving_variance_initializer: Any = None, beta_regularizer: Optional[Callable] = None,
                        gamma_regularizer: Optional[Callable] = None, training: Any = False, trainable: bool = True,
                        name: Optional[str] = None, reuse: Any = None, fused: Optional[bool] = None) -> Tensor:
    """Batch normalisation (see ``BatchNormalization``); with ``training`` true (False by default, as
    TF1's) the moving-average updates go into ``tf.GraphKeys.UPDATE_OPS``: run them with the train op."""
    layer = BatchNormalization(axis, momentum, epsilon, center, scale, beta_initializer, gamma_initializer,
                               moving_mean_initializer, moving_variance_initializer, beta_regularizer,
                               gamma_regularizer, trainable, name, fused, _reuse=reuse)
    return layer(inputs, training=training)
