"""The judging that test_stem_cuda.py applies to device results (_stem_judge.py), run here on CPU
tensors: the CPU ops pass it, and outputs made wrong in the ways it must catch fail it."""

import pytest
import torch

from recops import stem

from _stem_judge import TIE_R, attention_golden, check_sets, forced_ids, judge_attention

I32 = torch.int32


def _attention_inputs(dtype=torch.bfloat16, L=300, Nq=4, Nk=2, D=32, Bs=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(L, n, D, generator=g).to(dtype) for n in (Nq, Nk, Nk))
    Qb = Kb = (L + Bs - 1) // Bs
    idx = torch.full((1, Nq, Qb, Kb), -1, dtype=I32)
    sl = torch.zeros(1, Nq, Qb, dtype=I32)
    for h in range(Nq):
        for i in range(Qb):
            # the diagonal block and a random part of the earlier ones; row 1 of head 0 is empty
            sel = [j for j in range(i) if torch.rand(1, generator=g) < 0.5] + [i]
            if (h, i) == (0, 1):
                sel = []
            idx[0, h, i, :len(sel)] = torch.tensor(sel, dtype=I32)
            sl[0, h, i] = len(sel)
    cu = torch.tensor([0, L], dtype=I32)
    lens = torch.tensor([L], dtype=I32)
    return q, k, v, idx, sl, cu, lens, Bs


def _bsa(q, k, v, idx, sl, cu, lens, Bs):
    return stem.block_sparse_attention(q, k, v, idx, sl, cu_seqlens_q=cu, kv_seq_lens=lens,
                                       cu_seqlens_kv=cu, sparse_block_size=Bs)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_cpu_attention_passes_the_double_standard(dtype):
    q, k, v, idx, sl, cu, lens, Bs = _attention_inputs(dtype)
    out, lse = _bsa(q, k, v, idx, sl, cu, lens, Bs)
    judge_attention(out, lse, q, k, v, idx, sl, cu, lens, cu, Bs=Bs)


def test_golden_empty_row_and_plain_precision():
    q, k, v, idx, sl, cu, lens, Bs = _attention_inputs()
    out, lse = attention_golden(q, k, v, idx, sl, cu, lens, cu, Bs=Bs)
    assert out.dtype == torch.float64 and lse.dtype == torch.float64
    rows = slice(Bs, 2 * Bs)  # query block 1 of head 0 selects nothing
    assert torch.all(out[rows, 0] == 0) and torch.all(lse[0, rows] == float("-inf"))
    assert torch.isfinite(lse[1]).all()
    p_out, p_lse = attention_golden(q, k, v, idx, sl, cu, lens, cu, Bs=Bs, plain=True)
    assert p_out.dtype == torch.bfloat16 and p_lse.dtype == torch.float32
    err = (p_out.double() - out).abs().max()
    assert 0 < err < 0.1  # rounded once per step: off the golden, but close


@pytest.mark.parametrize("how", ["one_element", "missed_block", "lse_shift", "nan"])
def test_wrong_attention_fails(how):
    """Errors past the double standard's bound (here about 0.03 for out and 0.016 for lse: twice
    the plain bf16 baseline's error plus T/8) fail."""
    q, k, v, idx, sl, cu, lens, Bs = _attention_inputs()
    out, lse = _bsa(q, k, v, idx, sl, cu, lens, Bs)
    out, lse = out.clone(), lse.clone()
    if how == "one_element":
        out[200, 2, 5] += 0.1
    elif how == "missed_block":  # query block 4 of head 3 without its diagonal block
        sl2 = sl.clone()
        sl2[0, 3, 4] -= 1
        out, lse = _bsa(q, k, v, idx, sl2, cu, lens, Bs)
    elif how == "lse_shift":
        lse[1, 10] += 0.05
    else:
        out[5, 1, 3] = float("nan")
    with pytest.raises(AssertionError):
        judge_attention(out, lse, q, k, v, idx, sl, cu, lens, cu, Bs=Bs)


# ---- the indexer's sets ----

def _indexer_case(prec=1, L=128 * 100, Nq=2, Nk=1, Df=32, seed=1):
    """The CPU indexer on random qflat/kflat (P = 100 blocks: a budget of 50 of up to 92
    candidates)."""
    nb = L // 128
    g = torch.Generator().manual_seed(seed)
    qf = torch.randn(1, Nq, nb, Df, generator=g).bfloat16()
    kf = torch.randn(1, Nk, nb, Df, generator=g).bfloat16()
    vb = torch.randn(1, Nk, nb, generator=g) * 0.1
    lens = torch.tensor([L], dtype=I32)
    idx, sl = stem.stem_indexer(qf, kf, vb, lens, lens, stem_stride=16,
                                topk_score_precision=prec)
    G = Nq // Nk

    def score(r):
        b, hq, i = r
        s = (qf[b, hq, i].double() @ kf[b, hq // G].double().T / 64
             + vb[b, hq // G].double()).float()
        return s.bfloat16().float() if prec == 2 else s

    return idx, sl, score


def _dynamic_row(idx, sl, i):
    """(row, a dynamic id it selected, a visible candidate it left out) in query block i."""
    r = (0, 0, i)
    sel = set(idx[r][:int(sl[r])].tolist())
    dyn = sorted(sel - forced_ids(i + 1))
    out = sorted(set(range(i + 1)) - sel)
    return r, dyn, out


def _swap(idx, r, a, b):
    idx = idx.clone()
    row = idx[r]
    row[row == a] = b
    return idx


@pytest.mark.parametrize("prec", [1, 2])
def test_indexer_sets_pass_and_catch(prec):
    idx, sl, score = _indexer_case(prec)
    assert check_sets(idx, sl, idx.clone(), sl.clone(), score, prec=prec) == 0
    r, dyn, left = _dynamic_row(idx, sl, 99)
    assert dyn and left
    s = score(r)
    beta = float(s[torch.tensor(dyn)].min())
    far = max(left, key=lambda j: abs(float(s[j]) - beta))  # well below the threshold
    assert abs(float(s[far]) - beta) > max(2.5e-5, TIE_R[prec] * abs(beta))
    with pytest.raises(AssertionError, match="tie tolerance"):
        check_sets(idx, sl, _swap(idx, r, dyn[0], far), sl, score, prec=prec)
    forced = sorted(forced_ids(100))[0]
    with pytest.raises(AssertionError, match="forced ids"):
        check_sets(idx, sl, _swap(idx, r, forced, far), sl, score, prec=prec)
    with pytest.raises(AssertionError, match="duplicate"):
        check_sets(idx, sl, _swap(idx, r, dyn[0], dyn[1] if len(dyn) > 1 else forced), sl,
                   score, prec=prec)
    with pytest.raises(AssertionError, match="outside"):
        check_sets(idx, sl, _swap(idx, r, dyn[0], 100), sl, score, prec=prec)
    bad_len = sl.clone()
    bad_len[r] -= 1
    with pytest.raises(AssertionError, match="sparse_seq_len"):
        check_sets(idx, sl, idx, bad_len, score, prec=prec)


def _synthetic(scores, expected, actual, i=11):
    """One row (0, 0, i) with V = i + 1 (default F: [0, 4) and [V - 4, V)), key scores `scores`
    over [0, V), the expected and actual id lists; Kmax = V."""
    V = i + 1
    idx_e = torch.full((1, 1, i + 1, V), -1, dtype=I32)
    idx_a = idx_e.clone()
    sl = torch.zeros(1, 1, i + 1, dtype=I32)
    idx_e[0, 0, i, :len(expected)] = torch.tensor(expected, dtype=I32)
    idx_a[0, 0, i, :len(actual)] = torch.tensor(actual, dtype=I32)
    sl[0, 0, i] = len(expected)
    s = torch.tensor(scores, dtype=torch.float32)
    return idx_e, sl, idx_a, sl.clone(), lambda r: s


# V = 12: F = {0..3, 8..11}, candidates 4..7; two dynamic ids expected (4 and 5).
_F = [0, 1, 2, 3, 8, 9, 10, 11]


def _scores(s5, s6, s0=0.1):
    return [s0, 2, 2, 2, 3.0, s5, s6, -1.0, 2, 2, 2, 2]


def test_beta_is_over_dynamic_ids_only():
    """beta is min κ* over the expected dynamic ids (0.9 here), not over every selected id (the
    forced id 0 scores 0.1): 6 in place of 5, 4e-4 apart, is a boundary tie and passes; with
    beta = 0.1 it would not."""
    case = _synthetic(_scores(0.9, 0.8996), _F + [4, 5], _F + [4, 6])
    assert check_sets(*case) == 1


def test_tie_tolerance_per_precision():
    """r = 1e-3 for precision 1 and 2^-7 (one bf16 step) for precision 2 (§11 rule 5)."""
    case = _synthetic(_scores(1.0, 1.0 - 2.0**-8), _F + [4, 5], _F + [4, 6])
    assert check_sets(*case, prec=2) == 1
    with pytest.raises(AssertionError, match="tie tolerance"):
        check_sets(*case, prec=1)
    with pytest.raises(AssertionError, match="tie tolerance"):  # id 7 is far below beta
        check_sets(*_synthetic(_scores(1.0, 0.5), _F + [4, 5], _F + [4, 7]), prec=2)


def test_padding_must_be_minus_one():
    idx_e, sl, idx_a, sl_a, score = _synthetic(_scores(0.9, 0.5), _F + [4, 5], _F + [4, 5])
    idx_a[0, 0, 3, 0] = 0  # a row with L = 0 must be all -1
    with pytest.raises(AssertionError, match="not -1"):
        check_sets(idx_e, sl, idx_a, sl_a, score)
