"""``tf.random``: TF1's random ops under their ``tf.random.*`` names (the same functions as
``tf.random_normal``, ``tf.random_uniform``, ``tf.truncated_normal``, ``tf.random_shuffle``,
``tf.set_random_seed`` and ``tf.get_seed``)."""

from __future__ import annotations

from rustgrad.static._random import get_seed, random_normal, random_shuffle, random_uniform, set_random_seed
from rustgrad.static._random import truncated_normal as truncated_normal

normal = random_normal
uniform = random_uniform
shuffle = random_shuffle

__all__ = ["get_seed", "normal", "set_random_seed", "shuffle", "truncated_normal", "uniform"]
