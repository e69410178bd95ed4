"""``rustgrad.static.train`` (``tf.train``): TF1 optimizers, learning-rate schedules, the global
step and the checkpoint ``Saver``.

Each optimizer's ``minimize`` (or ``apply_gradients``) adds the update to the
graph and returns ONE operation; running it performs one training step::

    train_op = tf.train.AdamOptimizer(1e-3).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())   # after minimize: slots are variables too
        for batch in data:
            sess.run(train_op, feed_dict=...)

With ``use_locking=True`` every assign of the update locks its variable, so runs of
the training op from several threads apply their updates one at a time (see
``Variable.assign``). The updates follow TF1's formulas. Within one run every read of a variable sees
its value from the start of the run and assignments land when the run ends, so
each update is written as one expression of start-of-run values: the new slot
value (momentum accumulator, Adam moments) is computed once and both stored in
its slot and used for the variable's update. Slot variables (``<var>/Momentum``,
``<var>/Adam``, ``<var>/Adam_1``, ``<var>/RMSProp``, ``<var>/Adagrad``) and Adam's step counters
``beta1_power`` and ``beta2_power`` (β₁ᵗ and β₂ᵗ, advanced once per run of the training op) are
non-trainable Variables, so ``global_variables_initializer()`` created after ``minimize``
initialises them.

A learning rate may be a graph tensor, such as a schedule of the global step::

    step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(0.1, step, decay_steps=1000, decay_rate=0.5, staircase=True)
    train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step)
"""

from __future__ import annotations

from rustgrad.static._checkpoint_state import (
    CheckpointState,
    checkpoint_exists,
    get_checkpoint_mtimes,
    get_checkpoint_state,
    latest_checkpoint,
    remove_checkpoint,
    update_checkpoint_state,
)
from rustgrad.static._global_step import create_global_step, get_global_step, get_or_create_global_step
from rustgrad.static._optimizers import AdamOptimizer, GradientDescentOptimizer, MomentumOptimizer, Optimizer
from rustgrad.static._saver import Saver
from rustgrad.static._schedules import (
    cosine_decay,
    exponential_decay,
    inverse_time_decay,
    natural_exp_decay,
    piecewise_constant,
    polynomial_decay,
)
from rustgrad.static._tf_optimizers import AdagradOptimizer, RMSPropOptimizer

__all__ = [
    "AdagradOptimizer",
    "AdamOptimizer",
    "CheckpointState",
    "GradientDescentOptimizer",
    "MomentumOptimizer",
    "Optimizer",
    "RMSPropOptimizer",
    "Saver",
    "checkpoint_exists",
    "cosine_decay",
    "create_global_step",
    "exponential_decay",
    "get_checkpoint_mtimes",
    "get_checkpoint_state",
    "get_global_step",
    "get_or_create_global_step",
    "inverse_time_decay",
    "latest_checkpoint",
    "natural_exp_decay",
    "piecewise_constant",
    "polynomial_decay",
    "remove_checkpoint",
    "update_checkpoint_state",
]
