"""The marker base class of symbolic (static-graph) tensors.

It lives apart from ``rustgrad.static`` so that eager code (``autograd.Function``)
can recognise graph tensors without importing the static module.
"""

from __future__ import annotations


class GraphValue:
    """Base of ``rustgrad.static.Tensor``; never instantiated directly."""

    __slots__ = ()
