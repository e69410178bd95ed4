"""rustgrad.utils.tensorboard.SummaryWriter: torch's methods, read back with TensorBoard's EventAccumulator."""

from __future__ import annotations

import io
import os
import socket
import sys

import numpy as np
import pytest

import rustgrad
import rustgrad.nn as nn
from rustgrad.errors import ArgumentTypeError, GradientError, RustgradError, ShapeError
from rustgrad.utils.tensorboard import SummaryWriter, TensorBoardNotFoundError

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
Image = pytest.importorskip("PIL.Image")


def read_events(logdir):
    acc = event_accumulator.EventAccumulator(
        str(logdir), size_guidance={"scalars": 0, "histograms": 0, "images": 0, "tensors": 0})
    acc.Reload()
    return acc


def test_add_scalar_values_and_steps_are_read_back_exactly(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_scalar("loss", 0.75, 0)
        writer.add_scalar("loss", rustgrad.tensor(0.5), 1)
        writer.add_scalar("loss", np.float64(0.125), global_step=2, walltime=1234.5)
    events = read_events(tmp_path).Scalars("loss")
    assert [(e.step, e.value) for e in events] == [(0, 0.75), (1, 0.5), (2, 0.125)]
    assert events[2].wall_time == 1234.5


def test_add_scalar_of_many_values_raises_shape_error(tmp_path):
    with SummaryWriter(tmp_path) as writer, pytest.raises(ShapeError, match=r"add_scalar 'x': expected one number, "
                                                                            r"got a value of shape \[2\]"):
        writer.add_scalar("x", rustgrad.ones(2), 0)


def test_add_scalars_writes_one_run_per_key_under_the_main_tag(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for step in range(2):
            writer.add_scalars("losses", {"train": 1.0 + step, "test": 2.0 + step}, step)
    for key, base in (("train", 1.0), ("test", 2.0)):
        events = read_events(tmp_path / f"losses_{key}").Scalars("losses")
        assert [(e.step, e.value) for e in events] == [(0, base), (1, base + 1)]


def test_add_histogram_counts_and_limits_match_numpy(tmp_path):
    values = np.random.default_rng(0).normal(size=500)
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("w", rustgrad.tensor(values), 3, bins=10)
    event = read_events(tmp_path).Histograms("w")[0]
    histo = event.histogram_value
    counts, edges = np.histogram(values, bins=10)
    assert event.step == 3
    assert histo.bucket == [0.0] + counts.astype(float).tolist()  # an empty bucket left of the first edge
    assert histo.bucket_limit == pytest.approx(edges.tolist())
    assert (histo.min, histo.max, histo.num) == (values.min(), values.max(), 500)
    assert histo.sum == pytest.approx(values.sum())
    assert histo.sum_squares == pytest.approx((values ** 2).sum())


def test_add_histogram_max_bins_sums_runs_of_buckets_as_torch(tmp_path):
    values = np.arange(10.0)
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("h", values, 0, bins=10, max_bins=3)
    histo = read_events(tmp_path).Histograms("h")[0].histogram_value
    counts, edges = np.histogram(values, bins=10)
    # 10 // 3 = 3 buckets in each, the last run padded: counts 3, 3, 3, 1 at edges 0, 2.7, 5.4, 8.1, 9.
    assert histo.bucket == [0.0, 3.0, 3.0, 3.0, 1.0]
    assert histo.bucket_limit == pytest.approx([edges[0], edges[3], edges[6], edges[9], edges[10]])
    assert counts.sum() == sum(histo.bucket)


def test_add_histogram_of_no_values_raises_shape_error(tmp_path):
    with SummaryWriter(tmp_path) as writer, pytest.raises(ShapeError, match="add_histogram: the values have no "
                                                                            "element"):
        writer.add_histogram("h", np.zeros(0), 0)


def test_add_histogram_default_bins_are_tensorflows(tmp_path):
    values = np.array([0.5, 0.5, 3.0])
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("h", values, 0)
    histo = read_events(tmp_path).Histograms("h")[0].histogram_value
    limits = [1e-12]
    while limits[-1] * 1.1 < 1e20:
        limits.append(limits[-1] * 1.1)
    edges = [-v for v in reversed(limits)] + [0.0] + limits
    counts, _ = np.histogram(values, bins=edges)
    nonzero = np.flatnonzero(counts)
    assert sum(histo.bucket) == 3
    assert histo.bucket == counts[nonzero[0] - 1:nonzero[-1] + 1].astype(float).tolist()
    assert histo.bucket_limit == pytest.approx(edges[nonzero[0]:nonzero[-1] + 2])


def test_add_image_chw_float_is_scaled_by_255_and_uint8_hwc_is_kept(tmp_path):
    chw = np.zeros((3, 2, 4), dtype=np.float32)
    chw[:, 1, 3] = [1.0, 0.5, 0.0]
    hwc = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    with SummaryWriter(tmp_path) as writer:
        writer.add_image("chw", rustgrad.tensor(chw), 0)
        writer.add_image("hwc", hwc, 0, dataformats="HWC")
        writer.add_image("hw", np.ones((5, 6)), 0, dataformats="HW")
    acc = read_events(tmp_path)
    decoded = {tag: np.asarray(Image.open(io.BytesIO(acc.Images(tag)[0].encoded_image_string)))
               for tag in ("chw", "hwc", "hw")}
    assert (acc.Images("chw")[0].height, acc.Images("chw")[0].width) == (2, 4)
    np.testing.assert_array_equal(decoded["chw"][1, 3], [255, 127, 0])
    np.testing.assert_array_equal(decoded["hwc"], hwc)
    assert decoded["hw"].shape == (5, 6) and (decoded["hw"] == 255).all()


def test_add_images_tiles_the_batch_eight_to_a_row(tmp_path):
    batch = np.zeros((10, 1, 2, 3), dtype=np.uint8)  # NCHW, one channel
    for i in range(10):
        batch[i] = i * 20
    with SummaryWriter(tmp_path) as writer:
        writer.add_images("batch", batch, 0)
    event = read_events(tmp_path).Images("batch")[0]
    grid = np.asarray(Image.open(io.BytesIO(event.encoded_image_string)))
    assert grid.shape == (4, 24, 3)  # 2 rows of 8 columns of 2x3 images, gray as RGB
    for i in range(10):
        row, column = divmod(i, 8)
        assert (grid[row * 2:row * 2 + 2, column * 3:column * 3 + 3] == i * 20).all()
    assert (grid[2:, 6:] == 0).all()  # the empty places of the last row


def test_add_image_with_two_channels_raises_shape_error(tmp_path):
    with SummaryWriter(tmp_path) as writer, pytest.raises(ShapeError, match="add_image: an image needs 1, 3 or 4 "
                                                                            "channels, got 2"):
        writer.add_image("x", np.zeros((2, 4, 4)), 0)


def test_add_text_is_written_for_the_text_plugin_under_text_summary(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_text("notes", "**bold** words", 4)
    (event,) = read_events(tmp_path).Tensors("notes/text_summary")
    assert event.step == 4
    assert event.tensor_proto.string_val == [b"**bold** words"]


def test_add_graph_traces_one_forward_pass_into_named_nodes_and_inputs(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    with SummaryWriter(tmp_path) as writer:
        writer.add_graph(model, rustgrad.randn(5, 3))
    nodes = {n.name: n for n in read_events(tmp_path).Graph().node}
    assert set(nodes) == {
        "input/input.0", "Sequential/0/weight", "Sequential/0/bias", "Sequential/0/linear", "Sequential/1/relu",
        "Sequential/2/weight", "Sequential/2/bias", "Sequential/2/linear", "output/output.0",
    }
    assert list(nodes["Sequential/0/linear"].input) == ["input/input.0", "Sequential/0/weight", "Sequential/0/bias"]
    assert list(nodes["Sequential/1/relu"].input) == ["Sequential/0/linear"]
    assert list(nodes["output/output.0"].input) == ["Sequential/2/linear"]
    assert [d.size for d in nodes["Sequential/2/linear"].attr["_output_shapes"].list.shape[0].dim] == [5, 2]


def test_add_graph_leaves_the_model_without_hooks_and_its_gradients_untouched(tmp_path):
    model = nn.Linear(2, 1)
    with SummaryWriter(tmp_path) as writer:
        writer.add_graph(model, rustgrad.ones(1, 2))
    assert model.weight.grad is None
    assert not model._forward_hooks


def test_add_graph_of_a_pass_that_records_nothing_raises_gradient_error(tmp_path):
    class Doubler(nn.Module):
        def forward(self, x):
            return x * 2

    with SummaryWriter(tmp_path) as writer, pytest.raises(GradientError, match="recorded no autograd graph"):
        writer.add_graph(Doubler(), rustgrad.tensor([1, 2]))


def test_add_graph_without_an_input_raises_argument_type_error(tmp_path):
    with SummaryWriter(tmp_path) as writer, pytest.raises(ArgumentTypeError, match="input_to_model must be"):
        writer.add_graph(nn.Linear(2, 1))


def test_the_default_log_dir_is_runs_date_hostname_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    writer = SummaryWriter(comment="_lr0.1")
    writer.close()
    folder = writer.get_logdir()
    assert os.path.dirname(folder) == "runs"
    assert os.path.basename(folder).endswith(f"_{socket.gethostname()}_lr0.1")
    assert os.listdir(tmp_path / folder)[0].startswith("events.out.tfevents.")


def test_summary_writer_without_tensorboard_raises_module_not_found_naming_the_extra(monkeypatch, tmp_path):
    for name in [m for m in sys.modules if m.startswith("tensorboard.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(TensorBoardNotFoundError, match=r"^SummaryWriter writes TensorBoard files with the "
                                                      r"`tensorboard` package.*pip install 'rustgrad\[tensorboard\]'"):
        SummaryWriter(tmp_path)
    assert issubclass(TensorBoardNotFoundError, RustgradError)
    assert issubclass(TensorBoardNotFoundError, ModuleNotFoundError)
    assert not os.listdir(tmp_path)


def test_purge_step_writes_a_session_start_at_that_step(tmp_path):
    loader = pytest.importorskip("tensorboard.backend.event_processing.event_file_loader")
    with SummaryWriter(tmp_path, purge_step=2) as writer:
        writer.add_scalar("loss", 20.0, 2)
    (path,) = tmp_path.iterdir()
    events = list(loader.LegacyEventFileLoader(str(path)).Load())
    starts = [e for e in events if e.HasField("session_log")]
    assert [(e.step, e.session_log.status) for e in starts] == [(2, 1)]  # SessionLog.START
    assert events.index(starts[0]) < [i for i, e in enumerate(events) if e.HasField("summary")][0]
