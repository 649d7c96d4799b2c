"""chunk_kda_fwd_intra through PyTorch: an independent fp64 torch composition of training_ops.md
§4.5 (per chunk the masked einsum of q, k and exp(G_i - G_j), torch.linalg.solve_triangular for
Akk, matmuls for w and u, GVA by repeat_interleave, chunks restarting at each cu_seqlens start)
against the op on every dtype, GVA, varlen with zero-length and sub-chunk sequences and gate_log2;
the same composition against the fp64 golden itself (`recops record --impl reference`); opcheck;
torch.compile against eager; the forward-only refusal; bad input; the fla drop-in
(``recops.compat.fla.chunk_kda_fwd_intra``, its signature read from fla-core 0.6.0's source) and
fla-core itself when it is importable with a GPU. Collected by `pytest src/ops`."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import recops
from recops.compat import fla as fla_compat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _gdn_pytest import sequences  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "python"))
from _cli import recops_binary  # noqa: E402

# The CPU computes in fp32 (fp64 for fp64): error relative to the largest |output| (at least 1),
# plus one rounding of the output dtype.
TOL = {torch.float64: 1e-12, torch.float32: 5e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
NAMES = ("w", "u", "qg", "kg", "Aqk", "Akk")


def peer(q, k, v, g, beta, scale=None, cu_seqlens=None, chunk_size=64, gate_log2=False):
    """§4.5 in plain torch, fp64, one chunk at a time."""
    B, T, H, K = k.shape
    HV, V, BT = v.shape[2], v.shape[3], chunk_size
    scale = K ** -0.5 if scale is None else scale
    rep = HV // H if H else 1
    qd = q.double().repeat_interleave(rep, dim=2)
    kd = k.double().repeat_interleave(rep, dim=2)
    G, vd, bd = g.double(), v.double(), beta.double()
    ex = torch.exp2 if gate_log2 else torch.exp
    out = {n: torch.zeros(B, T, HV, K, dtype=torch.float64) for n in ("w", "qg", "kg")}
    out["u"] = torch.zeros(B, T, HV, V, dtype=torch.float64)
    out["Aqk"] = torch.zeros(B, T, HV, BT, dtype=torch.float64)
    out["Akk"] = torch.zeros(B, T, HV, BT, dtype=torch.float64)
    for b, bos, eos in sequences(B, T, cu_seqlens):
        for s in range(bos, eos, BT):
            e = min(s + BT, eos)
            L = e - s
            qc, kc = qd[b, s:e].transpose(0, 1), kd[b, s:e].transpose(0, 1)   # [HV, L, K]
            Gc, vc = G[b, s:e].transpose(0, 1), vd[b, s:e].transpose(0, 1)
            bc = bd[b, s:e].transpose(0, 1)                                    # [HV, L]
            gam = ex(Gc[:, :, None, :] - Gc[:, None, :, :])                    # [HV, L, L, K]
            low = torch.ones(L, L, dtype=torch.bool).tril()
            aqk = scale * torch.einsum("hid,hjd,hijd->hij", qc, kc, gam) * low
            m = bc[:, :, None] * torch.einsum("hid,hjd,hijd->hij", kc, kc, gam) * low.tril(-1)
            eye = torch.eye(L, dtype=torch.float64).expand(HV, L, L)
            akk = torch.linalg.solve_triangular(eye + m, eye, upper=False)
            w = akk @ (bc[..., None] * kc * ex(Gc))
            u = akk @ (bc[..., None] * vc)
            out["w"][b, s:e] = w.transpose(0, 1)
            out["u"][b, s:e] = u.transpose(0, 1)
            out["qg"][b, s:e] = (qc * ex(Gc)).transpose(0, 1)
            out["kg"][b, s:e] = (kc * ex(Gc[:, -1:, :] - Gc)).transpose(0, 1)
            out["Aqk"][b, s:e, :, :L] = aqk.transpose(0, 1)
            out["Akk"][b, s:e, :, :L] = akk.transpose(0, 1)
    return tuple(out[n] for n in NAMES)


def make(B, T, H, K, V=None, gva=1, dtype=torch.float32, offsets=None, chunk_size=64, seed=0,
         log2=False, gate_scale=1.0):
    """fla's test conditioning: l2-normalised q and k, beta = sigmoid(U(0,1)), G the per-channel
    chunk cumsum (recops.chunk_local_cumsum) of logsigmoid(U(0,1))·gate_scale (log2 units with
    log2)."""
    gen = torch.Generator().manual_seed(seed)
    if offsets is not None:
        T = offsets[-1]
    HV, V = H * gva, V or K
    q = F.normalize(torch.randn(B, T, H, K, generator=gen, dtype=torch.float64), dim=-1).to(dtype)
    k = F.normalize(torch.randn(B, T, H, K, generator=gen, dtype=torch.float64), dim=-1).to(dtype)
    v = torch.randn(B, T, HV, V, generator=gen, dtype=torch.float64).to(dtype)
    beta = torch.sigmoid(torch.rand(B, T, HV, generator=gen, dtype=torch.float64)).to(dtype)
    cu = torch.tensor(offsets) if offsets is not None else None
    decay = F.logsigmoid(torch.rand(B, T, HV, K, generator=gen, dtype=torch.float64)) * gate_scale
    if log2:
        decay = decay / math.log(2.0)
    g = recops.chunk_local_cumsum(decay.float(), chunk_size, seq_offsets=cu)
    return q, k, v, g, beta, cu


CONFIGS = {
    "t65_bt64": dict(B=2, T=65, H=2, K=32),
    "t63_bt32_gva2_v50": dict(B=1, T=63, H=2, K=37, V=50, gva=2, chunk_size=32),
    "t150_bt32_log2": dict(B=1, T=150, H=1, K=64, chunk_size=32, log2=True),
    "strong_decay": dict(B=1, T=128, H=2, K=16, gate_scale=10.0),
    "varlen_empty": dict(B=1, T=0, H=2, K=16, gva=2, offsets=[0, 0, 57, 59, 59, 64, 64],
                         chunk_size=32),
    "varlen_spec": dict(B=1, T=0, H=1, K=32, V=16, offsets=[0, 122, 229, 400, 1000], log2=True),
    "t1": dict(B=3, T=1, H=2, K=8),
    "t0": dict(B=2, T=0, H=2, K=8),
}


def _close(got, want, dtype, name):
    assert got.shape == want.shape, name
    scale = max(1.0, want.abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(got.double(), want, rtol=0, atol=TOL[dtype] * scale, msg=name)


def _check(got, want, dtype):
    for name, a, b in zip(NAMES, got, want):
        _close(a, b, torch.float32 if name == "Akk" else dtype, name)  # Akk: fp32 always


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_peer(name, dtype):
    cfg = dict(CONFIGS[name])
    log2, bt = cfg.get("log2", False), cfg.get("chunk_size", 64)
    q, k, v, g, beta, cu = make(dtype=dtype, **cfg)
    got = recops.chunk_kda_fwd_intra(q, k, v, g, beta, None, cu, bt, gate_log2=log2)
    assert [t.dtype for t in got] == [dtype] * 5 + [torch.float32]
    _check(got, peer(q, k, v, g, beta, None, cu, bt, log2), dtype)


def test_scale_mixed_dtypes_and_upper_part_zero():
    q, k, v, g, beta, _ = make(2, 70, 2, 24, V=8, gva=2, chunk_size=32, seed=4)
    got = recops.chunk_kda_fwd_intra(q.bfloat16(), k, v.double(), g, beta, 0.7, chunk_size=32)
    assert got[2].dtype == torch.bfloat16 and got[1].dtype == torch.float64
    want = peer(q.bfloat16(), k, v.double(), g, beta, 0.7, None, 32)
    for name, a, b in zip(NAMES, got, want):
        _close(a, b, torch.bfloat16 if name == "qg" else torch.float32, name)
    aqk, akk = got[4], got[5]
    upper = torch.ones(32, 32, dtype=torch.bool).triu(1)
    rows = aqk[0, :32].transpose(0, 1)  # [HV, 32, 32], one full chunk
    assert (rows[:, upper] == 0).all() and (akk[0, :32].transpose(0, 1)[:, upper] == 0).all()
    assert (aqk[:, 64:, :, 6:] == 0).all()  # the 6-row tail chunk's missing columns


def test_golden_against_torch_composition(tmp_path):
    """The fp64 golden (reference.cpp, forced) on cases.yaml's inputs against the composition."""
    binary = recops_binary()
    if binary is None:
        pytest.skip("no recops CLI binary (set RECOPS_BIN)")
    from safetensors.torch import load_file
    cases = ["b2_t65_h2_k64", "bt32_gva2", "gate_log2_bt32", "varlen_zero_segments",
             "varlen_57_2_5", "scale_and_raw_rows", "k1_v3"]
    cmd = [binary, "record", "--backend", "cpu", "--op", "chunk_kda_fwd_intra", "--impl",
           "reference", "--dtype", "fp64", "fp32", "--out", str(tmp_path), "-q"]
    for c in cases:
        cmd += ["--case", c]
    subprocess.run(cmd, check=True, capture_output=True)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    seen = set()
    for e in manifest["cases"]:
        inp = load_file(str(tmp_path / e["inputs"]))
        out = load_file(str(tmp_path / e["outputs"]))
        a = e["args"]
        want = peer(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], a.get("scale"),
                    inp.get("seq_offsets"), int(a["chunk_size"]), bool(a["gate_log2"]))
        dtype = torch.float64 if e["dtype"] == "fp64" else torch.float32
        for name, w in zip(NAMES, want):
            tol = 1e-12 if dtype == torch.float64 and name != "Akk" else 2e-7
            scale = max(1.0, w.abs().max().item()) if w.numel() else 1.0
            torch.testing.assert_close(out[name].double(), w, rtol=0, atol=tol * scale,
                                       msg=f"{e['case']} {e['dtype']} {name}")
        seen.add(e["case"])
    assert seen == set(cases)


def test_opcheck():
    q, k, v, g, beta, cu = make(**CONFIGS["varlen_empty"])
    torch.library.opcheck(torch.ops.recops.chunk_kda_fwd_intra.default,
                          (q, k, v, g, beta, None, cu, 32, False))
    q, k, v, g, beta, _ = make(**CONFIGS["t63_bt32_gva2_v50"], dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.recops.chunk_kda_fwd_intra.default,
                          (q, k, v, g, beta, 0.5, None, 32, True))


def test_compile_matches_eager():
    def f(q, k, v, g, beta, offsets):
        w, u, qg, kg, aqk, akk = recops.chunk_kda_fwd_intra(q, k, v, g, beta, None, offsets, 32)
        return w * 2.0 + 1.0, u.sum(-1), qg - kg, aqk + akk

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for seed, offsets in enumerate([[0, 20, 20, 53], [0, 7, 40, 41, 90]]):
        q, k, v, g, beta, cu = make(1, 0, 2, 16, V=12, gva=2, offsets=offsets, chunk_size=32,
                                    seed=seed)
        for got, want in zip(compiled(q, k, v, g, beta, cu), f(q, k, v, g, beta, cu)):
            torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_forward_only():
    q, k, v, g, beta, _ = make(1, 10, 1, 8)
    with pytest.raises(RuntimeError, match="v"):
        recops.chunk_kda_fwd_intra(q, k, v.requires_grad_(True), g, beta)
    with torch.no_grad():  # as inside fla's KDA forward
        recops.chunk_kda_fwd_intra(q, k, v, g, beta)


def test_noncontiguous_inputs_are_copied():
    q = torch.randn(1, 40, 2, 32)[..., ::2]
    k = torch.randn(1, 40, 2, 32)[..., ::2] * 0.3
    v = torch.randn(1, 40, 4, 10)[..., ::2]
    g = -torch.rand(1, 40, 4, 32)[..., ::2].cumsum(1) * 0.1
    beta = torch.rand(1, 40, 8)[..., ::2]
    got = recops.chunk_kda_fwd_intra(q, k, v, g, beta)
    for name, a, b in zip(NAMES, got, peer(q, k, v, g, beta)):
        torch.testing.assert_close(a.double(), b, rtol=0, atol=1e-4, msg=name)


def test_bad_input_names_the_argument():
    q, k, v, g, beta, _ = make(1, 10, 2, 8)
    with pytest.raises(RuntimeError, match="chunk_size=16 must be 32 or 64"):
        recops.chunk_kda_fwd_intra(q, k, v, g, beta, chunk_size=16)
    with pytest.raises(RuntimeError, match=r"g must be \[B, T, HV, K\]"):
        recops.chunk_kda_fwd_intra(q, k, v, g[..., 0], beta)
    with pytest.raises(RuntimeError, match="v's HV=3 must be a multiple of q's H=2"):
        recops.chunk_kda_fwd_intra(q, k, torch.randn(1, 10, 3, 8), torch.rand(1, 10, 3, 8),
                                   torch.rand(1, 10, 3))
    with pytest.raises(RuntimeError, match=r"packed input \(seq_offsets\) requires B=1"):
        recops.chunk_kda_fwd_intra(q.expand(2, -1, -1, -1), k.expand(2, -1, -1, -1),
                                   v.expand(2, -1, -1, -1), g.expand(2, -1, -1, -1),
                                   beta.expand(2, -1, -1), None, torch.tensor([0, 10]))
    with pytest.raises(RuntimeError, match="scale=inf must be finite"):
        recops.chunk_kda_fwd_intra(q, k, v, g, beta, float("inf"))
    with pytest.raises(RuntimeError, match="seq_offsets"):
        recops.chunk_kda_fwd_intra(q, k, v, g, beta, None, torch.tensor([0, 4, 9]))


# ---- recops.compat.fla.chunk_kda_fwd_intra and fla-core ------------------------------------------


def test_fla_dropin_signature():
    """fla's argument names, order and defaults, read with ast from fla-core 0.6.0's source when
    the peer copy is present."""
    import ast
    import inspect

    rel = ".peers/training/fla/ops/kda/chunk_intra.py"
    src = Path(__file__).resolve().parents[4] / rel
    if not src.exists():
        src = Path("/work/main") / rel
    if not src.exists():
        pytest.skip("fla-core's source is not present")
    fn = next(n for n in ast.parse(src.read_text()).body
              if isinstance(n, ast.FunctionDef) and n.name == "chunk_kda_fwd_intra")
    names = [a.arg for a in fn.args.args]
    defaults = [ast.literal_eval(d) for d in fn.args.defaults]
    params = list(inspect.signature(fla_compat.chunk_kda_fwd_intra).parameters.values())
    assert [p.name for p in params] == names
    assert [p.default for p in params[len(names) - len(defaults):]] == defaults


def test_fla_dropin_matches_peer():
    # fla's gk is the log2-unit chunk-local cumsum (its kernels apply exp2).
    q, k, v, g, beta, cu = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    got = fla_compat.chunk_kda_fwd_intra(q, k, v, g, beta, 0.25, cu, 64, None,
                                         disable_recompute=True)
    _check(got, peer(q, k, v, g, beta, 0.25, cu, 64, True), torch.bfloat16)
    q, k, v, g, beta, _ = make(2, 50, 2, 16, gva=2, chunk_size=32, log2=True)
    w, u, qg, kg, Aqk, Akk = fla_compat.chunk_kda_fwd_intra(q=q, k=k, v=v, gk=g, beta=beta,
                                                            scale=0.25, chunk_size=32)
    assert qg is None  # as fla without disable_recompute
    want = peer(q, k, v, g, beta, 0.25, None, 32, True)
    for name, a, b in zip(NAMES, (w, u, None, kg, Aqk, Akk), want):
        if a is not None:
            _close(a, b, torch.float32, name)
    with pytest.raises(ValueError, match="chunk_size 32 or 64"):
        fla_compat.chunk_kda_fwd_intra(q, k, v, g, beta, chunk_size=16)


def test_against_fla_core():
    """fla-core's Triton kernels on the GPU against recops on the CPU (fla has no CPU path)."""
    try:
        from fla.ops.kda.chunk_intra import chunk_kda_fwd_intra
    except Exception as e:  # not installed, or no Triton
        pytest.skip(f"fla-core's chunk_kda_fwd_intra is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("fla-core's chunk_kda_fwd_intra is a Triton kernel and needs a GPU")
    q, k, v, g, beta, cu = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    want = chunk_kda_fwd_intra(q.cuda(), k.cuda(), v.cuda(), g.cuda(), beta.cuda(), 0.25,
                               cu.cuda(), disable_recompute=True)
    got = recops.chunk_kda_fwd_intra(q, k, v, g, beta, 0.25, cu, gate_log2=True)
    for name, a, b in zip(NAMES, got, want):
        if name == "Aqk":  # fla leaves the blocks above the diagonal unwritten
            b = b.cpu().float() * (a != 0)
        torch.testing.assert_close(a.float(), b.cpu().float(), rtol=2e-2, atol=2e-2, msg=name)
