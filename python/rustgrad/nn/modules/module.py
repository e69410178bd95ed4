"""``nn.Module``: the base class of every layer and model, with torch's registration rules,
traversal, state dicts, modes, hooks and ``repr``."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any, Callable, Iterator, Optional, TypeVar

from rustgrad import _rustgrad
from rustgrad._grad_mode import no_grad
from rustgrad._rustgrad import Tensor
from rustgrad.errors import (
    ArgumentTypeError,
    ForwardNotDefinedError,
    InvalidArgumentError,
    ModuleAttributeError,
    ModuleKeyError,
)
from rustgrad.nn.modules._hooks import RemovableHandle
from rustgrad.nn.modules._state_dict import _IncompatibleKeys, _StateDictMixin
from rustgrad.nn.parameter import Parameter

__all__ = ["Module", "_IncompatibleKeys"]

T = TypeVar("T", bound="Module")


def _typename(value: Any) -> str:
    """torch.typename: ``int`` for builtins, ``module.Class`` for the rest."""
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _addindent(text: str, spaces: int) -> str:
    first, *rest = text.split("\n")
    if not rest:
        return text
    return first + "\n" + "\n".join(" " * spaces + line for line in rest)


def _check_name(kind: str, name: Any, owner: Module, registry: dict[str, Any]) -> None:
    if not isinstance(name, str):
        raise ArgumentTypeError(f"{kind} name should be a string. Got {_typename(name)}")
    if "." in name:
        raise ModuleKeyError(f'{kind} name can\'t contain "."' + (f", got: {name}" if kind == "module" else ""))
    if name == "":
        raise ModuleKeyError(f'{kind} name can\'t be empty string ""')
    if hasattr(owner, name) and name not in registry:
        raise ModuleKeyError(f"attribute '{name}' already exists")


def _forward_unimplemented(self: Module, *input: Any) -> Any:
    raise ForwardNotDefinedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module(_StateDictMixin):
    """Base class for all neural-network modules; subclass it and define ``forward``.

    Parameters and submodules assigned as attributes are registered, so ``parameters()``,
    ``state_dict()``, ``to()``, ``train()``/``eval()`` and ``repr`` see them::

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                return self.fc(x).relu()
    """

    training: bool
    _parameters: dict[str, Optional[Parameter]]
    _buffers: dict[str, Optional[Tensor]]
    _non_persistent_buffers_set: set[str]
    _modules: dict[str, Optional[Module]]
    _forward_hooks: dict[int, Callable[..., Any]]
    _forward_hooks_with_kwargs: dict[int, bool]
    _forward_hooks_always_called: dict[int, bool]
    _forward_pre_hooks: dict[int, Callable[..., Any]]
    _forward_pre_hooks_with_kwargs: dict[int, bool]

    forward: Callable[..., Any] = _forward_unimplemented

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs:
            raise ArgumentTypeError(
                f"{type(self).__name__}.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'"
            )
        if args:
            raise ArgumentTypeError(
                f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} were given"
            )
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", {})
        setattr_(self, "_forward_hooks", OrderedDict())
        setattr_(self, "_forward_hooks_with_kwargs", {})
        setattr_(self, "_forward_hooks_always_called", {})
        setattr_(self, "_forward_pre_hooks", OrderedDict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", {})

    # ----- registration -----

    def register_buffer(self, name: str, tensor: Optional[Tensor], persistent: bool = True) -> None:
        """Adds a tensor that is part of the module's state but not a parameter (running statistics);
        ``persistent=False`` keeps it out of ``state_dict``."""
        if "_buffers" not in self.__dict__:
            raise ModuleAttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name, self, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise ArgumentTypeError(
                f"cannot assign '{_typename(tensor)}' object to buffer '{name}' (torch Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Optional[Parameter]) -> None:
        """Adds a parameter; ``module.name = param`` does the same."""
        if "_parameters" not in self.__dict__:
            raise ModuleAttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name, self, self._parameters)
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise ArgumentTypeError(
                f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                "(torch.nn.Parameter or None required)"
            )
        if param.grad_fn is not None:
            raise InvalidArgumentError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                f"explicitly. To express '{name}' as a function of another Tensor, compute the value in the "
                "forward() method."
            )
        self._parameters[name] = param

    def add_module(self, name: str, module: Optional[Module]) -> None:
        """Adds a child module; ``module.name = child`` does the same."""
        if not isinstance(module, Module) and module is not None:
            raise ArgumentTypeError(f"{_typename(module)} is not a Module subclass")
        if "_modules" not in self.__dict__:
            raise ModuleAttributeError("cannot assign module before Module.__init__() call")
        _check_name("module", name, self, self._modules)
        self._modules[name] = module

    def register_module(self, name: str, module: Optional[Module]) -> None:
        """Alias of ``add_module``."""
        self.add_module(name, module)

    def _lookup(self, target: str, kind: str) -> Any:
        module_path, _, name = target.rpartition(".")
        owner = self.get_submodule(module_path)
        if not hasattr(owner, name):
            raise ModuleAttributeError(f"{owner._get_name()} has no attribute `{name}`")
        return owner, name, getattr(owner, name)

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``"net.0"``); ``""`` is the module itself."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise ModuleAttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise ModuleAttributeError(f"`{item}` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target`` (``"fc.weight"``)."""
        owner, name, param = self._lookup(target, "parameter")
        if not isinstance(param, Parameter):
            raise ModuleAttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target``."""
        owner, name, buffer = self._lookup(target, "buffer")
        if name not in owner._buffers:
            raise ModuleAttributeError(f"`{name}` is not a buffer")
        return buffer  # type: ignore[no-any-return]

    # ----- attribute access -----

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: parameters, buffers and modules live in dicts.
        # Unrolled, as it runs for every parameter a forward reads.
        attrs = self.__dict__
        if "_parameters" in attrs:
            params = attrs["_parameters"]
            if name in params:
                return params[name]
            buffers = attrs["_buffers"]
            if name in buffers:
                return buffers[name]
            modules = attrs["_modules"]
            if name in modules:
                return modules[name]
        raise ModuleAttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        def remove_from(*dicts_or_sets: Any) -> None:
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise ModuleAttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise ArgumentTypeError(
                    f"cannot assign '{_typename(value)}' as parameter '{name}' (torch.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise ModuleAttributeError("cannot assign module before Module.__init__() call")
            remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise ArgumentTypeError(
                    f"cannot assign '{_typename(value)}' as child module '{name}' (torch.nn.Module or None expected)"
                )
            modules[name] = value
            return
        buffers = self.__dict__.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise ArgumentTypeError(
                    f"cannot assign '{_typename(value)}' as buffer '{name}' (torch.Tensor or None expected)"
                )
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    # ----- traversal -----

    def _named_members(self, get_members: Callable[[Module], Any], prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        memo: set[int] = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [
            (prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or id(value) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(value))
                yield (module_prefix + ("." if module_prefix else "") + name, value)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The module's parameters (and its submodules' when ``recurse``), each shared one once."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` pairs, as ``("fc.weight", p)``."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The module's buffers (and its submodules' when ``recurse``)."""
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, buffer)`` pairs."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self) -> Iterator[Module]:
        """The direct submodules."""
        for _, module in self.named_children():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, submodule)`` for the direct submodules, each once."""
        memo: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self) -> Iterator[Module]:
        """This module and every submodule, depth first, each once."""
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo: Optional[set[Module]] = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """``(dotted name, module)`` for this module (named ``prefix``) and every submodule."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub_prefix, remove_duplicate)

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    # ----- modes and gradients -----

    def train(self: T, mode: bool = True) -> T:
        """Sets training mode (``mode=True``) or evaluation mode on this module and its submodules."""
        if not isinstance(mode, bool):
            raise InvalidArgumentError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self: T) -> T:
        """``train(False)``: evaluation mode (dropout off, batch norm uses its running statistics)."""
        return self.train(False)

    def requires_grad_(self: T, requires_grad: bool = True) -> T:
        """Sets ``requires_grad`` on every parameter (to freeze or unfreeze them)."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the parameters' gradients: to None (the default), or to zeros in place."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.zero_()

    def apply(self: T, fn: Callable[[Module], None]) -> T:
        """Calls ``fn`` on every submodule (children first), then on this module; returns it."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ----- dtype and device -----

    def _apply(self: T, fn: Callable[[Tensor], Tensor]) -> T:
        for module in self.children():
            module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                converted = fn(param)
            if converted.dtype == param.dtype:
                continue
            new_param = Parameter(converted, param.requires_grad)
            if param.grad is not None:
                new_param.grad = fn(param.grad)
            self._parameters[key] = new_param
        for key, buffer in self._buffers.items():
            if buffer is not None:
                converted = fn(buffer)
                if converted.dtype != buffer.dtype:
                    self._buffers[key] = converted
        return self

    def to(self: T, *args: Any, **kwargs: Any) -> T:
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)`` or ``to(tensor)``: converts the floating-point
        parameters and buffers to ``dtype``; the only device is the CPU. Returns the module.

        Parameters whose dtype changes are new ``Parameter`` objects (rustgrad cannot change a
        tensor's dtype in place), so build optimizers after calling ``to``."""
        device, dtype = None, None
        for arg in list(args) + [kwargs.pop("device", None), kwargs.pop("dtype", None)]:
            if arg is None:
                continue
            if isinstance(arg, Tensor):
                dtype = arg.dtype
            elif isinstance(arg, _rustgrad.dtype):
                dtype = arg
            else:
                device = arg
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise ArgumentTypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if device is not None:
            _rustgrad.device(device)
        if dtype is None:
            return self
        if not dtype.is_floating_point:
            raise ArgumentTypeError(
                f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}"
            )
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self: T) -> T:
        """Converts floating-point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self: T) -> T:
        """Converts floating-point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def cpu(self: T) -> T:
        """The module itself: everything already lives on the CPU."""
        return self

    def type(self: T, dst_type: Any) -> T:
        """Converts every parameter and buffer to ``dst_type``."""
        return self._apply(lambda t: t.to(dst_type))

    # ----- calling -----

    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        if not (self._forward_hooks or self._forward_pre_hooks):
            return self.forward(*args, **kwargs)
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if self._forward_pre_hooks_with_kwargs.get(hook_id):
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise ArgumentTypeError(
                            "forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                            f"but got {result}."
                        )
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        try:
            output = self.forward(*args, **kwargs)
        except BaseException:
            for hook_id, hook in list(self._forward_hooks.items()):
                if self._forward_hooks_always_called.get(hook_id):
                    try:
                        self._run_forward_hook(hook_id, hook, args, kwargs, None)
                    except Exception as hook_error:
                        warnings.warn(f"forward hook with always_call=True raised while handling an exception: "
                                      f"{hook_error!r}", stacklevel=2)
            raise
        for hook_id, hook in list(self._forward_hooks.items()):
            result = self._run_forward_hook(hook_id, hook, args, kwargs, output)
            if result is not None:
                output = result
        return output

    def _run_forward_hook(self, hook_id: int, hook: Callable[..., Any], args: tuple[Any, ...],
                          kwargs: dict[str, Any], output: Any) -> Any:
        if self._forward_hooks_with_kwargs.get(hook_id):
            return hook(self, args, kwargs, output)
        return hook(self, args, output)

    __call__: Callable[..., Any] = _call_impl

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` runs before ``forward``; returning a value replaces the positional
        arguments (a non-tuple is wrapped). With ``with_kwargs=True`` it is ``hook(module, args, kwargs)``
        and may return ``(args, kwargs)``. ``handle.remove()`` unregisters it."""
        handle = RemovableHandle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)  # type: ignore[attr-defined]
        return handle

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` runs after ``forward``; returning a value replaces the output.
        With ``with_kwargs=True`` it is ``hook(module, args, kwargs, output)``; with ``always_call=True``
        it also runs (with output None) when ``forward`` raises."""
        handle = RemovableHandle(self._forward_hooks, self._forward_hooks_with_kwargs,
                                 self._forward_hooks_always_called)
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)  # type: ignore[attr-defined]
        return handle

    # ----- repr -----

    def extra_repr(self) -> str:
        """The module's own settings for its ``repr``, as ``in_features=4, out_features=2, bias=True``;
        override it in subclasses."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"
