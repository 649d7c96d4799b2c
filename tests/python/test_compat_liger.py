"""recops.compat.liger against torch formulas on random data, and the HF Llama patch: a tiny Llama
trains 5 steps with and without recops patched in and the losses agree."""

import copy
import importlib.util
import sys

import pytest
import torch
import torch.nn.functional as F

from recops.compat import liger


def _rms_ref(x, w, eps, offset=0.0):
    xd = x.double()
    y = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps)
    return y * (offset + w.double()) if w is not None else y


def _close(a, b, tol=2e-5):
    torch.testing.assert_close(a.double(), b.double(), rtol=tol, atol=tol)


@pytest.mark.parametrize("offset", [0.0, 1.0])
@pytest.mark.parametrize("with_weight", [True, False])
def test_rms_norm(offset, with_weight):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 5, 37, generator=g, requires_grad=True)
    w = torch.randn(37, generator=g, requires_grad=True) if with_weight else None
    y = liger.liger_rms_norm(x, w, 1e-6, offset=offset)
    _close(y, _rms_ref(x, w, 1e-6, offset))
    dy = torch.randn(y.shape, generator=g)
    got = torch.autograd.grad(y, [t for t in (x, w) if t is not None], dy)
    xd = x.detach().double().requires_grad_()
    wd = w.detach().double().requires_grad_() if w is not None else None
    want = torch.autograd.grad(_rms_ref(xd, wd, 1e-6, offset),
                               [t for t in (xd, wd) if t is not None], dy.double())
    for a, b in zip(got, want):
        _close(a, b)


def test_rms_norm_module():
    m = liger.LigerRMSNorm(16, eps=1e-5)
    with torch.no_grad():
        m.weight.normal_()
    x = torch.randn(4, 16)
    _close(m(x), _rms_ref(x, m.weight, 1e-5))
    assert liger.LigerRMSNorm(8, elementwise_affine=False).weight is None
    assert torch.equal(liger.LigerRMSNorm(8, init_fn="zeros").weight, torch.zeros(8))
    with pytest.raises(ValueError, match="init_fn"):
        liger.LigerRMSNorm(8, init_fn="twos")


def _ce_ref(logits, target, ignore_index, reduction, eps, lam, softcap):
    z = logits.double()
    if softcap:
        z = softcap * torch.tanh(z / softcap)
    ce = F.cross_entropy(z, target, ignore_index=ignore_index, reduction="none",
                         label_smoothing=eps)
    keep = target != ignore_index
    zl = lam * torch.logsumexp(z, -1).pow(2) * keep
    per = ce + zl
    if reduction == "none":
        return per, zl
    if reduction == "sum":
        return per.sum(), zl.sum()
    n = keep.sum().clamp(min=1)
    return per.sum() / n, zl.sum() / n


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("eps,lam,softcap", [(0.0, 0.0, None), (0.1, 1e-3, None),
                                             (0.0, 0.0, 30.0)])
def test_cross_entropy(reduction, eps, lam, softcap):
    g = torch.Generator().manual_seed(2)
    logits = (3 * torch.randn(23, 101, generator=g)).requires_grad_()
    target = torch.randint(0, 101, (23,), generator=g)
    target[[0, 5]] = -100
    out = liger.liger_cross_entropy(logits, target, reduction=reduction, label_smoothing=eps,
                                    lse_square_scale=lam, softcap=softcap, return_z_loss=True)
    loss_ref, z_ref = _ce_ref(logits, target, -100, reduction, eps, lam, softcap)
    _close(out.loss, loss_ref)
    _close(out.z_loss, z_ref)
    dl = torch.randn(out.loss.shape, generator=g)
    got = torch.autograd.grad(out.loss, logits, dl)[0]
    ld = logits.detach().double().requires_grad_()
    want = torch.autograd.grad(_ce_ref(ld, target, -100, reduction, eps, lam, softcap)[0], ld,
                               dl.double())[0]
    _close(got, want)
    # The module form, and the plain return without return_z_loss.
    mod = liger.LigerCrossEntropyLoss(reduction=reduction, label_smoothing=eps,
                                      lse_square_scale=lam, softcap=softcap)
    _close(mod(logits, target), loss_ref)


def test_cross_entropy_matches_torch_and_rejects_class_weight():
    logits, target = torch.randn(9, 17), torch.randint(0, 17, (9,))
    _close(liger.liger_cross_entropy(logits, target), F.cross_entropy(logits, target))
    with pytest.raises(NotImplementedError, match="per-class weight"):
        liger.liger_cross_entropy(logits, target, weight=torch.ones(17))
    with pytest.raises(ValueError, match="reduction"):
        liger.LigerCrossEntropyLoss(reduction="avg")


def test_swiglu():
    g = torch.Generator().manual_seed(3)
    a = torch.randn(4, 7, 33, generator=g, requires_grad=True)
    b = torch.randn(4, 7, 33, generator=g, requires_grad=True)
    y = liger.liger_swiglu(a, b)
    ad, bd = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    want = F.silu(ad) * bd
    _close(y, want)
    dy = torch.randn(y.shape, generator=g)
    for got, ref in zip(torch.autograd.grad(y, (a, b), dy),
                        torch.autograd.grad(want, (ad, bd), dy.double())):
        _close(got, ref)
    with pytest.raises(ValueError, match="same shape"):
        liger.liger_swiglu(a, b[..., :3])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_fused_linear_cross_entropy(reduction, with_bias):
    g = torch.Generator().manual_seed(4)
    h = torch.randn(23, 9, generator=g, dtype=torch.float64, requires_grad=True)
    w = (torch.randn(17, 9, generator=g, dtype=torch.float64) / 3).requires_grad_()
    b = torch.randn(17, generator=g, dtype=torch.float64, requires_grad=True) if with_bias else None
    y = torch.randint(0, 17, (23,), generator=g)
    y[::5] = -100
    out = liger.liger_fused_linear_cross_entropy(h, w, y, b, lse_square_scale=1e-3,
                                                 label_smoothing=0.1, reduction=reduction,
                                                 softcap=4.0, return_z_loss=True)
    z = 4.0 * torch.tanh(F.linear(h, w, b) / 4.0)
    keep = y != -100
    lse = torch.logsumexp(z, -1)
    per = F.cross_entropy(z, y, reduction="none", label_smoothing=0.1) + 1e-3 * lse**2 * keep
    want = {"mean": per.sum() / keep.sum(), "sum": per.sum(), "none": per}[reduction]
    _close(out.loss, want, 1e-10)
    ins = [t for t in (h, w, b) if t is not None]
    dl = torch.randn(out.loss.shape, generator=g, dtype=torch.float64)
    for got, ref in zip(torch.autograd.grad(out.loss, ins, dl), torch.autograd.grad(want, ins, dl)):
        _close(got, ref, 1e-10)
    module = liger.LigerFusedLinearCrossEntropyLoss(lse_square_scale=1e-3, label_smoothing=0.1,
                                                    reduction=reduction, softcap=4.0)
    _close(module(w, h, y, b), want, 1e-10)
    with pytest.raises(NotImplementedError, match="per-class weight"):
        liger.liger_fused_linear_cross_entropy(h, w, y, ce_weight=torch.ones(17))


@pytest.mark.parametrize("name", ["liger_rope", "liger_rotary_pos_emb", "liger_qwen2vl_mrope"])
def test_not_served(name):
    with pytest.raises(NotImplementedError, match=r"rotate-half .* inplace_rope_ is DeepSeek V4's "
                       r"interleaved"):
        getattr(liger, name)()
    with pytest.raises(NotImplementedError, match="rope: Llama's rotate-half"):
        liger.apply_recops_to_llama(rope=True)
    with pytest.raises(NotImplementedError, match="needs the recops op 'geglu'"):
        liger.liger_geglu()


def _ln_ref(x, w, b, eps):
    return F.layer_norm(x.double(), x.shape[-1:], None if w is None else w.double(),
                        None if b is None else b.double(), eps)


@pytest.mark.parametrize("with_weight,with_bias", [(True, True), (True, False), (False, False)])
def test_layer_norm(with_weight, with_bias):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 4, 33, generator=g, requires_grad=True)
    w = torch.randn(33, generator=g, requires_grad=True) if with_weight else None
    b = torch.randn(33, generator=g, requires_grad=True) if with_bias else None
    y = liger.liger_layer_norm(x, w, b, 1e-6)
    assert y.dtype == x.dtype
    _close(y, _ln_ref(x, w, b, 1e-6))
    ins = [t for t in (x, w, b) if t is not None]
    dy = torch.randn(y.shape, generator=g)
    ref_ins = [t.detach().double().requires_grad_() for t in ins]
    rw = ref_ins[1] if with_weight else None
    rb = ref_ins[2] if with_bias else None
    want = torch.autograd.grad(_ln_ref(ref_ins[0], rw, rb, 1e-6), ref_ins, dy.double())
    for a, c in zip(torch.autograd.grad(y, ins, dy), want):
        _close(a, c)
    m = liger.LigerLayerNorm(33, eps=1e-5, bias=True)
    _close(m(x), _ln_ref(x, m.weight, m.bias, 1e-5))
    assert torch.equal(liger.LigerLayerNorm(8).bias, torch.zeros(8))
    assert torch.equal(liger.LigerLayerNorm(8, init_fn="zeros").weight, torch.zeros(8))
    with pytest.raises(ValueError, match="init_fn"):
        liger.LigerLayerNorm(8, init_fn="twos")


@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16])
def test_norms_with_fp32_parameters(dt):
    """fp32 weights with 16-bit activations (autocast training): the output in the activations'
    dtype, within one rounding of it of the fp32 result; the parameter gradients in fp32."""
    g = torch.Generator().manual_seed(6)
    x = torch.randn(5, 48, generator=g).to(dt).requires_grad_()
    w = torch.randn(48, generator=g, requires_grad=True)
    b = torch.randn(48, generator=g, requires_grad=True)
    for y, ref in [(liger.liger_rms_norm(x, w, 1e-6), _rms_ref(x, w, 1e-6)),
                   (liger.liger_layer_norm(x, w, b, 1e-6), _ln_ref(x, w, b, 1e-6))]:
        assert y.dtype == dt
        ulp = 2.0**-8 if dt == torch.bfloat16 else 2.0**-11
        torch.testing.assert_close(y.double(), ref, rtol=ulp, atol=ulp)
        grads = torch.autograd.grad(y.float().sum(), [x, w])
        assert grads[0].dtype == dt and grads[1].dtype == torch.float32
    m = liger.LigerRMSNorm(48)
    assert m(x).dtype == dt


def test_fused_add_rms_norm():
    g = torch.Generator().manual_seed(9)
    x = torch.randn(4, 24, generator=g, dtype=torch.float64, requires_grad=True)
    r = torch.randn(4, 24, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(24, generator=g, dtype=torch.float64, requires_grad=True)
    y, s = liger.liger_fused_add_rms_norm(x, r, w, 1e-6, offset=1.0)
    want_s = x + r
    want_y = _rms_ref(want_s, w, 1e-6, 1.0)
    _close(s, want_s, 1e-12)
    _close(y, want_y, 1e-12)
    dy, ds = torch.randn(y.shape, generator=g, dtype=torch.float64), torch.randn(
        s.shape, generator=g, dtype=torch.float64)
    got = torch.autograd.grad((y, s), (x, r, w), (dy, ds))
    ref = torch.autograd.grad((want_y, want_s), (x, r, w), (dy, ds))
    for a, b in zip(got, ref):
        _close(a, b, 1e-10)
    m = liger.LigerFusedAddRMSNorm(24, eps=1e-6)
    _close(m(x, r)[0], _rms_ref(want_s, m.weight, 1e-6), 1e-12)
    with pytest.raises(ValueError, match="R must have X's shape"):
        liger.liger_fused_add_rms_norm(x, r[:2], w, 1e-6)


def test_fused_linear_cross_entropy_chunk_mem_const():
    g = torch.Generator().manual_seed(8)
    h, w = torch.randn(6, 4, generator=g), torch.randn(10, 4, generator=g)
    y = torch.randint(0, 10, (6,), generator=g)
    want = F.cross_entropy(h @ w.T, y)
    _close(liger.liger_fused_linear_cross_entropy(h, w, y, chunk_mem_const=4), want, 1e-5)
    with pytest.raises(ValueError, match="chunk_mem_const must be a positive integer, got 0"):
        liger.liger_fused_linear_cross_entropy(h, w, y, chunk_mem_const=0)


# ---- HF Llama ----------------------------------------------------------------------------------

needs_hf = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                              reason="transformers is not installed")


def _tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
                      max_position_embeddings=64, hidden_act="silu")
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).float()


def _train(model, steps=5, autocast=False):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(7))
    losses = []
    for _ in range(steps):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _recops_modules(model):
    from transformers.models.llama import modeling_llama
    return (sum(isinstance(m, liger.LigerRMSNorm) for m in model.modules()),
            sum(isinstance(m, liger.LigerSwiGLUMLP) for m in model.modules()),
            modeling_llama.LlamaRMSNorm)


@needs_hf
def test_llama_patch_trains_like_unpatched():
    # fp32 on the CPU. Tolerance: the `single` standard's fp32 threshold T = 2^-13 on each step's
    # loss (relative), the standard of every op patched in (rms_norm, clipped_swiglu,
    # fused_cross_entropy, training_ops.md §5); the two runs differ only in fp32 rounding order,
    # which AdamW's first steps (update ~ lr * sign) do not amplify over 5 steps.
    base = _tiny_llama()
    state = copy.deepcopy(base.state_dict())
    want = _train(base)
    try:
        liger.apply_recops_to_llama(rms_norm=True, cross_entropy=True, swiglu=True)
        patched = _tiny_llama()
        n_rms, n_mlp, cls = _recops_modules(patched)
        assert cls is liger.LigerRMSNorm and n_rms == 5 and n_mlp == 2
        from transformers.loss import loss_utils
        assert loss_utils.fixed_cross_entropy is liger._fixed_cross_entropy
        patched.load_state_dict(state)
        got = _train(patched)
    finally:
        liger.revert_recops_llama()
    from transformers.models.llama import modeling_llama
    assert modeling_llama.LlamaRMSNorm is not liger.LigerRMSNorm
    rel = [abs(a - b) / abs(b) for a, b in zip(got, want)]
    print("llama 5 steps: losses", want, "max rel diff", max(rel))
    assert max(rel) <= 2**-13, (got, want)
    assert want[-1] < want[0]  # it does train


@needs_hf
def test_llama_patch_fused_linear_cross_entropy():
    """fused_linear_cross_entropy: the training loss from chunk_loss without logits (None, as
    Liger's), the same losses as the unpatched model within the fp32 standard (as above); eval
    with labels keeps HF's logits and loss."""
    base = _tiny_llama()
    state = copy.deepcopy(base.state_dict())
    want = _train(base)
    try:
        liger.apply_recops_to_llama(fused_linear_cross_entropy=True)
        patched = _tiny_llama()
        patched.load_state_dict(state)
        ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(7))
        assert patched(input_ids=ids, labels=ids).logits is None
        got = _train(patched)
        patched.eval()
        with torch.no_grad():
            out = patched(input_ids=ids, labels=ids)
            ref = base.eval()(input_ids=ids, labels=ids)
        assert out.logits.shape == (2, 16, 128)
        assert abs(out.loss.item() - ref.loss.item()) <= 2**-13 * abs(ref.loss.item())
    finally:
        liger.revert_recops_llama()
    from transformers.models.llama import modeling_llama
    assert modeling_llama.LlamaForCausalLM.forward is not liger._lce_forward
    rel = [abs(a - b) / abs(b) for a, b in zip(got, want)]
    assert max(rel) <= 2**-13, (got, want)


@needs_hf
def test_llama_patch_under_autocast():
    """bf16 autocast with fp32 parameters (mixed-precision training) and fused linear CE: the
    patched model trains, its losses within bf16 resolution of the unpatched model's (autocast
    runs HF's lm_head in bf16 where chunk_loss takes the fp32 hidden states and weight; the
    residual stream, and so the norms' input, stays fp32, the MLP gets bf16 activations)."""
    base = _tiny_llama()
    state = copy.deepcopy(base.state_dict())
    want = _train(base, steps=3, autocast=True)
    try:
        liger.apply_recops_to_llama(fused_linear_cross_entropy=True)
        patched = _tiny_llama()
        patched.load_state_dict(state)
        got = _train(patched, steps=3, autocast=True)
    finally:
        liger.revert_recops_llama()
    rel = [abs(a - b) / abs(b) for a, b in zip(got, want)]
    assert max(rel) <= 2**-6, (got, want)


@needs_hf
def test_llama_patch_instance():
    base = _tiny_llama()
    inst = copy.deepcopy(base)
    try:
        liger.apply_recops_to_llama(model=inst)
        ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(3))
        got = inst(input_ids=ids, labels=ids).loss
    finally:
        liger.revert_recops_llama()
    want = base(input_ids=ids, labels=ids).loss
    assert abs(got.item() - want.item()) <= 2**-13 * abs(want.item())
    assert inst.model.norm.forward.__func__ is liger._rms_norm_module_forward
    assert inst.model.layers[0].mlp.forward.__func__ is liger._swiglu_mlp_forward


def test_llama_patch_without_transformers(monkeypatch):
    # A None entry in sys.modules makes the import fail as if the package were absent.
    monkeypatch.setitem(sys.modules, "transformers.models.llama", None)
    with pytest.raises(ImportError, match="needs the 'transformers' package"):
        liger.apply_recops_to_llama()
