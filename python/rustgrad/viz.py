"""``rustgrad.viz``: draw computation graphs with Graphviz.

``to_dot(x)`` returns Graphviz DOT source (no Graphviz needed) for

* an eager tensor: its backward graph, found by walking ``grad_fn`` and
  ``next_functions`` (the output at the bottom, leaves that accumulate
  gradients in blue);
* a static ``Graph``: all of its nodes;
* a static ``Tensor`` or ``Operation``, or a list of them: the part of the graph
  they need.

Every node is labelled with its op and shape; custom ``autograd.Function``
nodes are orange hexagons marked "(custom)". ``render(x, "graph.svg")`` runs
Graphviz's ``dot`` (the output format comes from the file extension), and
``graph(x)`` returns an object that Jupyter displays as SVG (or as DOT text when
Graphviz is not installed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any, Optional, Sequence

from rustgrad._rustgrad import AccumulateGrad, Node, Tensor
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError, RustgradError

__all__ = ["GraphView", "GraphvizError", "GraphvizNotFoundError", "graph", "render", "to_dot"]

_INSTALL_HINT = (
    "Graphviz's `dot` program was not found on PATH; rendering needs it. Install Graphviz "
    "(Debian/Ubuntu: `sudo apt-get install graphviz`; macOS: `brew install graphviz`; conda: "
    "`conda install -c conda-forge graphviz`; others: https://graphviz.org/download/) and make sure "
    "`dot -V` works. `rustgrad.viz.to_dot(x)` gives the DOT text without Graphviz."
)

_STYLE = {
    "op": 'shape=box, style="rounded,filled", fillcolor="#f2f2f2"',
    "custom": 'shape=hexagon, style="filled,bold", fillcolor="#ffb347", color="#c05000", penwidth=2',
    "leaf": 'shape=box, style=filled, fillcolor="#cfe2ff"',
    "output": 'shape=box, style=filled, fillcolor="#c8f7c5"',
    "tensor": 'shape=box, style=filled, fillcolor="#ffffff"',
    "variable": 'shape=box, style=filled, fillcolor="#cfe2ff"',
    "placeholder": 'shape=box, style="filled,dashed", fillcolor="#fff6bf"',
    "const": 'shape=box, style=filled, fillcolor="#ffffff"',
    "assign": 'shape=box, style="rounded,filled", fillcolor="#f8d7da"',
    "noop": 'shape=octagon, style=filled, fillcolor="#e2e3e5"',
}


class GraphvizError(RustgradError, RuntimeError):
    """Graphviz's ``dot`` program failed to render a graph (its message is included)."""


class GraphvizNotFoundError(GraphvizError):
    """Graphviz's ``dot`` program is needed (to render) but is not installed."""


def _quote(text: str) -> str:
    """A DOT double-quoted string; ``\\n`` in ``text`` becomes a line break."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n") + '"'


def _shape_text(shape: Any) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class _Dot:
    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: list[str] = []
        self.edges: list[str] = []

    def node(self, node_id: str, label: str, style: str) -> None:
        self.nodes.append(f"  {node_id} [label={_quote(label)}, {_STYLE[style]}];")

    def edge(self, src: str, dst: str, label: Optional[str] = None) -> None:
        extra = f" [label={_quote(label)}]" if label else ""
        self.edges.append(f"  {src} -> {dst}{extra};")

    def source(self) -> str:
        header = [
            f"digraph {_quote(self.name)} {{",
            '  graph [rankdir=TB, fontname="Helvetica"];',
            '  node [fontname="Helvetica", fontsize=11];',
            '  edge [fontname="Helvetica", fontsize=9];',
        ]
        return "\n".join(header + self.nodes + self.edges + ["}"]) + "\n"


# ----- eager backward graphs -----

def _eager_dot(roots: Sequence[Any]) -> str:
    """Walks ``grad_fn`` / ``next_functions`` from each root; edges point from inputs to their users."""
    dot = _Dot("backward")
    ids: dict[Any, str] = {}  # Node -> DOT id (Nodes compare and hash by the tape node they wrap)
    counter = iter(range(1 << 62))

    def leaf(tensor: Any) -> str:
        # AccumulateGrad wrappers (and their .variable) are fresh objects on every access, so a leaf
        # used by several nodes cannot be recognised as one: it gets a box per use.
        node_id = f"n{next(counter)}"
        dot.node(node_id, f"AccumulateGrad\nleaf {_shape_text(tensor.shape)} {tensor.dtype.name}", "leaf")
        return node_id

    def function(fn: Any, pending: list[Any]) -> str:
        if fn not in ids:
            ids[fn] = f"n{next(counter)}"
            shapes = ", ".join(_shape_text(s) for s in fn.output_shapes)
            if fn.is_custom:
                label = f"{fn.name()} (custom)\n{fn.op_name}\n{shapes}"
            else:
                label = f"{fn.name()}\n{fn.op_name} {shapes}"
            dot.node(ids[fn], label, "custom" if fn.is_custom else "op")
            pending.append(fn)
        return ids[fn]

    def node_id_of(fn: Any, pending: list[Any]) -> str:
        return leaf(fn.variable) if isinstance(fn, AccumulateGrad) else function(fn, pending)

    pending: list[Any] = []
    for i, root in enumerate(roots):
        if isinstance(root, (Node, AccumulateGrad)):
            node_id_of(root, pending)
            continue
        out_id = f"out{i}"
        dot.node(out_id, f"output {_shape_text(root.shape)}\n{root.dtype.name}", "output")
        if root.grad_fn is not None:
            dot.edge(function(root.grad_fn, pending), out_id)
        elif root.requires_grad:
            dot.edge(leaf(root), out_id)
    while pending:
        fn = pending.pop()
        for child, _ in fn.next_functions:
            if child is not None:
                dot.edge(node_id_of(child, pending), ids[fn])
    return dot.source()


# ----- static graphs -----

def _static_style(node_type: str, custom: bool) -> str:
    if custom:
        return "custom"
    return {"VariableV2": "variable", "Placeholder": "placeholder", "Const": "const", "NoOp": "noop",
            "Assign": "assign", "AssignAdd": "assign", "AssignSub": "assign"}.get(node_type, "op")


def _static_dot(graph: Any, targets: Optional[Sequence[int]]) -> str:
    core = graph._core
    if targets is None:
        wanted = list(range(core.num_nodes()))
    else:
        seen: set[int] = set()
        stack = list(targets)
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            stack.extend(core.node_inputs(node))
        wanted = sorted(seen)
    dot = _Dot("graph")
    for node in wanted:
        node_type = core.node_type(node)
        custom = bool(core.node_is_custom(node))
        name = core.node_name(node)
        shape = core.node_shape_str(node) if core.node_has_value(node) else "no value"
        if custom:
            label = f"{name} (custom)\n{node_type}\n{shape}"
        else:
            label = f"{name}\n{node_type} {shape}"
        dot.node(f"s{node}", label, _static_style(node_type, custom))
    for node in wanted:
        for index, src in enumerate(core.node_inputs(node)):
            dot.edge(f"s{src}", f"s{node}", None if len(core.node_inputs(node)) < 2 else str(index))
    return dot.source()


def _static_targets(items: Sequence[Any]) -> tuple[Any, list[int]]:
    from rustgrad.static._graph import Operation
    from rustgrad.static._graph import Tensor as GraphTensor

    graph = None
    ids = []
    for item in items:
        if not isinstance(item, (GraphTensor, Operation)):
            raise ArgumentTypeError(f"to_dot: cannot mix {type(item).__name__} with static graph tensors")
        if graph is None:
            graph = item.graph
        elif item.graph is not graph:
            raise InvalidArgumentError("to_dot: all static tensors and operations must belong to one graph")
        ids.append(item._id)
    return graph, ids


def to_dot(x: Any) -> str:
    """Graphviz DOT source for ``x``: an eager tensor (or list of them), a ``grad_fn`` node, a static
    ``Graph``, or a static ``Tensor``/``Operation`` (or list of them)."""
    from rustgrad.static._graph import Graph, Operation
    from rustgrad.static._graph import Tensor as GraphTensor

    if isinstance(x, Graph):
        return _static_dot(x, None)
    items = list(x) if isinstance(x, (list, tuple)) else [x]
    if not items:
        raise InvalidArgumentError("to_dot: nothing to draw (got an empty list)")
    if all(isinstance(i, (Tensor, Node, AccumulateGrad)) for i in items):
        return _eager_dot(items)
    if any(isinstance(i, (GraphTensor, Operation)) for i in items):
        graph, ids = _static_targets(items)
        return _static_dot(graph, ids)
    raise ArgumentTypeError(
        f"to_dot: cannot draw a {type(items[0]).__name__}; pass an eager Tensor, a grad_fn Node, a static "
        "Graph, or static Tensors/Operations"
    )


# ----- rendering -----

def _dot_program() -> str:
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizNotFoundError(_INSTALL_HINT)
    return exe


def _pipe(source: str, fmt: str) -> bytes:
    exe = _dot_program()
    try:
        done = subprocess.run([exe, f"-T{fmt}"], input=source.encode(), capture_output=True, timeout=60)
    except OSError as err:
        raise GraphvizNotFoundError(f"{_INSTALL_HINT} (running {exe} failed: {err})") from err
    if done.returncode != 0:
        raise GraphvizError(
            f"Graphviz dot failed (exit status {done.returncode}) producing format {fmt!r}: "
            f"{done.stderr.decode(errors='replace').strip()}"
        )
    return done.stdout


def render(x: Any, path: Any, format: Optional[str] = None) -> str:  # noqa: A002 - graphviz's name
    """Draws ``x`` (anything ``to_dot`` accepts) into ``path`` with Graphviz's ``dot``; the format
    (svg, png, pdf, ...) comes from the file extension unless ``format`` is given. Writing ``.dot``
    or ``.gv`` saves the DOT source without Graphviz. Returns the path."""
    path = os.fspath(path)
    fmt = format or os.path.splitext(path)[1].lstrip(".").lower()
    if not fmt:
        raise InvalidArgumentError(
            f"render: cannot tell the output format from {path!r}; add an extension or pass format="
        )
    source = x.source if isinstance(x, GraphView) else to_dot(x)
    if fmt in ("dot", "gv") and format is None:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(source)
        return path
    data = _pipe(source, fmt)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


class GraphView:
    """A drawable graph: Jupyter shows it as SVG when Graphviz is installed, as DOT text otherwise."""

    def __init__(self, source: str) -> None:
        self.source = source

    def pipe(self, format: str = "svg") -> bytes:  # noqa: A002 - graphviz's name
        """The graph rendered by ``dot`` in ``format``."""
        return _pipe(self.source, format)

    def render(self, path: Any, format: Optional[str] = None) -> str:  # noqa: A002 - graphviz's name
        return render(self, path, format)

    def _repr_svg_(self) -> Optional[str]:
        if shutil.which("dot") is None:
            return None
        return self.pipe("svg").decode("utf-8")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        if shutil.which("dot") is not None:
            try:
                return {"image/svg+xml": self.pipe("svg").decode("utf-8"), "text/plain": self.source}
            except (RuntimeError, OSError):
                pass
        return {"text/plain": self.source}

    def __str__(self) -> str:
        return self.source

    def __repr__(self) -> str:
        return f"<rustgrad.viz.GraphView: {self.source.count(' -> ')} edges; .source has the DOT text>"


def graph(x: Any) -> GraphView:
    """A ``GraphView`` of ``x`` (anything ``to_dot`` accepts) for display in Jupyter."""
    return GraphView(to_dot(x))
