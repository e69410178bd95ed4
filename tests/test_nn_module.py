"""nn.Module and nn.Parameter: registration, traversal, modes, state dicts, dtype conversion, hooks
and repr, against torch's documented behaviour."""

from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np
import pytest

import rustgrad as torch
from rustgrad import nn
from rustgrad.errors import (
    ArgumentTypeError,
    ForwardNotDefinedError,
    InvalidArgumentError,
    ModuleAttributeError,
    ModuleKeyError,
    RustgradError,
    StateDictError,
)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.fc2 = nn.Linear(3, 2)
        self.scale = nn.Parameter(torch.ones(()))
        self.register_buffer("steps", torch.zeros(()))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu()) * self.scale


# ----- Parameter -----

def test_parameter_is_a_tensor_that_requires_grad_and_shares_memory():
    data = torch.randn(2, 3)
    p = nn.Parameter(data)
    assert isinstance(p, torch.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf
    assert p.data_ptr() == data.data_ptr()
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    assert type(p * 2) is torch.Tensor


def test_parameter_repr_says_parameter_containing():
    p = nn.Parameter(torch.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"


def test_parameter_of_a_non_tensor_raises_type_error():
    with pytest.raises(ArgumentTypeError, match="argument 'data' must be a Tensor, not list"):
        nn.Parameter([1.0, 2.0])


def test_parameter_survives_deepcopy_as_a_parameter_with_its_own_memory():
    p = nn.Parameter(torch.tensor([1.0, 2.0]))
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q.requires_grad
    assert q.data_ptr() != p.data_ptr() and q.tolist() == [1.0, 2.0]


def test_parameter_in_place_update_under_no_grad_keeps_its_class():
    p = nn.Parameter(torch.tensor([1.0, 2.0]))
    (p * p).sum().backward()
    with torch.no_grad():
        p -= 0.5 * p.grad
    assert type(p) is nn.Parameter and p.tolist() == [0.0, 0.0]


# ----- registration -----

def test_assignment_registers_parameters_modules_and_buffers():
    net = Net()
    assert list(net._parameters) == ["scale"]
    assert list(net._modules) == ["fc1", "fc2"]
    assert list(net._buffers) == ["steps", "scratch"]
    assert net.fc1 is net._modules["fc1"] and net.steps is net._buffers["steps"]
    assert "fc1" not in net.__dict__


def test_named_parameters_lists_dotted_names_in_registration_order():
    names = [name for name, _ in Net().named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [n for n, _ in Net().named_parameters(prefix="net", recurse=False)] == ["net.scale"]


def test_shared_parameters_and_modules_are_listed_once():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2)
            self.b = self.a
            self.w = self.a.weight

    tied = Tied()
    assert len(list(tied.parameters())) == 2
    assert [n for n, _ in tied.named_modules()] == ["", "a"]
    assert len(list(tied.named_parameters(remove_duplicate=False))) == 5
    assert list(tied.state_dict()) == ["w", "a.weight", "a.bias", "b.weight", "b.bias"]


def test_buffers_children_and_modules():
    net = Net()
    assert [n for n, _ in net.named_buffers()] == ["steps", "scratch"]
    assert list(net.children()) == [net.fc1, net.fc2]
    assert [n for n, _ in net.named_children()] == ["fc1", "fc2"]
    assert list(net.modules()) == [net, net.fc1, net.fc2]
    assert [n for n, _ in nn.Sequential(net).named_modules()] == ["", "0", "0.fc1", "0.fc2"]


def test_reassigning_an_attribute_moves_it_between_registries():
    net = Net()
    net.fc1 = nn.Parameter(torch.ones(1))
    assert "fc1" in net._parameters and "fc1" not in net._modules
    net.scale = None
    assert net._parameters["scale"] is None and net.scale is None
    assert "scale" not in dict(net.named_parameters())
    del net.fc2
    assert "fc2" not in net._modules
    with pytest.raises(ModuleAttributeError, match="'Net' object has no attribute 'fc2'"):
        _ = net.fc2


def test_assigning_a_plain_tensor_to_a_parameter_name_raises_type_error():
    net = Net()
    with pytest.raises(ArgumentTypeError, match=r"cannot assign 'rustgrad.Tensor' as parameter 'scale' "
                       r"\(torch.nn.Parameter or None expected\)"):
        net.scale = torch.ones(())
    with pytest.raises(ArgumentTypeError, match=r"cannot assign 'int' as child module 'fc1'"):
        net.fc1 = 3
    with pytest.raises(ArgumentTypeError, match=r"cannot assign 'str' as buffer 'steps'"):
        net.steps = "x"
    assert isinstance(net.fc1, nn.Linear) and isinstance(net.scale, nn.Parameter)


def test_assigning_before_init_raises_attribute_error():
    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(torch.ones(1))

    with pytest.raises(ModuleAttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Early()
    assert issubclass(ModuleAttributeError, AttributeError) and issubclass(ModuleAttributeError, RustgradError)


@pytest.mark.parametrize(
    "register, message",
    [
        (lambda m: m.register_buffer("a.b", torch.ones(1)), 'buffer name can\'t contain "."'),
        (lambda m: m.register_buffer("", torch.ones(1)), 'buffer name can\'t be empty string ""'),
        (lambda m: m.register_buffer("fc1", torch.ones(1)), "attribute 'fc1' already exists"),
        (lambda m: m.register_parameter("a.b", None), 'parameter name can\'t contain "."'),
        (lambda m: m.add_module("a.b", nn.ReLU()), 'module name can\'t contain ".", got: a.b'),
        (lambda m: m.add_module("forward", nn.ReLU()), "attribute 'forward' already exists"),
    ],
)
def test_bad_names_raise_key_error(register, message):
    net = Net()
    with pytest.raises(ModuleKeyError) as info:
        register(net)
    assert isinstance(info.value, KeyError) and info.value.args[0] == message


def test_registering_the_wrong_kind_raises_type_error():
    net = Net()
    with pytest.raises(ArgumentTypeError, match=r"cannot assign 'rustgrad.Tensor' object to parameter 'w' "
                       r"\(torch.nn.Parameter or None required\)"):
        net.register_parameter("w", torch.ones(1))
    with pytest.raises(ArgumentTypeError, match="cannot assign 'list' object to buffer 'b'"):
        net.register_buffer("b", [1])
    with pytest.raises(ArgumentTypeError, match="int is not a Module subclass"):
        net.add_module("m", 3)
    with pytest.raises(ArgumentTypeError, match="parameter name should be a string. Got int"):
        net.register_parameter(1, None)


def test_module_init_refuses_arguments():
    with pytest.raises(ArgumentTypeError, match="unexpected keyword argument 'foo'"):
        nn.Module(foo=1)


def test_get_submodule_parameter_and_buffer():
    outer = nn.Sequential(Net())
    assert outer.get_submodule("0.fc2") is outer[0].fc2
    assert outer.get_submodule("") is outer
    assert outer.get_parameter("0.fc1.bias") is outer[0].fc1.bias
    assert outer.get_buffer("0.steps") is outer[0].steps
    with pytest.raises(ModuleAttributeError, match="Net has no attribute `fc3`"):
        outer.get_submodule("0.fc3")
    with pytest.raises(ModuleAttributeError, match="`scale` is not an nn.Module"):
        outer.get_submodule("0.scale")


# ----- calling, modes, gradients -----

def test_call_runs_forward_and_a_module_without_forward_raises():
    x = torch.randn(5, 4)
    net = Net()
    np.testing.assert_allclose(net(x).detach().numpy(), net.forward(x).detach().numpy())
    with pytest.raises(ForwardNotDefinedError, match=r'Module \[Module\] is missing the required "forward" function'):
        nn.Module()(x)
    assert issubclass(ForwardNotDefinedError, NotImplementedError)


def test_train_and_eval_set_the_flag_on_every_submodule():
    net = Net()
    assert net.training and net.fc1.training
    assert net.eval() is net
    assert not net.training and not net.fc1.training and not net.fc2.training
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(InvalidArgumentError, match="training mode is expected to be boolean"):
        net.train("yes")


def test_zero_grad_sets_grads_to_none_or_zero():
    net = Net()
    net(torch.randn(2, 4)).sum().backward()
    grad = net.fc1.weight.grad
    net.zero_grad(set_to_none=False)
    assert net.fc1.weight.grad is not None and not net.fc1.weight.grad.detach().numpy().any()
    assert not grad.detach().numpy().any()
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_requires_grad_freezes_every_parameter():
    net = Net().requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    net.fc1.requires_grad_()
    assert [p.requires_grad for p in net.parameters()] == [False, True, True, False, False]


def test_apply_visits_children_before_parents():
    seen = []
    Net().apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "Linear", "Net"]


def test_apply_with_init_reinitialises_weights():
    net = Net()

    def init_weights(m):
        if isinstance(m, nn.Linear):
            nn.init.constant_(m.weight, 0.5)

    net.apply(init_weights)
    assert (net.fc1.weight.detach().numpy() == 0.5).all() and (net.fc2.weight.detach().numpy() == 0.5).all()


# ----- dtype and device -----

def test_to_double_converts_parameters_and_buffers():
    net = Net()
    before = net.fc1.weight.detach().numpy().copy()
    assert net.double() is net
    assert all(p.dtype == torch.float64 for p in net.parameters())
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in net.parameters())
    assert net.steps.dtype == torch.float64
    np.testing.assert_array_equal(net.fc1.weight.detach().numpy(), before.astype(np.float64))
    assert net(torch.randn(2, 4, dtype=torch.float64)).dtype == torch.float64
    net.to(torch.float32)
    assert net.fc1.weight.dtype == torch.float32
    net.float()
    assert net.fc1.weight.dtype == torch.float32


def test_to_cpu_and_same_dtype_keep_the_parameter_objects():
    net = Net()
    weight = net.fc1.weight
    assert net.to("cpu") is net and net.to(torch.device("cpu"), torch.float32) is net and net.cpu() is net
    assert net.fc1.weight is weight


def test_to_refuses_integer_dtypes_and_other_devices():
    with pytest.raises(ArgumentTypeError, match="nn.Module.to only accepts floating point or complex dtypes, "
                       "but got desired dtype=rustgrad.int64"):
        Net().to(torch.int64)
    with pytest.raises(RuntimeError):
        Net().to("cuda")


# ----- state dict -----

def test_state_dict_has_parameters_and_persistent_buffers_detached():
    net = Net()
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["scale", "steps", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert all(type(v) is torch.Tensor and not v.requires_grad for v in sd.values())
    assert sd["fc1.weight"].data_ptr() == net.fc1.weight.data_ptr()
    kept = net.state_dict(keep_vars=True)
    assert kept["fc1.weight"] is net.fc1.weight
    assert list(net.state_dict(prefix="m."))[0] == "m.scale"


def test_load_state_dict_round_trip_is_bitwise_and_not_recorded():
    src, dst = Net(), Net()
    with torch.no_grad():
        src.steps.fill_(7.0)
    weight = dst.fc1.weight
    result = dst.load_state_dict(src.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    assert dst.fc1.weight is weight and weight.is_leaf and weight.grad_fn is None and weight.requires_grad
    for (name, a), b in zip(src.state_dict().items(), dst.state_dict().values()):
        assert a.detach().numpy().tobytes() == b.detach().numpy().tobytes(), name
    x = torch.randn(3, 4)
    assert src(x).detach().numpy().tobytes() == dst(x).detach().numpy().tobytes()


def test_load_state_dict_strict_lists_missing_and_unexpected_keys_and_changes_nothing():
    net = Net()
    before = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    sd = Net().state_dict()
    del sd["fc1.bias"]
    sd["extra"] = torch.ones(1)
    with pytest.raises(StateDictError) as info:
        net.load_state_dict(sd)
    assert str(info.value) == (
        'Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "fc1.bias". '
        '\n\tUnexpected key(s) in state_dict: "extra". '
    )
    assert isinstance(info.value, RuntimeError)
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(v.detach().numpy(), before[k])


def test_load_state_dict_non_strict_returns_the_incompatible_keys():
    net = Net()
    sd = Net().state_dict()
    del sd["fc1.bias"]
    sd["fc2.extra"] = torch.ones(1)
    result = net.load_state_dict(sd, strict=False)
    assert result == (["fc1.bias"], ["fc2.extra"])
    assert result.missing_keys == ["fc1.bias"] and result.unexpected_keys == ["fc2.extra"]
    np.testing.assert_array_equal(net.fc1.weight.detach().numpy(), sd["fc1.weight"].detach().numpy())


def test_load_state_dict_size_mismatch_names_both_shapes():
    net = Net()
    sd = net.state_dict()
    sd["fc1.weight"] = torch.zeros(3, 5)
    with pytest.raises(StateDictError, match=r"size mismatch for fc1.weight: copying a param with shape \[3, 5\] "
                       r"from checkpoint, the shape in current model is \[3, 4\]\."):
        net.load_state_dict(sd, strict=False)
    assert net.fc1.weight.detach().numpy().any()


def test_load_state_dict_refuses_non_tensor_values_and_non_mappings():
    net = Net()
    sd = net.state_dict()
    sd["scale"] = 1.0
    with pytest.raises(StateDictError, match='While copying the parameter named "scale", expected torch.Tensor'):
        net.load_state_dict(sd)
    with pytest.raises(ArgumentTypeError, match="Expected state_dict to be dict-like, got <class 'list'>"):
        net.load_state_dict([1, 2])


def test_load_state_dict_converts_dtype_in_place():
    net = Net()
    sd = {k: v.double() for k, v in Net().state_dict().items()}
    net.load_state_dict(sd)
    assert net.fc1.weight.dtype == torch.float32
    np.testing.assert_array_equal(net.fc1.weight.detach().numpy(), sd["fc1.weight"].detach().numpy().astype(np.float32))


def test_load_state_dict_assign_takes_the_tensors():
    net = Net()
    sd = Net().state_dict()
    net.load_state_dict(sd, assign=True)
    assert net.fc1.weight.data_ptr() == sd["fc1.weight"].data_ptr()
    assert isinstance(net.fc1.weight, nn.Parameter) and net.fc1.weight.requires_grad


def test_non_persistent_buffers_stay_out_of_the_state_dict():
    net = Net()
    assert "scratch" not in net.state_dict()
    net.load_state_dict(Net().state_dict())


# ----- hooks -----

def test_forward_pre_hook_can_replace_the_input_and_be_removed():
    lin = nn.Identity()
    calls = []
    handle = lin.register_forward_pre_hook(lambda m, args: calls.append(args) or (args[0] * 2,))
    x = torch.ones(2)
    assert lin(x).tolist() == [2.0, 2.0]
    assert calls[0][0] is x
    handle.remove()
    assert lin(x).tolist() == [1.0, 1.0] and len(calls) == 1


def test_forward_hook_sees_output_and_can_replace_it():
    lin = nn.Identity()
    seen = []
    lin.register_forward_hook(lambda m, args, out: seen.append((m, out)))
    handle = lin.register_forward_hook(lambda m, args, out: out + 1)
    assert lin(torch.zeros(1)).tolist() == [1.0]
    assert seen[0][0] is lin
    with handle:
        pass
    assert lin(torch.zeros(1)).tolist() == [0.0]


def test_hooks_with_kwargs_and_prepend_run_in_order():
    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            return x * factor

    m = Scale()
    order = []
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"factor": 3.0}), with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: order.append("second"))
    m.register_forward_hook(lambda mod, args, kwargs, out: order.append(("first", kwargs)), prepend=True,
                            with_kwargs=True)
    assert m(torch.ones(1)).tolist() == [3.0]
    assert order == [("first", {"factor": 3.0}), "second"]


def test_a_pre_hook_with_kwargs_returning_a_bad_value_raises():
    m = nn.Identity()
    m.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(ArgumentTypeError, match=r"forward pre-hook must return None or a tuple of \(new_args, "
                       r"new_kwargs\), but got 5"):
        m(torch.ones(1))


def test_always_call_hook_runs_when_forward_raises():
    class Broken(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Broken()
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        m(torch.ones(1))
    assert seen == [None]


# ----- repr -----

def test_repr_is_laid_out_as_torch():
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Sequential(nn.Linear(256, 10), nn.Softmax(dim=1)))
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Linear(in_features=784, out_features=256, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Sequential(\n"
        "    (0): Linear(in_features=256, out_features=10, bias=True)\n"
        "    (1): Softmax(dim=1)\n"
        "  )\n"
        ")"
    )


def test_repr_of_a_custom_module_with_extra_repr_and_children():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(2, 2, bias=False)

        def extra_repr(self):
            return "width=2"

    assert repr(Block()) == "Block(\n  width=2\n  (body): Linear(in_features=2, out_features=2, bias=False)\n)"
    assert repr(nn.MSELoss()) == "MSELoss()"
    assert repr(nn.Flatten(0, 1)) == "Flatten(start_dim=0, end_dim=1)"
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.Bilinear(2, 3, 4)) == "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)"
    assert repr(nn.Unflatten(1, (2, 3))) == "Unflatten(dim=1, unflattened_size=(2, 3))"
