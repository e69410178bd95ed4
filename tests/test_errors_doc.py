"""docs/errors.md stays true: its class table matches the real classes (where each is defined,
its rustgrad base, the builtins it subclasses), every exception class of the package is in the
table, and every example message on the page is raised, word for word, by the call below."""

from __future__ import annotations

import ctypes
import importlib
import os
import pkgutil
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable
from unittest import mock

import numpy as np
import pytest

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad import errors, viz
from rustgrad.autograd import Function

PAGE = Path(__file__).resolve().parent.parent / "docs" / "errors.md"
ROW = re.compile(r"^\| `(\w+)` \| `([\w.]+)` \| ([^|]+) \| ([^|]+) \| [^|]+ \|$", re.M)
WILDCARD = "..."


def _page() -> str:
    return PAGE.read_text(encoding="utf-8")


def _names(cell: str) -> list[str]:
    return re.findall(r"`([\w.]+)`", cell)


def documented_classes() -> list[tuple[str, str, list[str], list[str]]]:
    """(class, defining module, rustgrad bases, builtins) for each row of the page's class table."""
    return [(name, module, _names(bases), _names(builtins)) for name, module, bases, builtins in ROW.findall(_page())]


def builtin_bases(cls: type) -> list[str]:
    """The most derived builtin classes in ``cls``'s MRO: ShapeError -> RuntimeError, ValueError."""
    builtins = [c for c in cls.__mro__ if c.__module__ == "builtins" and c not in (object, BaseException)]
    return [c.__name__ for c in builtins if not any(other is not c and issubclass(other, c) for other in builtins)]


def rustgrad_bases(cls: type) -> list[str]:
    return [base.__name__ for base in cls.__bases__ if base.__module__ != "builtins"]


def package_exception_classes() -> dict[str, type]:
    """Every exception class defined in a module of the rustgrad package."""
    modules = [rustgrad] + [
        importlib.import_module(info.name) for info in pkgutil.walk_packages(rustgrad.__path__, "rustgrad.")
    ]
    found: dict[str, type] = {}
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseException) and value.__module__.startswith("rustgrad"):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


# ---------------------------------------------------------------- the class table


def test_the_table_lists_each_class_once():
    names = [name for name, *_ in documented_classes()]
    assert len(names) >= 12, "the class table was not found (or lost its columns)"
    assert len(names) == len(set(names)), names


@pytest.mark.parametrize(
    "name, module, bases, builtins", [pytest.param(*row, id=row[0]) for row in documented_classes()]
)
def test_the_table_row_matches_the_class(name, module, bases, builtins):
    cls = getattr(importlib.import_module(module), name)
    assert cls.__module__ == module, f"{name} is defined in {cls.__module__}, not {module}"
    assert rustgrad_bases(cls) == (bases or []), f"{name} subclasses {rustgrad_bases(cls)}"
    assert builtin_bases(cls) == builtins, f"{name} is also a {builtin_bases(cls)}"
    assert issubclass(cls, errors.RustgradError)


def test_every_exception_class_of_the_package_is_in_the_table():
    documented = {f"{module}.{name}" for name, module, _, _ in documented_classes()}
    missing = sorted(set(package_exception_classes()) - documented)
    assert not missing, f"docs/errors.md does not list these exception classes: {missing}"


def test_every_exception_class_of_the_package_is_a_rustgrad_error():
    strays = [name for name, cls in package_exception_classes().items() if not issubclass(cls, errors.RustgradError)]
    assert not strays, strays


def test_the_static_errors_module_reexports_what_the_page_says():
    import rustgrad.static.errors as static_errors

    (sentence,) = re.findall(r"re-exports (.*?): the same classes", _page(), re.S)
    assert sorted(_names(sentence)) == sorted(static_errors.__all__)
    assert tf.errors is static_errors
    for name in static_errors.__all__:
        assert getattr(static_errors, name) is getattr(errors, name), name


# ---------------------------------------------------------------- the example messages


def documented_messages() -> list[str]:
    section = _page().split("## Examples of messages", 1)[1]
    (block,) = re.findall(r"^```text\n(.*?)^```$", section, re.S | re.M)[:1]
    return block.splitlines()


def message_pattern(line: str) -> re.Pattern:
    return re.compile(".*".join(re.escape(part) for part in line.split(WILDCARD)), re.S)


def _custom_backward_returning_two_gradients():
    class MyReLU(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    MyReLU.apply(rustgrad.ones(3, 4, requires_grad=True)).sum().backward()


def _custom_backward_returning_a_wrong_shape():
    class MyReLU(Function):
        @staticmethod
        def forward(ctx, x):
            return x.mm(rustgrad.ones(5, 4))

        @staticmethod
        def backward(ctx, grad):
            return grad

    MyReLU.apply(rustgrad.ones(3, 5, requires_grad=True)).sum().backward()


class WrongCube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x**2


def _gradcheck_a_wrong_backward():
    x = rustgrad.tensor([1.0, 2.0], dtype=rustgrad.float64, requires_grad=True)
    rustgrad.autograd.gradcheck(WrongCube.apply, (x,))  # backward gives 2x² where 3x² is right


def _backward_twice():
    x = rustgrad.ones(2, 3, requires_grad=True)
    loss = (x * 2).sum()
    loss.backward()
    loss.backward()


def _stale_saved_tensor():
    x = rustgrad.ones(3, 4, requires_grad=True)
    e = x.exp()
    e.add_(1)
    e.sum().backward()


def _load_a_file_that_is_not_an_archive():
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "notes.npz"
        path.write_text("not an archive")
        rustgrad.load(str(path))


def _load_a_missing_file():
    with tempfile.TemporaryDirectory() as folder:
        rustgrad.load(str(Path(folder) / "missing.npz"))


def _exp_beyond_an_address_space_cap():
    """exp of a 1.4 GB tensor in a child process capped at 2.5 GiB; the child's message is re-raised here."""
    if sys.platform != "linux":
        pytest.skip("RLIMIT_AS caps are Linux behaviour")
    child = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2_500 * 2**20, 2_500 * 2**20))\n"
        "import rustgrad\n"
        "x = rustgrad.ones(350_000_000)\n"
        "try:\n"
        "    x.exp()\n"
        "except rustgrad.errors.OutOfMemoryError as e:\n"
        "    print(e)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(rustgrad.__file__).resolve().parent.parent)]))
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr[-2000:]
    raise errors.OutOfMemoryError(proc.stdout.strip())


def _from_dlpack_of_a_dlpack_2_capsule():
    capsule = np.arange(4.0).__dlpack__(max_version=(1, 0))
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    version = get_pointer(capsule, b"dltensor_versioned")  # DLPackVersion {uint32 major, minor} comes first
    ctypes.c_uint32.from_address(version).value = 2
    ctypes.c_uint32.from_address(version + 4).value = 0
    rustgrad.from_dlpack(capsule)


def _restore_a_truncated_checkpoint():
    with tempfile.TemporaryDirectory() as folder:
        tf.Variable(tf.zeros((3,)))
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, os.path.join(folder, "model.ckpt"))
            data = Path(path).read_bytes()
            Path(path).write_bytes(data[: len(data) // 2])
            saver.restore(sess, path)


def _render_without_graphviz():
    with tempfile.TemporaryDirectory() as empty, mock.patch.dict(os.environ, {"PATH": empty}):
        viz.render(rustgrad.ones(2, requires_grad=True).sum(), str(Path(empty) / "graph.svg"))


def _render_with_a_failing_graphviz():
    with tempfile.TemporaryDirectory() as folder, mock.patch.dict(os.environ, {"PATH": folder}):
        dot = Path(folder) / "dot"
        dot.write_text("#!/bin/sh\necho 'Error: something went wrong' >&2\nexit 3\n")
        dot.chmod(0o755)
        viz.render(rustgrad.ones(2, requires_grad=True).sum(), str(Path(folder) / "graph.svg"))


def _resume_a_scheduler_without_initial_lr():
    opt = rustgrad.optim.SGD([rustgrad.ones(2, requires_grad=True)], lr=0.1)
    rustgrad.optim.lr_scheduler.StepLR(opt, step_size=1, last_epoch=3)


def _time_out_a_data_loader_worker():
    import time

    class Slow(rustgrad.utils.data.Dataset):
        def __len__(self):
            return 1

        def __getitem__(self, i):
            time.sleep(0.5)
            return i

    list(rustgrad.utils.data.DataLoader(Slow(), num_workers=1, timeout=0.05))
def _write_summaries_without_tensorboard():
    from rustgrad.utils.tensorboard import SummaryWriter

    with tempfile.TemporaryDirectory() as folder, mock.patch.dict(sys.modules):
        for name in [m for m in sys.modules if m.startswith("tensorboard.")]:
            del sys.modules[name]
        sys.modules["tensorboard"] = None
        SummaryWriter(folder)


def _feed_a_wrong_shape():
    x = tf.placeholder(tf.float32, shape=(None, 3))
    tf.Session().run(x * 2, feed_dict={x: np.ones((2, 4))})


def _run_a_closed_session():
    x = tf.placeholder(tf.float32, shape=(None, 3))
    sess = tf.Session()
    sess.close()
    sess.run(x, feed_dict={x: np.ones((1, 3), np.float32)})


def _in_a_graph(build: Callable[[], object]) -> Callable[[], object]:
    def run():
        with tf.Graph().as_default():
            return build()

    return run


def _init_process_group_without_mpi4py():
    with mock.patch.dict(sys.modules, {"mpi4py": None}):
        rustgrad.distributed.init_process_group("mpi")


TRIGGERS: list[Callable[[], object]] = [
    lambda: rustgrad.randn(2, 3).mm(rustgrad.randn(4, 5)),
    lambda: rustgrad.ones(2, 3) + rustgrad.ones(2, 4),
    lambda: rustgrad.arange(12.0).reshape(5, 7),
    lambda: rustgrad.zeros(-1, 3),
    lambda: rustgrad.tensor([[1.0, 2.0], [3.0]]),
    lambda: rustgrad.ones(2, 3).item(),
    lambda: rustgrad.zeros(2, dtype="float17"),
    lambda: rustgrad.ones(2).to("float17"),
    lambda: rustgrad.tensor([1, 2]) // 0,
    lambda: rustgrad.from_numpy([1.0, 2.0]),
    _in_a_graph(lambda: bool(tf.placeholder(tf.float32, shape=(3,)))),
    lambda: rustgrad.ones(3)[5],
    lambda: rustgrad.zeros(10_000_000, 10_000_000),
    _exp_beyond_an_address_space_cap,
    lambda: int(rustgrad.tensor(float("inf"), dtype=rustgrad.float64)),
    lambda: (rustgrad.ones(2, 3, requires_grad=True) * 2).backward(),
    _backward_twice,
    lambda: rustgrad.ones(2, 3).sum().backward(),
    lambda: rustgrad.ones(3, requires_grad=True).add_(1),
    _stale_saved_tensor,
    _custom_backward_returning_two_gradients,
    _custom_backward_returning_a_wrong_shape,
    _gradcheck_a_wrong_backward,
    lambda: rustgrad.zeros(2, device="cuda"),
    lambda: rustgrad._rustgrad._panic_for_test("a panic on purpose"),
    _load_a_file_that_is_not_an_archive,
    _load_a_missing_file,
    lambda: rustgrad.ones(2).__dlpack__(dl_device=(2, 0)),
    _from_dlpack_of_a_dlpack_2_capsule,
    _in_a_graph(_restore_a_truncated_checkpoint),
    _render_without_graphviz,
    _render_with_a_failing_graphviz,
    _write_summaries_without_tensorboard,
    _in_a_graph(lambda: tf.Session().run(tf.placeholder(tf.float32, shape=(None, 3)) * 2)),
    _in_a_graph(_feed_a_wrong_shape),
    _in_a_graph(lambda: tf.Session().run(tf.Variable(tf.zeros((2,))))),
    _in_a_graph(_run_a_closed_session),
    _in_a_graph(lambda: tf.matmul(tf.placeholder(tf.float32, shape=(None, 3)), tf.zeros((4, 5)))),
    lambda: rustgrad.nn.Linear(2, 2).load_state_dict({"weight": rustgrad.zeros(2, 2)}),
    lambda: rustgrad.nn.Linear(2, 2).wieght,
    lambda: rustgrad.nn.Linear(2, 2).register_buffer("weight", None),
    lambda: rustgrad.nn.Module()(rustgrad.ones(1)),
    _resume_a_scheduler_without_initial_lr,
    _time_out_a_data_loader_worker,
    # rustgrad.compile (docs/performance.md)
    lambda: rustgrad.compile(lambda x: x, mode="fast"),
    # rustgrad.distributed (docs/distributed.md)
    lambda: rustgrad.distributed.get_rank(),
    _init_process_group_without_mpi4py,
]


def raised_message(trigger: Callable[[], object]) -> str:
    try:
        trigger()
    except errors.RustgradError as err:
        return f"{type(err).__name__}: {err}"
    raise AssertionError("the call raised no error")


@pytest.fixture(scope="module")
def raised() -> list[str]:
    return [raised_message(trigger) for trigger in TRIGGERS]


@pytest.mark.parametrize("line", documented_messages())
def test_the_documented_message_is_raised(line, raised):
    pattern = message_pattern(line)
    same_class = [m for m in raised if m.split(":", 1)[0] == line.split(":", 1)[0]]
    assert any(pattern.fullmatch(message) for message in raised), (
        f"no call in this file raises\n  {line}\nthe calls raising that class give:\n  " + "\n  ".join(same_class)
    )


def test_every_call_here_raises_a_message_the_page_shows(raised):
    patterns = [message_pattern(line) for line in documented_messages()]
    undocumented = [message for message in raised if not any(p.fullmatch(message) for p in patterns)]
    assert not undocumented, "docs/errors.md does not show:\n" + "\n".join(undocumented)


def test_the_page_shows_a_message_for_every_class_that_is_raised():
    shown = {line.split(":", 1)[0] for line in documented_messages()}
    never_raised_directly = {"RustgradError", "OpError"}
    missing = {name for name, *_ in documented_classes()} - shown - never_raised_directly
    assert not missing, f"docs/errors.md shows no message for {sorted(missing)}"
