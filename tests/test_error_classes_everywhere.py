"""Every error the Python layer raises is a rustgrad class (a ``RustgradError`` that is also the
builtin PyTorch or TF1 raise), never a bare builtin.

The first part reads every module of the package with ``ast`` and refuses a bare builtin error
(``raise ValueError(...)``, ``raise TypeError``, ``err = RuntimeError(...)``) outside an explicit
allow-list. The second part makes the real call that fails in each module and checks the class,
the builtin it is too, and the message.
"""

from __future__ import annotations

import ast
import os
import struct
import tempfile
from pathlib import Path
from typing import Optional
from unittest import mock

import numpy as np
import pytest

import rustgrad
import rustgrad.compat.v1 as tf
import rustgrad.nn.functional as F
from rustgrad import optim, viz
from rustgrad.errors import (
    ArgumentTypeError,
    DataLoaderError,
    DTypeError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    ParamGroupKeyError,
    RustgradError,
    SerializationError,
    ShapeError,
)
from rustgrad.optim import lr_scheduler
from rustgrad.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    RandomSampler,
    TensorDataset,
    default_collate,
    random_split,
)

PACKAGE = Path(rustgrad.__file__).resolve().parent

BARE_BUILTINS = {
    "ValueError", "TypeError", "KeyError", "IndexError", "RuntimeError", "OverflowError", "ZeroDivisionError",
    "NotImplementedError",
}

# (file relative to the package, qualified function) -> why a bare builtin is allowed there.
ALLOWED: dict[tuple[str, str], str] = {}


def _bare_builtin_errors(path: Path) -> list[tuple[int, str, str]]:
    """(line, qualified function, builtin) of each bare builtin error raised or built in ``path``."""
    found: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{scope}.{child.name}" if scope else child.name
            name: Optional[str] = None
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
                name = child.func.id  # raise X(...), or X(...) built to be raised later
            elif isinstance(child, ast.Raise) and isinstance(child.exc, ast.Name):
                name = child.exc.id  # raise X
            if name in BARE_BUILTINS:
                found.append((child.lineno, scope, name))
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), "")
    return found


def _all_bare_builtin_errors() -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        for line, scope, name in _bare_builtin_errors(path):
            out.setdefault((relative, scope), []).append(f"{relative}:{line} ({scope or 'module'}): {name}")
    return out


def test_the_scan_finds_a_bare_builtin_error(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "class A:\n"
        "    def f(self):\n"
        "        raise ValueError('x')\n"
        "def g():\n"
        "    raise KeyError\n"
        "def h():\n"
        "    err = RuntimeError('y')\n"
        "    raise err\n"
        "def fine():\n"
        "    raise AttributeError('protocol')\n"
    )
    assert _bare_builtin_errors(sample) == [(3, "A.f", "ValueError"), (5, "g", "KeyError"), (7, "h", "RuntimeError")]


def test_no_module_raises_a_bare_builtin_error_outside_the_allow_list():
    stray = [
        where for key, lines in _all_bare_builtin_errors().items() if key not in ALLOWED for where in lines
    ]
    assert not stray, (
        "raise a rustgrad.errors class (also the builtin torch/TF raise) instead of a bare builtin:\n  "
        + "\n  ".join(stray)
    )


def test_every_allow_list_entry_is_still_needed():
    stale = sorted(set(ALLOWED) - set(_all_bare_builtin_errors()))
    assert not stale, f"these functions raise no bare builtin any more; remove them from ALLOWED: {stale}"


def test_every_allow_list_entry_gives_a_reason():
    assert all(reason.strip() for reason in ALLOWED.values())


# ---------------------------------------------------------------- one real call per module


def _raises(cls: type, builtin: type, match: str, call, *args, **kwargs) -> BaseException:
    with pytest.raises(cls, match=match) as info:
        call(*args, **kwargs)
    assert isinstance(info.value, builtin)
    assert isinstance(info.value, RustgradError)
    return info.value


def test_batch_norm_momentum_convention_must_be_torch_or_tf():
    from rustgrad._norm import new_weight

    _raises(InvalidArgumentError, ValueError, "batch_norm: momentum convention must be 'torch' or 'tf', got 'keras'",
            new_weight, 0.1, "keras")


def test_a_safetensors_header_holding_nan_is_a_serialization_error(tmp_path):
    header = b'{"x": NaN}'
    path = tmp_path / "nan.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    _raises(SerializationError, RuntimeError, "header is not valid JSON \\(NaN is not JSON\\)", rustgrad.load,
            str(path))


def test_conv2d_bias_of_the_wrong_kind_or_shape():
    x, w = rustgrad.ones(1, 2, 4, 4), rustgrad.ones(3, 2, 3, 3)
    _raises(ArgumentTypeError, TypeError, "conv2d\\(\\): argument 'bias' must be a Tensor or None, not list",
            F.conv2d, x, w, [1.0, 2.0, 3.0])
    _raises(ShapeError, ValueError, r"conv2d: expected bias of shape \(3,\) for an output with 3 channels, got bias "
            r"of shape \(2,\)", F.conv2d, x, w, rustgrad.ones(2))


def test_dropout_probability_and_embedding_index_out_of_range():
    _raises(InvalidArgumentError, ValueError, "dropout probability has to be between 0 and 1, but got 1.5",
            F.dropout, rustgrad.ones(3), p=1.5)
    _raises(DTypeError, TypeError, "dropout: expected a float tensor, got .*int64", F.dropout,
            rustgrad.tensor([1, 2]), p=0.5)
    weight = rustgrad.ones(4, 2)
    _raises(IndexOutOfRangeError, IndexError, "embedding: index 7 is out of range for a weight of 4 rows",
            F.embedding, rustgrad.tensor([1, 7]), weight, max_norm=1.0)


def test_functional_losses_refuse_bad_reduction_shapes_and_targets():
    x = rustgrad.ones(2, 3)
    _raises(InvalidArgumentError, ValueError, "avg is not a valid value for reduction; use one of 'none', 'mean', "
            "'sum'", F.mse_loss, x, x, reduction="avg")
    _raises(ShapeError, ValueError, r"Target size \(\[2, 1\]\) must be the same as input size \(\[2, 3\]\)",
            F.binary_cross_entropy_with_logits, x, rustgrad.ones(2, 1))
    _raises(DTypeError, TypeError, "cross_entropy: target must hold class indices \\(int64\\), got a bool tensor",
            F.cross_entropy, x, rustgrad.tensor([True, False]))
    _raises(InvalidArgumentError, ValueError, "label_smoothing must be between 0.0 and 1.0. Got: 2",
            F.cross_entropy, x, rustgrad.tensor([0, 1]), label_smoothing=2)


@pytest.mark.parametrize("make, match", [
    (lambda p: optim.Adam(p, lr=-1.0), "Invalid learning rate: -1.0"),
    (lambda p: optim.AdamW(p, betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    (lambda p: optim.RMSprop(p, alpha=-0.5), "Invalid alpha value: -0.5"),
    (lambda p: optim.Adagrad(p, lr_decay=-0.1), "Invalid lr_decay value: -0.1"),
    (lambda p: optim.SGD(p, lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
])
def test_optimizers_refuse_bad_hyperparameters(make, match):
    _raises(InvalidArgumentError, ValueError, match, make, [rustgrad.ones(2, requires_grad=True)])


def test_optimizer_base_refuses_a_bare_tensor_and_a_state_of_another_shape():
    w = rustgrad.ones(2, requires_grad=True)
    _raises(ArgumentTypeError, TypeError, "wrap it in a list", optim.SGD, w, lr=0.1)
    opt = optim.Adam([w])
    w.grad = rustgrad.ones(2)
    opt.step()
    _raises(InvalidArgumentError, ValueError, r"different number of parameter groups \(1, this optimizer has 2\)",
            optim.Adam([{"params": [rustgrad.ones(1, requires_grad=True)]},
                        {"params": [rustgrad.ones(1, requires_grad=True)]}]).load_state_dict, opt.state_dict())
    other = optim.Adam([rustgrad.ones(3, requires_grad=True)])
    _raises(ShapeError, ValueError, r"state 'exp_avg' of parameter 0 has shape \(2,\), but the parameter has shape "
            r"\(3,\)", other.load_state_dict, opt.state_dict())


def test_schedulers_refuse_resuming_without_initial_lr_and_stepping_past_the_end():
    opt = optim.SGD([rustgrad.ones(2, requires_grad=True)], lr=0.1)
    err = _raises(ParamGroupKeyError, KeyError, r"param 'initial_lr' is not specified in param_groups\[0\] when "
                  "resuming an optimizer \\(last_epoch=3\\); .*last_epoch=-1", lr_scheduler.StepLR, opt,
                  step_size=1, last_epoch=3)
    assert "initial_lr" in err.args[0]
    one_cycle = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    one_cycle.step()
    one_cycle.step()
    _raises(InvalidArgumentError, ValueError, "Tried to step 3 times. The specified number of total steps is 2",
            one_cycle.step)


def test_save_refuses_what_it_cannot_store(tmp_path):
    _raises(ArgumentTypeError, TypeError, r"save: cannot save obj\['f'\], an object of type object;",
            rustgrad.save, {"f": object()}, str(tmp_path / "x.pt"))
    loop: list = []
    loop.append(loop)
    _raises(ArgumentTypeError, TypeError, "contains itself", rustgrad.save, loop, str(tmp_path / "y.pt"))
    assert not (tmp_path / "x.pt").exists()


def test_static_shape_of_unknown_rank_has_no_list():
    _raises(ShapeError, ValueError, "as_list\\(\\) is not defined on an unknown TensorShape.",
            tf.TensorShape(None).as_list)


def test_static_nn_layers_refuse_bad_bias_and_rate():
    with tf.Graph().as_default():
        x = tf.zeros((2, 3))
        _raises(ShapeError, ValueError, "bias_add: bias must be 1-D", tf.nn.bias_add, x, tf.zeros((3, 1)))
        _raises(ShapeError, ValueError, "bias_add: Must provide as many biases as the channel dimension",
                tf.nn.bias_add, x, tf.zeros((4,)))
        _raises(InvalidArgumentError, ValueError, "rate must be a scalar tensor or a float in the range \\[0, 1\\), "
                "got 1.5", tf.nn.dropout, x, rate=1.5)
        _raises(ArgumentTypeError, TypeError, "dropout: rate must be a float in \\[0, 1\\), got str",
                tf.nn.dropout, x, rate="half")


def test_static_losses_refuse_missing_and_mismatched_inputs():
    with tf.Graph().as_default():
        x = tf.zeros((2, 3))
        _raises(InvalidArgumentError, ValueError, "labels must not be None.", tf.losses.mean_squared_error, None, x)
        _raises(InvalidArgumentError, ValueError, "onehot_labels must not be None.", tf.losses.softmax_cross_entropy,
                None, x)
        _raises(InvalidArgumentError, ValueError, "logits must not be None.", tf.losses.sigmoid_cross_entropy, x,
                None)
        _raises(InvalidArgumentError, ValueError, "predictions must not be None.", tf.losses.absolute_difference, x,
                None)
        _raises(ShapeError, ValueError, r"huber_loss: Shapes TensorShape\(\[2, 3\]\) and TensorShape\(\[3, 2\]\) "
                "are incompatible", tf.losses.huber_loss, tf.zeros((3, 2)), x)
        _raises(InvalidArgumentError, ValueError, "Invalid Reduction Key mean.", tf.losses.log_loss, x, x,
                reduction="mean")


def test_static_nn_losses_refuse_bad_dtypes_and_ranks():
    with tf.Graph().as_default():
        logits = tf.zeros((2, 3))
        _raises(DTypeError, TypeError, "l2_loss: t must be float32 or float64, got int32", tf.nn.l2_loss,
                tf.constant([1, 2]))
        _raises(DTypeError, TypeError, "sparse_softmax_cross_entropy_with_logits: labels must be int32 or int64, "
                "got float32", tf.nn.sparse_softmax_cross_entropy_with_logits, labels=tf.zeros((2,)), logits=logits)
        _raises(ShapeError, ValueError, r"Rank mismatch: Rank of labels \(received 2\) should equal rank of logits "
                r"minus 1 \(received 2\)", tf.nn.sparse_softmax_cross_entropy_with_logits,
                labels=tf.constant([[0, 1]]), logits=logits)


def test_collate_refuses_ragged_lists_and_unknown_elements():
    _raises(ShapeError, RuntimeError, r"each element in list of batch should be of equal size \(default_collate got "
            r"sequences of lengths \[1, 2\]\); pad the samples", default_collate,
            [[1, 2], [1]])
    _raises(ArgumentTypeError, TypeError, "default_collate: batch must contain tensors, numpy arrays, numbers, "
            "dicts or lists; found <class 'object'>", default_collate, [object(), object()])
    _raises(DTypeError, TypeError, "found object", default_collate, [np.array([None]), np.array([None])])


class _NeedsTwoArguments(Exception):
    def __init__(self, a: int, b: int) -> None:
        super().__init__(a, b)


class _Failing(Dataset):
    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> int:
        raise _NeedsTwoArguments(1, 2)


def test_data_loader_refuses_bad_options_and_wraps_a_worker_error_it_cannot_rebuild():
    data = TensorDataset(rustgrad.ones(4, 2))
    _raises(InvalidArgumentError, ValueError, "num_workers option should be non-negative", DataLoader, data,
            num_workers=-1)
    _raises(InvalidArgumentError, ValueError, "sampler option is mutually exclusive with shuffle", DataLoader, data,
            shuffle=True, sampler=[0, 1])
    err = _raises(DataLoaderError, RuntimeError, "Caught _NeedsTwoArguments in DataLoader worker thread 0", list,
                  DataLoader(_Failing(), num_workers=1))
    assert isinstance(err.__cause__, _NeedsTwoArguments)


def test_datasets_refuse_mismatched_sizes_and_lengths():
    _raises(ShapeError, ValueError, r"Size mismatch between tensors: TensorDataset got shapes \[3\], \[4\]",
            TensorDataset, rustgrad.ones(3),
            rustgrad.ones(4))
    _raises(ArgumentTypeError, TypeError, "TensorDataset takes tensors, got list", TensorDataset, [1, 2])
    _raises(InvalidArgumentError, ValueError, r"Sum of input lengths does not equal the length of the input dataset! "
            r"random_split got lengths \[1, 2\] for a dataset of 4", random_split, TensorDataset(rustgrad.ones(4)),
            [1, 2])


def test_samplers_refuse_bad_sizes_and_flags():
    data = range(4)
    _raises(InvalidArgumentError, ValueError, "batch_size should be a positive integer value, but got batch_size=0",
            BatchSampler, data, 0, False)
    _raises(ArgumentTypeError, TypeError, "replacement should be a boolean value, but got replacement=yes",
            RandomSampler, data, replacement="yes")


def test_viz_refuses_nothing_to_draw_and_reports_a_failing_graphviz():
    _raises(InvalidArgumentError, ValueError, "to_dot: nothing to draw \\(got an empty list\\)", viz.to_dot, [])
    _raises(ArgumentTypeError, TypeError, "to_dot: cannot draw a int", viz.to_dot, 3)
    y = rustgrad.ones(2, requires_grad=True).sum()
    with tempfile.TemporaryDirectory() as folder, mock.patch.dict(os.environ, {"PATH": folder}):
        dot = Path(folder) / "dot"
        dot.write_text("#!/bin/sh\necho 'Error: bad input' >&2\nexit 3\n")
        dot.chmod(0o755)
        _raises(InvalidArgumentError, ValueError, "render: cannot tell the output format", viz.render, y,
                str(Path(folder) / "graph"))
        err = _raises(viz.GraphvizError, RuntimeError, "Graphviz dot failed \\(exit status 3\\) producing format "
                      "'svg': Error: bad input", viz.render, y, str(Path(folder) / "graph.svg"))
        assert not isinstance(err, viz.GraphvizNotFoundError)


def test_the_graphviz_classes_and_the_new_classes_are_the_builtins_torch_raises():
    assert issubclass(viz.GraphvizNotFoundError, viz.GraphvizError)
    assert issubclass(ParamGroupKeyError, KeyError) and issubclass(ParamGroupKeyError, RustgradError)
    assert issubclass(DataLoaderError, RuntimeError) and issubclass(DataLoaderError, RustgradError)
