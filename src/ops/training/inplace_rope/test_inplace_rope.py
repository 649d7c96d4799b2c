"""inplace_rope_ through PyTorch: HF DeepSeek V4's interleaved rope on the trailing slice (forward
and backward, every dtype), the in-place contract (same tensor, version bump, transposed views,
leaves), opcheck, gradcheck and torch.compile. Collected by `pytest src/ops`."""

import sys

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
# One rounding of the exact value in the dtype (training_ops.md §3.9), against a torch composition
# in fp32 that rounds once too: within a couple of ulps.
TOL = {torch.float32: (2e-6, 1e-5), torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2),
       torch.float64: (1e-12, 1e-12)}


def hf_rope(x, cos, sin, inverse=False):
    """HF DeepSeek V4 ``apply_rotary_pos_emb`` on our [B, L, H, Dh] / [T, H, Dh] layout, in fp32
    (fp64 for fp64): the pairs (2i, 2i+1) of the trailing R = 2 * cos.shape[-1] channels rotated,
    ``x * cos + rotate_half(x) * sin`` with interleaved ``rotate_half``."""
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos = cos.to(acc).repeat_interleave(2, dim=-1)
    sin = sin.to(acc).repeat_interleave(2, dim=-1)
    if inverse:
        sin = -sin
    if x.dim() == 4 and cos.dim() == 2:  # [L, R] -> broadcast over B and H
        cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    else:  # [B, L, R] or [T, R] -> broadcast over H
        cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
    r = cos.shape[-1]
    nope, rope = x[..., :x.shape[-1] - r], x[..., x.shape[-1] - r:]
    pairs = rope.to(acc).unflatten(-1, (-1, 2))
    rotated_half = torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).flatten(-2)
    rotated = (rope.to(acc) * cos + rotated_half * sin).to(x.dtype)
    return torch.cat([nope, rotated], dim=-1)


def angles(shape, dtype, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    theta = (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * 3.14159
    return theta.cos().to(dtype).to(device), theta.sin().to(dtype).to(device)


CASES = [
    # x shape, cos shape, cos in x's dtype
    ((2, 7, 3, 16), (7, 8), False),        # R = Dh
    ((2, 5, 4, 40), (5, 8), True),         # [nope | rope], R = 16 < Dh
    ((3, 6, 2, 12), (3, 6, 4), False),     # cos [B, L, R/2]
    ((37, 3, 24), (37, 6), True),          # packed [T, H, Dh], cos [T, R/2]
    ((4, 5, 2, 9), (5, 1), False),         # R = 2, odd Dh
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("xs,cs,cos_like_x", CASES)
def test_forward_matches_hf(device, dtype, inverse, xs, cs, cos_like_x):
    x = torch.randn(xs, dtype=dtype, device=device) * 3
    cos, sin = angles(cs, dtype if cos_like_x else torch.float32, device)
    want = hf_rope(x, cos, sin, inverse)
    y = x.clone()
    out = recops.inplace_rope_(y, cos, sin, inverse)
    assert out is y  # the argument itself, written in place
    atol, rtol = TOL[dtype]
    torch.testing.assert_close(y, want, atol=atol, rtol=rtol)
    torch.testing.assert_close(y[..., :xs[-1] - 2 * cs[-1]], x[..., :xs[-1] - 2 * cs[-1]],
                               atol=0, rtol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("xs,cs,cos_like_x", CASES)
def test_backward_matches_hf(device, dtype, xs, cs, cos_like_x):
    cos, sin = angles(cs, dtype if cos_like_x else torch.float32, device, seed=1)
    x = (torch.randn(xs, dtype=dtype, device=device) * 2).requires_grad_()
    g = torch.randn(xs, dtype=dtype, device=device)
    (recops.inplace_rope_(x.clone(), cos, sin) * g).sum().backward()
    xr = x.detach().to(torch.float64).requires_grad_()
    (hf_rope(xr, cos.double(), sin.double()) * g.double()).sum().backward()
    atol, rtol = TOL[dtype]
    torch.testing.assert_close(x.grad, xr.grad.to(dtype), atol=atol, rtol=rtol)


def test_sum_backward_is_the_inverse_rotation():
    cos, sin = angles((5, 3), torch.float32, "cpu")
    x = torch.randn(2, 5, 4, 10, requires_grad=True)
    y = recops.inplace_rope_(x.clone(), cos, sin)
    y.sum().backward()
    want = hf_rope(torch.ones(2, 5, 4, 10), cos, sin, inverse=True)
    torch.testing.assert_close(x.grad, want)


def test_transposed_view_is_written_in_place():
    cos, sin = angles((13, 6), torch.float32, "cpu")
    base = torch.randn(2, 5, 13, 16)  # HF's [B, H, L, Dh]
    want = hf_rope(base.transpose(1, 2), cos, sin)
    view = base.transpose(1, 2)
    v0 = base._version
    assert recops.inplace_rope_(view, cos, sin) is view
    assert base._version > v0
    torch.testing.assert_close(base.transpose(1, 2), want)


def test_transposed_view_gradient():
    cos, sin = angles((7, 4), torch.float64, "cpu")
    x = torch.randn(2, 3, 7, 12, dtype=torch.float64, requires_grad=True)

    def f(t):
        b = t.clone()
        recops.inplace_rope_(b.transpose(1, 2), cos, sin)
        return b

    assert torch.autograd.gradcheck(f, (x,))


def test_gradcheck():
    cos, sin = angles((3, 4, 3), torch.float64, "cpu")
    x = torch.randn(3, 4, 2, 10, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: recops.inplace_rope_(t.clone(), cos, sin, True), (x,))


def test_version_bumps_catch_a_stale_saved_tensor():
    cos, sin = angles((4, 2), torch.float32, "cpu")
    a = torch.randn(3, 4, 2, 4, requires_grad=True)
    b = a * 1.0
    c = b * b  # saves b
    recops.inplace_rope_(b, cos, sin)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_leaf_that_requires_grad_is_refused():
    cos, sin = angles((4, 2), torch.float32, "cpu")
    x = torch.randn(3, 4, 2, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        recops.inplace_rope_(x, cos, sin)
    with torch.no_grad():
        recops.inplace_rope_(x, cos, sin)


def test_cos_gets_no_gradient():
    cos, sin = angles((4, 2), torch.float64, "cpu")
    cos.requires_grad_()
    x = torch.randn(3, 4, 2, 4, dtype=torch.float64, requires_grad=True)
    recops.inplace_rope_(x.clone(), cos, sin).sum().backward()
    assert cos.grad is None and x.grad is not None


def test_schema():
    schema = str(torch.ops.recops.inplace_rope_.default._schema)
    assert schema == ("recops::inplace_rope_(Tensor(a!) x, Tensor cos, Tensor sin, "
                      "bool inverse=False) -> Tensor(a!)")
    if hasattr(torch.Tag, "inplace"):  # torch 2.11 has no such tag (README.md)
        assert torch.Tag.inplace in torch.ops.recops.inplace_rope_.default.tags


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    cos, sin = angles((5, 3), torch.float32, device)
    x = torch.randn(2, 5, 3, 8, device=device, requires_grad=True)
    # Without torch.Tag.inplace (torch 2.11) AOT autograd cannot functionalize a custom op that
    # returns an alias (its documented limit); recops.inplace_rope_ then goes out of place under
    # torch.compile, which the compile tests below check on both paths.
    utils = ("test_schema", "test_autograd_registration", "test_faketensor") + (
        ("test_aot_dispatch_dynamic",) if hasattr(torch.Tag, "inplace") else ())
    torch.library.opcheck(torch.ops.recops.inplace_rope_.default, (x.clone(), cos, sin, False),
                          test_utils=utils)
    torch.library.opcheck(torch.ops.recops.inplace_rope_.default,
                          (torch.randn(5, 3, 8, device=device), cos, sin, True),
                          test_utils=utils)
    torch.library.opcheck(torch.ops.recops.inplace_rope_bwd.default,
                          (torch.randn(2, 5, 3, 8, device=device), cos, sin, False))


@pytest.fixture(params=["native", "out_of_place"])
def compile_path(request, monkeypatch):
    """Both ways recops.inplace_rope_ meets torch.compile (compile_compat.py): the in-place op
    functionalized by its `inplace` tag (where torch has the tag), and the out-of-place rotation
    copied back (torch without it; forced here on any torch)."""
    mod = sys.modules["recops._ops.training.inplace_rope.compile_compat"]
    if request.param == "native" and mod.OUT_OF_PLACE_UNDER_COMPILE:
        pytest.skip("this torch has no torch.Tag.inplace: only the out-of-place path exists")
    monkeypatch.setattr(mod, "OUT_OF_PLACE_UNDER_COMPILE", request.param == "out_of_place")
    torch._dynamo.reset()
    yield request.param
    torch._dynamo.reset()


@pytest.mark.parametrize("inverse", [False, True])
def test_compile_matches_eager(compile_path, inverse):
    cos, sin = angles((6, 4), torch.float32, "cpu")

    def f(x, w):
        y = recops.inplace_rope_(x * w, cos, sin, inverse)
        return (y * y).sum(), y

    x0 = torch.randn(2, 6, 3, 12)
    xe = x0.clone().requires_grad_()
    xc = x0.clone().requires_grad_()
    le, ye = f(xe, 1.5)
    lc, yc = torch.compile(f, fullgraph=True, backend="inductor")(xc, 1.5)
    torch.testing.assert_close(yc, ye)
    le.backward()
    lc.backward()
    torch.testing.assert_close(xc.grad, xe.grad)


def test_compile_in_place_on_an_input(compile_path):
    cos, sin = angles((6, 4), torch.float32, "cpu")

    def g(x):
        recops.inplace_rope_(x, cos, sin)
        return x

    x = torch.randn(2, 6, 3, 12)
    want = hf_rope(x, cos, sin)
    got = torch.compile(g, fullgraph=True)(x)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x, want)  # the caller's tensor was written


def test_errors_name_the_argument():
    cos, sin = angles((3, 5), torch.float32, "cpu")
    with pytest.raises(RuntimeError, match=r"R = 2 \* cos.shape\[-1\] = 10 must be <= x's head dim"):
        recops.inplace_rope_(torch.randn(2, 3, 2, 8), cos, sin)
    with pytest.raises(RuntimeError, match="x must be fp64, fp32, fp16 or bf16"):
        recops.inplace_rope_(torch.ones(2, 3, 2, 10, dtype=torch.int32), cos, sin)
    with pytest.raises(RuntimeError, match="x's last dim must have unit stride"):
        recops.inplace_rope_(torch.randn(2, 3, 2, 20)[..., ::2], cos, sin)
    with pytest.raises(RuntimeError, match="cos and sin must both be fp32 or both x's dtype"):
        recops.inplace_rope_(torch.randn(2, 3, 2, 10, dtype=torch.bfloat16), cos.half(), sin.half())


def test_empty():
    cos, sin = angles((0, 4), torch.float32, "cpu")
    x = torch.randn(0, 3, 8)
    assert recops.inplace_rope_(x, cos, sin) is x
    cos, sin = angles((5, 4), torch.float32, "cpu")
    x = torch.randn(5, 0, 8, requires_grad=True)
    recops.inplace_rope_(x.clone(), cos, sin).sum().backward()
    assert x.grad.shape == x.shape
