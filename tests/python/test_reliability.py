"""Memory safety at the binding (issue 21): tensors on ``meta`` mixed with real ones are refused
(they have no memory to read), and an output whose byte count overflows int64 is refused before
anything is allocated, naming the op, the output and the argument it came from."""

import pytest
import torch

import recops


def _jagged(device="cpu"):
    return torch.randn(3, 2, device=device), torch.tensor([0, 3], device=device)


def test_meta_offsets_with_cpu_values_refused():
    v, o = _jagged()
    with pytest.raises(RuntimeError, match=r"jagged_to_padded_dense: seq_offsets is on meta while "
                       r"values is on cpu; every tensor argument must be on the same device"):
        recops.jagged_to_padded_dense(v, o.to("meta"), 4)
    with pytest.raises(RuntimeError, match=r"seq_offsets is on cpu while values is on meta"):
        recops.jagged_to_padded_dense(v.to("meta"), o, 4)
    with pytest.raises(RuntimeError, match=r"seq_offsets is on meta while dense is on cpu"):
        recops.dense_to_jagged(torch.randn(1, 4, 2), o.to("meta"), total_L=3)
    # Without total_L the size is data dependent (the fake kernel's path): the same words.
    with pytest.raises(RuntimeError, match=r"dense_to_jagged: seq_offsets is on meta while dense "
                       r"is on cpu; every tensor argument must be on the same device"):
        recops.dense_to_jagged(torch.randn(1, 4, 2), o.to("meta"))
    with pytest.raises(RuntimeError, match=r"permute_1D_sparse_data: lengths is on cpu while "
                       r"permute is on meta"):
        recops.permute_1D_sparse_data(torch.tensor([0], device="meta"), torch.tensor([2]),
                                      torch.randn(2))


@pytest.mark.parametrize("fn", ["l2norm", "exclusive_cumsum", "rms_norm_rstd"])
def test_none_for_a_required_tensor_names_it(fn):
    with pytest.raises(TypeError, match=rf"recops\.{fn}: \w+ must be a tensor, got None"):
        getattr(recops, fn)(None)


def test_meta_optional_tensor_refused():
    q = torch.randn(3, 1, 8)
    o = torch.tensor([0, 3])
    with pytest.raises(RuntimeError, match=r"hstu_attn_fwd: num_targets is on meta while q is on "
                       r"cpu"):
        recops.hstu_attn(q, q, q, o, num_targets=torch.tensor([1], device="meta"))


def test_all_meta_still_gives_shapes():
    v, o = _jagged("meta")
    assert recops.jagged_to_padded_dense(v, o, 4).shape == (1, 4, 2)


@pytest.mark.parametrize("where", ["cpu", "meta"])
def test_output_byte_overflow_refused(where):
    v, o = _jagged(where)
    with pytest.raises(RuntimeError, match=r"jagged_to_padded_dense: output out: shape "
                       r"\[1, 4611686018427387904, 2\] of fp32 needs more than 2\^63-1 bytes "
                       r"\(from max_seq_len=4611686018427387904\)"):
        recops.jagged_to_padded_dense(v, o, 2**62)


# ---- integer overflow with huge sizes, valid input rejected (issue 21) ----

def _i32(x):
    return torch.tensor(x, dtype=torch.int32)


def test_stem_indexer_huge_block_size():
    # 2^63-16 used to overflow ceil(L / Bs) and silently select nothing: a block size the plan's
    # int32 word cannot hold is refused; the largest it can hold makes one block per sequence.
    qf = torch.zeros(1, 1, 1, 16, dtype=torch.bfloat16)
    vb = torch.zeros(1, 1, 1)
    with pytest.raises(ValueError, match=r"stem_indexer: stem_block_size=9223372036854775792 does "
                       r"not fit in int32"):
        recops.stem_indexer(qf, qf, vb, _i32([100]), _i32([100]), stem_block_size=2**63 - 16)
    want = recops.stem_indexer(qf, qf, vb, _i32([100]), _i32([100]), stem_block_size=128)
    got = recops.stem_indexer(qf, qf, vb, _i32([100]), _i32([100]), stem_block_size=2**31 - 16)
    assert int(got[1][0, 0, 0]) == 1 and int(got[0][0, 0, 0, 0]) == 0
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_block_sparse_attention_huge_block_size():
    # Qmax·sparse_block_size used to overflow ("limit = -9223372036854775808").
    g = torch.Generator().manual_seed(0)
    q = torch.randn(5, 2, 8, generator=g).bfloat16()
    k = torch.randn(5, 1, 8, generator=g).bfloat16()
    v = torch.randn(5, 1, 8, generator=g).bfloat16()
    idx = torch.zeros(1, 2, 1, 1, dtype=torch.int32)
    n = torch.ones(1, 2, 1, dtype=torch.int32)
    kw = dict(cu_seqlens_q=_i32([0, 5]), kv_seq_lens=_i32([5]), cu_seqlens_kv=_i32([0, 5]))
    want = recops.block_sparse_attention(q, k, v, idx, n, sparse_block_size=8, **kw)
    for bs in (2**62, 2**63 - 1):
        got = recops.block_sparse_attention(q, k, v, idx, n, sparse_block_size=bs, **kw)
        torch.testing.assert_close(got[0], want[0])
        torch.testing.assert_close(got[1], want[1])
    with pytest.raises(ValueError, match=r"q length 5 exceeds the limit Qmax·sparse_block_size = "
                       r"1·4"):
        recops.block_sparse_attention(q, k, v, idx, n, sparse_block_size=4, **kw)


def test_stem_prepare_huge_block_size_refused():
    q = torch.randn(4, 1, 8).bfloat16()
    with pytest.raises(ValueError, match=r"stem_prepare: stem_block_size=4611686018427387904 does "
                       r"not fit in int32"):
        recops.stem_prepare(q, q, q, _i32([0, 4]), _i32([4]), cu_seqlens_kv=_i32([0, 4]),
                            stem_block_size=2**62, stem_stride=2**61)


@pytest.mark.parametrize("arg,value", [("q_heads", 2**32 + 2), ("stem_block_size", 2**32 + 128),
                                       ("dim_qkflat", 2**31)])
def test_stem_metadata_refuses_what_int32_cannot_hold(arg, value):
    kw = dict(q_heads=2, kv_heads=1)
    kw[arg] = value
    with pytest.raises(ValueError, match=rf"stem_indexer_metadata: {arg}={value} does not fit in "
                       r"int32"):
        recops.stem_indexer_metadata(_i32([100]), _i32([100]), kw.pop("q_heads"),
                                     kw.pop("kv_heads"), **kw)


def _hstu(H=2, lens=(5, 3), d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    T = sum(lens)
    q, k, v = (torch.randn(T, H, d, generator=g) for _ in range(3))
    off = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)))
    return q, k, v, off


@pytest.mark.parametrize("window", [(2**63 - 1, 2**63 - 1), (-1, 2**63 - 1), (2**63 - 1, -1),
                                    (5, 5)])
def test_hstu_huge_window_is_unbounded(window):
    # A bound >= every length never masks; (2^63-1, 2^63-1) used to wrap and zero rows.
    q, k, v, off = _hstu()
    want = recops.hstu_attn(q, k, v, off, window=(-1, -1))
    torch.testing.assert_close(recops.hstu_attn(q, k, v, off, window=window), want, rtol=0, atol=0)
    m = recops.hstu_mask(5, window=window)
    assert bool(m.all()), m


# `device`: cpu, and cuda where there is one (conftest.py).
def test_hstu_zero_heads_gives_empty_output(device):
    q = torch.randn(6, 0, 8, device=device, requires_grad=True)
    out = recops.hstu_attn(q, q, q, torch.tensor([0, 6], device=device))
    assert out.shape == (6, 0, 8)
    out.sum().backward()
    assert q.grad.shape == (6, 0, 8)


def test_hstu_empty_batch_accepted(device):
    for dtype in (torch.float32, torch.bfloat16):
        q = torch.randn(0, 2, 8, device=device, dtype=dtype)
        for off in ([0], [0, 0]):
            assert recops.hstu_attn(q, q, q, torch.tensor(off, device=device)).shape == (0, 2, 8)


@pytest.mark.parametrize("window", [(1,), None, (1, 2, 3), 5])
def test_pair_argument_checked_by_the_wrapper(window):
    q, k, v, off = _hstu()
    with pytest.raises(ValueError, match=r"hstu_attn: window=.* must be a pair \(window_left, "
                       r"window_right\) of two ints"):
        recops.hstu_attn(q, k, v, off, window=window)
    with pytest.raises(ValueError, match=r"window=.* must be a pair"):
        recops.hstu_mask(4, window=window)


def test_hstu_mask_negative_length_names_seq_len():
    with pytest.raises(RuntimeError, match=r"hstu_mask: seq_len=-1 must be >= 0"):
        recops.hstu_mask(-1)
    with pytest.raises(RuntimeError, match=r"hstu_mask: seq_len_k=-2 must be >= 0"):
        recops.hstu_mask(3, -2)


def test_dense_to_jagged_total_L_checked_before_allocating():
    # total_L = 2^40 used to allocate 8 TiB before the offsets were compared with it.
    with pytest.raises(RuntimeError, match=r"dense_to_jagged: seq_offsets.*total_L is "
                       r"1099511627776; the last offset must equal it"):
        recops.dense_to_jagged(torch.randn(1, 4, 2), torch.tensor([0, 3]), total_L=2**40)


def test_stem_zero_heads_give_empty_outputs():
    # q of shape [6, 0, 8] (no heads) is an empty product: empty outputs, not an error.
    q = torch.zeros(6, 0, 8, dtype=torch.bfloat16)
    kw = dict(cu_seqlens_q=_i32([0, 6]), kv_seq_lens=_i32([6]), cu_seqlens_kv=_i32([0, 6]))
    idx = torch.zeros(1, 0, 1, 1, dtype=torch.int32)
    out, lse = recops.block_sparse_attention(q, q, q, idx, torch.zeros(1, 0, 1, dtype=torch.int32),
                                             sparse_block_size=8, **kw)
    assert out.shape == (6, 0, 8) and lse.shape == (0, 6)
    qf, kf, vb = recops.stem_prepare(q, q, q, kw["cu_seqlens_q"], kw["kv_seq_lens"],
                                     cu_seqlens_kv=kw["cu_seqlens_kv"])
    assert qf.shape[1] == 0 and kf.shape[1] == 0 and vb.shape[1] == 0
    si, sl = recops.stem_indexer(qf, kf, vb, _i32([6]), _i32([6]))
    assert si.shape[1] == 0 and sl.shape[1] == 0
    with pytest.raises(ValueError, match=r"positive multiple of the KV heads"):
        recops.stem_indexer_metadata(_i32([6]), _i32([6]), 0, 0)


@pytest.mark.parametrize("op,folder,tags,msg", [
    ("hstu_attn_fwd", "hstu/hstu_attn", "[window=3x:2]", "tag 'window': '3x' is not an integer"),
    ("hstu_attn_fwd", "hstu/hstu_attn", "[alpha=0.5z]", "tag 'alpha': '0.5z' is not a number"),
    ("stem_indexer", "stem/indexer", "[kv=12:q]", "tag 'kv': 'q' is not an integer"),
])
def test_cli_bad_tag_value_named(tmp_path, op, folder, tags, msg):
    """A case file's malformed tag number names the tag and the value (not std::stoll's "stoll")."""
    import subprocess
    from _cli import recops_binary
    binary = recops_binary()
    if binary is None:
        pytest.skip("no recops binary")
    d = tmp_path / folder
    d.mkdir(parents=True)
    shape = "[1, 1, 16]" if op.startswith("hstu") else "[16, 16, 64]"
    (d / "cases.yaml").write_text(f"op: {op}\nstandard: double\ncases:\n  - id: bad_tag\n"
                                  f"    lengths: [9]\n    shape: {shape}\n    tags: {tags}\n")
    proc = subprocess.run([binary, "check", "--op", op, "--backend", "cpu", "--cases-dir",
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert msg in proc.stdout + proc.stderr


# Non-finite values (issue 21): masking selects, it does not multiply, as in the fp64 reference.
def _hstu_causal(dtype):
    torch.manual_seed(5)
    L, H, d = 150, 2, 16  # more than one key tile
    q, k, v = (torch.randn(L, H, d, dtype=dtype) for _ in range(3))
    return q, k, v, torch.tensor([0, 70, L])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_hstu_nan_in_a_masked_value_row_stays_masked(dtype):
    q, k, v, off = _hstu_causal(dtype)
    bad = 70 + 40  # sequence 1, key 40: only its queries 40.. attend to it (causal)
    v_nan, v_zero = v.clone(), v.clone()
    v_nan[bad, 1, 3] = float("nan")
    v_zero[bad, 1] = 0
    got = recops.hstu_attn(q, k, v_nan, off)
    want = recops.hstu_attn(q, k, v_zero, off)
    # Rows that never see the key are those of the finite input bit for bit; the head's rows that
    # do see it carry the NaN in that channel.
    torch.testing.assert_close(got[:bad], want[:bad], rtol=0, atol=0)
    torch.testing.assert_close(got[:, 0], want[:, 0], rtol=0, atol=0)
    assert bool(got[bad:, 1, 3].isnan().all())


def test_hstu_silu_of_huge_negative_scores_is_zero():
    q, k, v, off = _hstu_causal(torch.float32)
    q = q.abs() + 0.5
    k_big, v_zero = k.clone(), v.clone()
    k_big[5] = -1e36  # every score against key 5 is about -1e37: SiLU is 0 (not x·1e-38)
    v_zero[5] = 0
    torch.testing.assert_close(recops.hstu_attn(q, k_big, v, off),
                               recops.hstu_attn(q, k, v_zero, off), rtol=0, atol=0)
    k_inf = k.clone()
    k_inf[5, :, 0] = float("-inf")  # a -inf score: SiLU(-inf) = -inf·0 = NaN, as the reference
    got = recops.hstu_attn(q, k_inf, v, off)
    assert bool(got[5:70].isnan().all()) and not bool(got[:5].isnan().any())


def test_unallocatable_output_names_op_output_and_argument():
    """An output that fits int64 bytes but cannot be allocated is an error naming the op, the
    output, its shape and bytes and the argument its size came from, not the allocator's bare
    message (the reliability sweep's 'unclear message' probes). 2^48 bytes: past a 47-bit user
    address space, so no overcommit setting lets the allocation succeed."""
    v, o = _jagged()
    with pytest.raises(RuntimeError, match=r"jagged_to_padded_dense: cannot allocate output out "
                       r"\[1, 35184372088832, 2\] \(281474976710656 bytes on cpu\) \(from "
                       r"max_seq_len=35184372088832\)"):
        recops.jagged_to_padded_dense(v, o, 2**45)
    # A size read from the data (dense_to_jagged's total_L from seq_offsets) names the tensor.
    with pytest.raises(RuntimeError, match=r"dense_to_jagged: cannot allocate output out "
                       r"\[35184372088832, 2\] .*\(sized by the contents of seq_offsets\)"):
        recops.dense_to_jagged(torch.randn(1, 4, 2), torch.tensor([0, 2**45]))
