"""tf.summary and tf.summary.FileWriter: summaries are graph values that Session.run turns into
serialized Summary bytes, and the event files they make are read back with TensorBoard's own reader."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError, RustgradError

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")
Image = pytest.importorskip("PIL.Image")


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def read_events(logdir):
    acc = event_accumulator.EventAccumulator(
        str(logdir), size_guidance={"scalars": 0, "histograms": 0, "images": 0, "tensors": 0})
    acc.Reload()
    return acc


def tf_limits():
    """TF's default bucket limits, computed here the way histogram.cc does."""
    positive, v = [], 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    positive.append(sys.float_info.max)
    return np.array([-p for p in reversed(positive)] + [0.0] + positive)


# ----- summaries in Session.run -----


def test_running_a_scalar_summary_returns_summary_bytes_with_the_value():
    x = tf.placeholder(tf.float32, [None], name="x")
    s = tf.summary.scalar("loss", tf.reduce_mean(x))
    with tf.Session() as sess:
        raw = sess.run(s, {x: [1.0, 2.0, 4.5]})
    assert isinstance(raw, bytes)
    (value,) = summary_pb2.Summary.FromString(raw).value
    assert value.tag == "loss"
    assert value.simple_value == np.float32(np.mean(np.float32([1.0, 2.0, 4.5])))


def test_summaries_run_beside_ordinary_fetches_in_one_run():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = x * 3.0
    s = tf.summary.scalar("first", y[0])
    raw, y_value, again = tf.Session().run([s, y, {"s": s}], {x: [2.0, 5.0]})
    np.testing.assert_array_equal(y_value, [6.0, 15.0])
    assert summary_pb2.Summary.FromString(raw).value[0].simple_value == 6.0
    assert again["s"] == raw


def test_tags_are_unique_op_names_and_family_prefixes_them_as_in_tf1():
    v = tf.constant(1.0)
    a = tf.summary.scalar("loss", v)
    b = tf.summary.scalar("loss", v)
    c = tf.summary.scalar("loss", v, family="train")
    with pytest.warns(UserWarning, match="Summary name bad name! is illegal; using bad_name_ instead"):
        d = tf.summary.scalar("bad name!", v)
    tags = [summary_pb2.Summary.FromString(r).value[0].tag for r in tf.Session().run([a, b, c, d])]
    assert tags == ["loss", "loss_1", "train/train/loss", "bad_name_"]
    assert (a.name, b.name, c.name) == ("loss:0", "loss_1:0", "train/loss:0")


def test_a_scalar_summary_of_a_vector_raises_invalid_argument_and_adds_nothing():
    with pytest.raises(InvalidArgumentError, match=r"tf.summary.scalar 'v': tags and values not the same shape: "
                                                   r"\[\] != \[3\]"):
        tf.summary.scalar("v", [1.0, 2.0, 3.0])
    assert tf.get_default_graph().get_operations() == []
    assert tf.summary.merge_all() is None


def test_a_scalar_summary_of_a_vector_fed_at_run_time_raises_invalid_argument():
    x = tf.placeholder(tf.float32, None)
    s = tf.summary.scalar("v", x)
    with pytest.raises(InvalidArgumentError, match=r"tags and values not the same shape: \[\] != \[2\]"):
        tf.Session().run(s, {x: [1.0, 2.0]})


def test_histogram_counts_follow_tf1_buckets():
    values = np.array([-3.0, -3.0, 0.0, 0.5, 0.5, 0.5, 2.0, 1e-13, 7.25], dtype=np.float32)
    s = tf.summary.histogram("h", tf.constant(values))
    histo = summary_pb2.Summary.FromString(tf.Session().run(s)).value[0].histo
    limits = tf_limits()
    counts = np.bincount(np.searchsorted(limits, values.astype(np.float64), side="right"), minlength=len(limits))
    # Each non-empty bucket appears with its own limit and count; the empty runs between them add nothing.
    got = {limit: count for limit, count in zip(histo.bucket_limit, histo.bucket) if count > 0}
    expected = {limits[i]: float(counts[i]) for i in np.flatnonzero(counts)}
    assert got == expected
    assert sum(histo.bucket) == len(values)
    assert histo.bucket_limit[-1] == sys.float_info.max
    assert (histo.min, histo.max, histo.num) == (-3.0, 7.25, 9.0)
    assert histo.sum == pytest.approx(float(values.astype(np.float64).sum()))
    assert histo.sum_squares == pytest.approx(float((values.astype(np.float64) ** 2).sum()))
    # Runs of empty buckets are squashed: never two empty buckets in a row.
    empties = np.array(histo.bucket) == 0
    assert not (empties[1:] & empties[:-1]).any()


def test_a_histogram_of_nan_raises_at_run_time_as_tf1():
    x = tf.placeholder(tf.float32, [2])
    s = tf.summary.histogram("weights", x)
    with pytest.raises(InvalidArgumentError, match=r"^Nan in summary histogram for: weights$"):
        tf.Session().run(s, {x: [1.0, np.nan]})


def test_image_summaries_are_pngs_tagged_per_image_and_normalized_as_tf1():
    batch = np.zeros((4, 2, 3, 3), dtype=np.float32)
    batch[0, 0, 0] = [0.5, 0.25, 0.0]  # all >= 0: the largest value (0.5) becomes 255
    batch[1, 0, 0] = [-1.0, 0.5, 0.0]  # a negative value: 0 becomes 128, scaled by 127 / 1
    s = tf.summary.image("pics", tf.constant(batch), max_outputs=2)
    values = summary_pb2.Summary.FromString(tf.Session().run(s)).value
    assert [v.tag for v in values] == ["pics/image/0", "pics/image/1"]
    decoded = [np.asarray(Image.open(io.BytesIO(v.image.encoded_image_string))) for v in values]
    assert all((v.image.height, v.image.width, v.image.colorspace) == (2, 3, 3) for v in values)
    np.testing.assert_array_equal(decoded[0][0, 0], [255, 127, 0])
    np.testing.assert_array_equal(decoded[1][0, 0], [1, 191, 128])
    np.testing.assert_array_equal(decoded[1][1, 2], [128, 128, 128])


def test_an_image_pixel_with_a_nan_is_red_and_left_out_of_the_scaling():
    # 1x1x2x3: the first pixel has a NaN, so its 1000 does not count toward the largest value (0.5).
    img = np.array([[[[0.5, np.nan, 1000.0], [0.25, 0.5, 0.0]]]], dtype=np.float32)
    s = tf.summary.image("nan", tf.constant(img), max_outputs=1)
    (value,) = summary_pb2.Summary.FromString(tf.Session().run(s)).value
    pixels = np.asarray(Image.open(io.BytesIO(value.image.encoded_image_string)))
    np.testing.assert_array_equal(pixels[0, 0], [255, 0, 0])
    np.testing.assert_array_equal(pixels[0, 1], [127, 255, 0])


def test_a_uint8_image_is_kept_and_one_output_is_tagged_image():
    pixels = np.arange(2 * 2 * 1, dtype=np.uint8).reshape(1, 2, 2, 1) * 60
    s = tf.summary.image("gray", tf.constant(pixels), max_outputs=1)
    (value,) = summary_pb2.Summary.FromString(tf.Session().run(s)).value
    assert value.tag == "gray/image"
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(value.image.encoded_image_string))),
                                  pixels[0, :, :, 0])


def test_an_image_summary_needs_four_dims_with_1_3_or_4_channels():
    with pytest.raises(InvalidArgumentError, match=r"Tensor must be 4-D with last dim 1, 3, or 4, not \[2, 3, 3\]"):
        tf.summary.image("x", tf.zeros([2, 3, 3]))
    with pytest.raises(InvalidArgumentError, match=r"not \[1, 2, 2, 2\]"):
        tf.summary.image("x", np.zeros([1, 2, 2, 2], dtype=np.float32))
    assert [op.name for op in tf.get_default_graph().get_operations()] == ["zeros"]


def test_text_summaries_hold_the_strings_for_the_text_plugin():
    s = tf.summary.text("notes", ["hello *markdown*", "second"])
    (value,) = summary_pb2.Summary.FromString(tf.Session().run(s)).value
    assert value.tag == "notes"
    assert value.metadata.plugin_data.plugin_name == "text"
    assert list(value.tensor.string_val) == [b"hello *markdown*", b"second"]
    assert [d.size for d in value.tensor.tensor_shape.dim] == [2]


def test_a_text_summary_of_a_number_tensor_raises_invalid_argument_as_tf1s_value_error():
    with pytest.raises(InvalidArgumentError, match=r"tf.summary.text 't': Expected tensor Const:0 to have dtype "
                                                   r"string, got float32; rustgrad graph tensors hold numbers"):
        tf.summary.text("t", tf.constant(1.0))
    with pytest.raises(InvalidArgumentError, match=r"Expected strings .*got \[1, 2\]"):
        tf.summary.text("t", [1, 2])
    assert tf.get_default_graph().get_operations()[-1].name == "Const"  # no summary node was added


def test_merge_all_merges_the_summaries_collection_and_is_none_when_empty():
    assert tf.summary.merge_all() is None
    x = tf.placeholder(tf.float32, [3], name="x")
    tf.summary.scalar("average", tf.reduce_mean(x))
    tf.summary.histogram("values", x)
    tf.summary.scalar("elsewhere", tf.reduce_max(x), collections=["other"])
    merged = tf.summary.merge_all()
    values = summary_pb2.Summary.FromString(tf.Session().run(merged, {x: [1.0, 2.0, 6.0]})).value
    assert [v.tag for v in values] == ["average", "values"]
    assert values[0].simple_value == 3.0
    other = summary_pb2.Summary.FromString(tf.Session().run(tf.summary.merge_all("other"), {x: [1.0, 2.0, 6.0]}))
    assert [(v.tag, v.simple_value) for v in other.value] == [("elsewhere", 6.0)]


def test_merge_of_summaries_with_the_same_tag_raises_at_run_time():
    v = tf.constant(1.0)
    a = tf.summary.scalar("loss", v)
    merged = tf.summary.merge([a, a])
    with pytest.raises(InvalidArgumentError, match="Duplicate tag loss found in summary inputs"):
        tf.Session().run(merged)


def test_merge_of_something_that_is_not_a_summary_raises_argument_type_error():
    with pytest.raises(ArgumentTypeError, match="tf.summary.merge: expected a non-empty list of summaries"):
        tf.summary.merge([tf.constant(1.0)])


def test_summary_eval_uses_the_default_session():
    s = tf.summary.scalar("c", tf.constant(2.5))
    with tf.Session():
        assert summary_pb2.Summary.FromString(s.eval()).value[0].simple_value == 2.5


# ----- FileWriter -----


def test_file_writer_writes_scalars_histograms_images_and_text_that_tensorboard_reads(tmp_path):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    loss = tf.reduce_mean(x * x, name="loss_value")
    tf.summary.scalar("loss", loss)
    tf.summary.histogram("inputs", x)
    tf.summary.image("rows", tf.reshape(x, [-1, 1, 1, 3]), max_outputs=1)
    tf.summary.text("note", "step summary")
    merged = tf.summary.merge_all()
    feeds = [np.arange(6, dtype=np.float32).reshape(2, 3) * (step + 1) for step in range(3)]
    with tf.Session() as sess, tf.summary.FileWriter(tmp_path, sess.graph) as writer:
        assert writer.get_logdir() == str(tmp_path)
        losses = []
        for step, feed in enumerate(feeds):
            summary, loss_value = sess.run([merged, loss], {x: feed})
            writer.add_summary(summary, global_step=np.int64(step * 10))
            losses.append(loss_value)
    acc = read_events(tmp_path)
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(s * 10, float(v)) for s, v in enumerate(losses)]
    histo = acc.Histograms("inputs")[-1].histogram_value
    assert (histo.min, histo.max, histo.num, histo.sum) == (0.0, 15.0, 6.0, float(feeds[-1].sum()))
    image = acc.Images("rows/image")[0]
    assert (image.width, image.height) == (1, 1)
    assert acc.Tensors("note")[0].tensor_proto.string_val == [b"step summary"]


def test_file_writer_graph_is_read_back_with_node_names_ops_and_inputs(tmp_path):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(np.ones((3, 2), dtype=np.float32), name="w")
    y = tf.matmul(x, w, name="y")
    tf.reduce_sum(y, name="total")
    with tf.summary.FileWriter(tmp_path) as writer:
        writer.add_graph(tf.get_default_graph())
    graph = read_events(tmp_path).Graph()
    nodes = {n.name: n for n in graph.node}
    assert set(nodes) == {op.name for op in tf.get_default_graph().get_operations()}
    assert (nodes["x"].op, list(nodes["x"].input)) == ("Placeholder", [])
    assert (nodes["y"].op, list(nodes["y"].input)) == ("MatMul", ["x", "w"])
    assert list(nodes["total"].input)[0] == "y"
    assert nodes["x"].attr["dtype"].type == 1  # DT_FLOAT
    assert [d.size for d in nodes["y"].attr["_output_shapes"].list.shape[0].dim] == [-1, 2]


def test_file_writer_graph_argument_writes_the_graph_at_once(tmp_path):
    tf.constant(1.0, name="one")
    with tf.Session() as sess:
        tf.summary.FileWriter(tmp_path, graph=sess.graph).close()
    assert [n.name for n in read_events(tmp_path).Graph().node] == ["one"]


def test_file_writer_accepts_a_summary_proto_and_flush_makes_it_readable(tmp_path):
    writer = tf.summary.FileWriter(tmp_path, flush_secs=1000)
    writer.add_summary(tf.summary.Summary(value=[tf.summary.Summary.Value(tag="manual", simple_value=0.25)]), 7)
    writer.flush()
    assert [(e.step, e.value) for e in read_events(tmp_path).Scalars("manual")] == [(7, 0.25)]
    writer.close()


def test_file_writer_after_close_warns_and_writes_nothing_until_reopened(tmp_path):
    s = tf.summary.scalar("a", tf.constant(1.0))
    raw = tf.Session().run(s)
    writer = tf.summary.FileWriter(tmp_path)
    writer.close()
    with pytest.warns(UserWarning, match="Attempting to use a closed FileWriter"):
        writer.add_summary(raw, 1)
    writer.reopen()
    writer.add_summary(raw, 2)
    writer.close()
    assert [e.step for e in read_events(tmp_path).Scalars("a")] == [2]


def test_add_summary_of_the_summary_op_itself_raises_argument_type_error(tmp_path):
    s = tf.summary.scalar("a", tf.constant(1.0))
    with tf.summary.FileWriter(tmp_path) as writer, pytest.raises(ArgumentTypeError, match="sess.run"):
        writer.add_summary(s)


# ----- without the extra -----


@pytest.fixture
def without_tensorboard(monkeypatch):
    """Importing tensorboard fails, as when it is not installed (its loaded modules are put back afterwards)."""
    for name in [m for m in sys.modules if m.startswith("tensorboard.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)


def test_summaries_without_tensorboard_raise_module_not_found_naming_the_extra(without_tensorboard, tmp_path):
    from rustgrad.utils.tensorboard import TensorBoardNotFoundError

    hint = r"pip install 'rustgrad\[tensorboard\]'"
    with pytest.raises(TensorBoardNotFoundError, match=r"^tf.summary.scalar writes TensorBoard files with the "
                                                      r"`tensorboard` package, which is not installed .*" + hint):
        tf.summary.scalar("x", tf.constant(1.0))
    with pytest.raises(ModuleNotFoundError, match=hint) as info:
        tf.summary.FileWriter(tmp_path)
    assert isinstance(info.value, RustgradError) and isinstance(info.value, ImportError)
    assert info.value.name == "tensorboard"


def test_compat_v1_summary_is_the_static_summary_module():
    import rustgrad.static

    assert tf.summary is rustgrad.static.summary
    assert tf.summary.SUMMARIES == "summaries"


def test_importing_rustgrad_does_not_import_tensorboard():
    import subprocess

    from _child import child_env

    code = ("import sys, rustgrad, rustgrad.compat.v1, rustgrad.utils.tensorboard\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorboard', 'PIL')))")
    done = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
