"""Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict: torch's indexing,
numbering, mutation and repr."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import rustgrad as torch
from rustgrad import nn
from rustgrad.errors import ArgumentTypeError, ForwardNotDefinedError, IndexOutOfRangeError, ModuleKeyError


def layers(n):
    return [nn.Linear(i + 1, i + 2) for i in range(n)]


# ----- Sequential -----

def test_sequential_applies_modules_in_order():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    x = torch.randn(5, 3)
    w1, b1 = model[0].weight.detach().numpy(), model[0].bias.detach().numpy()
    w2, b2 = model[2].weight.detach().numpy(), model[2].bias.detach().numpy()
    expected = np.maximum(x.numpy() @ w1.T + b1, 0) @ w2.T + b2
    np.testing.assert_allclose(model(x).detach().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_sequential_from_an_ordered_dict_keeps_the_names():
    model = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.Tanh())]))
    assert model.fc is model[0] and model.act is model[1]
    assert [n for n, _ in model.named_parameters()] == ["fc.weight", "fc.bias"]
    assert repr(model) == "Sequential(\n  (fc): Linear(in_features=2, out_features=3, bias=True)\n  (act): Tanh()\n)"


def test_sequential_indexing_negative_and_out_of_range():
    a, b, c = layers(3)
    model = nn.Sequential(a, b, c)
    assert model[0] is a and model[-1] is c and model[-3] is a
    with pytest.raises(IndexOutOfRangeError, match="index 3 is out of range"):
        model[3]
    with pytest.raises(IndexOutOfRangeError, match="index -4 is out of range"):
        model[-4]
    with pytest.raises(ArgumentTypeError, match="indices must be integers or slices, not str"):
        model["0"]


def test_sequential_slicing_returns_a_sequential_sharing_the_modules():
    a, b, c = layers(3)
    model = nn.Sequential(a, b, c)
    head = model[1:]
    assert type(head) is nn.Sequential and list(head) == [b, c]
    assert list(head._modules) == ["1", "2"]
    assert list(model[::-1]) == [c, b, a]


def test_sequential_len_iter_append_extend_insert():
    a, b, c, d = layers(4)
    model = nn.Sequential(a)
    assert model.append(b) is model
    model.extend([c])
    assert len(model) == 3 and list(model) == [a, b, c]
    model.insert(1, d)
    assert list(model) == [a, d, b, c] and list(model._modules) == ["0", "1", "2", "3"]
    model.insert(-1, nn.ReLU())
    assert isinstance(model[3], nn.ReLU) and model[4] is c
    with pytest.raises(IndexOutOfRangeError, match="Index out of range: 9"):
        model.insert(9, nn.ReLU())
    with pytest.raises(ArgumentTypeError, match="module should be of type"):
        model.insert(0, 3)


def test_sequential_delitem_renumbers():
    a, b, c, d = layers(4)
    model = nn.Sequential(a, b, c, d)
    del model[1]
    assert list(model) == [a, c, d] and list(model._modules) == ["0", "1", "2"]
    del model[-2:]
    assert list(model) == [a]
    model[0] = b
    assert model[0] is b


def test_sequential_add_and_mul():
    a, b = layers(2)
    joined = nn.Sequential(a) + nn.Sequential(b)
    assert list(joined) == [a, b]
    assert len(nn.Sequential(a) * 3) == 3
    with pytest.raises(ArgumentTypeError, match="add operator supports only objects of Sequential class"):
        nn.Sequential(a) + [b]


def test_sequential_registers_parameters_for_optimizers():
    model = nn.Sequential(nn.Linear(3, 2), nn.Flatten(0, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 3), torch.randn(8)
    before = nn.MSELoss()(model(x), y).item()
    for _ in range(20):
        opt.zero_grad()
        nn.MSELoss()(model(x), y).backward()
        opt.step()
    assert nn.MSELoss()(model(x), y).item() < before


# ----- ModuleList -----

def test_module_list_registers_and_indexes():
    a, b, c = layers(3)
    ml = nn.ModuleList([a, b])
    ml.append(c)
    assert len(ml) == 3 and ml[-1] is c and list(ml) == [a, b, c]
    assert [n for n, _ in ml.named_parameters()][:2] == ["0.weight", "0.bias"]
    assert type(ml[1:]) is nn.ModuleList and list(ml[1:]) == [b, c]
    del ml[0]
    assert list(ml) == [b, c] and list(ml._modules) == ["0", "1"]
    ml.insert(0, a)
    assert list(ml) == [a, b, c]
    ml += [nn.ReLU()]
    assert len(ml) == 4 and isinstance(ml.pop(-1), nn.ReLU) and len(ml) == 3
    with pytest.raises(IndexOutOfRangeError, match="index 5 is out of range"):
        ml[5]
    with pytest.raises(ArgumentTypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        ml.extend(3)


def test_module_list_has_no_forward():
    with pytest.raises(ForwardNotDefinedError, match=r"Module \[ModuleList\] is missing"):
        nn.ModuleList([nn.ReLU()])(torch.ones(1))


def test_module_list_repr_collapses_repeats_as_torch():
    ml = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2)])
    assert repr(ml) == (
        "ModuleList(\n"
        "  (0-1): 2 x Linear(in_features=2, out_features=2, bias=True)\n"
        "  (2): ReLU()\n"
        "  (3): Linear(in_features=2, out_features=2, bias=True)\n"
        ")"
    )
    assert repr(nn.ModuleList()) == "ModuleList()"


# ----- ModuleDict -----

def test_module_dict_behaves_as_an_ordered_dict():
    md = nn.ModuleDict({"a": nn.ReLU(), "b": nn.Tanh()})
    md["c"] = nn.Sigmoid()
    assert list(md) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert isinstance(md["b"], nn.Tanh)
    assert [k for k, _ in md.items()] == ["a", "b", "c"]
    assert isinstance(md.pop("a"), nn.ReLU) and list(md.keys()) == ["b", "c"]
    md.update([("d", nn.Identity())])
    assert list(md) == ["b", "c", "d"]
    with pytest.raises(ModuleKeyError):
        md["zzz"]
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 1; 2 is required"):
        md.update([("x",)])
    md.clear()
    assert len(md) == 0


# ----- ParameterList / ParameterDict -----

def test_parameter_list_wraps_tensors_and_registers_them():
    pl = nn.ParameterList([torch.randn(3, 4), nn.Parameter(torch.randn(2))])
    pl.append(torch.ones(1))
    assert len(pl) == 3 and all(isinstance(p, nn.Parameter) for p in pl)
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert pl[-1].tolist() == [1.0] and len(pl[1:]) == 2
    pl[0] = torch.zeros(2)
    assert isinstance(pl[0], nn.Parameter) and pl[0].tolist() == [0.0, 0.0]
    assert repr(pl) == (
        "ParameterList(\n"
        "    (0): Parameter containing: [rustgrad.float32 of size 2]\n"
        "    (1): Parameter containing: [rustgrad.float32 of size 2]\n"
        "    (2): Parameter containing: [rustgrad.float32 of size 1]\n"
        ")"
    )
    with pytest.raises(ArgumentTypeError, match="ParameterList.extend should be called with an iterable, but got"):
        pl.extend(torch.ones(2))


def test_parameter_list_in_a_module_reaches_the_optimizer():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.ws = nn.ParameterList([nn.Parameter(torch.ones(2)) for _ in range(3)])

        def forward(self):
            return sum(w.sum() for w in self.ws)

    model = Model()
    assert [n for n, _ in model.named_parameters()] == ["ws.0", "ws.1", "ws.2"]
    model().backward()
    torch.optim.SGD(model.parameters(), lr=0.5).step()
    assert all(w.tolist() == [0.5, 0.5] for w in model.ws)


def test_parameter_dict_behaves_as_a_dict_of_parameters():
    pd = nn.ParameterDict({"a": torch.ones(2)})
    pd["b"] = nn.Parameter(torch.zeros(3))
    assert list(pd) == ["a", "b"] and "a" in pd and len(pd) == 2
    assert isinstance(pd["a"], nn.Parameter)
    assert [n for n, _ in pd.named_parameters()] == ["a", "b"]
    assert pd.get("zzz") is None
    del pd["a"]
    assert list(pd.keys()) == ["b"] and len(list(pd.parameters())) == 1
    with pytest.raises(ModuleKeyError):
        pd["a"]
    with pytest.raises(ArgumentTypeError, match="Index given to ParameterDict cannot be used as a key"):
        pd[0] = torch.ones(1)
    assert repr(pd) == "ParameterDict(  (b): Parameter containing: [rustgrad.float32 of size 3])"
