"""recops.compat.fla against torch formulas (fp64, autograd) on random data."""

import pytest
import torch
import torch.nn.functional as F

from recops.compat import fla


def _close(a, b, tol=2e-5):
    torch.testing.assert_close(a.double(), b.double(), rtol=tol, atol=tol)


def _check_grads(fn, ref, inputs, seed=0):
    """fn(*inputs) against ref(*fp64 copies), forward and backward."""
    y = fn(*inputs)
    dbl = [t.detach().double().requires_grad_() if t is not None else None for t in inputs]
    want = ref(*dbl)
    _close(y, want)
    dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(seed))
    live = [i for i, t in enumerate(inputs) if t is not None and t.requires_grad]
    got = torch.autograd.grad(y, [inputs[i] for i in live], dy)
    ref_g = torch.autograd.grad(want, [dbl[i] for i in live], dy.double())
    for a, b in zip(got, ref_g):
        _close(a, b)


def _rand(*shape, seed=0, grad=True):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).requires_grad_(grad)


def test_l2norm():
    x = _rand(4, 9, 33)
    _check_grads(lambda x: fla.l2norm(x, 1e-6),
                 lambda x: x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + 1e-6), [x])
    assert fla.l2_norm is fla.l2norm
    assert fla.L2Norm(output_dtype=torch.float64)(x.detach()).dtype == torch.float64


def _rms(x, w, eps):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y * w if w is not None else y


@pytest.mark.parametrize("with_bias", [False, True])
def test_rms_norm(with_bias):
    x, w = _rand(5, 40), _rand(40, seed=1)
    b = _rand(40, seed=2) if with_bias else None
    _check_grads(lambda x, w, b: fla.rms_norm(x, w, b, eps=1e-5),
                 lambda x, w, b: _rms(x, w, 1e-5) + (b if b is not None else 0), [x, w, b])


def test_rms_norm_residual_prenorm():
    x, r, w = _rand(3, 16), _rand(3, 16, seed=1), _rand(16, seed=2)
    y, res = fla.rms_norm(x, w, None, residual=r, prenorm=True, eps=1e-5)
    _close(res, x + r)
    _close(y, _rms(x.double() + r.double(), w.double(), 1e-5))
    m = fla.RMSNorm(16, eps=1e-5)
    _close(m(x), _rms(x.double(), None, 1e-5))
    y32, res32 = m(x.half(), residual_in_fp32=True, prenorm=True)
    assert y32.dtype == torch.float16 and res32.dtype == torch.float32


def _gated(x, g, w, b, eps, act):
    y = _rms(x, w, eps) + (b if b is not None else 0)
    return y * (F.silu(g) if act in ("swish", "silu") else torch.sigmoid(g))


@pytest.mark.parametrize("act", ["swish", "silu", "sigmoid"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_rms_norm_gated(act, with_bias):
    x, g, w = _rand(6, 2, 32), _rand(6, 2, 32, seed=1), _rand(32, seed=2)
    b = _rand(32, seed=3) if with_bias else None
    _check_grads(lambda x, g, w, b: fla.rms_norm_gated(x, g, w, b, act, eps=1e-6),
                 lambda x, g, w, b: _gated(x, g, w, b, 1e-6, act), [x, g, w, b])


def test_fused_rms_norm_gated_module():
    m = fla.FusedRMSNormGated(32, eps=1e-5, activation="sigmoid")
    x, g = _rand(3, 32, grad=False), _rand(3, 32, seed=1, grad=False)
    _close(m(x, g), _gated(x.double(), g.double(), None, None, 1e-5, "sigmoid"))
    assert m.bias is None and torch.equal(m.weight, torch.ones(32))
    with pytest.raises(ValueError, match="activation"):
        fla.FusedRMSNormGated(32, activation="relu")


@pytest.mark.parametrize("norm_before_gate", [True, False])
def test_rmsnorm_fn_groups(norm_before_gate):
    x, z, w = _rand(4, 24), _rand(4, 24, seed=1), _rand(24, seed=2)

    def ref(x, z, w):
        u = x if norm_before_gate else x * F.silu(z)
        ug = u.view(4, 3, 8)
        n = (ug * torch.rsqrt(ug.pow(2).mean(-1, keepdim=True) + 1e-6)).view(4, 24) * w
        return n * F.silu(z) if norm_before_gate else n

    _check_grads(lambda x, z, w: fla.rmsnorm_fn(x, w, None, z=z, group_size=8,
                                               norm_before_gate=norm_before_gate), ref, [x, z, w])
    m = fla.RMSNormGated(24, eps=1e-6, group_size=8, norm_before_gate=norm_before_gate)
    _close(m(x.detach(), z.detach()), ref(x.double(), z.double(), torch.ones(24).double()))


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_fused_linear_cross_entropy(reduction):
    g = torch.Generator().manual_seed(6)
    x = torch.randn(2, 11, 8, generator=g, dtype=torch.float64, requires_grad=True)
    w = (torch.randn(13, 8, generator=g, dtype=torch.float64) / 3).requires_grad_()
    t = torch.randint(0, 13, (2, 11), generator=g)
    t[0, :3] = -100
    loss = fla.FusedLinearCrossEntropyLoss(label_smoothing=0.1, logit_softcapping=3.0,
                                           reduction=reduction)(x, t, w)
    z = 3.0 * torch.tanh(F.linear(x, w) / 3.0)
    want = F.cross_entropy(z.reshape(-1, 13), t.reshape(-1), label_smoothing=0.1,
                           reduction=reduction)
    torch.testing.assert_close(loss, want)
    for a, b in zip(torch.autograd.grad(loss, (x, w)), torch.autograd.grad(want, (x, w))):
        torch.testing.assert_close(a, b)
    with pytest.raises(NotImplementedError, match="logit_scale"):
        fla.FusedLinearCrossEntropyLoss(logit_scale=2.0)


@pytest.mark.parametrize("name,op", [("group_norm", "group_norm")])
def test_not_served(name, op):
    with pytest.raises(NotImplementedError, match=op):
        getattr(fla, name)()


# ---- layer_norm and causal_conv1d ----------------------------------------------------------------


@pytest.mark.parametrize("with_bias", [False, True])
def test_layer_norm(with_bias):
    x, w = _rand(5, 24, seed=1), _rand(24, seed=2)
    b = _rand(24, seed=3) if with_bias else None
    _check_grads(lambda x, w, b: fla.layer_norm(x, w, b, eps=1e-6),
                 lambda x, w, b: F.layer_norm(x, (24,), w, b, eps=1e-6), [x, w, b])


def test_layer_norm_module_residual_prenorm():
    m = fla.LayerNorm(16, bias=True, eps=1e-6)
    with torch.no_grad():
        m.weight.copy_(_rand(16, seed=4, grad=False))
        m.bias.copy_(_rand(16, seed=5, grad=False))
    x, r = _rand(3, 16, seed=6, grad=False), _rand(3, 16, seed=7, grad=False)
    y, res = m(x, residual=r, prenorm=True)
    _close(res, x + r)
    _close(y, F.layer_norm((x + r).double(), (16,), m.weight.double(), m.bias.double(), 1e-6))


def _conv_ref(x, w, b, residual, h0, act):
    """Plain torch, x [B, T, D], w [D, W], h0 [B, D, W] or None: (y [B, T, D], final [B, D, W])."""
    B, T, D = x.shape
    W = w.shape[-1]
    init = h0 if h0 is not None else x.new_zeros(B, D, W)
    full = torch.cat([init, x.transpose(1, 2)], dim=-1)  # [B, D, W + T]
    y = F.conv1d(full, w.unsqueeze(1), b, groups=D)[..., 1:]  # output t sees full[t+1 .. t+W]
    if act in ("silu", "swish"):
        y = F.silu(y)
    y = y.transpose(1, 2)
    if residual is not None:
        y = y + residual
    return y, full[..., -W:]


@pytest.mark.parametrize("act", [None, "silu"])
@pytest.mark.parametrize("with_state", [False, True])
def test_causal_conv1d(act, with_state):
    B, T, D, W = 2, 9, 6, 4
    x, w, b, r = _rand(B, T, D, seed=8), _rand(D, W, seed=9), _rand(D, seed=10), _rand(B, T, D, seed=11)
    h0 = _rand(B, D, W, seed=12) if with_state else None
    _check_grads(lambda x, w, b, r, h0: fla.causal_conv1d(x, w, b, r, h0, activation=act)[0],
                 lambda x, w, b, r, h0: _conv_ref(x, w, b, r, h0, act)[0], [x, w, b, r, h0])
    y, fs = fla.causal_conv1d(x, w, b, r, h0, output_final_state=True, activation=act)
    want_y, want_fs = _conv_ref(x.double(), w.double(), b.double(), r.double(),
                                None if h0 is None else h0.double(), act)
    _close(y, want_y)
    _close(fs, want_fs)
    assert fla.causal_conv1d(x, w, b, r, h0, activation=act)[1] is None


def test_causal_conv1d_varlen():
    lens = [3, 0, 5, 2]
    T, D, W = sum(lens), 5, 3
    x, w = _rand(1, T, D, seed=13, grad=False), _rand(D, W, seed=14, grad=False)
    cu = torch.tensor([0, 3, 3, 8, 10])
    y, fs = fla.causal_conv1d(x, w, cu_seqlens=cu, output_final_state=True, activation="silu")
    for n in range(len(lens)):
        s, e = int(cu[n]), int(cu[n + 1])
        want_y, want_fs = _conv_ref(x[:, s:e].double(), w.double(), None, None, None, "silu")
        _close(y[:, s:e], want_y)
        _close(fs[n], want_fs[0])
    with pytest.raises(TypeError, match="bogus"):
        fla.causal_conv1d(x, w, bogus=1)
    with pytest.raises(NotImplementedError, match="weight=None"):
        fla.causal_conv1d(x)


def test_short_convolution_prefill_then_decode():
    torch.manual_seed(0)
    D, W, T = 8, 4, 7
    m = fla.ShortConvolution(D, W, bias=True, activation="silu")
    x = torch.randn(2, T + 2, D)
    full, _ = m(x)  # the whole sequence at once
    y, cache = m(x[:, :T], output_final_state=True)
    _close(y, full[:, :T])
    for t in range(T, T + 2):  # two decoding steps roll the cache in place
        step, cache2 = m(x[:, t:t + 1], cache=cache)
        assert cache2 is cache
        _close(step, full[:, t:t + 1])


# ---- chunk_bwd_dqkwg (fla.ops.common.chunk_o) ----------------------------------------------------


def test_chunk_bwd_dqkwg_signature_and_outputs():
    """fla's argument names, order and defaults (fla-core 0.6.0's source, read with ast when the
    peer copy is present) and its return: (dq, dk, dw, dg) with None for an absent dw / dg."""
    import ast
    import inspect
    import pathlib

    src = pathlib.Path(__file__).resolve().parents[2] / ".peers/training/fla/ops/common/chunk_o.py"
    if not src.exists():
        src = pathlib.Path("/work/main/.peers/training/fla/ops/common/chunk_o.py")
    params = list(inspect.signature(fla.chunk_bwd_dqkwg).parameters.values())
    if src.exists():
        fn = next(n for n in ast.parse(src.read_text()).body
                  if isinstance(n, ast.FunctionDef) and n.name == "chunk_bwd_dqkwg")
        names = [a.arg for a in fn.args.args]
        defaults = [ast.literal_eval(d) for d in fn.args.defaults]
        assert [p.name for p in params] == names
        assert [p.default for p in params[len(names) - len(defaults):]] == defaults
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(1, 20, 1, 8, generator=g), torch.randn(1, 20, 1, 8, generator=g)
    v, do = torch.randn(1, 20, 2, 4, generator=g), torch.randn(1, 20, 2, 4, generator=g)
    h, dh = torch.randn(1, 2, 2, 8, 4, generator=g), torch.randn(1, 2, 2, 8, 4, generator=g)
    dq, dk, dw, dg = fla.chunk_bwd_dqkwg(q, k, v, do, h, dh, chunk_size=16)
    assert dq.shape == dk.shape == (1, 20, 1, 8) and dw is None and dg is None
    w, gg = torch.randn(1, 20, 2, 8, generator=g).bfloat16(), -torch.rand(1, 20, 2).cumsum(1)
    dq, dk, dw, dg = fla.chunk_bwd_dqkwg(q, k, v, do, h, dh, w=w, g=gg, dv=v, chunk_size=16)
    assert dw.dtype == torch.bfloat16 and dw.shape == w.shape
    assert dg.dtype == torch.float32 and dg.shape == gg.shape


# ---- chunk_gated_delta_rule (the composed GDN op) -------------------------------------------------


def _gdn_recurrence(q, k, v, g, beta, scale, h0, cu_seqlens, l2norm):
    """fp64 token-by-token gated delta rule (natural-log g): (o, final_state)."""
    q, k, v, g, beta = (x.double() for x in (q, k, v, g, beta))
    if l2norm:
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    q, k = q.repeat_interleave(HV // H, 2), k.repeat_interleave(HV // H, 2)
    c = cu_seqlens.tolist() if cu_seqlens is not None else None
    seqs = [(0, c[i], c[i + 1]) for i in range(len(c) - 1)] if c else [(b, 0, T) for b in range(B)]
    o = torch.zeros(B, T, HV, V, dtype=torch.float64)
    ht = torch.zeros(len(seqs), HV, K, V, dtype=torch.float64)
    for n, (b, s, e) in enumerate(seqs):
        S = h0[n].double().clone() if h0 is not None else torch.zeros(HV, K, V,
                                                                      dtype=torch.float64)
        for t in range(s, e):
            S = S * g[b, t].exp()[:, None, None]
            S = S + beta[b, t][:, None, None] * k[b, t][:, :, None] * (
                v[b, t] - torch.einsum("hkv,hk->hv", S, k[b, t]))[:, None, :]
            o[b, t] = scale * torch.einsum("hkv,hk->hv", S, q[b, t])
        ht[n] = S
    return o, ht


def test_chunk_gated_delta_rule_bwd_dhu_gk():
    """fla's gk (KDA's per-channel gate, log2 units, USE_GK) reaches the op: dS's row i decays by
    exp2(gk[L, i]) per chunk, q and k enter ungated (they are qg, kg); against a plain fp64 loop,
    with g and without, with cu_seqlens (two sequences, tail chunks of 4 and 9 rows)."""
    gen = torch.Generator().manual_seed(11)
    B, T, H, K, V, bt = 1, 45, 1, 8, 4, 16

    def rnd(*s):
        return torch.randn(*s, generator=gen, dtype=torch.float64)

    q, k, w = rnd(B, T, H, K), rnd(B, T, H, K), rnd(B, T, H, K) * 0.05
    do, dv = rnd(B, T, H, V), rnd(B, T, H, V)
    dht = rnd(2, H, K, V).float().double()  # fp32 values, as the op's dht is given
    cu = torch.tensor([0, 20, 45])
    steps = -torch.rand(B, T, H, K, generator=gen, dtype=torch.float64)
    gk = torch.zeros_like(steps)
    g = torch.zeros(B, T, H, dtype=torch.float64)
    for s in (0, 16, 20, 36):  # the chunk starts of both sequences
        e = {0: 16, 16: 20, 20: 36, 36: 45}[s]
        gk[:, s:e] = steps[:, s:e].cumsum(1)
        g[:, s:e] = steps[:, s:e, :, 0].cumsum(1) * 0.5
    for use_g in (False, True):
        dh, dh0, dv2 = fla.chunk_gated_delta_rule_bwd_dhu(
            q, k, w, do, dv, g=g if use_g else None, gk=gk, h0=torch.zeros(2, H, K, V),
            dht=dht.float(), scale=0.5, cu_seqlens=cu, chunk_size=bt)
        want_dh, want_dv2, c = [], torch.zeros_like(dv), 0
        want_dh0 = []
        for n, (s0, s1) in enumerate(((0, 20), (20, 45))):
            S = dht[n, 0].clone()
            starts = list(range(s0, s1, bt))
            seq_dh = []
            for s in reversed(starts):
                e = min(s + bt, s1)
                seq_dh.insert(0, S.clone())
                gl = g[0, e - 1, 0] if use_g else torch.zeros((), dtype=torch.float64)
                for t in range(s, e):
                    gt = g[0, t, 0] if use_g else 0.0
                    want_dv2[0, t, 0] = dv[0, t, 0] + 2 ** (gl - gt) * (k[0, t, 0] @ S)
                S = (2 ** gl) * (2 ** gk[0, e - 1, 0])[:, None] * S
                for t in range(s, e):
                    gt = g[0, t, 0] if use_g else torch.zeros((), dtype=torch.float64)
                    S = S + 0.5 * (2 ** gt) * torch.outer(q[0, t, 0], do[0, t, 0]) - torch.outer(
                        w[0, t, 0], want_dv2[0, t, 0])
            want_dh += seq_dh
            want_dh0.append(S)
            c += len(starts)
        assert dh.shape == (1, c, H, K, V)
        torch.testing.assert_close(dh[0, :, 0], torch.stack(want_dh), rtol=0, atol=1e-10)
        torch.testing.assert_close(dv2, want_dv2, rtol=0, atol=1e-10)
        torch.testing.assert_close(dh0[:, 0].double(), torch.stack(want_dh0), rtol=1e-6,
                                   atol=1e-6)


def test_chunk_gated_delta_rule_signature():
    """fla's argument names, order and defaults (fla-core 0.6.0's source, read with ast when the
    peer copy is present)."""
    import ast
    import inspect
    import pathlib

    rel = ".peers/training/fla/ops/gated_delta_rule/chunk.py"
    src = pathlib.Path(__file__).resolve().parents[2] / rel
    if not src.exists():
        src = pathlib.Path("/work/main") / rel
    if not src.exists():
        pytest.skip("fla-core 0.6.0's source is not present")
    fn = next(n for n in ast.parse(src.read_text()).body
              if isinstance(n, ast.FunctionDef) and n.name == "chunk_gated_delta_rule")
    params = list(inspect.signature(fla.chunk_gated_delta_rule).parameters.values())
    names = [a.arg for a in fn.args.args]
    defaults = [ast.literal_eval(d) for d in fn.args.defaults]
    assert [p.name for p in params[:len(names)]] == names
    assert [p.default for p in params[len(names) - len(defaults):len(names)]] == defaults
    assert params[-1].kind == inspect.Parameter.VAR_KEYWORD


@pytest.mark.parametrize("varlen", [False, True])
def test_chunk_gated_delta_rule_matches_recurrence(varlen):
    gen = torch.Generator().manual_seed(11)
    B, T, H, HV, K, V = (1, 90, 1, 2, 16, 8) if varlen else (2, 70, 2, 4, 16, 8)
    cu = torch.tensor([0, 33, 33, 90]) if varlen else None
    q, k = torch.randn(B, T, H, K, generator=gen), torch.randn(B, T, H, K, generator=gen)
    v = torch.randn(B, T, HV, V, generator=gen)
    g = F.logsigmoid(torch.rand(B, T, HV, generator=gen))
    beta = torch.rand(B, T, HV, generator=gen).sigmoid()
    N = 3 if varlen else B
    h0 = torch.randn(N, HV, K, V, generator=gen)
    o, ht = fla.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=h0, output_final_state=True,
                                       use_qk_l2norm_in_kernel=True, cu_seqlens=cu, chunk_size=32)
    want_o, want_ht = _gdn_recurrence(q, k, v, g, beta, K ** -0.5, h0, cu, True)
    torch.testing.assert_close(o.double(), want_o, rtol=0, atol=2e-5)
    torch.testing.assert_close(ht.double(), want_ht, rtol=0, atol=2e-5)
    # output_final_state=False gives None; state_v_first transposes the states in and out.
    o2, none = fla.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=h0,
                                          use_qk_l2norm_in_kernel=True, cu_seqlens=cu,
                                          chunk_size=32)
    assert none is None
    torch.testing.assert_close(o2, o, rtol=0, atol=0)
    o3, ht3 = fla.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=h0.transpose(-1, -2),
                                         output_final_state=True, use_qk_l2norm_in_kernel=True,
                                         state_v_first=True, cu_seqlens=cu, chunk_size=32)
    torch.testing.assert_close(o3, o, rtol=0, atol=0)
    torch.testing.assert_close(ht3, ht.transpose(-1, -2), rtol=0, atol=0)
    # use_beta_sigmoid_in_kernel takes the logits; use_gate_in_kernel the raw gate input.
    logits = torch.randn(B, T, HV, generator=gen)
    o4, _ = fla.chunk_gated_delta_rule(q, k, v, g, logits, use_qk_l2norm_in_kernel=True,
                                       use_beta_sigmoid_in_kernel=True, cu_seqlens=cu)
    w4, _ = _gdn_recurrence(q, k, v, g, logits.sigmoid(), K ** -0.5, None, cu, True)
    torch.testing.assert_close(o4.double(), w4, rtol=0, atol=2e-5)
    A_log, dt_bias = torch.randn(HV, generator=gen) * 0.5, torch.randn(HV, generator=gen)
    raw = torch.randn(B, T, HV, generator=gen)
    o5, _ = fla.chunk_gated_delta_rule(q, k, v, raw, beta, use_qk_l2norm_in_kernel=True,
                                       cu_seqlens=cu, use_gate_in_kernel=True, A_log=A_log,
                                       dt_bias=dt_bias)
    g5 = -A_log.exp() * F.softplus(raw + dt_bias)
    w5, _ = _gdn_recurrence(q, k, v, g5, beta, K ** -0.5, None, cu, True)
    torch.testing.assert_close(o5.double(), w5, rtol=0, atol=2e-5)


def test_chunk_gated_delta_rule_refusals():
    q, k = torch.randn(1, 10, 2, 8), torch.randn(1, 10, 2, 8)
    v, g, beta = torch.randn(1, 10, 2, 4), -torch.rand(1, 10, 2), torch.rand(1, 10, 2)
    with pytest.raises(DeprecationWarning, match="head_first has been removed"):
        fla.chunk_gated_delta_rule(q, k, v, g, beta, head_first=False)
    with pytest.raises(ValueError, match="chunk_size"):
        fla.chunk_gated_delta_rule(q, k, v, g, beta, chunk_size=128)
    with pytest.raises(TypeError, match="unexpected keyword"):
        fla.chunk_gated_delta_rule(q, k, v, g, beta, bogus=1)


# ---- chunk_kda_bwd_wy_dqkg_fused (the KDA sub-op) ------------------------------------------------


def test_chunk_kda_bwd_wy_dqkg_fused_signature_and_outputs():
    """fla's argument names, order and defaults (fla-core 0.6.0's source, read with ast when the
    peer copy is present) and its return: (dq, dk, dv, db, dg, dA), dq and dk fp32 at HV heads."""
    import ast
    import inspect
    import pathlib

    rel = ".peers/training/fla/ops/kda/chunk_bwd.py"
    src = pathlib.Path(__file__).resolve().parents[2] / rel
    if not src.exists():
        src = pathlib.Path("/work/main") / rel
    params = list(inspect.signature(fla.chunk_kda_bwd_wy_dqkg_fused).parameters.values())
    if src.exists():
        fn = next(n for n in ast.parse(src.read_text()).body
                  if isinstance(n, ast.FunctionDef) and n.name == "chunk_kda_bwd_wy_dqkg_fused")
        names = [a.arg for a in fn.args.args]
        defaults = [ast.literal_eval(d) for d in fn.args.defaults]
        assert [p.name for p in params] == names
        assert [p.default for p in params[len(names) - len(defaults):]] == defaults
    gen = torch.Generator().manual_seed(5)
    B, T, H, HV, K, V, BT = 1, 20, 1, 2, 8, 4, 16

    def r(*s):
        return torch.randn(*s, generator=gen)

    q, k = r(B, T, H, K), r(B, T, H, K)
    v, v_new, do, dv = (r(B, T, HV, V).bfloat16() for _ in range(4))
    g = -torch.rand(B, T, HV, K, generator=gen).cumsum(1) * 0.1
    beta = torch.rand(B, T, HV, generator=gen)
    A = torch.eye(BT).repeat(2, 1)[:T].reshape(1, T, 1, BT).expand(B, T, HV, BT).contiguous()
    h, dh = r(B, 2, HV, K, V).bfloat16(), r(B, 2, HV, K, V).bfloat16()
    dq, dk, dv2, db, dg, dA = fla.chunk_kda_bwd_wy_dqkg_fused(q, k, v, v_new, g, beta, A, h, do,
                                                              dh, dv, scale=0.5, chunk_size=BT)
    assert dq.shape == dk.shape == (B, T, HV, K) and dq.dtype == dk.dtype == torch.float32
    assert dv2.dtype == torch.bfloat16 and dv2.shape == v.shape
    assert db.dtype == dg.dtype == dA.dtype == torch.float32
    assert db.shape == beta.shape and dg.shape == g.shape and dA.shape == A.shape
    # Akk = I: dv' = beta * dv exactly (one rounding), dA from the strictly lower products only.
    torch.testing.assert_close(dv2.float(), (beta[..., None] * dv.float()).bfloat16().float())


# ---- chunk_gated_delta_rule_fwd_h with gk (KDA's per-channel gate) -------------------------------


def test_chunk_gated_delta_rule_fwd_h_gk():
    """fla's gk (log2-unit per-channel cumsum [B, T, HV, K]) is served: per chunk with last position
    L, v_new = u - w S and S = diag(exp2(gk_L)) S + sum_t k_t (x) v_new_t (k used as given), checked
    against that recurrence in fp64 torch, with GVA and cu_seqlens (a zero-length and a sub-chunk
    sequence)."""
    gen = torch.Generator().manual_seed(3)
    T, H, HV, K, V, BT = 45, 1, 2, 8, 4, 16
    cu = torch.tensor([0, 20, 20, 23, 45])
    k = F.normalize(torch.randn(1, T, H, K, generator=gen), dim=-1)
    w = 0.1 * torch.randn(1, T, HV, K, generator=gen)
    u = torch.randn(1, T, HV, V, generator=gen)
    h0 = torch.randn(4, HV, K, V, generator=gen)
    gk = torch.zeros(1, T, HV, K)
    c = cu.tolist()
    for n in range(4):
        for s in range(c[n], c[n + 1], BT):
            e = min(s + BT, c[n + 1])
            gk[0, s:e] = (-0.5 * torch.rand(e - s, HV, K, generator=gen)).cumsum(0)
    h, v_new, ht = fla.chunk_gated_delta_rule_fwd_h(k, w, u, gk=gk, initial_state=h0,
                                                    output_final_state=True, chunk_size=BT,
                                                    cu_seqlens=cu)
    kv = k.double().repeat_interleave(HV // H, dim=2)
    idx = 0
    for n in range(4):
        S = h0[n].double()
        for s in range(c[n], c[n + 1], BT):
            e = min(s + BT, c[n + 1])
            torch.testing.assert_close(h[0, idx].double(), S, rtol=0, atol=1e-5)
            idx += 1
            vn = u[0, s:e].double().transpose(0, 1) - w[0, s:e].double().transpose(0, 1) @ S
            torch.testing.assert_close(v_new[0, s:e].double(), vn.transpose(0, 1), rtol=0,
                                       atol=1e-5)
            S = torch.exp2(gk[0, e - 1].double())[:, :, None] * S
            S = S + kv[0, s:e].transpose(0, 1).transpose(1, 2) @ vn
        torch.testing.assert_close(ht[n].double(), S, rtol=0, atol=1e-5)
    assert h.shape[1] == idx == 5


# ---- chunk_kda_bwd_dAv (the KDA sub-op chunk_kda_bwd_dav) ----------------------------------------


def _fla_signature_matches(fn_name, rel, ours):
    """fla's argument names, order and defaults of `fn_name` (fla-core 0.6.0's source `rel`, read
    with ast when the peer copy is present) against `ours`."""
    import ast
    import inspect
    import pathlib

    src = pathlib.Path(__file__).resolve().parents[2] / rel
    if not src.exists():
        src = pathlib.Path("/work/main") / rel
    if not src.exists():
        return
    params = list(inspect.signature(ours).parameters.values())
    fn = next(n for n in ast.parse(src.read_text()).body
              if isinstance(n, ast.FunctionDef) and n.name == fn_name)
    names = [a.arg for a in fn.args.args]
    defaults = [ast.literal_eval(d) for d in fn.args.defaults]
    assert [p.name for p in params] == names
    assert [p.default for p in params[len(names) - len(defaults):]] == defaults


def test_chunk_kda_bwd_dAv_signature_and_outputs():
    _fla_signature_matches("chunk_kda_bwd_dAv", ".peers/training/fla/ops/kda/chunk_bwd.py",
                           fla.chunk_kda_bwd_dAv)
    gen = torch.Generator().manual_seed(6)
    B, T, HV, K, V, BT = 1, 20, 2, 8, 4, 16
    k = torch.randn(B, T, 1, K, generator=gen)
    v, do = (torch.randn(B, T, HV, V, generator=gen).bfloat16() for _ in range(2))
    A = torch.eye(BT).repeat(2, 1)[:T].reshape(1, T, 1, BT).expand(B, T, HV, BT).contiguous()
    dA, dv = fla.chunk_kda_bwd_dAv(k, k, v, do, A, scale=0.5, chunk_size=BT)
    assert dA.dtype == torch.float32 and dA.shape == A.shape
    assert dv.dtype == torch.bfloat16 and dv.shape == do.shape
    torch.testing.assert_close(dv, do, rtol=0, atol=0)  # A = I: dv = do
    # dA_ij = scale * do_i . v_j for j <= i in the chunk (rows 0..15 and 16..19), else 0
    want = torch.zeros(B, T, HV, BT)
    for s, e in ((0, 16), (16, 20)):
        d = 0.5 * torch.einsum("ihv,jhv->hij", do[0, s:e].float(), v[0, s:e].float()).tril()
        want[0, s:e, :, :e - s] = d.permute(1, 0, 2)
    torch.testing.assert_close(dA, want, rtol=1e-6, atol=1e-6)


# ---- chunk_kda_bwd_intra (the KDA sub-op) --------------------------------------------------------


def test_chunk_kda_bwd_intra_signature_and_outputs():
    """fla's names, order and defaults; dq, dk fp32 at the HV value heads in and out; with zero
    dAqk and dAkk the incoming gradients come back unchanged."""
    _fla_signature_matches("chunk_kda_bwd_intra", ".peers/training/fla/ops/kda/chunk_intra.py",
                           fla.chunk_kda_bwd_intra)
    gen = torch.Generator().manual_seed(7)
    B, T, H, HV, K, BT = 1, 20, 1, 2, 8, 16
    q, k = torch.randn(B, T, H, K, generator=gen), torch.randn(B, T, H, K, generator=gen)
    g = -torch.rand(B, T, HV, K, generator=gen).cumsum(1) * 0.1
    beta = torch.rand(B, T, HV, generator=gen)
    dA = torch.zeros(B, T, HV, BT)
    dq, dk = torch.randn(B, T, HV, K, generator=gen), torch.randn(B, T, HV, K, generator=gen)
    db, dg = torch.randn(B, T, HV, generator=gen), torch.randn(B, T, HV, K, generator=gen)
    out = fla.chunk_kda_bwd_intra(q, k, g, beta, dA, dA, dq, dk, db, dg, chunk_size=BT)
    for a, b in zip(out, (dq, dk, db, dg)):
        assert a.dtype == torch.float32 and a.shape == b.shape
        torch.testing.assert_close(a, b, rtol=0, atol=0)


# ---- chunk_kda (the composed KDA op) ------------------------------------------------------------
def _kda_recurrence(q, k, v, g, beta, scale, h0, cu):
    """fp64 token-by-token KDA: S = diag(exp(g_t)) S; S += beta_t k_t (v_t - S^T k_t);
    o_t = scale S^T q_t (GVA by repeat_interleave)."""
    B, T, H, K = q.shape
    HV = v.shape[2]
    q, k = q.repeat_interleave(HV // H, dim=2), k.repeat_interleave(HV // H, dim=2)
    bounds = ([(0, int(cu[i]), int(cu[i + 1])) for i in range(len(cu) - 1)] if cu is not None
              else [(b, 0, T) for b in range(B)])
    o = torch.zeros(B, T, HV, v.shape[3], dtype=torch.float64)
    hts = []
    for n, (b, s, e) in enumerate(bounds):
        S = h0[n].double().clone()
        for t in range(s, e):
            S = S * torch.exp(g[b, t].double())[:, :, None]
            r = v[b, t].double() - torch.einsum("hkv,hk->hv", S, k[b, t].double())
            S = S + beta[b, t].double()[:, None, None] * k[b, t].double()[:, :, None] * r[:, None]
            o[b, t] = scale * torch.einsum("hkv,hk->hv", S, q[b, t].double())
        hts.append(S)
    return o, torch.stack(hts)


def test_chunk_kda_dropin_matches_recurrence_and_gates():
    gen = torch.Generator().manual_seed(11)
    H, HV, K, V = 1, 2, 8, 4
    cu = torch.tensor([0, 19, 19, 50])
    T = int(cu[-1])

    def r(*s):
        return torch.randn(*s, generator=gen, dtype=torch.float64)

    q, k = F.normalize(r(1, T, H, K), dim=-1), F.normalize(r(1, T, H, K), dim=-1)
    v, h0 = r(1, T, HV, V), r(3, HV, K, V)
    graw = r(1, T, HV, K)
    A_log, dt_bias = r(HV) * 0.3, r(HV * K) * 0.3
    braw = r(1, T, HV)
    ins = [x.clone().requires_grad_(True) for x in (q, k, v, graw, braw, h0)]
    o, ht = fla.chunk_kda(*ins[:5], initial_state=ins[5], output_final_state=True,
                          use_gate_in_kernel=True, A_log=A_log, dt_bias=dt_bias,
                          use_beta_sigmoid_in_kernel=True, cu_seqlens=cu)
    ref = [x.detach().clone().requires_grad_(True) for x in ins]
    g = -A_log.exp().view(HV, 1) * F.softplus(ref[3] + dt_bias.view(HV, K))
    wo, wht = _kda_recurrence(ref[0], ref[1], ref[2], g, ref[4].sigmoid(), K ** -0.5, ref[5], cu)
    torch.testing.assert_close(o, wo, rtol=0, atol=2e-5)
    torch.testing.assert_close(ht.double(), wht, rtol=0, atol=2e-5)
    got = torch.autograd.grad(o.sum() + ht.sum(), ins)
    want = torch.autograd.grad(wo.sum() + wht.sum(), ref)
    for a, b in zip(got, want):
        torch.testing.assert_close(a.double(), b, rtol=0, atol=1e-4)
    o2, none = fla.chunk_kda(q, k, v, g.detach(), braw.sigmoid(), initial_state=h0,
                             cu_seqlens=cu, chunk_size=32)
    assert none is None
    torch.testing.assert_close(o2, wo.detach(), rtol=0, atol=2e-5)
    with pytest.raises(ValueError, match="32 or 64"):
        fla.chunk_kda(q, k, v, g.detach(), braw, chunk_size=16)
    with pytest.raises(NotImplementedError, match="return_intermediate_states"):
        fla.chunk_kda(q, k, v, g.detach(), braw, return_intermediate_states=True)
    with pytest.raises(TypeError, match="unexpected keyword"):
        fla.chunk_kda(q, k, v, g.detach(), braw, bogus=1)


def test_layer_norm_is_rms_norm_flag():
    """fla's layer_norm(..., is_rms_norm=True) is its rms_norm (one kernel with a flag there)."""
    x, w, b = _rand(3, 7, 20, seed=21), _rand(20, seed=22), _rand(20, seed=23)
    r = _rand(3, 7, 20, seed=24, grad=False)
    got = fla.layer_norm(x, w, b, r, 1e-6, True, False, is_rms_norm=True)
    want = fla.rms_norm(x, w, b, r, 1e-6, True, False)
    for a, c in zip(got, want):
        _close(a, c, 0)


def test_chunk_local_cumsum_fla_signature():
    """fla 0.6.0's argument list: use_graph in the 8th place (accepted), head_first removed."""
    g = _rand(2, 37, 3, seed=25, grad=False)
    want = fla.chunk_local_cumsum(g, 16)
    _close(fla.chunk_local_cumsum(g, 16, False, None, None, torch.float, None, True), want, 0)
    ref = torch.cat([c.double().cumsum(1) for c in g.split(16, dim=1)], dim=1)
    _close(want, ref, 1e-6)
    with pytest.raises(DeprecationWarning, match="head_first has been removed"):
        fla.chunk_local_cumsum(g, 16, head_first=False)
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['nope'\]"):
        fla.chunk_local_cumsum(g, 16, nope=1)
