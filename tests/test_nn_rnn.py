"""nn.RNN, nn.LSTM, nn.GRU and their cells: outputs against an independent numpy implementation
of torch's equations, gradients against float64 finite differences, torch's parameter names,
shapes, initialisation, repr and messages, and a small sequence classifier that learns."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rustgrad as torch
from rustgrad import nn
from rustgrad.autograd import gradcheck
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError, ShapeError


def _np(t):
    return t.detach().numpy().astype(np.float64)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def np_cell(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One step of torch's equations; returns (h', c')."""
    gi = x @ w_ih.T + b_ih
    gh = h @ w_hh.T + b_hh
    if mode == "RNN_TANH":
        return np.tanh(gi + gh), None
    if mode == "RNN_RELU":
        return np.maximum(gi + gh, 0), None
    if mode == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, axis=-1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(c), c
    ir, iz, in_ = np.split(gi, 3, axis=-1)
    hr, hz, hn = np.split(gh, 3, axis=-1)
    r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
    n = np.tanh(in_ + r * hn)
    return (1 - z) * n + z * h, None


def _weights(module, suffix=""):
    gates = module.weight_ih_l0.shape[0] if hasattr(module, "weight_ih_l0") else module.weight_ih.shape[0]
    w_ih, w_hh = _np(getattr(module, "weight_ih" + suffix)), _np(getattr(module, "weight_hh" + suffix))
    if module.bias:
        return w_ih, w_hh, _np(getattr(module, "bias_ih" + suffix)), _np(getattr(module, "bias_hh" + suffix))
    return w_ih, w_hh, np.zeros(gates), np.zeros(gates)


def np_rnn(module, x, h0=None, c0=None):
    """torch's multi-layer, optionally bidirectional recurrence, time step by time step."""
    batched = x.ndim == 3
    if not batched:
        x = x[:, None]
        h0 = None if h0 is None else h0[:, None]
        c0 = None if c0 is None else c0[:, None]
    elif module.batch_first:
        x = x.transpose(1, 0, 2)
    directions = 2 if module.bidirectional else 1
    states = (module.num_layers * directions, x.shape[1], module.hidden_size)
    h0 = np.zeros(states) if h0 is None else h0
    c0 = np.zeros(states) if c0 is None else c0
    h_n, c_n = [], []
    for layer in range(module.num_layers):
        outs = []
        for d in range(directions):
            k = layer * directions + d
            weights = _weights(module, f"_l{layer}" + ("_reverse" if d else ""))
            h, c = h0[k], c0[k]
            out = [None] * len(x)
            for t in reversed(range(len(x))) if d else range(len(x)):
                h, c_new = np_cell(module.mode, x[t], h, c, *weights)
                c = c_new if c_new is not None else c
                out[t] = h
            outs.append(np.stack(out))
            h_n.append(h)
            c_n.append(c)
        x = np.concatenate(outs, axis=-1)
    h_n, c_n = np.stack(h_n), np.stack(c_n)
    if not batched:
        return x[:, 0], h_n[:, 0], c_n[:, 0]
    return (x.transpose(1, 0, 2) if module.batch_first else x), h_n, c_n


MODULES = {
    "rnn_tanh": lambda **kw: nn.RNN(3, 5, **kw),
    "rnn_relu": lambda **kw: nn.RNN(3, 5, nonlinearity="relu", **kw),
    "lstm": lambda **kw: nn.LSTM(3, 5, **kw),
    "gru": lambda **kw: nn.GRU(3, 5, **kw),
}
CONFIGS = {
    "one_layer": {},
    "two_layers_bidirectional": {"num_layers": 2, "bidirectional": True},
    "batch_first_no_bias": {"batch_first": True, "bias": False},
    "three_layers": {"num_layers": 3},
}


def _run(module, x, h0, c0):
    if isinstance(module, nn.LSTM):
        hx = None if h0 is None else (torch.tensor(h0), torch.tensor(c0))
        out, (h_n, c_n) = module(torch.tensor(x), hx)
        return out, h_n, c_n
    out, h_n = module(torch.tensor(x), None if h0 is None else torch.tensor(h0))
    return out, h_n, None


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("kind", MODULES)
@pytest.mark.parametrize("layout", ["batched", "unbatched"])
@pytest.mark.parametrize("given_states", [False, True])
def test_outputs_and_final_states_match_numpy(kind, config, layout, given_states, rng):
    torch.manual_seed(0)
    module = MODULES[kind](**CONFIGS[config])
    seq, batch = 4, 2
    shape = (seq, 3) if layout == "unbatched" else ((batch, seq, 3) if module.batch_first else (seq, batch, 3))
    x = rng.standard_normal(shape).astype(np.float32)
    directions = 2 if module.bidirectional else 1
    state_shape = (module.num_layers * directions,) + (() if layout == "unbatched" else (batch,)) + (5,)
    h0 = rng.standard_normal(state_shape).astype(np.float32) if given_states else None
    c0 = rng.standard_normal(state_shape).astype(np.float32) if given_states else None
    out, h_n, c_n = _run(module, x, h0, c0)
    want_out, want_h, want_c = np_rnn(module, x.astype(np.float64), h0, c0)
    assert out.shape == want_out.shape and h_n.shape == want_h.shape
    np.testing.assert_allclose(_np(out), want_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(h_n), want_h, rtol=1e-5, atol=1e-5)
    if c_n is not None:
        np.testing.assert_allclose(_np(c_n), want_c, rtol=1e-5, atol=1e-5)


def test_output_shapes_follow_torch_for_a_bidirectional_batch_first_lstm():
    lstm = nn.LSTM(4, 6, num_layers=3, batch_first=True, bidirectional=True)
    out, (h, c) = lstm(torch.randn(2, 7, 4))
    assert out.shape == (2, 7, 12)
    assert h.shape == c.shape == (6, 2, 6)  # h_n is never batch-first


def test_a_sequence_of_length_zero_gives_an_empty_output_and_the_initial_state():
    gru = nn.GRU(3, 4)
    h0 = torch.randn(1, 2, 4)
    out, h = gru(torch.randn(0, 2, 3), h0)
    assert out.shape == (0, 2, 4)
    assert torch.equal(h, h0)


CELLS = {
    "rnn_tanh": (lambda **kw: nn.RNNCell(3, 5, **kw), "RNN_TANH"),
    "rnn_relu": (lambda **kw: nn.RNNCell(3, 5, nonlinearity="relu", **kw), "RNN_RELU"),
    "lstm": (lambda **kw: nn.LSTMCell(3, 5, **kw), "LSTM"),
    "gru": (lambda **kw: nn.GRUCell(3, 5, **kw), "GRU"),
}


@pytest.mark.parametrize("kind", CELLS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("given_states", [False, True])
def test_cells_match_numpy(kind, bias, batched, given_states, rng):
    make, mode = CELLS[kind]
    cell = make(bias=bias)
    shape = (4,) if batched else ()
    x = rng.standard_normal(shape + (3,)).astype(np.float32)
    h = rng.standard_normal(shape + (5,)).astype(np.float32) if given_states else np.zeros(shape + (5,), np.float32)
    c = rng.standard_normal(shape + (5,)).astype(np.float32) if given_states else np.zeros(shape + (5,), np.float32)
    want_h, want_c = np_cell(mode, x.astype(np.float64), h, c, *_weights(cell))
    if mode == "LSTM":
        got_h, got_c = cell(torch.tensor(x), (torch.tensor(h), torch.tensor(c)) if given_states else None)
        np.testing.assert_allclose(_np(got_c), want_c, rtol=1e-5, atol=1e-5)
    else:
        got_h = cell(torch.tensor(x), torch.tensor(h) if given_states else None)
    assert got_h.shape == want_h.shape
    np.testing.assert_allclose(_np(got_h), want_h, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", MODULES)
def test_module_gradients_match_finite_differences(kind):
    torch.manual_seed(1)
    module = MODULES[kind](num_layers=2, bidirectional=True).double()
    x = torch.randn(3, 2, 3, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(4, 2, 5, dtype=torch.float64, requires_grad=True)
    c0 = torch.randn(4, 2, 5, dtype=torch.float64, requires_grad=True)
    params = list(module.parameters())
    if isinstance(module, nn.LSTM):

        def fn(x, h0, c0, *_):
            out, (h, c) = module(x, (h0, c0))
            return out, h, c

        assert gradcheck(fn, (x, h0, c0, *params))
    else:

        def fn(x, h0, *_):
            return module(x, h0)

        assert gradcheck(fn, (x, h0, *params))


@pytest.mark.parametrize("kind", CELLS)
def test_cell_gradients_match_finite_differences(kind):
    torch.manual_seed(2)
    cell = CELLS[kind][0]().double()
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    h = torch.randn(2, 5, dtype=torch.float64, requires_grad=True)
    c = torch.randn(2, 5, dtype=torch.float64, requires_grad=True)
    params = list(cell.parameters())
    if isinstance(cell, nn.LSTMCell):
        assert gradcheck(lambda x, h, c, *_: cell(x, (h, c)), (x, h, c, *params))
    else:
        assert gradcheck(lambda x, h, *_: cell(x, h), (x, h, *params))


def test_parameter_names_shapes_and_state_dict_keys_are_torchs():
    lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    expected = []
    for layer, width in ((0, 3), (1, 8)):
        for suffix in ("", "_reverse"):
            s = f"_l{layer}{suffix}"
            expected += [(f"weight_ih{s}", (16, width)), (f"weight_hh{s}", (16, 4)), (f"bias_ih{s}", (16,)),
                         (f"bias_hh{s}", (16,))]
    assert [(n, tuple(p.shape)) for n, p in lstm.named_parameters()] == expected
    assert list(lstm.state_dict()) == [n for n, _ in expected]
    assert [(n, tuple(p.shape)) for n, p in nn.GRU(2, 3, bias=False).named_parameters()] == [
        ("weight_ih_l0", (9, 2)), ("weight_hh_l0", (9, 3))]
    assert [(n, tuple(p.shape)) for n, p in nn.GRUCell(2, 3).named_parameters()] == [
        ("weight_ih", (9, 2)), ("weight_hh", (9, 3)), ("bias_ih", (9,)), ("bias_hh", (9,))]
    assert len(lstm.all_weights) == 4 and lstm.all_weights[1][0] is lstm.weight_ih_l0_reverse


def test_state_dict_round_trip_reproduces_outputs():
    torch.manual_seed(3)
    a, b = nn.GRU(3, 4, num_layers=2), nn.GRU(3, 4, num_layers=2)
    b.load_state_dict(a.state_dict())
    x = torch.randn(5, 2, 3)
    assert torch.equal(a(x)[0], b(x)[0])


@pytest.mark.parametrize("make", [lambda: nn.LSTM(4, 25, num_layers=2), lambda: nn.GRUCell(4, 25)])
def test_every_parameter_is_drawn_from_uniform_one_over_sqrt_hidden(make):
    torch.manual_seed(4)
    bound = 1 / math.sqrt(25)
    for name, p in make().named_parameters():
        values = p.detach().numpy()
        assert values.min() >= -bound and values.max() <= bound, name
        assert values.max() - values.min() > 1.5 * bound, name  # spread over the interval, not constant


def test_repr_is_torchs():
    assert repr(nn.LSTM(32, 128, batch_first=True)) == "LSTM(32, 128, batch_first=True)"
    assert repr(nn.RNN(3, 4)) == "RNN(3, 4)"
    assert (repr(nn.GRU(3, 4, num_layers=2, bias=False, dropout=0.5, bidirectional=True))
            == "GRU(3, 4, num_layers=2, bias=False, dropout=0.5, bidirectional=True)")
    assert repr(nn.RNN(3, 4, nonlinearity="relu")) == "RNN(3, 4, nonlinearity=relu)"
    assert repr(nn.LSTMCell(3, 4)) == "LSTMCell(3, 4)"
    assert repr(nn.RNNCell(3, 4, bias=False, nonlinearity="relu")) == "RNNCell(3, 4, bias=False, nonlinearity=relu)"
    model = nn.Sequential(nn.GRU(2, 3))
    assert repr(model) == "Sequential(\n  (0): GRU(2, 3)\n)"


def test_dropout_applies_between_layers_only_in_training():
    torch.manual_seed(5)
    lstm = nn.LSTM(3, 50, num_layers=2, dropout=0.5)
    x = torch.randn(4, 2, 3)
    lstm.eval()
    eval_out = _np(lstm(x)[0])
    np.testing.assert_allclose(eval_out, np_rnn(lstm, _np(x))[0], rtol=1e-5, atol=1e-5)
    lstm.train()
    assert not np.allclose(_np(lstm(x)[0]), eval_out, atol=1e-3)
    everything_dropped = nn.GRU(3, 4, num_layers=2, dropout=1.0)
    with torch.no_grad():  # the second layer sees zeros, so its output is its response to zeros
        second = nn.GRU(4, 4)
        second.load_state_dict({k.replace("_l1", "_l0"): v for k, v in everything_dropped.state_dict().items()
                                if "_l1" in k})
        np.testing.assert_allclose(_np(everything_dropped(x)[0]), _np(second(torch.zeros(4, 2, 4))[0]), atol=1e-6)


def test_dropout_with_one_layer_warns_as_torch():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.2)


def test_a_sequence_classifier_learns():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    # Class 1 when the first step's feature is positive: the model has to carry it through time.
    x = rng.standard_normal((64, 8, 2)).astype(np.float32)
    y = (x[:, 0, 0] > 0).astype(np.int64)

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(2, 16, batch_first=True)
            self.head = nn.Linear(16, 2)

        def forward(self, x):
            _, (h, _) = self.lstm(x)
            return self.head(h[-1])

    model = Classifier()
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    loss_fn = nn.CrossEntropyLoss()
    xs, ys = torch.tensor(x), torch.tensor(y)
    first = loss_fn(model(xs), ys).item()
    for _ in range(150):
        opt.zero_grad()
        loss = loss_fn(model(xs), ys)
        loss.backward()
        opt.step()
    assert loss.item() < 0.3 * first
    accuracy = (model(xs).argmax(1) == ys).float().mean().item()
    assert accuracy > 0.9


def test_wrong_input_size_raises_torchs_message():
    with pytest.raises(ShapeError, match=r"input.size\(-1\) must be equal to input_size. Expected 3, got 4"):
        nn.LSTM(3, 5)(torch.randn(2, 1, 4))
    with pytest.raises(RuntimeError, match=r"input.size\(-1\) must be equal to input_size. Expected 3, got 4"):
        nn.GRU(3, 5, batch_first=True)(torch.randn(2, 1, 4))
    with pytest.raises(ShapeError, match="input has inconsistent input_size: got 4 expected 3"):
        nn.RNNCell(3, 5)(torch.randn(2, 4))


def test_input_of_another_dtype_than_the_weights_raises_torchs_message():
    with pytest.raises(ValueError, match="input must have the type rustgrad.float32, got type rustgrad.float64"):
        nn.GRU(3, 5)(torch.randn(2, 1, 3, dtype=torch.float64))


def test_wrong_initial_state_shape_raises_torchs_message():
    with pytest.raises(ShapeError, match=r"Expected hidden size \(2, 3, 5\), got \[1, 3, 5\]"):
        nn.GRU(3, 5, num_layers=2)(torch.randn(4, 3, 3), torch.randn(1, 3, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(1, 3, 5\), got \[1, 3, 6\]"):
        nn.LSTM(3, 5)(torch.randn(4, 3, 3), (torch.randn(1, 3, 5), torch.randn(1, 3, 6)))
    with pytest.raises(ShapeError, match=r"Expected hidden size \(1, 5\), got \[1, 4\]"):
        nn.RNN(3, 5)(torch.randn(4, 3), torch.randn(1, 4))
    with pytest.raises(ShapeError, match="For batched 3-D input, hx should also be 3-D but got 2-D tensor"):
        nn.RNN(3, 5)(torch.randn(4, 2, 3), torch.randn(2, 5))
    with pytest.raises(ShapeError, match=r"hx and cx should also be 2-D but got \(3-D, 3-D\) tensors"):
        nn.LSTM(3, 5)(torch.randn(4, 3), (torch.randn(1, 1, 5), torch.randn(1, 1, 5)))
    with pytest.raises(ShapeError, match="Input batch size 2 doesn't match hidden0 batch size 3"):
        nn.GRUCell(3, 5)(torch.randn(2, 3), torch.randn(3, 5))
    with pytest.raises(ShapeError, match="hidden1 has inconsistent hidden_size: got 4, expected 5"):
        nn.LSTMCell(3, 5)(torch.randn(2, 3), (torch.randn(2, 5), torch.randn(2, 4)))


def test_wrong_input_rank_and_arguments_raise_torchs_errors():
    with pytest.raises(InvalidArgumentError, match="LSTM: Expected input to be 2D or 3D, got 4D input"):
        nn.LSTM(3, 5)(torch.randn(1, 2, 3, 3))
    with pytest.raises(ValueError, match="RNN: Expected input to be 2D or 3D, got 1D tensor"):
        nn.RNN(3, 5)(torch.randn(3))
    with pytest.raises(ValueError, match="GRUCell: Expected input to be 1D or 2D, got 3D instead"):
        nn.GRUCell(3, 5)(torch.randn(1, 2, 3))
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'. Select from 'tanh' or 'relu'."):
        nn.RNN(3, 5, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.GRU(3, 5, dropout=1.5)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.LSTM(3, 0)
    with pytest.raises(ValueError, match="num_layers must be greater than zero"):
        nn.LSTM(3, 4, num_layers=0)
    with pytest.raises(ValueError, match="proj_size=2.*not supported"):
        nn.LSTM(3, 4, proj_size=2)
    with pytest.raises(ArgumentTypeError, match="input_size should be of type int, got: float"):
        nn.GRU(3.0, 4)
    with pytest.raises(ArgumentTypeError, match="must be a Tensor, not list"):
        nn.GRU(3, 4)([[1.0, 2.0, 3.0]])


def test_lstm_gradients_when_only_the_final_hidden_state_is_used():
    torch.manual_seed(6)
    lstm = nn.LSTM(3, 4, batch_first=True).double()
    x = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda x, *_: lstm(x)[1][0], (x, *lstm.parameters()))


def test_lstm_without_grad_builds_no_graph():
    lstm = nn.LSTM(3, 4)
    with torch.no_grad():
        out, (h, c) = lstm(torch.randn(5, 2, 3))
    assert not out.requires_grad and out.grad_fn is None and h.grad_fn is None


@pytest.mark.parametrize("kind", MODULES)
@pytest.mark.parametrize("length", [1, 2])
def test_gradients_without_bias_and_for_short_sequences(kind, length):
    torch.manual_seed(7)
    module = MODULES[kind](bias=False, bidirectional=True).double()
    x = torch.randn(length, 2, 3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda x, *_: module(x)[0], (x, *module.parameters()))
