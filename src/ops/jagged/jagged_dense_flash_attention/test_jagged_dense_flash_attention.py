"""jagged_dense_flash_attention through PyTorch: the padded torch formula in fp64, the unfused
composition of recops ops (jagged_ops.md §2.9's oracle), opcheck, gradcheck, the SLL drop-in and the
errors. Collected by `pytest src/ops`."""

import pytest
import torch

import recops
from recops.compat import sll

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
ops = torch.ops.recops


def make(lengths, D, T, max_L, S=None, dtype=torch.float32, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    B = len(lengths)
    S = max_L if S is None else S
    offsets = torch.tensor([0] + lengths, dtype=torch.int64).cumsum(0)
    total = int(offsets[-1])
    q = torch.randn(total, D, generator=g) * 0.5
    k = torch.randn(B, D, T, generator=g) * 0.5
    v = torch.randn(total, D, generator=g)
    bias = torch.randn(B, S, T, generator=g)
    return [t.to(dtype=dtype, device=device) for t in (q, k, v, bias)] + [offsets.to(device)]


def formula(q, k, v, bias, offsets, max_L):
    """The padded torch formula in fp64: out [B, T, D]; rows l >= n_b masked out."""
    B, D, T = k.shape
    out = torch.zeros(B, T, D, dtype=torch.float64, device=q.device)
    for b in range(B):
        s0, e = int(offsets[b]), int(offsets[b + 1])
        n = min(e - s0, max_L)
        if n == 0:
            continue
        qb, vb = q[s0:s0 + n].double(), v[s0:s0 + n].double()
        s = qb @ k[b].double() + bias[b, :n].double()  # [n, T]
        p = torch.softmax(s, dim=0)
        out[b] = p.t() @ vb
    return out


def unfused(q, k, v, bias, offsets, max_L):
    """jagged_dense_bmm -> jagged_dense_elementwise_add -> jagged_softmax -> jagged_jagged_bmm."""
    s = ops.jagged_dense_bmm(q, offsets, k, max_L)
    s = ops.jagged_dense_elementwise_add(s, offsets, bias)
    p = ops.jagged_softmax(s, offsets, max_L)
    return ops.jagged_jagged_bmm(p, v, offsets, max_L)  # [B, T, D]


CASES = [
    ([3, 0, 17, 1], 8, 5, 20, None),    # an empty sequence
    ([30, 5, 12], 16, 7, 10, None),     # L_b > max_L (truncation)
    ([4, 9], 12, 3, 9, 15),              # S > max_L
    ([6, 2, 7], 48, 1, 8, None),         # T = 1
    ([6, 2, 7], 96, 33, 8, None),        # T = 33
    ([5, 11], 200, 4, 11, None),         # D = 200
    ([3, 4], 8, 0, 4, None),             # T = 0
    ([], 8, 3, 4, None),                 # B = 0
    ([0, 0], 8, 3, 4, None),             # all empty
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", CASES)
def test_matches_formula_and_unfused(device, case):
    lengths, D, T, max_L, S = case
    q, k, v, bias, off = make(lengths, D, T, max_L, S, device=device)
    out = recops.jagged_dense_flash_attention(q, k, v, bias, off, max_L)
    want = formula(q, k, v, bias, off, max_L)
    torch.testing.assert_close(out.double(), want, rtol=2e-5, atol=2e-5)
    torch.testing.assert_close(out, unfused(q, k, v, bias, off, max_L), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_dtypes(device, dtype):
    q, k, v, bias, off = make([13, 0, 40, 7], 32, 9, 33, dtype=dtype, device=device, seed=3)
    out = recops.jagged_dense_flash_attention(q, k, v, bias, off, 33)
    assert out.dtype == dtype
    tol = 1e-2 if dtype == torch.float16 else 4e-2
    torch.testing.assert_close(out.double(), formula(q, k, v, bias, off, 33), rtol=tol, atol=tol)


def test_fwd_lse():
    q, k, v, bias, off = make([3, 0, 17], 8, 5, 10, seed=1)
    out, lse = ops.jagged_dense_flash_attention_fwd(q, k, v, bias, off, 10)
    assert lse.dtype == torch.float32 and lse.shape == (3, 5)
    assert torch.isneginf(lse[1]).all() and (out[1] == 0).all()
    s = q[:3].double() @ k[0].double() + bias[0, :3].double()
    torch.testing.assert_close(lse[0].double(), torch.logsumexp(s, 0), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(out, recops.jagged_dense_flash_attention(q, k, v, bias, off, 10))


def test_bias_neg_1e4_is_finite():
    q, k, v, bias, off = make([5, 9, 2], 16, 4, 9, seed=2)
    bias[:, :, :2] = -1e4
    out = recops.jagged_dense_flash_attention(q, k, v, bias, off, 9)
    assert torch.isfinite(out).all()
    # fp32 scores near -1e4 keep ~1e-3 absolute precision (the formula's are fp64)
    torch.testing.assert_close(out.double(), formula(q, k, v, bias, off, 9), rtol=3e-3, atol=3e-3)


def test_bf16_large_scores():
    q, k, v, bias, off = make([20, 33, 8], 32, 6, 40, dtype=torch.bfloat16, seed=4)
    q, k = q * 4, k * 4  # |s| ~ 50
    out = recops.jagged_dense_flash_attention(q, k, v, bias, off, 40)
    torch.testing.assert_close(out.double(), formula(q, k, v, bias, off, 40), rtol=4e-2, atol=4e-2)


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    q, k, v, bias, off = make([3, 0, 5, 2], 4, 3, 4, S=6, dtype=torch.float64, device=device)
    args = [t.requires_grad_() for t in (q, k, v, bias)]
    assert torch.autograd.gradcheck(
        lambda a, b, c, d: recops.jagged_dense_flash_attention(a, b, c, d, off, 4), args)


def test_grads_match_formula():
    q, k, v, bias, off = make([7, 0, 12, 3], 8, 5, 9, S=11, seed=5)
    a = [t.clone().requires_grad_() for t in (q, k, v, bias)]
    b = [t.double().clone().requires_grad_() for t in (q, k, v, bias)]
    g = torch.randn(4, 5, 8)
    recops.jagged_dense_flash_attention(*a, off, 9).backward(g)
    formula(*b, off, 9).backward(g.double())
    for x, y in zip(a, b):
        torch.testing.assert_close(x.grad.double(), y.grad, rtol=1e-4, atol=1e-5)
    assert (a[0].grad[16:19] == 0).all() and (a[2].grad[16:19] == 0).all()  # truncated rows
    assert (a[3].grad[:, 9:] == 0).all() and (a[1].grad[1] == 0).all()


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    q, k, v, bias, off = make([3, 0, 5], 8, 4, 5, S=7, device=device)
    args = [t.requires_grad_() for t in (q, k, v, bias)]
    torch.library.opcheck(ops.jagged_dense_flash_attention.default, (*args, off, 5))
    det = [t.detach() for t in args]
    torch.library.opcheck(ops.jagged_dense_flash_attention_fwd.default, (*det, off, 5))
    out, lse = ops.jagged_dense_flash_attention_fwd(*det, off, 5)
    torch.library.opcheck(ops.jagged_dense_flash_attention_bwd.default,
                          (torch.randn_like(out), *det, off, out, lse, 5))


def test_noncontiguous_inputs():
    q, k, v, bias, off = make([6, 4, 9], 10, 7, 9, S=12, seed=6)
    qs = torch.cat([q, q], 1)[:, :10]  # row stride 2D
    kt = k.transpose(1, 2).contiguous().transpose(1, 2)
    bs = torch.cat([bias, bias], 2)[:, :, 7:]
    torch.testing.assert_close(recops.jagged_dense_flash_attention(qs, kt, v, bs, off, 9),
                               recops.jagged_dense_flash_attention(q, k, v, bias, off, 9))


def test_sll_drop_in():
    q, k, v, bias, off = make([3, 12, 0, 8], 16, 5, 10, seed=7)
    a = [t.clone().requires_grad_() for t in (q, k, v, bias)]
    got = sll.sll_jagged_dense_flash_attention(*a, off, 10, allow_tf32=False)
    torch.testing.assert_close(got, recops.jagged_dense_flash_attention(q, k, v, bias, off, 10))
    got.sum().backward()
    assert all(t.grad is not None for t in a)


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda a: a.update(bias=a["bias"][:, :4]), "attn_bias.size\\(1\\)=4 must be >= max_seq_len=5"),
        (lambda a: a.update(k=a["k"][:1]), "k must be \\[B, D, T\\] with B=2"),
        (lambda a: a.update(v=a["v"][:, :3]), "v must be \\[total_L, D\\] like q"),
        (lambda a: a.update(k=a["k"].double()), "k must have q's dtype fp32"),
        (lambda a: a.update(q=a["q"].int(), k=a["k"].int(), v=a["v"].int(), bias=a["bias"].int()),
         "q must be fp64, fp32, fp16 or bf16"),
        (lambda a: a.update(max_L=-1), "max_seq_len=-1 must be >= 0"),
        (lambda a: a.update(off=torch.tensor([0, 5, 3])), "non-decreasing"),
    ],
)
def test_bad_input_messages(mutate, match):
    q, k, v, bias, off = make([3, 4], 8, 3, 5)
    a = dict(q=q, k=k, v=v, bias=bias, off=off, max_L=5)
    mutate(a)
    with pytest.raises(RuntimeError, match="jagged_dense_flash_attention: .*" + match):
        recops.jagged_dense_flash_attention(a["q"], a["k"], a["v"], a["bias"], a["off"], a["max_L"])


def test_compile_dynamic():
    """torch.compile(fullgraph=True, dynamic=True): one graph over varying B, total_L, T and max_L
    (the Meta hook's SymInt sizes); forward and backward equal to eager."""
    import contextlib

    import torch._dynamo

    def model(q, k, v, bias, off, max_L):
        return recops.jagged_dense_flash_attention(q, k, v, bias, off, max_L) * 2.0

    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend="aot_eager")
    for i, (lengths, T, max_L) in enumerate([([5, 0, 9, 3], 3, 6), ([2, 11, 7, 1, 4, 8], 5, 9),
                                             ([13, 3, 6], 5, 12)]):
        q, k, v, bias, off = make(lengths, 8, T, max_L, seed=i)
        a = [t.clone().requires_grad_() for t in (q, k, v, bias)]
        b = [t.clone().requires_grad_() for t in (q, k, v, bias)]
        ctx = torch._dynamo.config.patch(error_on_recompile=True) if i > 0 else contextlib.nullcontext()
        with ctx:
            got = compiled(*a, off, max_L)
        want = model(*b, off, max_L)
        torch.testing.assert_close(got, want)
        g = torch.randn_like(want)
        got.backward(g)
        want.backward(g)
        for x, y in zip(a, b):
            torch.testing.assert_close(x.grad, y.grad)
