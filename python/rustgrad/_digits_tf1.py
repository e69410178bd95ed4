"""The digits CNN of ``python -m rustgrad digits``, written as a TensorFlow 1 user would write it.

``python -m rustgrad digits --mode static`` (and ``examples/digits_tf1.py``) run it: the same 1,797
8x8 images and the same fixed split as the eager program, the same network
(``conv2d 3x3, 16, 'same' + relu -> max_pooling2d 2 -> flatten -> dense 64 relu -> dense 10``)
built with ``tf.layers``, a global step, a cosine-decayed learning rate, ``AdamOptimizer`` with L2
weight decay through the layers' ``kernel_regularizer`` and ``tf.losses.get_total_loss()``,
batches fed through placeholders (shuffled per epoch by a seeded numpy generator), a
``tf.train.Saver`` checkpoint per epoch that ``--resume`` continues from, and ``tf.summary``
scalars for TensorBoard with ``--logdir``. Needs scikit-learn (``pip install 'rustgrad[examples]'``;
``--logdir`` also needs ``rustgrad[tensorboard]``).

The images are NCHW by default (``--data-format channels_first``, as the eager program's): on this
CPU the NCHW pooling kernels are faster than the NHWC ones. ``--data-format channels_last`` builds
the NHWC network a TF1 CPU program would.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

import rustgrad.compat.v1 as tf
from rustgrad._digits import History, load_digits, plot, split_arrays

CHECKPOINT_PREFIX = "digits"
WEIGHT_DECAY = 1e-4


@dataclass
class Data:
    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray

    @staticmethod
    def load(data_format: str = "channels_first") -> Data:
        """The eager program's split; NHWC images for ``channels_last``."""
        images, labels = load_digits()
        if data_format == "channels_last":
            images = np.ascontiguousarray(images.transpose(0, 2, 3, 1))
        return Data(*split_arrays(images, labels))

    def steps_per_epoch(self, batch_size: int) -> int:
        return math.ceil(len(self.train_images) / batch_size)


@dataclass
class Model:
    """The graph's tensors and operations that the training loop runs."""

    graph: Any
    images: Any
    labels: Any
    loss: Any
    accuracy: Any
    global_step: Any
    learning_rate: Any
    train_op: Any
    step_summaries: Any
    epoch_summaries: Any


def build(decay_steps: int, lr: float = 1e-2, seed: int = 0, data_format: str = "channels_first",
          weight_decay: float = WEIGHT_DECAY) -> Model:
    """The network, its loss, schedule and training op, in a new graph (no regularizer when
    ``weight_decay`` is 0)."""
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        shape = [None, 1, 8, 8] if data_format == "channels_first" else [None, 8, 8, 1]
        images = tf.placeholder(tf.float32, shape, name="images")
        labels = tf.placeholder(tf.int64, [None], name="labels")
        decay = (lambda w: weight_decay * tf.nn.l2_loss(w)) if weight_decay else None
        h = tf.layers.conv2d(images, 16, 3, padding="same", activation=tf.nn.relu, data_format=data_format,
                             kernel_regularizer=decay)
        h = tf.layers.max_pooling2d(h, 2, 2, data_format=data_format)
        h = tf.layers.flatten(h)
        h = tf.layers.dense(h, 64, activation=tf.nn.relu, kernel_regularizer=decay)
        logits = tf.layers.dense(h, 10, kernel_regularizer=decay)
        cross_entropy = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        loss = tf.losses.get_total_loss()
        global_step = tf.train.get_or_create_global_step()
        learning_rate = tf.train.cosine_decay(lr, global_step, decay_steps)
        train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss, global_step=global_step)
        correct = tf.equal(tf.argmax(logits, axis=1), labels)
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32), name="accuracy")
        tf.summary.scalar("cross_entropy", cross_entropy)
        tf.summary.scalar("learning_rate", learning_rate)
        tf.summary.scalar("test_accuracy", accuracy, collections=["epoch_summaries"])
        return Model(graph, images, labels, loss, accuracy, global_step, learning_rate, train_op,
                     tf.summary.merge_all(), tf.summary.merge_all("epoch_summaries"))


def batches(size: int, batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
    """The epoch's shuffled batches of indices: a generator seeded by (seed, epoch), so a resumed
    run draws the same batches as an uninterrupted one."""
    order = np.random.default_rng([seed, epoch]).permutation(size)
    return [order[i:i + batch_size] for i in range(0, size, batch_size)]


def train_step(sess: Any, model: Model, images: np.ndarray, labels: np.ndarray) -> float:
    """One training step on one batch; returns the batch's loss (cross-entropy plus weight decay)."""
    _, loss = sess.run([model.train_op, model.loss], feed_dict={model.images: images, model.labels: labels})
    return float(loss)


def train(epochs: int, checkpoint_dir: Optional[str] = None, resume: bool = False, seed: int = 0,
          batch_size: int = 64, lr: float = 1e-2, quiet: bool = False, stop_after: Optional[int] = None,
          logdir: Optional[str] = None, max_to_keep: int = 3,
          data_format: str = "channels_first", weight_decay: float = WEIGHT_DECAY) -> History:
    """Trains for ``epochs`` (from scratch, or from the newest checkpoint in ``checkpoint_dir`` with
    ``resume``); ``stop_after`` ends early after that many epochs, as an interrupted run would.
    The history lists the epochs this call ran."""
    data = Data.load(data_format)
    steps_per_epoch = data.steps_per_epoch(batch_size)
    model = build(epochs * steps_per_epoch, lr, seed, data_format, weight_decay)
    with model.graph.as_default():
        init = tf.global_variables_initializer()
        saver = tf.train.Saver(max_to_keep=max_to_keep)
    history = History()
    writer = tf.summary.FileWriter(logdir, model.graph) if logdir else None
    test_feed = {model.images: data.test_images, model.labels: data.test_labels}
    with tf.Session(graph=model.graph) as sess:
        sess.run(init)
        latest = tf.train.latest_checkpoint(checkpoint_dir) if resume and checkpoint_dir else None
        if latest:
            saver.restore(sess, latest)
        start = int(sess.run(model.global_step)) // steps_per_epoch
        for epoch in range(start, epochs if stop_after is None else min(stop_after, epochs)):
            began, total = time.perf_counter(), 0.0
            epoch_batches = batches(len(data.train_images), batch_size, seed, epoch)
            for i, batch in enumerate(epoch_batches):
                images, labels = data.train_images[batch], data.train_labels[batch]
                if writer is not None and i == len(epoch_batches) - 1:
                    loss = _step_with_summary(sess, model, writer, images, labels)
                else:
                    loss = train_step(sess, model, images, labels)
                total += loss * len(batch)
            history.seconds.append(time.perf_counter() - began)
            history.losses.append(total / len(data.train_images))
            accuracy, summary = sess.run([model.accuracy, model.epoch_summaries], feed_dict=test_feed)
            history.accuracies.append(float(accuracy))
            if writer is not None:
                writer.add_summary(summary, global_step=(epoch + 1) * steps_per_epoch)
            if not quiet:
                print(f"epoch {epoch + 1:>3}  loss {history.losses[-1]:.4f}  "
                      f"test accuracy {history.accuracies[-1]:.2%}  ({history.seconds[-1]:.3f} s)")
            if checkpoint_dir:
                saver.save(sess, os.path.join(checkpoint_dir, CHECKPOINT_PREFIX), global_step=model.global_step)
    if writer is not None:
        writer.close()
    return history


def _step_with_summary(sess: Any, model: Model, writer: Any, images: np.ndarray, labels: np.ndarray) -> float:
    _, loss, summary, step = sess.run([model.train_op, model.loss, model.step_summaries, model.global_step],
                                      feed_dict={model.images: images, model.labels: labels})
    writer.add_summary(summary, global_step=int(step) + 1)  # the step this run's update completed
    return float(loss)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rustgrad digits --mode static",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=20, help="epochs (default 20)")
    parser.add_argument("--checkpoint-dir", metavar="DIR", default=None,
                        help="save a tf.train.Saver checkpoint here every epoch")
    parser.add_argument("--max-to-keep", type=int, default=3, help="checkpoints the Saver keeps (default 3)")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the newest checkpoint in --checkpoint-dir, if there is one")
    parser.add_argument("--logdir", metavar="DIR", default=None, help="write TensorBoard summaries here")
    parser.add_argument("--data-format", choices=["channels_first", "channels_last"], default="channels_first",
                        help="NCHW (default) or NHWC images")
    parser.add_argument("--weight-decay", type=float, default=WEIGHT_DECAY,
                        help=f"scale of the kernels' L2 regularizer (default {WEIGHT_DECAY:g}; 0: none)")
    parser.add_argument("--plot", metavar="PNG", default=None, help="write the loss and accuracy curves here")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the shuffling (default 0)")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")
    if args.weight_decay < 0:
        parser.error("--weight-decay must not be negative")
    if args.max_to_keep < 0:
        parser.error("--max-to-keep must be at least 0 (0 keeps every checkpoint)")
    if args.resume and not args.checkpoint_dir:
        parser.error("--resume needs --checkpoint-dir DIR")
    if args.checkpoint_dir:
        os.makedirs(args.checkpoint_dir, exist_ok=True)
    began = time.perf_counter()
    history = train(args.epochs, args.checkpoint_dir, args.resume, args.seed, logdir=args.logdir,
                    max_to_keep=args.max_to_keep, data_format=args.data_format, weight_decay=args.weight_decay)
    if history.accuracies:
        print(f"test accuracy {history.accuracies[-1]:.2%} after {len(history.losses)} epochs; "
              f"{time.perf_counter() - began:.2f} s in all, data loading included")
    else:
        print(f"nothing to do: the checkpoint in {args.checkpoint_dir} has finished {args.epochs} epochs")
    if args.plot and history.losses:
        plot(history, args.plot)
    return 0
