"""The state-dict half of ``nn.Module``: ``state_dict`` and ``load_state_dict``, with torch's keys,
hooks for subclasses (``_save_to_state_dict``, ``_load_from_state_dict``) and error messages."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Optional, cast

from rustgrad._grad_mode import no_grad
from rustgrad._rustgrad import Tensor
from rustgrad.errors import ArgumentTypeError, StateDictError
from rustgrad.nn.parameter import Parameter

if TYPE_CHECKING:
    from rustgrad.nn.modules.module import Module


class _IncompatibleKeys(NamedTuple):
    """What ``load_state_dict`` returns: the keys it did not find, and the keys it did not use."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"

    def __str__(self) -> str:
        return self.__repr__()



class _StateDictMixin:
    _parameters: dict[str, Optional[Parameter]]
    _buffers: dict[str, Optional[Tensor]]
    _non_persistent_buffers_set: set[str]
    _modules: dict[str, Optional[Module]]

    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()

    def state_dict(self, *args: Any, destination: Optional[dict[str, Any]] = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Any]:
        """An ``OrderedDict`` of every parameter and persistent buffer by dotted name. The values are
        detached tensors that share the parameters' memory (``keep_vars=True`` gives the parameters)."""
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                          " for details.", FutureWarning, stacklevel=2)
            if len(args) > 3:
                raise ArgumentTypeError(f"state_dict() takes at most 3 positional arguments, got {len(args)}")
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict: Mapping[str, Any], prefix: str, local_metadata: dict[str, Any],
                              strict: bool, missing_keys: list[str], unexpected_keys: list[str],
                              error_msgs: list[str]) -> None:
        # local_metadata: "assign_to_params_buffers" (load_state_dict's assign=), and "dry_run" (the
        # checking pass load_state_dict makes first, so a failing load changes nothing).
        assign = local_metadata.get("assign_to_params_buffers", False)
        persistent_buffers = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in list(self._parameters.items()) + list(persistent_buffers.items())
                       if v is not None}
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                                  f"object from checkpoint but received {type(input_param)}")
                continue
            if tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {list(input_param.shape)} "
                                  f"from checkpoint, the shape in current model is {list(param.shape)}.")
                continue
            if local_metadata.get("dry_run"):
                continue
            try:
                if assign:
                    self._assign(name, input_param, param)
                else:
                    with no_grad():
                        param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{list(param.shape)} and whose dimensions in the checkpoint are "
                                  f"{list(input_param.shape)}, an exception occurred : {ex.args}.")
        if strict:
            for key in state_dict:
                if not key.startswith(prefix):
                    continue
                input_name = key[len(prefix):].split(".", 1)
                if len(input_name) > 1:
                    if input_name[0] not in self._modules:
                        unexpected_keys.append(key)
                elif input_name[0] not in local_state:
                    unexpected_keys.append(key)

    def _assign(self, name: str, value: Tensor, current: Tensor) -> None:
        if name in self._parameters:
            self._parameters[name] = value if isinstance(value, Parameter) else Parameter(
                value, current.requires_grad)
        else:
            self._buffers[name] = value

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copies parameters and buffers from ``state_dict`` into this module, in place and without
        recording on the tape. With ``strict=True`` (the default) the keys must match
        ``state_dict()``'s exactly. Returns ``(missing_keys, unexpected_keys)``; raises
        ``StateDictError`` (a ``RuntimeError``) listing every mismatch, having changed nothing, when
        anything does not fit."""
        if not isinstance(state_dict, Mapping):
            raise ArgumentTypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        # A checking pass first, so a load that fails leaves the module as it was.
        missing_keys, unexpected_keys, error_msgs = self._load_pass(state_dict, assign, dry_run=True)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if not error_msgs:
            error_msgs = self._load_pass(state_dict, assign, dry_run=False)[2]
        if error_msgs:
            raise StateDictError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    def _load_pass(self, state_dict: Mapping[str, Any], assign: bool,
                   dry_run: bool) -> tuple[list[str], list[str], list[str]]:
        missing_keys: list[str] = []
        unexpected_keys: list[str] = []
        error_msgs: list[str] = []
        for module_prefix, module in cast("Module", self).named_modules(remove_duplicate=False):
            prefix = module_prefix + "." if module_prefix else ""
            metadata = {"assign_to_params_buffers": assign, "dry_run": dry_run}
            module._load_from_state_dict(state_dict, prefix, metadata, True, missing_keys, unexpected_keys,
                                         error_msgs)
        return missing_keys, unexpected_keys, error_msgs
