"""Containers of modules: ``Sequential``, ``ModuleList`` and ``ModuleDict``, with torch's indexing
and numbering rules."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, Iterator, Optional, Union, overload

from rustgrad.errors import ArgumentTypeError, IndexOutOfRangeError, InvalidArgumentError, ModuleKeyError
from rustgrad.nn.modules.module import Module, _addindent

__all__ = ["ModuleDict", "ModuleList", "Sequential"]


def _abs_index(index: Any, size: int, message: str = "index {} is out of range") -> int:
    try:
        idx: int = operator.index(index)
    except TypeError:
        raise ArgumentTypeError(f"indices must be integers or slices, not {type(index).__name__}") from None
    if not -size <= idx < size:
        raise IndexOutOfRangeError(message.format(idx))
    return idx % size if size else idx


def _renumber(modules: dict[str, Optional[Module]]) -> dict[str, Optional[Module]]:
    """The modules keyed 0, 1, 2, ... in their order (after a deletion), as torch keeps them."""
    return OrderedDict((str(i), m) for i, m in enumerate(modules.values()))


class Sequential(Module):
    """Modules applied one after the other: ``Sequential(Linear(3, 4), ReLU(), Linear(4, 1))``, or
    ``Sequential(OrderedDict([("fc", Linear(3, 4)), ...]))`` for named layers. Indexing gives a
    layer, slicing a ``Sequential``."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    @overload
    def __getitem__(self, idx: slice) -> Sequential: ...

    @overload
    def __getitem__(self, idx: int) -> Module: ...

    def __getitem__(self, idx: Union[slice, int]) -> Union[Sequential, Module]:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_abs_index(idx, len(self))]  # type: ignore[return-value]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules.keys())[_abs_index(idx, len(self))]
        setattr(self, key, module)

    def __delitem__(self, idx: Union[slice, int]) -> None:
        keys = list(self._modules.keys())
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_abs_index(idx, len(self))]]):
            delattr(self, key)
        object.__setattr__(self, "_modules", _renumber(self._modules))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ArgumentTypeError(
                "add operator supports only objects of Sequential class, but "
                f"{type(other).__name__} is given."
            )
        return Sequential(*self, *other)

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ArgumentTypeError(
                "add operator supports only objects of Sequential class, but "
                f"{type(other).__name__} is given."
            )
        return self.extend(other)

    def __mul__(self, other: int) -> Sequential:
        if not isinstance(other, int):
            raise ArgumentTypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise InvalidArgumentError(f"Non-positive multiplication factor {other} for {type(self)}")
        return Sequential(*(list(self) * other))

    def append(self, module: Module) -> Sequential:
        """Adds ``module`` at the end; returns the Sequential."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Inserts ``module`` before position ``index`` (negative counts from the end)."""
        if not isinstance(module, Module):
            raise ArgumentTypeError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexOutOfRangeError(f"Index out of range: {index}")
        if index < 0:
            index += n
        modules = list(self._modules.values())
        modules.insert(index, module)
        object.__setattr__(self, "_modules", OrderedDict((str(i), m) for i, m in enumerate(modules)))
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        """Appends every module of ``sequential``."""
        for layer in sequential:
            self.append(layer)
        return self

    def pop(self, key: Union[int, slice]) -> Module:
        """Removes and returns the module at ``key``."""
        value = self[key]
        del self[key]
        return value

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered so their parameters belong to the owner; unlike ``Sequential``
    it has no ``forward``: the owner decides how to call them."""

    def __init__(self, modules: Optional[Iterable[Module]] = None) -> None:
        super().__init__()
        if modules is not None:
            self += modules

    def _get_abs_string_index(self, idx: Any) -> str:
        return str(_abs_index(idx, len(self)))

    @overload
    def __getitem__(self, idx: slice) -> ModuleList: ...

    @overload
    def __getitem__(self, idx: int) -> Module: ...

    def __getitem__(self, idx: Union[int, slice]) -> Union[Module, ModuleList]:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])  # type: ignore[arg-type]
        return self._modules[self._get_abs_string_index(idx)]  # type: ignore[return-value]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, self._get_abs_string_index(idx), module)

    def __delitem__(self, idx: Union[int, slice]) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, self._get_abs_string_index(idx))
        object.__setattr__(self, "_modules", _renumber(self._modules))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        combined = ModuleList()
        for i, module in enumerate(list(self) + list(other)):
            combined.add_module(str(i), module)
        return combined

    def insert(self, index: int, module: Module) -> None:
        """Inserts ``module`` before position ``index``."""
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module: Module) -> ModuleList:
        """Adds ``module`` at the end; returns the list."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key: Union[int, slice]) -> Module:
        """Removes and returns the module at ``key``."""
        value = self[key]
        del self[key]
        return value

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Appends every module of the iterable ``modules``."""
        if not isinstance(modules, Iterable):
            raise ArgumentTypeError(
                "ModuleList.extend should be called with an iterable, but got " + type(modules).__name__
            )
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self

    def __repr__(self) -> str:
        """As torch: runs of identical modules are shown once, as ``(0-2): 3 x Linear(...)``."""
        reprs = [repr(item) for item in self]
        if not reprs:
            return self._get_name() + "()"
        blocks: list[list[Any]] = []  # [first index, last index, repr]
        for i, text in enumerate(reprs):
            if blocks and blocks[-1][2] == text:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, text])
        lines = []
        for start, end, text in blocks:
            local = f"({start}): {text}" if start == end else f"({start}-{end}): {end - start + 1} x {text}"
            lines.append(_addindent(local, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules, registered under their keys."""

    def __init__(self, modules: Optional[Any] = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        if key not in self._modules:
            raise ModuleKeyError(key)
        return self._modules[key]  # type: ignore[return-value]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        if key not in self._modules:
            raise ModuleKeyError(key)
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Removes every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Removes and returns the module under ``key``."""
        value = self[key]
        del self[key]
        return value

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()  # type: ignore[return-value]

    def values(self) -> Iterable[Module]:
        return self._modules.values()  # type: ignore[return-value]

    def update(self, modules: Any) -> None:
        """Adds the modules of a mapping, or of an iterable of ``(key, module)`` pairs."""
        if not isinstance(modules, Iterable):
            raise ArgumentTypeError(
                "ModuleDict.update should be called with an iterable of key/value pairs, but got "
                + type(modules).__name__
            )
        if isinstance(modules, (OrderedDict, ModuleDict, Mapping)):
            for key, module in modules.items():
                self[key] = module
            return
        for j, m in enumerate(modules):
            if not isinstance(m, Iterable):
                raise ArgumentTypeError(
                    f"ModuleDict update sequence element #{j} should be Iterable; is" + type(m).__name__
                )
            if not len(m) == 2:  # type: ignore[arg-type]
                raise InvalidArgumentError(
                    f"ModuleDict update sequence element #{j} has length {len(m)}; 2 is required"  # type: ignore[arg-type]
                )
            self[m[0]] = m[1]  # type: ignore[index]
