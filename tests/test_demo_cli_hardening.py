"""The demo's command line (`python -m rustgrad`): its help, failing fast on --plot, the loss plot's
styles, and the benchmark chart's labels."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from rustgrad import __main__ as cli
from rustgrad._demo import Run

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_help_lists_every_subcommand_with_a_description():
    done = subprocess.run([sys.executable, "-m", "rustgrad", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert re.search(r"^\s+profile\s+\w.{10,}$", done.stdout, re.M), done.stdout
    for name, description in cli.SUBCOMMANDS.items():
        assert re.search(rf"^\s+{name}\s+{re.escape(description)}$", done.stdout, re.M), name


@pytest.fixture
def no_training(monkeypatch):
    def trained(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(cli, "train_eager", trained)
    monkeypatch.setattr(cli, "train_static", trained)


def test_plot_without_matplotlib_fails_before_training(monkeypatch, tmp_path, no_training, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(SystemExit) as info:
        cli.main(["--steps", "100000", "--plot", str(tmp_path / "loss.png")])
    assert "--plot needs matplotlib" in str(info.value.code)
    assert "pip install 'rustgrad[plot]'" in str(info.value.code)
    assert capsys.readouterr().out == ""


def test_plot_into_a_missing_folder_fails_before_training(tmp_path, no_training):
    pytest.importorskip("matplotlib")
    with pytest.raises(SystemExit) as info:
        cli.main(["--steps", "100000", "--plot", str(tmp_path / "missing" / "loss.png")])
    assert "does not exist" in str(info.value.code)


def _runs(static_losses: list[float]) -> list[Run]:
    return [Run("eager", [100.0, 10.0, 1.0], 0.3), Run("static", static_losses, 0.2)]


def test_identical_loss_curves_are_drawn_differently_and_said_to_coincide():
    runs = _runs([100.0, 10.0, 1.0])
    assert cli.curves_coincide(runs)
    eager, static = cli.curve_styles(runs)
    assert eager["linestyle"] != static["linestyle"]
    assert min(eager["alpha"], static["alpha"]) < 1  # the one drawn on top lets the other show
    assert eager["label"].startswith("eager") and static["label"].startswith("static")
    assert "the eager and static loss curves coincide" in cli.loss_title(runs)


def test_different_loss_curves_are_not_said_to_coincide():
    runs = _runs([100.0, 12.0, 1.0])
    assert not cli.curves_coincide(runs)
    assert "coincide" not in cli.loss_title(runs)
    assert not cli.curves_coincide(runs[:1])


def test_loss_figure_shows_both_curves():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = cli.loss_figure(_runs([100.0, 10.0, 1.0]), plt)
    try:
        lines = fig.axes[0].get_lines()
        assert len(lines) == 2
        assert lines[0].get_linestyle() != lines[1].get_linestyle()
        assert "coincide" in fig.axes[0].get_title()
    finally:
        plt.close(fig)


def test_benchmark_chart_labels_every_bar_and_keeps_the_title_inside():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sys.path.insert(0, str(BENCHMARKS))
    try:
        import report
    finally:
        sys.path.remove(str(BENCHMARKS))
    values = {"rustgrad eager, custom Function ReLU (the reference program)": 119.4,
              "rustgrad static, Session.run": 87.0, "numpy by hand, preallocated in place": 119.9}
    fig = report.step_figure(values, plt)
    try:
        fig.canvas.draw()
        texts = {t.get_text() for t in fig.axes[0].texts}
        assert texts == {"119.4 µs", "87.0 µs", "119.9 µs"}
        renderer = fig.canvas.get_renderer()
        figure_box = fig.bbox
        titles = [t for t in fig.texts if "Seed two-layer step" in t.get_text()]
        assert len(titles) == 1
        for artist in [*titles, *fig.axes[0].texts]:
            box = artist.get_window_extent(renderer)
            assert figure_box.x0 <= box.x0 and box.x1 <= figure_box.x1, artist.get_text()
            assert figure_box.y0 <= box.y0 and box.y1 <= figure_box.y1, artist.get_text()
    finally:
        plt.close(fig)
