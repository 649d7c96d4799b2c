"""The Stem ops on CUDA (skipped without a GPU): stem_prepare against the CPU op within one bf16
step, stem_indexer against the CPU op with exact lengths and -1 padding and equal sets up to
boundary ties (spec §11 rules 2-5, judged on fp64 scores), block_sparse_attention against an fp64
golden by the accuracy standard's double rule (§11 rule 8), and the pipeline run end to end on
the device. The judging (tests/python/_stem_judge.py) is tested on the CPU by
test_stem_judge.py."""

import pytest
import torch

import recops  # noqa: F401
from recops import stem

from _stem_judge import check_sets, judge_attention

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

I32 = torch.int32


def _data(L, Nq, Nk, D, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(L, Nq, D, generator=g).bfloat16()
    k = torch.randn(L, Nk, D, generator=g).bfloat16()
    v = (torch.randn(L, Nk, D, generator=g) * (1 + torch.rand(L, Nk, 1, generator=g))).bfloat16()
    return q, k, v


def _prepare(q, k, v, L, dev):
    cu = torch.tensor([0, L], dtype=I32, device=dev)
    lens = torch.tensor([L], dtype=I32, device=dev)
    return stem.stem_prepare(q.to(dev), k.to(dev), v.to(dev), cu, lens, cu_seqlens_kv=cu), cu, lens


@pytest.mark.parametrize("L", [1, 200, 1500])
def test_prepare_matches_cpu(L):
    q, k, v = _data(L, 4, 2, 64)
    (qc, kc, vc), _, _ = _prepare(q, k, v, L, "cpu")
    (qg, kg, vg), _, _ = _prepare(q, k, v, L, "cuda")
    for a, b in ((qc, qg), (kc, kg)):
        a, b = a.float(), b.cpu().float()
        assert torch.all((a - b).abs() <= a.abs() * 2**-7 + 1e-30)
    torch.testing.assert_close(vg.cpu(), vc, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("prec", [1, 2])
@pytest.mark.parametrize("L,Nq,Nk", [(1500, 4, 2), (9000, 8, 1), (20000, 2, 2)])
def test_indexer_matches_cpu(L, Nq, Nk, prec):
    q, k, v = _data(L, Nq, Nk, 128, seed=L)
    (qf, kf, vb), _, lens = _prepare(q, k, v, L, "cpu")
    ic, lc = stem.stem_indexer(qf, kf, vb, lens, lens, topk_score_precision=prec)
    ig, lg = stem.stem_indexer(qf.cuda(), kf.cuda(), vb.cuda(), lens.cuda(), lens.cuda(),
                               topk_score_precision=prec)
    G = Nq // Nk

    def score(r):
        b, hq, i = r
        s = qf[b, hq, i].double() @ kf[b, hq // G].double().T / 64 + vb[b, hq // G].double()
        return s.float().bfloat16().float() if prec == 2 else s.float()

    check_sets(ic, lc, ig.cpu(), lg.cpu(), score, prec=prec)


def _attention_cuda_matches_cpu(q, k, v, idx, sl, cu, lens):
    """block_sparse_attention on the GPU and on the CPU from the same tensors (on either device),
    each judged against the fp64 golden by the double standard (§11 rule 8)."""
    def run(dev):
        t = [x.to(dev) for x in (q, k, v, idx, sl, cu, lens)]
        return stem.block_sparse_attention(*t[:5], cu_seqlens_q=t[5], kv_seq_lens=t[6],
                                           cu_seqlens_kv=t[5])
    refs = None
    for dev in ("cuda", "cpu"):
        out, lse = run(dev)
        refs = judge_attention(out, lse, q.cpu(), k.cpu(), v.cpu(), idx, sl, cu, lens, cu, refs)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("D", [64, 128])
def test_attention_matches_cpu(dtype, D):
    L, Nq, Nk = 700, 4, 2
    q, k, v = (t.to(dtype) for t in _data(L, Nq, Nk, D, seed=3))
    (qf, kf, vb), cu, lens = _prepare(q.bfloat16(), k.bfloat16(), v.bfloat16(), L, "cpu")
    idx, sl = stem.stem_indexer(qf, kf, vb, lens, lens, initial_blocks=1, window_size=1,
                                num_prompt_tokens=torch.tensor([128 * 300], dtype=I32))
    _attention_cuda_matches_cpu(q, k, v, idx, sl, cu, lens)


def test_empty_selection_gives_zero_and_minus_inf():
    L, Nq, Nk, D = 300, 2, 1, 64
    q, k, v = (t.cuda() for t in _data(L, Nq, Nk, D))
    cu = torch.tensor([0, L], dtype=I32, device="cuda")
    lens = torch.tensor([L], dtype=I32, device="cuda")
    idx = torch.full((1, Nq, 3, 3), -1, dtype=I32, device="cuda")
    sl = torch.zeros(1, Nq, 3, dtype=I32, device="cuda")
    out, lse = stem.block_sparse_attention(q, k, v, idx, sl, cu_seqlens_q=cu, kv_seq_lens=lens,
                                           cu_seqlens_kv=cu)
    assert torch.all(out == 0) and torch.all(lse == float("-inf"))


def test_pipeline_on_device():
    L, Nq, Nk, D = 4096, 4, 2, 128
    q, k, v = (t.cuda() for t in _data(L, Nq, Nk, D, seed=5))
    cu = torch.tensor([0, L], dtype=I32, device="cuda")
    lens = torch.tensor([L], dtype=I32, device="cuda")
    qf, kf, vb = stem.stem_prepare(q, k, v, cu, lens, cu_seqlens_kv=cu, max_q_blocks=32,
                                   max_kv_blocks=32)
    meta = stem.stem_indexer_metadata(lens, lens, Nq, Nk, dim_qkflat=qf.shape[-1])
    idx, sl = stem.stem_indexer(qf, kf, vb, lens, lens, metadata=meta)
    idx2, sl2 = stem.stem_indexer(qf, kf, vb, lens, lens)
    assert torch.equal(idx, idx2) and torch.equal(sl, sl2)
    out, lse = stem.block_sparse_attention(q, k, v, idx, sl, cu_seqlens_q=cu, kv_seq_lens=lens,
                                           cu_seqlens_kv=cu)
    assert torch.isfinite(out.float()).all() and torch.isfinite(lse).all()


def test_pipeline_attention_matches_cpu():
    """The device pipeline's attention (cuda_sm80_fa for D = 128, Bs = 128) against the CPU
    attention on the same selection, across many 64-key stages and the causal diagonal."""
    L, Nq, Nk, D = 3000, 4, 2, 128
    q, k, v = (t.cuda() for t in _data(L, Nq, Nk, D, seed=7))
    cu = torch.tensor([0, L], dtype=I32, device="cuda")
    lens = torch.tensor([L], dtype=I32, device="cuda")
    qf, kf, vb = stem.stem_prepare(q, k, v, cu, lens, cu_seqlens_kv=cu)
    idx, sl = stem.stem_indexer(qf, kf, vb, lens, lens, initial_blocks=2, window_size=2,
                                num_prompt_tokens=torch.tensor([128 * 400], dtype=I32,
                                                               device="cuda"))
    _attention_cuda_matches_cpu(q, k, v, idx, sl, cu, lens)


def test_indexer_512k_matches_cpu():
    """Kmax = 4096 key blocks (524288 tokens) is past the shared-memory score buffer of
    cuda_sm80 (3488 on an H200): the kernel keeps the keys in the output rows. Small heads and
    Df keep the CPU comparison quick; every row is compared (lengths exactly, sets up to
    boundary ties)."""
    L, Nq, Nk, Df = 524288, 2, 1, 64
    nb = L // 128
    g = torch.Generator().manual_seed(11)
    qf = torch.randn(1, Nq, nb, Df, generator=g).bfloat16()
    kf = torch.randn(1, Nk, nb, Df, generator=g).bfloat16()
    vb = torch.randn(1, Nk, nb, generator=g) * 0.1
    lens = torch.tensor([L], dtype=I32)
    ic, lc = stem.stem_indexer(qf, kf, vb, lens, lens, stem_stride=16)
    ig, lg = stem.stem_indexer(qf.cuda(), kf.cuda(), vb.cuda(), lens.cuda(), lens.cuda(),
                               stem_stride=16)
    ig, lg = ig.cpu(), lg.cpu()
    G = Nq // Nk

    def score(r):  # precision 1: the fp32 rounding of the fp64 score
        b, hq, i = r
        return (qf[b, hq, i].double() @ kf[b, hq // G].double().T / 64
                + vb[b, hq // G].double()).float()

    check_sets(ic, lc, ig, lg, score, prec=1)


def test_indexer_cuda_graph_capture():
    """stem_indexer (cuBLAS scoring GEMM + register selection: the host length reads are skipped
    while capturing, so the GEMM covers every key block) captured into a CUDA graph and replayed
    on new inputs gives what an eager call gives."""
    L, Nq, Nk = 9000, 8, 2
    q, k, v = _data(L, Nq, Nk, 128, seed=3)
    (qf, kf, vb), _, lens = _prepare(q, k, v, L, "cuda")
    f = lambda: stem.stem_indexer(qf, kf, vb, lens, lens)  # noqa: E731
    f()  # warm-up (cuBLAS handle, kernels) outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        idx, sl = f()
    qf.copy_(torch.randn_like(qf))  # new inputs in the captured buffers
    graph.replay()
    torch.cuda.synchronize()
    idx_e, sl_e = f()
    assert torch.equal(sl, sl_e)
    assert torch.equal(idx, idx_e)
