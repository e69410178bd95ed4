"""The digits example written as a TF1 program (``python -m rustgrad digits --mode static``), in CI
size: a few epochs and a lower bar than the full run's 97%, Saver retention and an exact resume,
summaries read back with TensorBoard's own reader, and the command line."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the digits example needs scikit-learn (the test extra installs it)")

import rustgrad.compat.v1 as tf  # noqa: E402
from rustgrad import _digits, _digits_tf1  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
STEPS_PER_EPOCH = 22  # 1,400 training images in batches of 64


def test_a_few_epochs_reach_a_high_test_accuracy():
    history = _digits_tf1.train(epochs=4, quiet=True)
    assert history.losses[-1] < history.losses[0]
    assert history.accuracies[-1] >= 0.93, history.accuracies


def test_the_nhwc_network_learns_as_well():
    history = _digits_tf1.train(epochs=4, quiet=True, data_format="channels_last")
    assert history.accuracies[-1] >= 0.93, history.accuracies


def test_the_static_program_trains_on_the_eager_programs_split():
    train, test = _digits.split(*_digits.load_digits())
    nchw = _digits_tf1.Data.load("channels_first")
    nhwc = _digits_tf1.Data.load("channels_last")
    np.testing.assert_array_equal(nchw.train_images, train.tensors[0].numpy())
    np.testing.assert_array_equal(nchw.test_labels, test.tensors[1].numpy())
    np.testing.assert_array_equal(nhwc.train_images, nchw.train_images.transpose(0, 2, 3, 1))
    assert nchw.steps_per_epoch(64) == STEPS_PER_EPOCH


def test_each_epoch_shuffles_every_training_image_once_in_batches_of_64():
    batches = _digits_tf1.batches(1400, 64, seed=0, epoch=3)
    assert [len(b) for b in batches] == [64] * 21 + [56]
    np.testing.assert_array_equal(np.sort(np.concatenate(batches)), np.arange(1400))
    other = _digits_tf1.batches(1400, 64, seed=0, epoch=4)
    assert not np.array_equal(np.concatenate(batches), np.concatenate(other))


def test_the_graph_uses_tf_layers_names_collections_and_the_global_step():
    model = _digits_tf1.build(decay_steps=100)
    trainable = [v.name for v in model.graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES)]
    assert trainable == ["conv2d/kernel:0", "conv2d/bias:0", "dense/kernel:0", "dense/bias:0",
                         "dense_1/kernel:0", "dense_1/bias:0"]
    assert len(model.graph.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 3
    assert model.graph.get_collection(tf.GraphKeys.GLOBAL_STEP) == [model.global_step]
    assert model.global_step.dtype == tf.int64


def test_no_weight_decay_builds_no_regularizer():
    model = _digits_tf1.build(decay_steps=100, weight_decay=0.0)
    assert model.graph.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == []
    assert not any("Regularizer" in op.name for op in model.graph.get_operations())


def test_the_saver_keeps_the_newest_max_to_keep_checkpoints(tmp_path):
    _digits_tf1.train(epochs=3, checkpoint_dir=str(tmp_path), max_to_keep=2, quiet=True)
    kept = [f"digits-{2 * STEPS_PER_EPOCH}", f"digits-{3 * STEPS_PER_EPOCH}"]
    assert sorted(os.listdir(tmp_path)) == sorted(["checkpoint", *kept])
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / kept[-1])
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.all_model_checkpoint_paths == [str(tmp_path / name) for name in kept]


def _saved(path: str) -> dict[str, np.ndarray]:
    with np.load(path) as arrays:
        return {name: arrays[name] for name in arrays.files}


def test_training_resumed_from_the_newest_checkpoint_continues_the_same_run(tmp_path):
    whole_dir, split_dir = tmp_path / "whole", tmp_path / "split"
    whole_dir.mkdir()
    split_dir.mkdir()
    whole = _digits_tf1.train(epochs=3, checkpoint_dir=str(whole_dir), quiet=True)
    first = _digits_tf1.train(epochs=3, checkpoint_dir=str(split_dir), quiet=True, stop_after=2)
    resumed = _digits_tf1.train(epochs=3, checkpoint_dir=str(split_dir), resume=True, quiet=True)
    assert first.losses + resumed.losses == whole.losses
    assert first.accuracies + resumed.accuracies == whole.accuracies
    ours = _saved(tf.train.latest_checkpoint(str(split_dir)))
    theirs = _saved(tf.train.latest_checkpoint(str(whole_dir)))
    assert ours.keys() == theirs.keys() and "global_step" in ours and "conv2d/kernel/Adam" in ours
    for name in ours:
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)


def test_resuming_a_finished_run_trains_no_more(tmp_path):
    _digits_tf1.train(epochs=1, checkpoint_dir=str(tmp_path), quiet=True)
    again = _digits_tf1.train(epochs=1, checkpoint_dir=str(tmp_path), resume=True, quiet=True)
    assert again.losses == [] and os.listdir(tmp_path).count(f"digits-{STEPS_PER_EPOCH}") == 1


def test_the_summaries_are_read_back_by_tensorboards_reader(tmp_path):
    pytest.importorskip("tensorboard", reason="tf.summary needs the tensorboard extra")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    history = _digits_tf1.train(epochs=2, logdir=str(tmp_path), quiet=True)
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    assert set(events.Tags()["scalars"]) == {"cross_entropy", "learning_rate", "test_accuracy"}
    accuracy = events.Scalars("test_accuracy")
    assert [e.step for e in accuracy] == [STEPS_PER_EPOCH, 2 * STEPS_PER_EPOCH]
    np.testing.assert_allclose([e.value for e in accuracy], history.accuracies, rtol=1e-6)
    # The summary of the epoch's last run, whose learning rate is the cosine of the step before it.
    rates = events.Scalars("learning_rate")
    assert [e.step for e in rates] == [STEPS_PER_EPOCH, 2 * STEPS_PER_EPOCH]
    expected = [1e-2 * 0.5 * (1 + math.cos(math.pi * (s - 1) / (2 * STEPS_PER_EPOCH))) for s in (22, 44)]
    np.testing.assert_allclose([e.value for e in rates], expected, rtol=1e-5)
    assert all(0.0 < e.value < 3.0 for e in events.Scalars("cross_entropy"))
    assert any(node.name == "conv2d/Conv2D" for node in events.Graph().node)


def test_the_demo_entry_runs_the_static_program(tmp_path):
    checkpoints, logs = tmp_path / "checkpoints", tmp_path / "logs"
    command = [sys.executable, "-m", "rustgrad", "digits", "--mode", "static", "--epochs", "1",
               "--checkpoint-dir", str(checkpoints), "--logdir", str(logs)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "epoch   1" in result.stdout and "test accuracy" in result.stdout
    assert sorted(os.listdir(checkpoints)) == ["checkpoint", f"digits-{STEPS_PER_EPOCH}"]
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(logs))


def test_the_demo_entry_refuses_resume_without_a_checkpoint_folder():
    command = [sys.executable, "-m", "rustgrad", "digits", "--mode", "static", "--resume"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert "--resume needs --checkpoint-dir DIR" in result.stderr


def test_the_mode_comparison_benchmark_times_both_programs_steps():
    from digits_modes import compare

    eager, static = compare(steps=2, rounds=2, warmup=1, data_format="channels_first")
    assert len(eager) == len(static) == 2
    assert all(t > 0 for t in eager + static)


def test_a_schedule_of_a_python_number_leaves_the_learning_rate_summary_tag_free():
    # TF1 names the schedule's constant CosineDecay/initial_learning_rate, so the summary that
    # nearly every TF1 program adds is tagged "learning_rate", not "learning_rate_1".
    with tf.Graph().as_default():
        rate = tf.train.cosine_decay(0.01, tf.train.get_or_create_global_step(), 10)
        assert tf.summary.scalar("learning_rate", rate).name == "learning_rate:0"


def test_a_schedule_of_a_python_step_leaves_the_global_step_name_free():
    with tf.Graph().as_default():
        tf.train.exponential_decay(0.1, 5, decay_steps=10, decay_rate=0.5)
        assert tf.train.get_or_create_global_step().name == "global_step:0"


def test_the_benchmarks_profile_traces_the_static_step_node_by_node():
    from digits_modes import eager_split, static_profile

    nodes = static_profile(runs=1, data_format="channels_first", weight_decay=1e-4)
    assert ("max_pooling2d/MaxPool", "fused_max_pool_with_indices") in nodes and ("conv2d/Conv2D", "conv2d") in nodes
    assert all(seconds >= 0 for seconds in nodes.values())
    assert all(seconds > 0 for seconds in eager_split(runs=1))
