"""tf.train.Saver's retention (max_to_keep, keep_checkpoint_every_n_hours), the `checkpoint` state
file in TF1's text format, tf.train.latest_checkpoint / get_checkpoint_state / checkpoint_exists,
and restoring what they name."""

from __future__ import annotations

import os

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import (
    ArgumentTypeError,
    DataLossError,
    FailedPreconditionError,
    InvalidArgumentError,
)
from rustgrad.static import _saver


@pytest.fixture
def model():
    """A graph with a variable ``w`` and a global step, an initialised session, and an op that
    adds 1 to both."""
    with tf.Graph().as_default() as graph:
        w = tf.Variable(np.zeros(3), name="w")
        step = tf.train.get_or_create_global_step()
        bump = tf.group(w.assign_add(np.ones(3)), step.assign_add(1))
        sess = tf.Session(graph=graph)
        sess.run(tf.global_variables_initializer())
        yield dict(graph=graph, w=w, step=step, bump=bump, sess=sess)
        sess.close()


def _save_steps(saver, model, prefix, count):
    paths = []
    for _ in range(count):
        model["sess"].run(model["bump"])
        paths.append(saver.save(model["sess"], prefix, global_step=model["step"]))
    return paths


def _state_text(directory, name="checkpoint"):
    with open(os.path.join(directory, name), encoding="ascii") as f:
        return f.read()


def test_max_to_keep_deletes_the_oldest_checkpoints_and_the_state_file_lists_the_rest(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver(max_to_keep=2)
    prefix = str(tmp_path / "model")
    paths = _save_steps(saver, model, prefix, 4)
    assert paths == [f"{prefix}-{i}" for i in (1, 2, 3, 4)]
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model-3", "model-4"]
    assert saver.last_checkpoints == [f"{prefix}-3", f"{prefix}-4"]
    assert _state_text(tmp_path) == (
        f'model_checkpoint_path: "{prefix}-4"\n'
        f'all_model_checkpoint_paths: "{prefix}-3"\n'
        f'all_model_checkpoint_paths: "{prefix}-4"\n'
    )


def test_the_default_keeps_five_checkpoints(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver()
    _save_steps(saver, model, str(tmp_path / "m"), 7)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-3", "m-4", "m-5", "m-6", "m-7"]


@pytest.mark.parametrize("keep", [None, 0])
def test_max_to_keep_none_or_zero_keeps_every_checkpoint(model, tmp_path, keep):
    with model["graph"].as_default():
        saver = tf.train.Saver(max_to_keep=keep)
    prefix = str(tmp_path / "model")
    _save_steps(saver, model, prefix, 3)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model-1", "model-2", "model-3"]
    assert saver.last_checkpoints == []
    # As TF1: the state file still names the newest checkpoint, as the only one in the list.
    assert _state_text(tmp_path) == (
        f'model_checkpoint_path: "{prefix}-3"\nall_model_checkpoint_paths: "{prefix}-3"\n'
    )


def test_paths_are_relative_in_the_state_file_when_the_save_dir_is(model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkdir("ckpts")
    with model["graph"].as_default():
        saver = tf.train.Saver(max_to_keep=3)
    _save_steps(saver, model, os.path.join("ckpts", "model"), 2)
    assert _state_text("ckpts") == (
        'model_checkpoint_path: "model-2"\n'
        'all_model_checkpoint_paths: "model-1"\n'
        'all_model_checkpoint_paths: "model-2"\n'
    )
    state = tf.train.get_checkpoint_state("ckpts")
    assert state.model_checkpoint_path == os.path.join("ckpts", "model-2")
    assert state.all_model_checkpoint_paths == [os.path.join("ckpts", "model-1"), os.path.join("ckpts", "model-2")]
    assert tf.train.latest_checkpoint("ckpts") == os.path.join("ckpts", "model-2")


def test_save_relative_paths_writes_names_relative_to_the_folder(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver(save_relative_paths=True)
    _save_steps(saver, model, str(tmp_path / "model"), 2)
    assert _state_text(tmp_path) == (
        'model_checkpoint_path: "model-2"\n'
        'all_model_checkpoint_paths: "model-1"\n'
        'all_model_checkpoint_paths: "model-2"\n'
    )
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model-2")
    # The folder can move: the state file still names its checkpoints.
    moved = tmp_path.parent / (tmp_path.name + "_moved")
    os.rename(tmp_path, moved)
    try:
        assert tf.train.latest_checkpoint(str(moved)) == str(moved / "model-2")
    finally:
        os.rename(moved, tmp_path)


def test_restore_of_latest_checkpoint_brings_back_the_newest_values(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver(max_to_keep=2)
    _save_steps(saver, model, str(tmp_path / "model"), 3)
    with tf.Session(graph=model["graph"]) as fresh:
        saver.restore(fresh, tf.train.latest_checkpoint(str(tmp_path)))
        np.testing.assert_array_equal(fresh.run(model["w"]), [3.0, 3.0, 3.0])
        assert fresh.run(model["step"]) == 3


def test_latest_checkpoint_is_none_without_a_state_file_or_when_its_checkpoint_is_gone(model, tmp_path):
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    assert tf.train.latest_checkpoint(str(tmp_path / "missing")) is None
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    with model["graph"].as_default():
        saver = tf.train.Saver()
    path = saver.save(model["sess"], str(tmp_path / "model"))
    assert tf.train.latest_checkpoint(str(tmp_path)) == path
    os.remove(path)
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    assert tf.train.get_checkpoint_state(str(tmp_path)).model_checkpoint_path == path


def test_restore_of_none_says_what_latest_checkpoint_returned(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver()
    with pytest.raises(InvalidArgumentError, match="Can't load save_path when it is None"):
        saver.restore(model["sess"], tf.train.latest_checkpoint(str(tmp_path)))


def test_a_failed_restore_of_the_latest_checkpoint_changes_nothing(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver()
    path = _save_steps(saver, model, str(tmp_path / "model"), 1)[0]
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    model["sess"].run(model["bump"])
    with pytest.raises(DataLossError):
        saver.restore(model["sess"], tf.train.latest_checkpoint(str(tmp_path)))
    np.testing.assert_array_equal(model["sess"].run(model["w"]), [2.0, 2.0, 2.0])
    assert model["sess"].run(model["step"]) == 2


def test_saving_one_path_twice_lists_it_once(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver(max_to_keep=2)
    first = saver.save(model["sess"], str(tmp_path / "a"))
    saver.save(model["sess"], str(tmp_path / "b"))
    saver.save(model["sess"], str(tmp_path / "a"))
    assert saver.last_checkpoints == [str(tmp_path / "b"), first]
    assert sorted(os.listdir(tmp_path)) == ["a", "b", "checkpoint"]


def test_write_state_false_writes_no_state_file_and_deletes_nothing(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver(max_to_keep=1)
    for step in range(3):
        saver.save(model["sess"], str(tmp_path / "model"), global_step=step, write_state=False)
    assert sorted(os.listdir(tmp_path)) == ["model-0", "model-1", "model-2"]
    assert saver.last_checkpoints == []


def test_latest_filename_names_the_state_file(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver()
    path = saver.save(model["sess"], str(tmp_path / "model"), latest_filename="state")
    assert sorted(os.listdir(tmp_path)) == ["model", "state"]
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    assert tf.train.latest_checkpoint(str(tmp_path), latest_filename="state") == path


def test_bad_latest_filenames_raise_before_anything_is_written(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver()
    with pytest.raises(InvalidArgumentError, match="must not contain path components"):
        saver.save(model["sess"], str(tmp_path / "model"), latest_filename="sub/checkpoint")
    with pytest.raises(InvalidArgumentError, match="collides with 'save_path'"):
        saver.save(model["sess"], str(tmp_path / "checkpoint"))
    assert os.listdir(tmp_path) == []


def test_a_failed_save_leaves_the_state_file_and_the_list_unchanged(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver(max_to_keep=1)
        tf.Variable(1.0, name="extra")
        other = tf.train.Saver(max_to_keep=1)
    first = saver.save(model["sess"], str(tmp_path / "model"), global_step=1)
    before = _state_text(tmp_path)
    with pytest.raises(FailedPreconditionError, match="extra is uninitialized"):
        other.save(model["sess"], str(tmp_path / "model"), global_step=2)
    assert _state_text(tmp_path) == before
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model-1"]
    assert saver.last_checkpoints == [first] and other.last_checkpoints == []


def test_keep_checkpoint_every_n_hours_keeps_the_first_checkpoint_after_each_mark(model, tmp_path, monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(_saver, "_now", lambda: clock[0])
    with model["graph"].as_default():
        saver = tf.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=1)
    # Saves every half hour from t = 0.5 h; TF1's rule keeps one saved after each hour mark
    # (strictly after it) once it leaves the newest max_to_keep.
    for step in range(1, 7):
        clock[0] = step * 1800.0
        model["sess"].run(model["bump"])
        saver.save(model["sess"], str(tmp_path / "model"), global_step=step)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model-3", "model-5", "model-6"]
    assert saver.last_checkpoints == [str(tmp_path / "model-6")]


def test_recover_last_checkpoints_lets_a_new_saver_delete_the_old_ones(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver(max_to_keep=2)
        prefix = str(tmp_path / "model")
        _save_steps(saver, model, prefix, 2)
        restarted = tf.train.Saver(max_to_keep=2)
    state = tf.train.get_checkpoint_state(str(tmp_path))
    restarted.recover_last_checkpoints(state.all_model_checkpoint_paths + [str(tmp_path / "gone")])
    assert restarted.last_checkpoints == [f"{prefix}-1", f"{prefix}-2"]
    _save_steps(restarted, model, prefix, 1)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model-2", "model-3"]


def test_set_last_checkpoints_replaces_the_list(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver(max_to_keep=1)
    saver.set_last_checkpoints([str(tmp_path / "old")])
    assert saver.last_checkpoints == [str(tmp_path / "old")]
    saver.set_last_checkpoints_with_time([(str(tmp_path / "older"), 5.0)])
    assert saver.last_checkpoints == [str(tmp_path / "older")]
    with pytest.raises(ArgumentTypeError, match="list of paths"):
        saver.set_last_checkpoints("abc")


def test_pad_step_number_zero_pads_the_step(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver(pad_step_number=True)
    assert saver.save(model["sess"], str(tmp_path / "m"), global_step=42) == str(tmp_path / "m-00000042")


def test_checkpoint_exists_and_mtimes(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver()
    path = saver.save(model["sess"], str(tmp_path / "model"), global_step=7)
    assert tf.train.checkpoint_exists(path)
    assert tf.train.checkpoint_exists(str(tmp_path / "model-*"))
    assert not tf.train.checkpoint_exists(str(tmp_path / "model-8"))
    assert tf.train.get_checkpoint_mtimes([path, str(tmp_path / "nope")]) == [os.path.getmtime(path)]
    tf.train.remove_checkpoint(path)
    assert not tf.train.checkpoint_exists(path)
    tf.train.remove_checkpoint(path)  # a missing checkpoint is not an error, as TF1


@pytest.mark.parametrize("value, error, match", [
    (-1, InvalidArgumentError, "must not be negative"),
    (2.5, ArgumentTypeError, "max_to_keep must be an integer"),
    ("3", ArgumentTypeError, "max_to_keep must be an integer"),
])
def test_bad_max_to_keep_raises(model, value, error, match):
    with model["graph"].as_default():
        with pytest.raises(error, match=match):
            tf.train.Saver(max_to_keep=value)


def test_bad_keep_checkpoint_every_n_hours_raises(model):
    with model["graph"].as_default():
        with pytest.raises(ArgumentTypeError, match="keep_checkpoint_every_n_hours must be a number"):
            tf.train.Saver(keep_checkpoint_every_n_hours="often")


# ----- the state file's text format -----


def test_names_with_quotes_and_non_ascii_are_escaped_as_protobuf_does(model, tmp_path):
    with model["graph"].as_default():
        saver = tf.train.Saver(save_relative_paths=True)
    path = saver.save(model["sess"], str(tmp_path / 'mo"d\\é'))
    assert _state_text(tmp_path) == (
        'model_checkpoint_path: "mo\\"d\\\\\\303\\251"\nall_model_checkpoint_paths: "mo\\"d\\\\\\303\\251"\n'
    )
    assert tf.train.latest_checkpoint(str(tmp_path)) == path


def test_a_state_file_written_by_tensorflow_is_read(tmp_path):
    (tmp_path / "model.ckpt-20").write_bytes(b"")
    (tmp_path / "checkpoint").write_text(
        'model_checkpoint_path: "model.ckpt-20"\n'
        'all_model_checkpoint_paths: "model.ckpt-10"\n'
        "all_model_checkpoint_paths: 'model.ckpt-20'\n"
        "all_model_checkpoint_timestamps: 1606878123.5\n"
        "all_model_checkpoint_timestamps: 1606878200.25\n"
        "last_preserved_timestamp: 1606878000.0\n"
        "# a comment\n",
        encoding="ascii",
    )
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == str(tmp_path / "model.ckpt-20")
    assert state.all_model_checkpoint_paths == [str(tmp_path / "model.ckpt-10"), str(tmp_path / "model.ckpt-20")]
    assert state.all_model_checkpoint_timestamps == [1606878123.5, 1606878200.25]
    assert state.last_preserved_timestamp == 1606878000.0
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model.ckpt-20")


@pytest.mark.parametrize("text", [
    "model_checkpoint_path: model-1\n",
    'unknown_field: "x"\n',
    'model_checkpoint_path: "a"\nmodel_checkpoint_path: "b"\n',
    'model_checkpoint_path: "unterminated\n',
])
def test_a_state_file_that_does_not_parse_is_ignored_with_a_warning(tmp_path, text, caplog):
    (tmp_path / "checkpoint").write_text(text, encoding="ascii")
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    assert "Checkpoint ignored" in caplog.text


def test_a_state_file_without_a_model_path_raises_as_tf1(tmp_path):
    (tmp_path / "checkpoint").write_text('all_model_checkpoint_paths: "a"\n', encoding="ascii")
    with pytest.raises(InvalidArgumentError, match="Invalid checkpoint state loaded from"):
        tf.train.get_checkpoint_state(str(tmp_path))


def test_update_checkpoint_state_writes_the_file_tf1_writes(tmp_path):
    tf.train.update_checkpoint_state(str(tmp_path), str(tmp_path / "b"), [str(tmp_path / "a")])
    assert _state_text(tmp_path) == (
        f'model_checkpoint_path: "{tmp_path / "b"}"\n'
        f'all_model_checkpoint_paths: "{tmp_path / "a"}"\n'
        f'all_model_checkpoint_paths: "{tmp_path / "b"}"\n'
    )
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert isinstance(state, tf.train.CheckpointState)
    assert repr(state) == _state_text(tmp_path)
