"""``rustgrad.nn.utils``: gradient clipping and flattening parameters into one vector."""

from __future__ import annotations

from rustgrad.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_
from rustgrad.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]
