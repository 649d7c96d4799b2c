# hstu_attn on CUDA tensors (cuda_sm90, cuda_sm80_fa, cuda_sm80): forward and autograd against the CPU op on
# the same inputs, every mask family, rab with drab (per head and head-broadcast), GQA and dv != d,
# torch.compile(fullgraph=True), and a captured CUDA graph. Skipped without a GPU.
import pytest
import torch

import recops
from recops.testing import assert_accurate

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

FAMILIES = {
    "causal": {},
    "contexts_targets": {"num_contexts": [2, 0, 3, 1], "num_targets": [2, 0, 4, 3],
                         "target_group_size": 2},
    "window": {"window": (3, 1)},
    "anti_causal": {"mask_type": "anti_causal"},
    "none": {"mask_type": "none"},
}


def make(dtype, lengths=(37, 0, 70, 5), Hq=4, Hk=2, d=32, dv=48, seed=0):
    g = torch.Generator().manual_seed(seed)
    off = torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist())
    n = int(off[-1])
    mk = lambda *s: (torch.rand(*s, generator=g) * 2 - 1).to(dtype)  # noqa: E731
    return mk(n, Hq, d), mk(n, Hk, d), mk(n, Hk, dv), off, max(lengths)


def kwargs_on(fam, device):
    kw = dict(fam)
    for name in ("num_contexts", "num_targets"):
        if name in kw:
            kw[name] = torch.tensor(kw[name], device=device)
    if "mask" in kw:
        kw["mask"] = kw["mask"].to(device)
    return kw


def run(q, k, v, off, S, fam, device, rab=None, dout_dtype=None):
    q, k, v = (t.detach().to(device).requires_grad_(True) for t in (q, k, v))
    r = None if rab is None else rab.detach().to(device).requires_grad_(True)
    o = off.to(device)
    out = recops.hstu_attn(q, k, v, o, o, S, S, rab=r, **kwargs_on(fam, device))
    g = torch.Generator().manual_seed(7)
    # dout rounded to dout_dtype (default out's): the fp64 golden gets the same values.
    dout = (torch.rand(out.shape, generator=g) * 2 - 1).to(dout_dtype or out.dtype)
    dout = dout.to(out.dtype).to(device)
    out.backward(dout)
    grads = [q.grad, k.grad, v.grad] + ([r.grad] if r is not None else [])
    return [out.detach().cpu()] + [x.cpu() for x in grads]


def judge_cuda(q, k, v, off, S, fam, rab=None):
    """The CUDA run (forward and gradients) by the accuracy standard's double rule
    (docs/spec/accuracy.md): the CPU op in fp64 on the same values is the golden, the CPU op at
    the inputs' precision the plain baseline; err(cuda) <= 2·err(plain) + T/8."""
    got = run(q, k, v, off, S, fam, "cuda", rab=rab)
    gold = run(q.double(), k.double(), v.double(), off, S, fam, "cpu",
               rab=None if rab is None else rab.double(), dout_dtype=q.dtype)
    plain = run(q, k, v, off, S, fam, "cpu", rab=rab)
    for name, a, g, p in zip(["out", "dq", "dk", "dv", "drab"], got, gold, plain):
        assert_accurate(a, g, q.dtype, plain=p, name=name)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_cuda_matches_cpu(family, dtype):
    q, k, v, off, S = make(dtype)
    judge_cuda(q, k, v, off, S, FAMILIES[family])


@pytest.mark.parametrize("heads", [1, 4])
def test_cuda_rab_drab(heads):
    q, k, v, off, S = make(torch.float32)
    g = torch.Generator().manual_seed(3)
    rab = torch.rand(4, heads, S, S, generator=g) - 0.5
    fam = FAMILIES["contexts_targets"]
    judge_cuda(q, k, v, off, S, fam, rab=rab)


@pytest.mark.parametrize("heads", [1, 4])
def test_cuda_rab_drab_bf16(heads):
    # Per-head rab: cuda_sm80_fa's backward writes drab; a broadcast rab's drab is cuda_sm80's.
    q, k, v, off, S = make(torch.bfloat16)
    g = torch.Generator().manual_seed(3)
    rab = (torch.rand(4, heads, S, S, generator=g) - 0.5).to(torch.bfloat16)
    fam = FAMILIES["contexts_targets"]
    judge_cuda(q, k, v, off, S, fam, rab=rab)


@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("heads", [1, 4])
def test_cuda_rab_drab_hopper_heads(d, heads):
    # d = dv in {64, 128, 256}: cuda_sm90's forward adds rab (H100/H200), the backward is
    # cuda_sm80_fa's (per-head drab) or cuda_sm80's (broadcast); several 128-key tiles, a tail.
    q, k, v, off, S = make(torch.bfloat16, lengths=(300, 0, 129, 5), Hq=4, Hk=2, d=d, dv=d)
    g = torch.Generator().manual_seed(4)
    rab = (torch.rand(4, heads, S, S, generator=g) - 0.5).to(torch.bfloat16)
    judge_cuda(q, k, v, off, S, FAMILIES["contexts_targets"], rab=rab)


@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("mask_heads,with_rab", [(1, False), (4, True)])
def test_cuda_custom_mask_hopper(d, mask_heads, with_rab):
    # A custom bool mask on cuda_sm90's forward (H100/H200; the backward is cuda_sm80's), per head
    # or broadcast, with and without rab; several 128-key tiles, a tail, an empty sequence.
    q, k, v, off, S = make(torch.bfloat16, lengths=(300, 0, 129, 5), Hq=4, Hk=2, d=d, dv=d)
    g = torch.Generator().manual_seed(6)
    fam = {"mask_type": "custom", "mask": torch.rand(4, mask_heads, S, S, generator=g) < 0.6}
    rab = (torch.rand(4, 4, S, S, generator=g) - 0.5).to(torch.bfloat16) if with_rab else None
    judge_cuda(q, k, v, off, S, fam, rab=rab)


def test_cuda_custom_mask_in_dtype():
    # A mask in q's dtype keeps its nonzero elements (NaN and negative values too, -0.0 not):
    # the same output, bit for bit, as the bool mask of those elements; also transposed.
    q, k, v, off, S = make(torch.bfloat16, lengths=(300, 0, 129, 5), Hq=4, Hk=2, d=128, dv=128)
    g = torch.Generator().manual_seed(8)
    keep = torch.rand(4, 4, S, S, generator=g) < 0.6
    vals = torch.rand(4, 4, S, S, generator=g) * 4 - 2
    vals[..., ::7] = float("nan")
    m = torch.where(keep, vals, torch.full_like(vals, -0.0)).to(torch.bfloat16)
    m = torch.where(keep & (m == 0), torch.ones_like(m), m)  # a kept element is never 0
    o, qc, kc, vc = off.cuda(), q.cuda(), k.cuda(), v.cuda()
    ref = recops.hstu_attn(qc, kc, vc, o, o, S, S, mask_type="custom", mask=keep.cuda())
    for mask in (m.cuda(), m.cuda().transpose(-1, -2).contiguous().transpose(-1, -2)):
        got = recops.hstu_attn(qc, kc, vc, o, o, S, S, mask_type="custom", mask=mask)
        assert torch.equal(got, ref)


@pytest.mark.parametrize("layout", ["transposed", "odd_row_stride"])
def test_cuda_rab_strided(layout):
    # rab read through its strides: a transposed view (column stride S) and a row stride of S + 1
    # (odd: no aligned column pairs) give the same output, bit for bit, as the contiguous rab.
    q, k, v, off, S = make(torch.bfloat16, lengths=(300, 0, 129, 5), Hq=4, Hk=2, d=128, dv=128)
    g = torch.Generator().manual_seed(5)
    wide = (torch.rand(4, 4, S, S + 1, generator=g) - 0.5).to(torch.bfloat16).cuda()
    if layout == "transposed":
        rab = wide[..., :S].contiguous().transpose(-1, -2).contiguous().transpose(-1, -2)
        assert rab.stride(-1) == S
    else:
        rab = wide[..., :S]
        assert rab.stride(-2) == S + 1
    o = off.cuda()
    kw = kwargs_on(FAMILIES["contexts_targets"], "cuda")
    qc, kc, vc = q.cuda(), k.cuda(), v.cuda()
    got = recops.hstu_attn(qc, kc, vc, o, o, S, S, rab=rab, **kw)
    ref = recops.hstu_attn(qc, kc, vc, o, o, S, S, rab=rab.contiguous(), **kw)
    assert torch.equal(got, ref)


@pytest.mark.parametrize("d,dv", [(64, 64), (128, 128), (128, 40)])
def test_cuda_multi_tile_heads(d, dv):
    # Several 64-row / 64-key tiles, GQA and the head sizes of cuda_sm80_fa (bf16).
    q, k, v, off, S = make(torch.bfloat16, lengths=(300, 0, 129, 64), Hq=4, Hk=2, d=d, dv=dv)
    fam = {"num_targets": [20, 0, 7, 64], "num_contexts": [5, 0, 0, 3]}
    judge_cuda(q, k, v, off, S, fam)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_cuda_d128_families(family, dtype):
    # d = dv = 128: the forward and backward of cuda_sm90 on an H100/H200 (cuda_sm80_fa
    # elsewhere), several 128-row query tiles and 128-key tiles, tails and an empty sequence.
    q, k, v, off, S = make(dtype, lengths=(300, 0, 129, 5), Hq=4, Hk=2, d=128, dv=128)
    judge_cuda(q, k, v, off, S, FAMILIES[family])


@pytest.mark.parametrize("d", [32, 128])  # 128: cuda_sm90's backward on an H100/H200
def test_cuda_deterministic_backward(d):
    q, k, v, off, S = make(torch.bfloat16, lengths=(300, 129), d=d, dv=d)
    a = run(q, k, v, off, S, FAMILIES["contexts_targets"] | {"num_contexts": [3, 1],
                                                              "num_targets": [20, 7]}, "cuda")
    b = run(q, k, v, off, S, FAMILIES["contexts_targets"] | {"num_contexts": [3, 1],
                                                              "num_targets": [20, 7]}, "cuda")
    for x, y in zip(a, b):
        assert torch.equal(x, y)


@pytest.mark.parametrize("d", [32, 128])
def test_cuda_compile_fullgraph(d):
    q, k, v, off, S = make(torch.bfloat16, d=d, dv=48 if d == 32 else d)
    q, k, v = (t.cuda().requires_grad_(True) for t in (q, k, v))
    o = off.cuda()
    T = torch.tensor([2, 0, 4, 3], device="cuda")

    def layer(q, k, v):
        return recops.hstu_attn(q, k, v, o, o, S, S, num_targets=T).float().square().sum()

    eager = layer(q, k, v)
    eager.backward()
    g_eager = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    compiled = torch.compile(layer, fullgraph=True)
    loss = compiled(q, k, v)
    loss.backward()
    assert torch.allclose(loss, eager, rtol=1e-3)
    for a, b in zip([t.grad for t in (q, k, v)], g_eager):
        assert torch.equal(a, b)


@pytest.mark.parametrize("d", [32, 128])
def test_cuda_graph_capture(d):
    q, k, v, off, S = make(torch.bfloat16, d=d, dv=48 if d == 32 else d)
    q, k, v, o = q.cuda(), k.cuda(), v.cuda(), off.cuda()
    T = torch.tensor([2, 0, 4, 3], device="cuda")
    f = lambda: recops.hstu_attn(q, k, v, o, o, S, S, num_targets=T)  # noqa: E731
    f()  # warm-up outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = f()
    q.copy_(torch.rand_like(q) - 0.5)  # new inputs in the captured buffers
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, f())
