"""Running out of memory raises OutOfMemoryError, under a real address-space cap.

Each case runs in a child process whose address space is capped at 2.5 GiB, with
a 1.4 GB tensor already made: the next allocation of that size fails inside a
kernel, broadcasting, numpy export or a static plan. Before the fix such a
failure aborted the process ("memory allocation of ... failed").
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from _child import child_env

CAP_BYTES = 2_500 * 2**20

CHILD = """
import resource
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
import numpy as np
import rustgrad
from rustgrad import errors
x = rustgrad.ones(350_000_000)
try:
{body}
except errors.OutOfMemoryError as e:
    assert isinstance(e, MemoryError) and isinstance(e, errors.RustgradError), type(e).__mro__
    print("message:", e)
else:
    raise SystemExit("no error raised")
a = rustgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
(a @ a).sum().backward()
assert a.grad.tolist() == [[7.0, 11.0], [9.0, 13.0]]
print("ok")
"""

CASES = {
    "exp": ("x.exp()", "exp of float32 [350000000]"),
    "add_scalar": ("x + 1.0", "add of float32 [350000000]"),
    "clone": ("x.clone()", "clone"),
    "numpy_export": ("np.array(x)", "350000000 elements of float32"),
    "matmul": ("rustgrad.ones(19000, 10).mm(rustgrad.ones(10, 19000))", "mm of float32 [19000, 10]"),
    "broadcast": ("x.reshape(1, -1) + rustgrad.ones(2, 1)", "700000000 elements"),
    "transpose_copy": ("x.reshape(17500, 20000).t().contiguous()", "350000000 elements"),
    "to_float64": ("x.double()", "float64"),
    "sum_over_a_unit_dim": ("x.reshape(350_000_000, 1).sum(1)", "sum of float32"),
    "session_run": (
        textwrap.dedent(
            """\
            del x  # the feed takes its place
            import rustgrad.compat.v1 as tf
            g = tf.Graph()
            with g.as_default():
                p = tf.placeholder(tf.float32, shape=(None,))
                y = tf.exp(p) * 2.0
                with tf.Session() as sess:
                    sess.run(y, {p: np.ones(350_000_000, np.float32)})
            """
        ),
        "350000000 elements",
    ),
}


def run_capped(body: str) -> subprocess.CompletedProcess:
    env = child_env(RUST_BACKTRACE="0")
    source = CHILD.format(cap=CAP_BYTES, body=textwrap.indent(body.strip(), "    "))
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS caps are Linux behaviour")
@pytest.mark.parametrize("name", sorted(CASES))
def test_an_allocation_beyond_the_address_space_cap_raises_and_the_process_survives(name):
    body, expected = CASES[name]
    proc = run_capped(body)
    detail = f"rc={proc.returncode}\nstdout={proc.stdout}\nstderr={proc.stderr[-2000:]}"
    assert proc.returncode == 0, detail
    assert proc.stdout.strip().endswith("ok"), detail
    assert "out of memory: cannot allocate" in proc.stdout, detail
    assert expected in proc.stdout, detail
    assert "panicked" not in proc.stderr, detail
