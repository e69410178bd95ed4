"""Containers of parameters: ``ParameterList`` and ``ParameterDict``. A plain tensor put in one
becomes a ``Parameter``; other objects are kept as they are."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Iterator, Optional, Union

from rustgrad._rustgrad import Tensor
from rustgrad.errors import ArgumentTypeError, ForwardNotDefinedError, InvalidArgumentError, ModuleKeyError
from rustgrad.nn.modules.container import _abs_index
from rustgrad.nn.modules.module import Module
from rustgrad.nn.parameter import Parameter

__all__ = ["ParameterDict", "ParameterList"]


def _as_parameter(value: Any) -> Any:
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _describe(value: Any) -> str:
    if not isinstance(value, Tensor):
        return "Object of type: " + type(value).__name__
    size = "x".join(str(s) for s in value.shape)
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    return f"{kind} containing: [{value.dtype} of size {size}]"


class ParameterList(Module):
    """A list of parameters, registered under the names ``"0"``, ``"1"``, ..."""

    _size: int

    def __init__(self, values: Optional[Iterable[Any]] = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _get_abs_string_index(self, idx: Any) -> str:
        return str(_abs_index(idx, len(self)))

    def __getitem__(self, idx: Union[int, slice]) -> Any:
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, self._get_abs_string_index(idx))

    def __setitem__(self, idx: int, param: Any) -> None:
        setattr(self, self._get_abs_string_index(idx), _as_parameter(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter([self[i] for i in range(len(self))])

    def __iadd__(self, parameters: Iterable[Any]) -> ParameterList:
        return self.extend(parameters)

    def append(self, value: Any) -> ParameterList:
        """Adds ``value`` at the end (a tensor becomes a Parameter); returns the list."""
        index = len(self)
        self._size += 1
        setattr(self, str(index), _as_parameter(value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Appends every value of the iterable ``values``."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise ArgumentTypeError(
                "ParameterList.extend should be called with an iterable, but got " + type(values).__name__
            )
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(p)}" for k, p in enumerate(self))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise ForwardNotDefinedError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters, registered under their (string) keys."""

    _keys: dict[str, None]

    def __init__(self, parameters: Optional[Any] = None) -> None:
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _key_to_attr(key: Any) -> str:
        if not isinstance(key, str):
            raise ArgumentTypeError(
                "Index given to ParameterDict cannot be used as a key as it is not a string "
                f"(type is '{type(key).__name__}'). Open an issue on github if you need non-string keys."
            )
        return key

    def __getitem__(self, key: str) -> Any:
        if self._key_to_attr(key) not in self._keys:
            raise ModuleKeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        attr = self._key_to_attr(key)
        setattr(self, attr, _as_parameter(value))
        self._keys[key] = None

    def __delitem__(self, key: str) -> None:
        if self._key_to_attr(key) not in self._keys:
            raise ModuleKeyError(key)
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same parameters."""
        return ParameterDict((k, self[k]) for k in self._keys)

    def setdefault(self, key: str, default: Optional[Any] = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        if not self._keys:
            raise ModuleKeyError("popitem(): dictionary is empty")
        k = list(self._keys)[-1]
        value = self[k]
        del self[k]
        return k, value

    def get(self, key: str, default: Optional[Any] = None) -> Any:
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Optional[Any] = None) -> ParameterDict:
        return ParameterDict((k, default) for k in keys)

    def keys(self) -> Iterable[str]:
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        return [(k, self[k]) for k in self._keys]

    def values(self) -> Iterable[Any]:
        return [self[k] for k in self._keys]

    def update(self, parameters: Any) -> None:
        """Adds the entries of a mapping, or of an iterable of ``(key, value)`` pairs."""
        if not isinstance(parameters, Iterable):
            raise ArgumentTypeError(
                "ParametersDict.update should be called with an iterable of key/value pairs, but got "
                + type(parameters).__name__
            )
        if isinstance(parameters, (Mapping, ParameterDict)):
            for key, parameter in parameters.items():
                self[key] = parameter
            return
        for j, p in enumerate(parameters):
            if not isinstance(p, Iterable):
                raise ArgumentTypeError(
                    f"ParameterDict update sequence element #{j} should be Iterable; is" + type(p).__name__
                )
            pair = list(p)
            if len(pair) != 2:
                raise InvalidArgumentError(
                    f"ParameterDict update sequence element #{j} has length {len(pair)}; 2 is required"
                )
            self[pair[0]] = pair[1]

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(p)}" for k, p in self.items())

    def __call__(self, input: Any) -> Any:
        raise ForwardNotDefinedError("ParameterDict should not be called.")
