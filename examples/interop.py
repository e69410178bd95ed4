"""Zero-copy interop with numpy.

``rustgrad.from_numpy(array)`` makes a tensor that uses the array's memory, and
``tensor.numpy()`` gives an array that uses the tensor's memory, as in PyTorch: a write
through either shows in the other. ``rustgrad.tensor(array)`` copies. Run it with
``python examples/interop.py``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

import rustgrad
from rustgrad import Tensor


def numpy_to_tensor() -> None:
    array: npt.NDArray[np.float32] = np.arange(6, dtype=np.float32).reshape(2, 3)
    shared: Tensor = rustgrad.from_numpy(array)  # float32 array -> float32 tensor, same memory
    copied: Tensor = rustgrad.tensor(array)  # always a copy

    array[0, 0] = 100.0
    shared.mul_(2.0)  # in place on the tensor: the array sees it too
    print("array after writes:\n", array)
    print("shared tensor:", shared.tolist())
    print("copied tensor:", copied.tolist())
    assert array[0, 0] == 200.0 and shared[0, 0].item() == 200.0
    assert copied[0, 0].item() == 0.0
    assert shared.dtype == rustgrad.float32 and shared.shape == (2, 3)

    # A float64 array keeps its dtype; a non-contiguous view cannot be shared and is copied.
    doubles = np.ones((3, 4))
    assert rustgrad.from_numpy(doubles).dtype == rustgrad.float64
    view = doubles[:, ::2]
    copied_view = rustgrad.from_numpy(view)
    view[0, 0] = -1.0
    assert copied_view[0, 0].item() == 1.0


def tensor_to_numpy() -> None:
    t = rustgrad.zeros(2, 2, dtype=rustgrad.float64)
    array: npt.NDArray[np.float64] = t.numpy()  # same memory
    array[1, 1] = 7.0
    t.add_(1.0)
    print("tensor after writes:", t.tolist())
    print("its numpy view:\n", array)
    assert t[1, 1].item() == 8.0 and array[0, 0] == 1.0

    # A tensor that requires grad must be detached first: numpy() would hide it from autograd.
    w = rustgrad.ones(3, requires_grad=True)
    values = w.detach().numpy()
    assert values.tolist() == [1.0, 1.0, 1.0]

    # np.asarray(t) is a view too (__array__), and numpy operands on the left defer to rustgrad.
    total = float(np.asarray(t).sum())
    scale = np.full((2, 2), 0.5)
    mixed: Tensor = t * scale  # a tensor on the left: typed (and computed) as a Tensor
    print("sum of np.asarray(t) =", total, "| t * ndarray:", mixed.tolist())
    assert total == 11.0
    # `scale * t` is a Tensor at runtime too (numpy defers: __array_priority__), but numpy's
    # stubs type it as an ndarray; put the tensor on the left where types matter.
    assert type(scale * t).__name__ == "Tensor"


def main() -> None:
    numpy_to_tensor()
    tensor_to_numpy()
    print("ok")


if __name__ == "__main__":
    main()
