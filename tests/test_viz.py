"""rustgrad.viz: DOT text for eager and static graphs, and rendering through Graphviz."""

from __future__ import annotations

import os
import re
import shutil
import stat

import numpy as np
import pytest

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad import viz


class Double(rustgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def _labels(dot: str) -> dict[str, str]:
    return dict(re.findall(r'^\s*(\w+) \[label="((?:[^"\\]|\\.)*)"', dot, re.M))


def _edges(dot: str) -> list[tuple[str, str]]:
    return re.findall(r"^\s*(\w+) -> (\w+)", dot, re.M)


def _eager_example():
    x = rustgrad.randn(2, 3, requires_grad=True)
    w = rustgrad.randn(3, requires_grad=True)
    return Double.apply(x * w).exp().sum()


def test_eager_backward_graph():
    dot = viz.to_dot(_eager_example())
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    labels = _labels(dot)
    names = sorted(label.split("\\n")[0] for label in labels.values())
    assert names == ["AccumulateGrad", "AccumulateGrad", "DoubleBackward (custom)", "ExpBackward0",
                     "MulBackward0", "SumBackward0", "output ()"]
    by_name = {label.split("\\n")[0]: node for node, label in labels.items()}
    assert "exp (2, 3)" in labels[by_name["ExpBackward0"]]
    assert "leaf (3,) float32" in dot and "leaf (2, 3) float32" in dot
    edges = _edges(dot)
    assert (by_name["SumBackward0"], by_name["output ()"]) in edges
    assert (by_name["ExpBackward0"], by_name["SumBackward0"]) in edges
    assert (by_name["DoubleBackward (custom)"], by_name["ExpBackward0"]) in edges
    assert (by_name["MulBackward0"], by_name["DoubleBackward (custom)"]) in edges
    assert len(edges) == 6


def test_custom_nodes_are_drawn_differently():
    dot = viz.to_dot(_eager_example())
    custom = [line for line in dot.splitlines() if "(custom)" in line]
    assert len(custom) == 1 and "hexagon" in custom[0]
    assert sum("hexagon" in line for line in dot.splitlines()) == 1


def test_eager_shared_node_is_drawn_once_and_leaf_or_node_roots():
    x = rustgrad.randn(3, requires_grad=True)
    e = x.exp()
    dot = viz.to_dot(e * e)
    assert dot.count("ExpBackward0") == 1
    by_name = {label.split("\\n")[0]: node for node, label in _labels(dot).items()}
    assert _edges(dot).count((by_name["ExpBackward0"], by_name["MulBackward0"])) == 2
    leaf_dot = viz.to_dot(x)
    assert "AccumulateGrad" in leaf_dot and len(_edges(leaf_dot)) == 1
    assert "SumBackward0" in viz.to_dot(e.sum().grad_fn)
    no_grad_dot = viz.to_dot(rustgrad.ones(2))
    assert "output (2,)" in no_grad_dot and not _edges(no_grad_dot)


def _static_example():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, (None, 2), name="x")
        w = tf.Variable(np.ones((2, 2), np.float32), name="w")
        loss = tf.reduce_sum(Double.apply(tf.matmul(x, w)), name="loss")
        unrelated = tf.exp(tf.constant(1.0), name="unrelated")
    return graph, loss, unrelated


def test_static_subgraph_and_whole_graph():
    graph, loss, unrelated = _static_example()
    dot = viz.to_dot(loss)
    labels = _labels(dot)
    assert any(label.startswith("x\\nPlaceholder (?, 2)") for label in labels.values())
    assert any(label.startswith("w\\nVariableV2 (2, 2)") for label in labels.values())
    assert any(label.startswith("loss\\nSum ()") for label in labels.values())
    assert any("(custom)" in label for label in labels.values())
    assert "unrelated" not in dot and "w/Assign" not in dot
    whole = viz.to_dot(graph)
    assert "unrelated" in whole and "w/Assign" in whole
    assert len(_labels(whole)) == graph._core.num_nodes()
    both = viz.to_dot([loss, unrelated.op])
    assert "unrelated" in both and "loss" in both


def test_to_dot_rejects_other_objects():
    with pytest.raises(TypeError, match="cannot draw"):
        viz.to_dot(42)
    graph, loss, _ = _static_example()
    with pytest.raises(ValueError, match="one graph"):
        viz.to_dot([loss, _static_example()[1]])


@pytest.fixture
def no_dot(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert shutil.which("dot") is None


def test_render_without_graphviz_says_how_to_install(no_dot, tmp_path):
    with pytest.raises(viz.GraphvizNotFoundError, match="install graphviz") as info:
        viz.render(_eager_example(), tmp_path / "g.svg")
    assert isinstance(info.value, RuntimeError)
    assert not (tmp_path / "g.svg").exists()


def test_render_without_graphviz_via_monkeypatched_which(monkeypatch, tmp_path):
    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="graphviz.org"):
        viz.render(_eager_example(), tmp_path / "g.png")


def test_dot_files_need_no_graphviz(no_dot, tmp_path):
    out = viz.render(_eager_example(), tmp_path / "g.dot")
    assert out == str(tmp_path / "g.dot")
    assert (tmp_path / "g.dot").read_text().startswith("digraph")


def test_jupyter_hook_without_graphviz(no_dot):
    view = viz.graph(_eager_example())
    assert view._repr_svg_() is None
    bundle = view._repr_mimebundle_()
    assert list(bundle) == ["text/plain"] and bundle["text/plain"].startswith("digraph")


@pytest.fixture
def fake_dot(monkeypatch, tmp_path):
    """A stand-in `dot` that records its arguments and emits a tiny SVG."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "dot"
    script.write_text('#!/bin/sh\n/bin/cat > "$0.input"\necho "<svg><!-- $1 --></svg>"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(bin_dir))
    return script


def test_render_runs_dot_with_the_format_of_the_extension(fake_dot, tmp_path):
    out = viz.render(_eager_example(), tmp_path / "g.svg")
    assert out == str(tmp_path / "g.svg")
    assert (tmp_path / "g.svg").read_text().strip() == "<svg><!-- -Tsvg --></svg>"
    assert open(str(fake_dot) + ".input").read().startswith("digraph")
    viz.render(_eager_example(), tmp_path / "g.PNG")
    assert "-Tpng" in (tmp_path / "g.PNG").read_text()


def test_jupyter_hook_with_graphviz(fake_dot):
    view = viz.graph(_static_example()[1])
    assert view._repr_svg_().startswith("<svg")
    assert view._repr_mimebundle_()["image/svg+xml"].startswith("<svg")


def test_dot_failure_is_reported(monkeypatch, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "dot"
    script.write_text('#!/bin/sh\necho "Format: \\"nope\\" not recognized" >&2\nexit 1\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(RuntimeError, match="not recognized"):
        viz.render(_eager_example(), tmp_path / "g.nope")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_render_svg_with_real_graphviz(tmp_path):
    path = viz.render(_eager_example(), tmp_path / "g.svg")
    assert "<svg" in open(path).read()
    assert os.path.getsize(viz.render(_static_example()[0], tmp_path / "s.svg")) > 0
