"""causal_conv1d through PyTorch: the torch formula (F.conv1d with groups=D and left padding, one
sequence at a time) in fp64 with autograd, forward and every gradient; opcheck; gradcheck; the
stateful continuity rule; bad input. Collected by `pytest src/ops` (scripts/test_all.sh)."""

import pytest
import torch
import torch.nn.functional as F

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def formula(x, w, bias=None, init=None, final=False, act="none", seq_idx=None, offsets=None,
            residual=None, layout="DW", state_len=0):
    """y, final_state from torch ops; x [B, D, T]."""
    if layout == "WD":
        w = w.t()
    D, W = w.shape
    S = state_len or W - 1
    B, _, T = x.shape
    if offsets is not None:
        segs = [(0, int(offsets[n]), int(offsets[n + 1]), n) for n in range(len(offsets) - 1)]
    elif seq_idx is not None:  # runs of equal seq_idx, no states
        segs = []
        for b in range(B):
            s = 0
            for t in range(1, T + 1):
                if t == T or seq_idx[b, t] != seq_idx[b, s]:
                    segs.append((b, s, t, None))
                    s = t
    else:
        segs = [(b, 0, T, b) for b in range(B)]
    ys, finals = {}, []
    for b, s, e, n in segs:
        head = init[n].to(x.dtype) if init is not None else x.new_zeros(D, S)
        cat = torch.cat([head, x[b, :, s:e]], dim=1)
        if final:
            finals.append(cat[:, cat.shape[1] - S:])
        if e == s:
            continue
        z = F.conv1d(cat[None, :, S - (W - 1):], w[:, None, :], bias, groups=D)[0]
        ys[(b, s)] = F.silu(z) if act in ("silu", "swish") else z
    rows = []
    for b in range(B):
        parts = [ys[k] for k in sorted(ys) if k[0] == b]
        rows.append(torch.cat(parts, dim=1) if parts else x.new_zeros(D, 0))
    y = torch.stack(rows) if rows else x.new_zeros(0, D, T)
    if residual is not None:
        y = y + residual
    fs = torch.stack(finals) if final and finals else (x.new_zeros(0, D, S) if final else None)
    return y, fs


CONFIGS = {
    "plain": dict(),
    "silu_bias_w3": dict(W=3, act="silu", bias=True),
    "wd_channel_last_residual": dict(layout="WD", cl=True, residual=True, bias=True),
    "states": dict(init=True, final=True, act="swish", bias=True),
    "states_fp32_s_w": dict(init=True, final=True, init_fp32=True, state_len=4),
    "w1_states": dict(W=1, init=True, final=True),
    "w8_short": dict(W=8, T=5, init=True, final=True, act="silu"),
    "seq_idx": dict(seq_idx=5, act="silu", bias=True, cl=True),
    "varlen": dict(offsets=[0, 13, 13, 15, 40], init=True, final=True, bias=True, residual=True),
    "varlen_s_w_short": dict(offsets=[0, 2, 3, 9], init=True, final=True, state_len=4),
}


def make(cfg, device, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    W = cfg.get("W", 4)
    D = 6
    offsets = cfg.get("offsets")
    B, T = (1, offsets[-1]) if offsets else (2, cfg.get("T", 23))
    S = cfg.get("state_len", 0) or W - 1
    N = len(offsets) - 1 if offsets else B

    def rnd(*s, dt=dtype):
        return torch.randn(*s, generator=g, dtype=torch.float64).to(dt).to(device)

    x = rnd(B, T, D).transpose(1, 2) if cfg.get("cl") else rnd(B, D, T)
    w = rnd(W, D) if cfg.get("layout") == "WD" else rnd(D, W)
    kw = dict(activation=cfg.get("act", "none"), weight_layout=cfg.get("layout", "DW"),
              state_len=cfg.get("state_len", 0), output_final_state=cfg.get("final", False))
    kw["bias"] = rnd(D) if cfg.get("bias") else None
    sdt = torch.float32 if cfg.get("init_fp32") and dtype != torch.float64 else dtype
    kw["initial_state"] = rnd(N, D, S, dt=sdt) if cfg.get("init") else None
    kw["residual"] = rnd(B, D, T) if cfg.get("residual") else None
    kw["seq_offsets"] = torch.tensor(offsets, device=device) if offsets else None
    k = cfg.get("seq_idx")
    kw["seq_idx"] = (torch.arange(T, device=device, dtype=torch.int32) // k).repeat(B, 1) if k else None
    return x, w, kw


def call_formula(x, w, kw):
    return formula(x, w, kw["bias"], kw["initial_state"], kw["output_final_state"],
                   kw["activation"], kw["seq_idx"], kw["seq_offsets"], kw["residual"],
                   kw["weight_layout"], kw["state_len"])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(CONFIGS))
def test_matches_formula_fwd_bwd(device, name):
    x, w, kw = make(CONFIGS[name], device)
    leaves = [t for t in (x, w, kw["bias"], kw["initial_state"], kw["residual"]) if t is not None]
    for t in leaves:
        t.requires_grad_(True)
    y, fs = recops.causal_conv1d(x, w, **kw)
    y_ref, fs_ref = call_formula(x, w, kw)
    torch.testing.assert_close(y, y_ref)
    if kw["output_final_state"]:
        torch.testing.assert_close(fs, fs_ref)
    else:
        assert fs.shape == (0,)
    gy = torch.randn_like(y)
    loss = (y * gy).sum()
    loss_ref = (y_ref * gy).sum()
    if kw["output_final_state"]:
        gf = torch.randn_like(fs)
        loss = loss + (fs * gf).sum()
        loss_ref = loss_ref + (fs_ref * gf).sum()
    got = torch.autograd.grad(loss, leaves)
    want = torch.autograd.grad(loss_ref, leaves)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_low_precision_forward(device, dtype):
    x, w, kw = make(CONFIGS["states"], device, dtype)
    y, fs = recops.causal_conv1d(x, w, **kw)
    up = {k: (v.double() if torch.is_tensor(v) and v.is_floating_point() else v)
          for k, v in kw.items()}
    y_ref, fs_ref = call_formula(x.double(), w.double(), up)
    tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}[dtype]
    torch.testing.assert_close(y.double(), y_ref, atol=tol, rtol=tol)
    torch.testing.assert_close(fs.double(), fs_ref, atol=0, rtol=0)


def test_prefix_then_suffix_equals_full():
    x, w, kw = make(CONFIGS["states"], "cpu")
    full, fs_full = recops.causal_conv1d(x, w, **kw)
    y1, s1 = recops.causal_conv1d(x[:, :, :9], w, **kw)
    kw2 = dict(kw, initial_state=s1)
    y2, s2 = recops.causal_conv1d(x[:, :, 9:], w, **kw2)
    torch.testing.assert_close(torch.cat([y1, y2], 2), full)
    torch.testing.assert_close(s2, fs_full)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x, w, kw = make(CONFIGS["varlen"], device, torch.float32)
    for t in (x, w, kw["bias"], kw["initial_state"]):
        t.requires_grad_(True)
    args = (x, w, kw["bias"], kw["initial_state"], True, 1, None, kw["seq_offsets"],
            kw["residual"], 0, 0)
    torch.library.opcheck(torch.ops.recops.causal_conv1d.default, args)
    y, fs = torch.ops.recops.causal_conv1d(*args)
    bargs = (torch.randn_like(y), torch.randn_like(fs), x.detach(), w.detach(),
             kw["bias"].detach(), kw["initial_state"].detach(), True, 1, None,
             kw["seq_offsets"], kw["residual"], 0, 0, True, True, True)
    torch.library.opcheck(torch.ops.recops.causal_conv1d_bwd.default, bargs)


@pytest.mark.parametrize("name", ["states", "seq_idx", "varlen_s_w_short",
                                  "wd_channel_last_residual"])
def test_gradcheck(name):
    x, w, kw = make(CONFIGS[name], "cpu", seed=3)
    names = [k for k in ("bias", "initial_state", "residual") if kw[k] is not None]
    leaves = [x.detach().clone(), w] + [kw[k] for k in names]
    for t in leaves:
        t.requires_grad_(True)

    def f(x_, w_, *rest):
        y, fs = recops.causal_conv1d(x_, w_, **dict(kw, **dict(zip(names, rest))))
        return (y, fs) if kw["output_final_state"] else y

    assert torch.autograd.gradcheck(f, tuple(leaves))


def _bad(msg, **over):
    x, w, kw = make(CONFIGS["plain"], "cpu", torch.float32)
    kw.update(over.pop("kw", {}))
    x = over.pop("x", x)
    w = over.pop("w", w)
    with pytest.raises((RuntimeError, ValueError), match=msg):
        recops.causal_conv1d(x, w, **kw)


def test_bad_input():
    _bad("the kernel width W=0 must be in 1..8", w=torch.zeros(6, 0))
    _bad("the kernel width W=9 must be in 1..8", w=torch.zeros(6, 9))
    _bad("weight must be contiguous fp32\\[D, W\\] with D=6", w=torch.zeros(5, 4))
    seq_idx = torch.zeros(2, 23, dtype=torch.int32)
    _bad("initial_state and output_final_state are not allowed with seq_idx",
         kw=dict(seq_idx=seq_idx, output_final_state=True))
    _bad("initial_state and output_final_state are not allowed with seq_idx",
         kw=dict(seq_idx=seq_idx, initial_state=torch.zeros(2, 6, 3)))
    _bad("initial_state \\[N, D, S\\] must be contiguous fp32\\[2, 6, 3\\]",
         kw=dict(initial_state=torch.zeros(2, 6, 4)))
    _bad("state_len=2 must be 0", kw=dict(state_len=2))
    _bad("packed input \\(seq_offsets\\) requires B=1",
         kw=dict(seq_offsets=torch.tensor([0, 23])))
    _bad("seq_idx and seq_offsets describe varlen two ways",
         kw=dict(seq_idx=seq_idx, seq_offsets=torch.tensor([0, 23])))
    _bad("x must be \\[B, D, T\\] of fp64, fp32, fp16 or bf16",
         x=torch.zeros(2, 6, 23, dtype=torch.int32))
    _bad("weight must be contiguous fp32", w=torch.zeros(6, 4, dtype=torch.float64))
    _bad("initial_state must be of x's dtype",
         kw=dict(initial_state=torch.zeros(2, 6, 3, dtype=torch.float64)))
    _bad("activation", kw=dict(activation="relu"))
    _bad("seq_idx must be contiguous int32 or int64 \\[B, T\\]", kw=dict(seq_idx=seq_idx.float()))
    _bad("seq_idx must be contiguous int32 or int64 \\[B, T\\]", kw=dict(seq_idx=seq_idx[:, :5]))
    _bad("seq_offsets", kw=dict(seq_offsets=torch.tensor([0.0, 23.0])))
    _bad("bias must be contiguous fp32\\[6\\]", kw=dict(bias=torch.zeros(5)))
    _bad("residual must be fp32\\[2, 6, 23\\]", kw=dict(residual=torch.zeros(2, 6, 22)))
    x1 = torch.zeros(1, 6, 5)
    with pytest.raises(RuntimeError, match="seq_offsets"):
        recops.causal_conv1d(x1, torch.zeros(6, 4), seq_offsets=torch.tensor([0, 3, 2]))


def test_empty():
    y, fs = recops.causal_conv1d(torch.zeros(2, 3, 0), torch.ones(3, 4), output_final_state=True)
    assert y.shape == (2, 3, 0) and fs.shape == (2, 3, 3) and not fs.any()


def test_residual_is_not_saved():
    """§3.7 Saves: x, weight, bias, initial_state, seq_idx/seq_offsets; the residual's gradient
    is dy, so changing the residual in place after the forward does not break the backward."""
    x, w, kw = make(CONFIGS["wd_channel_last_residual"], "cpu")
    r = kw["residual"].clone().requires_grad_(True)
    res = r * 1.0  # a non-leaf we may modify in place
    y, _ = recops.causal_conv1d(x, w, **dict(kw, residual=res))
    res.add_(1.0)
    gy = torch.randn_like(y)
    y.backward(gy)
    torch.testing.assert_close(r.grad, gy)


def test_btd_wrapper_matches_transposed_call():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 11, 6, generator=g, dtype=torch.float64)  # [B, T, D]
    w = torch.randn(4, 6, generator=g, dtype=torch.float64)  # [W, D]
    r = torch.randn(2, 11, 6, generator=g, dtype=torch.float64)
    init = torch.randn(2, 6, 4, generator=g, dtype=torch.float64)
    y, fs = recops.causal_conv1d_btd(x, w, initial_state=init, output_final_state=True,
                                     activation="silu", residual=r, weight_layout="WD",
                                     state_len=4)
    y_ref, fs_ref = formula(x.transpose(1, 2), w, init=init, final=True, act="silu",
                            residual=r.transpose(1, 2), layout="WD", state_len=4)
    torch.testing.assert_close(y, y_ref.transpose(1, 2))
    torch.testing.assert_close(fs, fs_ref)
