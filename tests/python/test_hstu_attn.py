# hstu_attn through the binding: against a plain PyTorch composition (padded, materialised scores,
# the spec §3 mask built here row by row), gradcheck in float64 for each mask family, opcheck,
# Meta shapes, errors. CPU (the CUDA implementations: test_hstu_attn_cuda.py).
import math

import pytest
import torch
import torch._dynamo.testing

import recops

CPU = "cpu"


def spec_mask(Lq, Lk, C=0, T=0, G=1, window=(-1, 0)):
    """The valid mask of one sequence, spec §3 rules 1 and 3-5, written independently."""
    off, h = Lk - Lq, Lk - T
    m = torch.zeros(Lq, Lk, dtype=torch.bool)
    for i in range(Lq):
        r = i + off
        for c in range(Lk):
            if C > 0 and r < C:
                m[i, c] = c < h
                continue
            ok = not (window[1] >= 0 and c > r + window[1])
            ok = ok and not (window[0] >= 0 and c < r - window[0])
            if T > 0 and r >= h and c >= h and c < h + ((r - h) // G) * G:
                ok = False
            m[i, c] = ok
    return m


def plain(q, k, v, oq, ok, Sq, Sk, C=None, T=None, G=1, window=(-1, 0), rab=None, alpha=None,
          silu_scale=None, custom=None):
    """Padded per-sequence composition in q's dtype: S = α(QKᵀ + rab), P = M ⊙ SiLU(S), O = s P V."""
    d = q.size(-1)
    alpha = 1.0 / math.sqrt(d) if alpha is None else alpha
    s = 1.0 / Sq if silu_scale is None else silu_scale
    Hq, Hk = q.size(1), k.size(1)
    out = torch.zeros(q.size(0), Hq, v.size(-1), dtype=q.dtype)
    for b in range(oq.numel() - 1):
        q0, q1, k0, k1 = int(oq[b]), int(oq[b + 1]), int(ok[b]), int(ok[b + 1])
        Lq, Lk = q1 - q0, k1 - k0
        if custom is None:
            m = spec_mask(Lq, Lk, int(C[b]) if C is not None else 0,
                          int(T[b]) if T is not None else 0, G, window)
        for h in range(Hq):
            kh = h // (Hq // Hk)
            sc = q[q0:q1, h] @ k[k0:k1, kh].T
            if rab is not None:
                sc = sc + rab[b, 0 if rab.size(1) == 1 else h, :Lq, :Lk]
            mm = m if custom is None else custom[b, 0 if custom.size(1) == 1 else h, :Lq, :Lk]
            p = torch.nn.functional.silu(alpha * sc) * mm
            out[q0:q1, h] = s * (p @ v[k0:k1, kh])
    return out


def problem(dtype=torch.float64, lengths=(5, 0, 9), Hq=2, Hk=1, d=8, dv=8, delta=0, seed=0,
            requires_grad=False):
    g = torch.Generator().manual_seed(seed)
    lk = [x + delta for x in lengths]
    oq = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0).tolist()))
    ok = torch.tensor([0] + list(torch.tensor(lk).cumsum(0).tolist()))
    mk = lambda *s: (torch.rand(*s, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)  # noqa
    q, k, v = mk(int(oq[-1]), Hq, d), mk(int(ok[-1]), Hk, d), mk(int(ok[-1]), Hk, dv)
    for t in (q, k, v):
        t.requires_grad_(requires_grad)
    return q, k, v, oq, ok, max(lengths), max(lk)


FAMILIES = {
    "causal": {},
    "contexts_targets": {"C": [2, 0, 3], "T": [2, 0, 4], "G": 2},
    "window": {"window": (3, 1)},
    "anti_causal": {"window": (0, -1), "mask_type": "anti_causal"},
    "none": {"window": (-1, -1), "mask_type": "none"},
}


def call(q, k, v, oq, ok, Sq, Sk, fam, rab=None, custom=None):
    C = torch.tensor(fam["C"]) if "C" in fam else None
    T = torch.tensor(fam["T"]) if "T" in fam else None
    mt = fam.get("mask_type", "causal")
    window = fam.get("window", (-1, 0)) if mt == "causal" else (-1, 0)
    if custom is not None:
        mt = "custom"
    return recops.hstu_attn(q, k, v, oq, ok, Sq, Sk, num_contexts=C, num_targets=T,
                            target_group_size=fam.get("G", 1), window=window, mask_type=mt,
                            mask=custom, rab=rab)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matches_plain_pytorch(family, dtype):
    fam = FAMILIES[family]
    q, k, v, oq, ok, Sq, Sk = problem(dtype, Hq=4, Hk=2, dv=6, delta=2, seed=1)
    rab = torch.randn(3, 1, Sq, Sk, dtype=dtype)
    out = call(q, k, v, oq, ok, Sq, Sk, fam, rab=rab)
    ref = plain(q, k, v, oq, ok, Sq, Sk, torch.tensor(fam["C"]) if "C" in fam else None,
                torch.tensor(fam["T"]) if "T" in fam else None, fam.get("G", 1),
                fam.get("window", (-1, 0)), rab=rab)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(out, ref, atol=tol, rtol=tol)


def test_custom_mask_and_dense_layout():
    q, k, v, oq, ok, Sq, Sk = problem(torch.float64, lengths=(6, 6), seed=2)
    custom = torch.rand(2, 1, Sq, Sk) > 0.4
    out = call(q, k, v, oq, ok, Sq, Sk, {}, custom=custom)
    torch.testing.assert_close(out, plain(q, k, v, oq, ok, Sq, Sk, custom=custom))
    dense = recops.hstu_attn(q.view(2, 6, 2, 8), k.view(2, 6, 1, 8), v.view(2, 6, 1, 8),
                             mask_type="custom", mask=custom)
    torch.testing.assert_close(dense.reshape(12, 2, 8), out)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_gradcheck(family):
    fam = FAMILIES[family]
    q, k, v, oq, ok, Sq, Sk = problem(torch.float64, lengths=(4, 0, 6), Hq=2, Hk=1, d=4, dv=3,
                                      delta=1, seed=3, requires_grad=True)
    rab = torch.randn(3, 1, Sq, Sk, dtype=torch.float64, requires_grad=True)
    fn = lambda q, k, v, rab: call(q, k, v, oq, ok, Sq, Sk, fam, rab=rab)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (q, k, v, rab))


def test_gradcheck_custom_mask_rab_per_head():
    q, k, v, oq, ok, Sq, Sk = problem(torch.float64, lengths=(5, 3), d=4, seed=4,
                                      requires_grad=True)
    rab = torch.randn(2, 2, Sq, Sk, dtype=torch.float64, requires_grad=True)
    custom = torch.rand(2, 2, Sq, Sk) > 0.3
    fn = lambda q, k, v, rab: call(q, k, v, oq, ok, Sq, Sk, {}, rab=rab, custom=custom)  # noqa
    assert torch.autograd.gradcheck(fn, (q, k, v, rab))


def samples():
    q, k, v, oq, ok, Sq, Sk = problem(torch.float32, Hq=2, Hk=1, delta=1, seed=5,
                                      requires_grad=True)
    rab = torch.randn(3, 2, Sq, Sk, requires_grad=True)
    C, T = torch.tensor([1, 0, 2]), torch.tensor([2, 0, 3])
    base = (q, k, v, oq, ok, Sq, Sk)
    yield base
    yield base + (C, T, 2, -1, 0, 0, None, None, rab, 0.5, 0.1)
    yield base + (None, None, 1, 3, 0)


@pytest.mark.parametrize("i", range(3))
def test_opcheck(i):
    args = list(samples())[i]
    torch.library.opcheck(torch.ops.recops.hstu_attn_fwd, args)


@pytest.mark.parametrize("i", range(3))
def test_opcheck_bwd(i):
    args = list(samples())[i]
    out = torch.ops.recops.hstu_attn_fwd(*args)
    dout = torch.randn_like(out)
    want_drab = len(args) > 15 and args[15] is not None  # rab given
    torch.library.opcheck(torch.ops.recops.hstu_attn_bwd, [dout] + list(args),
                          {"want_drab": want_drab})


@pytest.mark.parametrize("i", range(3))
def test_opcheck_mask(i):
    args = [a.detach() if isinstance(a, torch.Tensor) else a for a in list(samples())[i]]
    torch.library.opcheck(torch.ops.recops.hstu_mask, args, {"seq": 2, "head": 1})


def test_compile_dynamic_token_counts_do_not_recompile():
    """Symbolic token counts flow through the Meta kernels (no specialisation): three batches with
    different totals and the same max length compile once."""
    torch._dynamo.reset()
    counter = torch._dynamo.testing.CompileCounter()
    S = 9

    @torch.compile(fullgraph=True, dynamic=True, backend=counter)
    def f(q, k, v, off):
        return recops.hstu_attn(q, k, v, off, off, S, S).sum(-1)

    for lengths in ((5, 0, 9), (9, 2, 3, 7), (1, 8)):
        q, k, v, oq, ok, _, _ = problem(torch.float32, lengths=lengths, seed=len(lengths))
        want = recops.hstu_attn(q, k, v, oq, ok, S, S).sum(-1)
        torch.testing.assert_close(f(q, k, v, oq), want)
    assert counter.frame_count == 1


def test_meta_shapes():
    q = torch.empty(11, 4, 16, device="meta")
    k = torch.empty(13, 2, 16, device="meta")
    v = torch.empty(13, 2, 24, device="meta")
    oq = torch.empty(4, dtype=torch.long, device="meta")
    out = torch.ops.recops.hstu_attn_fwd(q, k, v, oq, oq, 8, 9)
    assert out.shape == (11, 4, 24) and out.device.type == "meta"


def test_errors_name_the_rule():
    q, k, v, oq, ok, Sq, Sk = problem(torch.float32)
    with pytest.raises(RuntimeError, match="target_group_size=-1"):
        recops.hstu_attn(q, k, v, oq, ok, Sq, Sk, num_targets=torch.tensor([1, 0, 1]),
                         target_group_size=-1)
    with pytest.raises(RuntimeError, match="not a multiple of Hk"):
        recops.hstu_attn(q[:, :1].expand(-1, 3, -1).contiguous(), k.expand(-1, 2, -1).contiguous(),
                         v.expand(-1, 2, -1).contiguous(), oq, ok, Sq, Sk)
    with pytest.raises(RuntimeError, match="nfunc must be odd"):
        recops.hstu_attn(q, k, v, oq, ok, Sq, Sk,
                         func=torch.zeros(1, 2, q.size(0), dtype=torch.int32))


class _HstuLayer(torch.nn.Module):
    """A small HSTU layer: projections, the op (contexts/targets mask, rab), a norm."""

    def __init__(self, D=16, H=2, d=8):
        super().__init__()
        self.H, self.d = H, d
        self.uvqk = torch.nn.Linear(D, 4 * H * d)
        self.out = torch.nn.Linear(H * d, D)
        self.norm = torch.nn.LayerNorm(H * d)

    def forward(self, x, offsets, S, C, T, rab):
        u, v, q, k = torch.nn.functional.silu(self.uvqk(x)).split(self.H * self.d, dim=-1)
        shape = (x.size(0), self.H, self.d)
        a = recops.hstu_attn(q.reshape(shape), k.reshape(shape), v.reshape(shape), offsets,
                             offsets, S, S, num_contexts=C, num_targets=T, target_group_size=2,
                             rab=rab)
        return x + self.out(self.norm(a.reshape(x.size(0), -1)) * u)


def test_compile_hstu_layer_trains():
    torch.manual_seed(0)
    lengths = [7, 0, 12, 5]
    offsets = torch.tensor([0, 7, 7, 19, 24])
    S = max(lengths)
    C, T = torch.tensor([1, 0, 2, 0]), torch.tensor([2, 0, 4, 1])
    x = torch.randn(24, 16)
    rab0 = torch.randn(4, 1, S, S) * 0.1
    eager, comp = _HstuLayer(), _HstuLayer()
    comp.load_state_dict(eager.state_dict())
    rab_e, rab_c = rab0.clone().requires_grad_(True), rab0.clone().requires_grad_(True)
    torch._dynamo.reset()
    step = torch.compile(comp, fullgraph=True, backend="aot_eager")
    opt_e = torch.optim.SGD(list(eager.parameters()) + [rab_e], lr=0.1)
    opt_c = torch.optim.SGD(list(comp.parameters()) + [rab_c], lr=0.1)
    for _ in range(3):
        for model, opt, rab in ((eager, opt_e, rab_e), (step, opt_c, rab_c)):
            opt.zero_grad()
            loss = model(x, offsets, S, C, T, rab).pow(2).mean()
            loss.backward()
            opt.step()
        torch.testing.assert_close(rab_c, rab_e, rtol=1e-5, atol=1e-6)
    for pe, pc in zip(eager.parameters(), comp.parameters()):
        torch.testing.assert_close(pc, pe, rtol=1e-5, atol=1e-6)


def test_hstu_mask_worked_example():
    rows = ["111110000", "111110000", "111000000", "111100000", "111110000",
            "111111000", "111111100", "111110010", "111110011"]
    want = torch.tensor([[ch == "1" for ch in r] for r in rows])
    got = recops.hstu_mask(9, num_contexts=2, num_targets=4, target_group_size=2)
    assert torch.equal(got, want)
    assert torch.equal(recops.hstu_mask(9, num_contexts=2, num_targets=4, target_group_size=2),
                       spec_mask(9, 9, 2, 4, 2))
    assert torch.equal(recops.hstu_mask(5, 8, window=(2, 0)), spec_mask(5, 8, window=(2, 0)))
    assert torch.equal(recops.hstu_mask(4, mask_type="none"), torch.ones(4, 4, dtype=torch.bool))


def test_compat_nvidia_varlen_func():
    from recops.compat import hstu_attn_varlen_func

    q, k, v, oq, ok, Sq, Sk = problem(torch.float64, Hq=2, Hk=2, delta=1, seed=6,
                                      requires_grad=True)
    C, T = torch.tensor([1, 0, 2]), torch.tensor([2, 0, 3])
    rab = torch.randn(3, 2, Sq, Sk, dtype=torch.float64, requires_grad=True)
    got = hstu_attn_varlen_func(q, k, v, oq, ok, Sq, Sk, C, T, 2, (-1, 0), 0.5, rab, True)
    want = recops.hstu_attn(q, k, v, oq, ok, Sq, Sk, num_contexts=C, num_targets=T,
                            target_group_size=2, rab=rab, alpha=0.5, silu_scale=1.0 / Sq)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    got.sum().backward()
    assert rab.grad is not None
    # NVIDIA's defaults: no mask, alpha 1, output / max_seqlen_q.
    full = hstu_attn_varlen_func(q, k, v, oq, ok, Sq, Sk)
    torch.testing.assert_close(full, plain(q, k, v, oq, ok, Sq, Sk, window=(-1, -1), alpha=1.0))


def meta_mask(L, T, contextual_seq_len, causal=True):
    """Meta's rule on collapsed ids (generative-recommenders' PyTorch reference), one sequence."""
    ids = torch.arange(L)
    max_id = L - T
    if contextual_seq_len > 0:
        ids = torch.clamp(ids - contextual_seq_len + 1, min=0)
        max_id = max_id - contextual_seq_len + 1
    if T > 0:
        ids = torch.clamp(ids, max=max_id)
    dist = ids[:, None] - ids[None, :]
    valid = torch.eye(L, dtype=torch.bool) | ((dist > 0) if causal else (dist != 0))
    if contextual_seq_len > 0:
        valid = valid | ((ids[:, None] == 0) & (ids[None, :] < max_id))
    return valid


def test_compat_meta_hstu_mha():
    from recops.compat import hstu_mha

    q, k, v, oq, ok, Sq, Sk = problem(torch.float64, lengths=(9, 0, 12, 3), Hq=2, Hk=2, seed=7)
    T = torch.tensor([4, 0, 3, 1])
    got = hstu_mha(Sq, 0.4, q, k, v, oq, num_targets=T, contextual_seq_len=2)
    want = torch.zeros_like(got)
    for b in range(4):
        s0, s1 = int(oq[b]), int(oq[b + 1])
        L = s1 - s0
        if L == 0:
            continue
        m = meta_mask(L, int(T[b]), min(2, L))
        for h in range(2):
            p = torch.nn.functional.silu(0.4 * q[s0:s1, h] @ k[s0:s1, h].T) * m
            want[s0:s1, h] = p @ v[s0:s1, h] / Sq
    torch.testing.assert_close(got, want)
    with pytest.raises(ValueError, match="contextual_seq_len"):
        hstu_mha(Sq, 0.4, q, k, v, oq, causal=False, contextual_seq_len=2)
    with pytest.raises(ValueError, match="window_mode"):
        hstu_mha(Sq, 0.4, q, k, v, oq, window_mode="plain")


def meta_mask_windowed(L, T, C, causal, W, F):
    """Meta's rule with its sliding window, written densely: ids, distances, the full-row rule."""
    pos = torch.arange(L)
    ids = torch.clamp(pos - C + 1, min=0) if C > 0 else pos.clone()
    max_id = L - C + 1 if C > 0 else L
    if T is not None:
        max_id = max_id - T
        ids = torch.clamp(ids, max=max_id)
    dist = ids[:, None] - ids[None, :]
    if not causal:
        dist = dist.abs()
    valid = torch.eye(L, dtype=torch.bool) | (dist > 0)
    if W > 0:
        near = dist <= W
        if F > 0:
            near = near | (ids[:, None] >= max_id - F)
        valid = valid & near
    if C > 0:
        valid = valid | ((ids[:, None] == 0) & (ids[None, :] < max_id))
    return valid


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("C,targets", [(0, False), (0, True), (2, False), (3, True)])
@pytest.mark.parametrize("W,F", [(0, 0), (1, 0), (3, 0), (2, 3)])
@pytest.mark.parametrize("mode", ["auto", "collapsed"])
def test_compat_meta_collapsed_window(causal, C, targets, W, F, mode):
    from recops.compat import hstu_mha

    if not causal and C > 0:
        pytest.skip("Meta rejects contexts without causal (tested above)")
    lengths = (9, 0, 13, 3, 1, 7)
    q, k, v, oq, _, Sq, _ = problem(torch.float64, lengths=lengths, Hq=2, Hk=2, seed=11)
    T = torch.tensor([4, 0, 3, 2, 0, 1]) if targets else None
    if mode == "auto" and W == 0 and causal:
        # The built-in path equals Meta's rule for sequences with n >= C + T only.
        keep = [i for i, n in enumerate(lengths) if n >= C + (int(T[i]) if targets else 0)]
        lengths = tuple(lengths[i] for i in keep)
        q, k, v, oq, _, Sq, _ = problem(torch.float64, lengths=lengths, Hq=2, Hk=2, seed=11)
        T = T[keep] if targets else None
    got = hstu_mha(Sq, 0.3, q, k, v, oq, causal=causal, num_targets=T, max_attn_len=W,
                   contextual_seq_len=C, min_full_attn_seq_len=F, window_mode=mode)
    want = torch.zeros_like(got)
    for b in range(len(lengths)):
        s0, s1 = int(oq[b]), int(oq[b + 1])
        if s1 == s0:
            continue
        m = meta_mask_windowed(s1 - s0, int(T[b]) if targets else None, C, causal, W, F)
        for h in range(2):
            p = torch.nn.functional.silu(0.3 * q[s0:s1, h] @ k[s0:s1, h].T) * m
            want[s0:s1, h] = p @ v[s0:s1, h] / Sq
    torch.testing.assert_close(got, want)


def test_compat_meta_attn_scale_and_compile():
    from recops.compat import hstu_mha

    q, k, v, oq, _, Sq, _ = problem(torch.float32, lengths=(6, 4, 0, 8), Hq=2, Hk=2, seed=3)
    T = torch.tensor([2, 1, 0, 3])
    scale = torch.rand(q.shape[0])
    got = hstu_mha(Sq, 0.5, q, k, v, oq, num_targets=T, max_attn_len=2, attn_scale=scale)
    base = hstu_mha(Sq, 0.5, q, k, v, oq, num_targets=T, max_attn_len=2)
    torch.testing.assert_close(got, base * Sq * scale.view(-1, 1, 1), rtol=1e-5, atol=1e-6)
    fn = torch.compile(
        lambda q, k, v, oq, T: hstu_mha(Sq, 0.5, q, k, v, oq, num_targets=T, max_attn_len=2),
        fullgraph=True,
    )
    torch.testing.assert_close(fn(q, k, v, oq, T), base)


def test_compat_meta_positional_orders():
    """generative-recommenders' order (attn_scale eleventh) and the older one without it (tzrec's
    copy), positionally, give what the keywords give."""
    from recops.compat import hstu_mha

    q, k, v, oq, _, Sq, _ = problem(torch.float64, lengths=(7, 3, 0, 9), Hq=2, Hk=2, seed=9)
    T = torch.tensor([2, 1, 0, 3])
    scale = torch.rand(q.shape[0], dtype=torch.float64)
    want = hstu_mha(Sq, 0.5, q, k, v, oq, causal=True, num_targets=T, attn_scale=scale,
                    max_attn_len=3, contextual_seq_len=1, min_full_attn_seq_len=2)
    got = hstu_mha(Sq, 0.5, q, k, v, oq, True, 0.0, True, T, scale, 3, 1, 2, False, "TRITON",
                   False)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    want = hstu_mha(Sq, 0.5, q, k, v, oq, num_targets=T, max_attn_len=3, contextual_seq_len=1,
                    min_full_attn_seq_len=2)
    got = hstu_mha(Sq, 0.5, q, k, v, oq, True, 0.0, True, T, 3, 1, 2, False, "TRITON", False)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    got = hstu_mha(Sq, 0.5, q, k, v, oq, True, 0.0, True, T, None, 3, 1, 2)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    with pytest.raises(TypeError, match="got multiple values for argument 'num_targets'"):
        hstu_mha(Sq, 0.5, q, k, v, oq, True, 0.0, True, T, num_targets=T)
    with pytest.raises(TypeError, match="missing required argument 'seq_offsets'"):
        hstu_mha(Sq, 0.5, q, k, v)
    with pytest.raises(TypeError, match="takes at most 17 positional arguments, got 18"):
        hstu_mha(Sq, 0.5, q, k, v, oq, True, 0.0, True, T, scale, 3, 1, 2, False, "TRITON", False,
                 None)
    # a kernel option of a newer release is accepted and ignored
    got = hstu_mha(Sq, 0.5, q, k, v, oq, num_targets=T, max_attn_len=3, contextual_seq_len=1,
                   min_full_attn_seq_len=2, num_warps=4)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_compat_nvidia_cu_seqlens_t():
    from recops.compat import hstu_attn_varlen_func

    q, k, v, oq, ok, Sq, Sk = problem(torch.float64, lengths=(6, 0, 9), Hq=2, Hk=2, seed=5)
    T = torch.tensor([2, 0, 3])
    cu_t = torch.cat([torch.zeros(1, dtype=T.dtype), T.cumsum(0)])
    want = hstu_attn_varlen_func(q, k, v, oq, ok, Sq, Sk, num_targets=T, window_size=(-1, 0))
    got = hstu_attn_varlen_func(q, k, v, oq, ok, Sq, Sk, window_size=(-1, 0), cu_seqlens_t=cu_t)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    with pytest.raises(ValueError, match="not both"):
        hstu_attn_varlen_func(q, k, v, oq, ok, Sq, Sk, num_targets=T, cu_seqlens_t=cu_t)
    with pytest.raises(ValueError, match="cu_seqlens_t must be"):
        hstu_attn_varlen_func(q, k, v, oq, ok, Sq, Sk, cu_seqlens_t=cu_t[:-1])
