"""recops.compat.fbgemm against the real FBGEMM CPU ops (``torch.ops.fbgemm``, PyPI's
``fbgemm-gpu-cpu``), in one process, on every sample of the ops' cases.yaml.

The project's venv pins the torch / fbgemm-gpu-cpu pair that loads together (Makefile
``PY_PACKAGES``); where fbgemm_gpu is absent the module skips with the reason. A sample that FBGEMM
itself refuses (a dtype its CPU kernels were not built for, an int8 index type) is skipped with
FBGEMM's message: recops accepting more is not a parity failure. Everything FBGEMM computes is
compared: bit for bit for row moves and integer ops, within the dtype's tolerance for arithmetic
(FBGEMM's CPU kernels accumulate in the input dtype where recops uses fp32)."""

import pytest
import torch

from recops import testing
from recops.compat import fbgemm as compat

fbgemm_gpu = pytest.importorskip("fbgemm_gpu", reason="fbgemm-gpu-cpu is not installed in this venv")
F = torch.ops.fbgemm

_TOL = {torch.float64: (1e-12, 1e-12), torch.float32: (2e-6, 1e-6),
        torch.float16: (2e-3, 1e-3), torch.bfloat16: (1.6e-2, 8e-3)}


def _samples(op):
    return [pytest.param(s, id=s.name) for s in testing.sample_inputs(op, "cpu")
            if not testing.torch_cannot_hold(s) and s.args[0].dtype != torch.float8_e4m3fn]


def _fbgemm(fn, *args):
    try:
        return fn(*args)
    except (RuntimeError, NotImplementedError, IndexError) as e:
        pytest.skip(f"FBGEMM CPU refuses this sample: {str(e).splitlines()[0][:160]}")


def _exact(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


def _close(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    rtol, atol = _TOL.get(got.dtype, (0, 0))
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("s", _samples("jagged_to_padded_dense"))
def test_jagged_to_padded_dense(s):
    values, off, max_l = s.args
    pad = s.kwargs.get("padding_value", 0.0)
    want = _fbgemm(F.jagged_to_padded_dense, values, [off], [max_l], pad)
    if 0 in values.shape[1:]:
        # FBGEMM 1.8 drops a zero inner dim ([T, 0, 5] gives [B, L, 5]); recops keeps [B, L, 0, 5].
        got = compat.jagged_to_padded_dense(values, [off], [max_l], pad)
        assert got.shape == (off.numel() - 1, max_l, *values.shape[1:])
        pytest.skip(f"FBGEMM returns shape {tuple(want.shape)} for values {tuple(values.shape)}")
    _exact(compat.jagged_to_padded_dense(values, [off], [max_l], pad), want)
    if values.dim() == 2 and pad == 0.0:
        _exact(compat.jagged_2d_to_dense(values, off, max_l),
               _fbgemm(F.jagged_2d_to_dense, values, off, max_l))


@pytest.mark.parametrize("s", _samples("dense_to_jagged"))
def test_dense_to_jagged(s):
    dense, off = s.args
    total_L = s.kwargs.get("total_L")
    want, _ = _fbgemm(F.dense_to_jagged, dense, [off], total_L)
    got, offs = compat.dense_to_jagged(dense, [off], total_L)
    _exact(got, want)
    assert offs[0] is off


@pytest.mark.parametrize("name", ["complete", "exclusive", "inclusive"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("n", [0, 1, 37, 4099])
def test_asynchronous_cumsum(name, dtype, n):
    t = testing.generate_values((n,), "int64", 11 + n, value_range=(0, 64)).to(dtype)
    fn = f"asynchronous_{name}_cumsum"
    _exact(getattr(compat, fn)(t), _fbgemm(getattr(F, fn), t))


def _jagged_case(seed, B, max_L, D, dtype, odt):
    """Random lengths in [0, max_L + 3] (some truncated past max_L, some empty), values of dtype."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, max_L + 4, (B,), generator=g)
    if B > 1:
        lengths[0] = 0
    off = torch.zeros(B + 1, dtype=torch.int64)
    off[1:] = torch.cumsum(lengths, 0)
    total = int(off[-1])
    x = torch.randn(total, D, generator=g).to(dtype)
    y = torch.randn(B, max_L, D, generator=g).to(dtype)
    return x, off.to(odt), y


_EW = [pytest.param(seed, B, L, D, dt, odt, id=f"B{B}-L{L}-D{D}-{str(dt)[6:]}-{str(odt)[6:]}")
       for seed, (B, L, D) in enumerate([(1, 1, 1), (5, 7, 3), (17, 33, 64), (3, 0, 8), (0, 4, 2)])
       for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16)
       for odt in (torch.int32, torch.int64)]


@pytest.mark.parametrize("seed,B,L,D,dt,odt", _EW)
def test_jagged_dense_elementwise_add(seed, B, L, D, dt, odt):
    x, off, y = _jagged_case(seed, B, L, D, dt, odt)
    want, _ = _fbgemm(F.jagged_dense_elementwise_add_jagged_output, x, [off], y)
    got, offs = compat.jagged_dense_elementwise_add_jagged_output(x, [off], y)
    _close(got, want)
    assert offs[0] is off
    _close(compat.jagged_dense_elementwise_add(x, [off], y),
           _fbgemm(F.jagged_dense_elementwise_add, x, [off], y))


@pytest.mark.parametrize("seed,B,L,D,dt,odt", _EW)
def test_jagged_dense_elementwise_mul(seed, B, L, D, dt, odt):
    x, off, y = _jagged_case(seed, B, L, D, dt, odt)
    want, _ = _fbgemm(F.jagged_dense_elementwise_mul, x, [off], y)
    got, offs = compat.jagged_dense_elementwise_mul(x, [off], y)
    _close(got, want)
    assert offs[0] is off


@pytest.mark.parametrize("seed,B,L,D,dt,odt", _EW)
def test_jagged_softmax(seed, B, L, D, dt, odt):
    x, off, _ = _jagged_case(seed, B, L, D, dt, odt)
    want, _ = _fbgemm(F.jagged_softmax, x, off, L)
    got, offs = compat.jagged_softmax(x, off, L)
    assert offs is off
    # FBGEMM leaves the rows past max_L unwritten (torch.empty): compare the rows it computes; recops
    # writes 0 there (jagged_ops.md §4).
    keep = _keep_rows(off, x.size(0), L)
    _close(got[keep], want[keep])
    assert not got[~keep].any()


# ---- recops.compat.sll against fbgemm_gpu.sll's CPU ops ----

def _keep_rows(off, total, L):
    o = off.long()
    keep = torch.zeros(total, dtype=torch.bool)
    for b in range(off.numel() - 1):
        keep[o[b]:min(int(o[b + 1]), int(o[b]) + L)] = True
    return keep


@pytest.fixture(scope="module")
def sll_ops():
    pytest.importorskip("fbgemm_gpu.sll", reason="fbgemm_gpu.sll is not installed")
    from recops.compat import sll
    return sll


@pytest.mark.parametrize("seed,B,L,D,dt,odt", _EW)
def test_sll_jagged_dense_elementwise_add(sll_ops, seed, B, L, D, dt, odt):
    x, off, y = _jagged_case(seed, B, L, D, dt, odt)
    keep = _keep_rows(off, x.size(0), L)
    want = _fbgemm(F.sll_jagged_dense_elementwise_add, x, off, y, L)
    got = sll_ops.sll_jagged_dense_elementwise_add(x, off, y, L)
    _close(got[keep], want[keep])


@pytest.mark.parametrize("seed,B,L,D,dt,odt", _EW)
def test_sll_jagged_softmax(sll_ops, seed, B, L, D, dt, odt):
    x, off, _ = _jagged_case(seed, B, L, D, dt, odt)
    keep = _keep_rows(off, x.size(0), L)
    want = _fbgemm(F.sll_jagged_softmax, x, off, L)
    got = sll_ops.sll_jagged_softmax(x, off, L)
    _close(got[keep], want[keep])
    assert not got[~keep].any()


# ---- the bmms and the tranche-2 select ops ----

_BMM = [pytest.param(seed, B, L, K, N, dt, odt, id=f"B{B}-L{L}-K{K}-N{N}-{str(dt)[6:]}-{str(odt)[6:]}")
        for seed, (B, L, K, N) in enumerate([(1, 1, 1, 1), (5, 7, 3, 9), (9, 33, 64, 17),
                                              (3, 0, 8, 4), (0, 4, 2, 2), (4, 20, 0, 5)])
        for dt in (torch.float32, torch.float16, torch.bfloat16)
        for odt in (torch.int32, torch.int64)]


@pytest.mark.parametrize("seed,B,L,K,N,dt,odt", _BMM)
def test_jagged_dense_bmm(seed, B, L, K, N, dt, odt):
    x, off, _ = _jagged_case(seed, B, L, K, dt, odt)
    y = torch.randn(B, K, N, generator=torch.Generator().manual_seed(seed)).to(dt)
    want, _ = _fbgemm(F.jagged_dense_bmm, x, off.long(), y, L)
    got, offs = compat.jagged_dense_bmm(x, off, y, L)
    keep = _keep_rows(off, x.size(0), L)
    _close_k(got[keep], want[keep], K)
    assert offs is off and not got[~keep].any()


@pytest.mark.parametrize("seed,B,L,K,N,dt,odt", _BMM)
def test_jagged_jagged_bmm(seed, B, L, K, N, dt, odt):
    x, off, _ = _jagged_case(seed, B, L, K, dt, odt)
    y = torch.randn(x.size(0), N, generator=torch.Generator().manual_seed(seed)).to(dt)
    want = _fbgemm(F.jagged_jagged_bmm, x, y, off.long(), L)
    _close_k(compat.jagged_jagged_bmm(x, y, off, L), want, L)


def _close_k(got, want, k):
    """A sum of k products: FBGEMM's CPU kernels accumulate in the input dtype (recops in fp32), so
    16-bit results may differ by a few roundings of the partial sums."""
    assert got.shape == want.shape and got.dtype == want.dtype
    rtol, atol = _TOL.get(got.dtype, (0, 0))
    scale = max(1.0, float(k) ** 0.5) * (4 if got.dtype in (torch.float16, torch.bfloat16) else 1)
    torch.testing.assert_close(got, want, rtol=rtol * scale, atol=atol * scale * 4)


@pytest.mark.parametrize("seed,n_seg,batch,dt", [(0, 0, 1, torch.float32), (1, 1, 1, torch.float32),
                                                  (2, 7, 3, torch.float32), (3, 50, 4, torch.float64),
                                                  (4, 13, 2, torch.float16)])
@pytest.mark.parametrize("idt", [torch.int32, torch.int64])
def test_segment_sum_csr(seed, n_seg, batch, dt, idt):
    g = torch.Generator().manual_seed(seed)
    seg = torch.zeros(n_seg + 1, dtype=torch.int64)
    seg[1:] = torch.cumsum(torch.randint(0, 4, (n_seg,), generator=g), 0)
    values = torch.randn(int(seg[-1]) * batch, generator=g).to(dt)
    want = _fbgemm(F.segment_sum_csr, batch, seg.to(idt), values)
    _close_k(compat.segment_sum_csr(batch, seg.to(idt), values), want, 4 * batch)


@pytest.mark.parametrize("seed,B,n_idx,D,dt", [(0, 1, 1, 1, torch.float32), (1, 9, 15, 4, torch.float32),
                                                (2, 5, 0, 3, torch.float32), (3, 12, 6, 2, torch.float64),
                                                (4, 7, 7, 8, torch.bfloat16), (5, 4, 3, 1, torch.int64)])
@pytest.mark.parametrize("idt", [torch.int32, torch.int64])
def test_jagged_index_select(seed, B, n_idx, D, dt, idt):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 5, (B,), generator=g)
    total = int(lengths.sum())
    values = (torch.randn(total, D, generator=g) * 10).to(dt)
    indices = torch.randint(0, B, (n_idx,), generator=g)
    want = _fbgemm(F.jagged_index_select, values, lengths.to(idt), indices.to(idt))
    got = compat.jagged_index_select(values, lengths.to(idt), indices.to(idt))
    assert len(got) == len(want) == 2
    _exact(got[0], want[0])
    _exact(got[1], want[1])


@pytest.mark.parametrize("seed,keys,B,n_idx,weighted", [(0, 1, 1, 1, False), (1, 3, 6, 4, False),
                                                          (2, 2, 5, 9, True), (3, 4, 3, 0, True)])
@pytest.mark.parametrize("idt", [torch.int32, torch.int64])
def test_keyed_jagged_index_select_dim1(seed, keys, B, n_idx, weighted, idt):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 4, (keys * B,), generator=g)
    offsets = torch.zeros(keys * B + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths, 0)
    values = torch.randn(int(offsets[-1]), generator=g)
    weights = torch.rand(values.shape, generator=g) if weighted else None
    indices = torch.randint(0, B, (n_idx,), generator=g)
    args = (values, lengths.to(idt), offsets.to(idt), indices.to(idt), B, weights)
    got = compat.keyed_jagged_index_select_dim1(*args)
    # FBGEMM registers keyed_jagged_index_select_dim1 for CUDA only; on the CPU its meaning is
    # FBGEMM's jagged_index_select applied to each key's [B] block, concatenated over keys.
    want = [[], [], []]
    for k in range(keys):
        lo, hi = int(offsets[k * B]), int(offsets[(k + 1) * B])
        lk = lengths[k * B:(k + 1) * B].to(idt)
        v, ln = _fbgemm(F.jagged_index_select, values[lo:hi].view(-1, 1), lk, indices.to(idt))
        want[0].append(v.view(-1))
        want[1].append(ln)
        if weighted:
            want[2].append(F.jagged_index_select(weights[lo:hi].view(-1, 1), lk, indices.to(idt))[0]
                           .view(-1))
    want = [torch.cat(w) for w in want if w]
    assert len(got) == len(want)
    for a, b in zip(got, want):
        _exact(a, b)


@pytest.mark.parametrize("seed,B,L,K,N,dt,odt", _BMM)
def test_sll_jagged_dense_bmm(sll_ops, seed, B, L, K, N, dt, odt):
    x, off, _ = _jagged_case(seed, B, L, K, dt, odt)
    y = torch.randn(B, K, N, generator=torch.Generator().manual_seed(seed)).to(dt)
    keep = _keep_rows(off, x.size(0), L)
    want = _fbgemm(F.sll_jagged_dense_bmm, x, y, off.long(), L, False)
    got = sll_ops.sll_jagged_dense_bmm(x, y, off, L, False)
    _close_k(got[keep], want[keep], K)


@pytest.mark.parametrize("seed,B,L,K,N,dt,odt", _BMM)
def test_sll_jagged_jagged_bmm(sll_ops, seed, B, L, K, N, dt, odt):
    x, off, _ = _jagged_case(seed, B, L, K, dt, odt)
    y = torch.randn(x.size(0), N, generator=torch.Generator().manual_seed(seed)).to(dt)
    want = _fbgemm(F.sll_jagged_jagged_bmm, x, y, off.long(), L, False)
    _close_k(sll_ops.sll_jagged_jagged_bmm(x, y, off, L, False), want, L)


@pytest.mark.parametrize("seed,T,B,P,dt,weighted", [(0, 1, 1, 1, torch.float32, False),
                                                     (1, 9, 3, 12, torch.float32, True),
                                                     (2, 5, 4, 0, torch.float32, True),
                                                     (3, 40, 2, 40, torch.int64, True),
                                                     (4, 7, 5, 3, torch.float64, False),
                                                     (5, 6, 1, 9, torch.int32, True)])
@pytest.mark.parametrize("two_d", [False, True])
def test_permute_sparse_data(seed, T, B, P, dt, weighted, two_d):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 3, (T, B), generator=g, dtype=torch.int32)
    n = int(lengths.sum())
    values = (torch.randn(n, generator=g) * 100).to(dt)
    weights = torch.rand(n, generator=g) if weighted else None
    permute = torch.randint(0, T, (P,), generator=g, dtype=torch.int32)  # repeats allowed
    if not two_d:
        lengths = lengths.view(-1)
        permute = torch.randint(0, T * B, (P,), generator=g, dtype=torch.int32)
    name = "permute_2D_sparse_data" if two_d else "permute_1D_sparse_data"
    want = _fbgemm(getattr(F, name), permute, lengths, values, weights, None)
    got = getattr(compat, name)(permute, lengths, values, weights)
    assert (got[2] is None) == (want[2] is None)
    for a, b in zip(got, want):
        if b is not None:
            _exact(a, b)


# ---- jagged² (SLL) ----

def _jagged2_case(seed, B, max_L, dt, over=3):
    g = torch.Generator().manual_seed(seed)
    n = torch.randint(0, max_L + over, (B,), generator=g)  # over > 1: some blocks past max_L
    if B:
        n[0] = 0
    total = torch.zeros(B + 1, dtype=torch.int64)
    total[1:] = torch.cumsum(n * n, 0)
    offs = torch.zeros(B + 1, dtype=torch.int64)
    offs[1:] = torch.cumsum(n, 0)
    x = torch.randn(int(total[-1]), generator=g).to(dt)
    return n, offs, total, x


def _window_mask(n, total, L):
    keep = torch.zeros(int(total[-1]), dtype=torch.bool)
    for b, nb in enumerate(n.tolist()):
        w = min(nb, L)
        blk = keep[int(total[b]):int(total[b + 1])].view(nb, nb) if nb else None
        if w:
            blk[:w, :w] = True
    return keep


_J2 = [pytest.param(seed, B, L, dt, id=f"B{B}-L{L}-{str(dt)[6:]}")
       for seed, (B, L) in enumerate([(1, 1), (6, 4), (9, 7), (3, 0)])
       for dt in (torch.float32, torch.bfloat16)]


@pytest.mark.parametrize("seed,B,L,dt", _J2)
def test_sll_jagged2_to_padded_dense(sll_ops, seed, B, L, dt):
    n, _, total, x = _jagged2_case(seed, B, L, dt)
    want = _fbgemm(F.sll_jagged2_to_padded_dense, x, total, L, -1.0)
    _exact(sll_ops.sll_jagged2_to_padded_dense(x, total, L, -1.0), want)


@pytest.mark.parametrize("seed,B,L,dt", _J2)
def test_sll_jagged2_dense_elementwise_mul(sll_ops, seed, B, L, dt):
    # SLL slices y by N_b, so its blocks stay within max_seq_len here; recops' window rule past it
    # is the op's own test (jagged_ops.md §2.4 (b)).
    n, _, total, x = _jagged2_case(seed, B, L, dt, over=1)
    y = torch.randn(L + 2, L + 2, generator=torch.Generator().manual_seed(seed)).to(dt)
    keep = _window_mask(n, total, L)
    want = _fbgemm(F.sll_jagged_dense_elementwise_mul_jagged_out, x, y, n, total, L)
    got = sll_ops.sll_jagged_dense_elementwise_mul_jagged_out(x, y, n, total, L)
    _close(got[keep], want[keep])
    assert not got[~keep].any()


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("seed,B,L,dt", _J2)
def test_sll_jagged2_softmax(sll_ops, seed, B, L, dt, transpose):
    # Blocks within max_seq_len: past it SLL strides rows by min(N_b, max_L), the layout bug
    # recops fixes (jagged_ops.md §4), and the two disagree by design.
    n, offs, total, x = _jagged2_case(seed, B, L, dt, over=1)
    keep = _window_mask(n, total, L)
    want = _fbgemm(F.sll_jagged2_softmax, x, offs, total, L, transpose)
    got = sll_ops.sll_jagged2_softmax(x, offs, total, L, transpose)
    _close(got[keep], want[keep])


@pytest.mark.parametrize("seed,keys,B,D", [(0, 1, 1, 0), (1, 3, 5, 0), (2, 2, 4, 3), (3, 4, 7, 1)])
def test_stacked_jagged_to_dense(seed, keys, B, D):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 6, (keys, B), generator=g)
    N = int(lengths.sum())
    max_l = [int(x) for x in torch.randint(0, 7, (keys,), generator=g)]
    per_key = [0] + lengths.sum(1).cumsum(0).tolist()  # num_keys + 1 entries, as TorchRec
    if D == 0:
        values = torch.randint(-9, 9, (N,), generator=g)
        got = compat.stacked_jagged_1d_to_dense(values, lengths, per_key, max_l, 7)
        want = _fbgemm(F.stacked_jagged_1d_to_dense, values, lengths, per_key, max_l, 7)
    else:
        values = torch.randn(N, D, generator=g)
        got = compat.stacked_jagged_2d_to_dense(values, lengths, per_key, max_l)
        want = _fbgemm(F.stacked_jagged_2d_to_dense, values, lengths, per_key, max_l)
    assert len(got) == len(want) == keys
    for a, b in zip(got, want):
        _exact(a, b)


@pytest.mark.parametrize("starts,size", [([0, 3, 7, 8, 17, 20], 27), ([], 0), ([0, 0, 4], 4),
                                         ([0], 5), ([0, 5], 5)])
@pytest.mark.parametrize("idt", [torch.int32, torch.int64])
def test_offsets_range(starts, size, idt):
    off = torch.tensor(starts, dtype=idt)
    _exact(compat.offsets_range(off, size), _fbgemm(F.offsets_range, off, size))


def test_offsets_range_before_the_first_offset_is_zero():
    # FBGEMM 1.8 leaves positions before offsets[0] uninitialised (and crashes when offsets[0] >
    # range_size); recops defines them as 0.
    _exact(compat.offsets_range(torch.tensor([2, 3, 7]), 9),
           torch.tensor([0, 0, 0, 0, 1, 2, 3, 0, 1]))
    _exact(compat.offsets_range(torch.tensor([5]), 3), torch.tensor([0, 0, 0]))


@pytest.mark.parametrize("seed,B,H,max_N,D,dt", [(0, 1, 1, 1, 1, torch.float32),
                                                 (1, 5, 2, 4, 3, torch.float32),
                                                 (2, 3, 4, 7, 8, torch.float64),
                                                 (3, 6, 1, 3, 16, torch.bfloat16)])
def test_batched_dense_vec_jagged_2d_mul(seed, B, H, max_N, D, dt):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, max_N + 3, (B,), generator=g)
    off = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    v = torch.randn(B * H, max_N, generator=g).to(dt)
    a = torch.randn(int(off[-1]), H * D, generator=g).to(dt)
    if dt == torch.float64:  # differentiable through the recops ops
        vv, aa = v.clone().requires_grad_(), a.clone().requires_grad_()
        torch.autograd.gradcheck(lambda x, y: compat.batched_dense_vec_jagged_2d_mul(x, y, off),
                                 (vv, aa))
    got = compat.batched_dense_vec_jagged_2d_mul(v, a, off)
    _close(got, _fbgemm(F.batched_dense_vec_jagged_2d_mul, v, a, off))


def _jagged2_bmm_case(seed, B, L, D, dt, over):
    n, offs, total, sq = _jagged2_case(seed, B, L, dt, over=over)
    g = torch.Generator().manual_seed(seed + 100)
    x = torch.randn(int(offs[-1]), D, generator=g).to(dt)
    y = torch.randn(int(offs[-1]), D, generator=g).to(dt)
    return n, offs, total, sq, x, y


@pytest.mark.parametrize("seed,B,L,dt", _J2)
def test_sll_array_jagged_bmm_jagged_out(sll_ops, seed, B, L, dt):
    # SLL's CPU path views block b as N_b x N_b (row stride N_b), so blocks past max_seq_len agree.
    n, offs, total, sq, _, y = _jagged2_bmm_case(seed, B, L, 7, dt, over=3)
    want = _fbgemm(F.sll_array_jagged_bmm_jagged_out, sq, y, n * n, total, n, offs, n, offs, L,
                   False)
    got = sll_ops.sll_array_jagged_bmm_jagged_out(sq, y, n * n, total, n, offs, n, offs, L, False)
    _close_k(got, want, max(L, 1))


@pytest.mark.parametrize("seed,B,L,dt", _J2)
def test_sll_jagged_jagged_bmm_jagged_out(sll_ops, seed, B, L, dt):
    # SLL's CPU path ignores max_seq_len (full N_b x N_b blocks), so blocks stay within it here;
    # recops' window rule past it is the op's own test.
    n, offs, total, _, x, y = _jagged2_bmm_case(seed, B, L, 7, dt, over=1)
    want = _fbgemm(F.sll_jagged_jagged_bmm_jagged_out, x, y, n, offs, n, offs, n * n, total, L,
                   False)
    got = sll_ops.sll_jagged_jagged_bmm_jagged_out(x, y, n, offs, n, offs, n * n, total, L, False)
    _close_k(got, want, 7)


@pytest.mark.parametrize("seed,B,L,dt", _J2[:4])
def test_sll_jagged2_bmm_gradients(sll_ops, seed, B, L, dt):
    # Both ops' gradients through SLL's CPU autograd, blocks within max_seq_len (SLL's CPU
    # jagged_jagged kernel, which its array backward uses for dx, ignores max_seq_len).
    n, offs, total, sq, x, y = _jagged2_bmm_case(seed, B, L, 7, dt, over=1)
    cases = [("sll_array_jagged_bmm_jagged_out", (sq, y), (n * n, total, n, offs, n, offs)),
             ("sll_jagged_jagged_bmm_jagged_out", (x, y), (n, offs, n, offs, n * n, total))]
    for name, data, idx in cases:
        outs = []
        for fn in (getattr(F, name), getattr(sll_ops, name)):
            a, b = (t.detach().clone().requires_grad_(True) for t in data)
            z = _fbgemm(fn, a, b, *idx, L, False)
            g = torch.linspace(-1, 1, z.numel()).view_as(z).to(dt)
            outs.append(torch.autograd.grad(z, (a, b), g))
        for want, got in zip(*outs):
            _close_k(got, want, 7 + L)


# ---- the two flash attentions (jagged_ops.md §2.9, §2.10) ----

def _attn_case(seed, B, L, D, over, dt, odt):
    """Lengths in [0, L + over) (sequence 0 empty, some truncated past L) with their offsets."""
    g = torch.Generator().manual_seed(seed)
    n = torch.randint(0, L + over, (B,), generator=g)
    if B:
        n[0] = 0
    off = torch.zeros(B + 1, dtype=torch.int64)
    off[1:] = torch.cumsum(n, 0)
    return g, off.to(odt), int(off[-1])


def _outputs_and_grads(fn, inputs, *rest):
    """fn's output and the gradients of all its inputs for a fixed output gradient."""
    leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
    out = fn(*leaves, *rest)
    go = torch.linspace(-1, 1, out.numel()).view_as(out).to(out.dtype)
    return out, torch.autograd.grad(out, leaves, go)


_FLASH = [pytest.param(seed, B, L, D, T, S, dt, odt,
                       id=f"B{B}-L{L}-D{D}-T{T}-S{S}-{str(dt)[6:]}-{str(odt)[6:]}")
          for seed, (B, L, D, T, S) in enumerate([(1, 1, 1, 1, 1), (5, 7, 16, 3, 7),
                                                   (10, 100, 64, 30, 100), (6, 9, 48, 1, 12),
                                                   (4, 20, 32, 33, 20), (3, 0, 8, 4, 2)])
          for dt in (torch.float32, torch.bfloat16)
          for odt in (torch.int32, torch.int64)]


@pytest.mark.parametrize("seed,B,L,D,T,S,dt,odt", _FLASH)
def test_sll_jagged_dense_flash_attention(sll_ops, seed, B, L, D, T, S, dt, odt):
    # SLL's CPU op is its unfused composition (bmm, add, softmax, bmm) under SLL's autograd; it
    # leaves rows past max_seq_len unwritten, so dq and dv are compared on the rows within it and
    # dbias on its first max_seq_len positions (recops: 0 beyond, checked; FBGEMM's dbias there
    # is garbage, 1e13 at B3-L0-S2). In 16 bits that composition rounds the scores and p between
    # its four ops (dq off by 0.8 from fp64 at B10-L100), so 16-bit samples compare with FBGEMM run
    # in fp32 on the same values.
    g, off, total = _attn_case(seed, B, L, D, 4, dt, odt)
    q, v = (torch.randn(total, D, generator=g).to(dt) for _ in range(2))
    k = torch.randn(B, D, T, generator=g).to(dt)
    bias = torch.randn(B, S, T, generator=g).to(dt)
    want, wg = _fbgemm(_outputs_and_grads, F.sll_jagged_dense_flash_attention,
                       [t.float() for t in (q, k, v, bias)], off.long(), L, False)
    want, wg = want.to(dt), [w.to(dt) for w in wg]
    got, gg = _outputs_and_grads(sll_ops.sll_jagged_dense_flash_attention, (q, k, v, bias), off, L,
                                 False)
    keep = _keep_rows(off, total, L)
    kk = D + L  # each result sums D products (scores) and then up to L
    _close_k(got, want, kk)
    for i in (0, 2):  # dq, dv
        _close_k(gg[i][keep], wg[i][keep], kk + T)
        assert not gg[i][~keep].any()
    _close_k(gg[1], wg[1], kk + L)
    _close_k(gg[3][:, :L], wg[3][:, :L], kk + T)
    assert not gg[3][:, L:].any()


@pytest.mark.parametrize("seed,B,L,D,H,dt", [(0, 1, 1, 1, 1, torch.float32),
                                              (1, 6, 9, 16, 2, torch.float32),
                                              (2, 10, 100, 32, 8, torch.float32)])
def test_sll_multi_head_jagged_flash_attention(sll_ops, seed, B, L, D, H, dt):
    # FBGEMM 1.8 registers this op for CUDA only: on its CPU build the sample skips with FBGEMM's
    # message; where a CPU kernel exists, outputs and gradients are compared on rows within L.
    g, off, total = _attn_case(seed, B, L, D, 3, dt, torch.int64)
    q, k, v = (torch.randn(H, total, D, generator=g).to(dt) for _ in range(3))
    want, wg = _fbgemm(_outputs_and_grads, F.sll_multi_head_jagged_flash_attention, (q, k, v), off,
                       L, False)
    got, gg = _outputs_and_grads(sll_ops.sll_multi_head_jagged_flash_attention, (q, k, v), off, L,
                                 False)
    keep = _keep_rows(off, total, L)
    for a, b in zip((got,) + gg, (want,) + wg):
        _close_k(a[:, keep], b[:, keep], D + L)


def test_keyword_names_are_fbgemms():
    """Callers who pass FBGEMM's argument names by keyword: the compat functions' parameters carry
    the names of the FBGEMM op's schema, in its order (19 functions)."""
    import inspect
    for name in ("asynchronous_complete_cumsum", "asynchronous_exclusive_cumsum",
                 "asynchronous_inclusive_cumsum", "dense_to_jagged", "jagged_to_padded_dense",
                 "jagged_dense_elementwise_add_jagged_output", "jagged_index_select",
                 "keyed_jagged_index_select_dim1", "permute_2D_sparse_data", "segment_sum_csr",
                 "jagged_softmax", "jagged_dense_bmm", "jagged_jagged_bmm", "pack_segments",
                 "pack_segments_v2", "asynchronous_batched_complete_cumsum", "invert_permute",
                 "permute_sparse_data", "permute_2D_sparse_data_input1D"):
        want = [a.name for a in getattr(F, name).default._schema.arguments]
        got = list(inspect.signature(getattr(compat, name)).parameters)
        assert got == want, (name, got, want)
    t = torch.tensor([3, 0, 2])
    _exact(compat.asynchronous_complete_cumsum(t_in=t), F.asynchronous_complete_cumsum(t_in=t))
    d = torch.randn(2, 3, 4)
    off = torch.tensor([0, 2, 5])
    _exact(compat.dense_to_jagged(dense=d, x_offsets=[off])[0],
           F.dense_to_jagged(dense=d, x_offsets=[off])[0])


def test_peer_diff_smoke():
    """tests/reliability/peer_diff.py (random cases against FBGEMM's CPU ops and TorchRec's
    permute) on its first 40 seeds: every case FBGEMM / TorchRec computes is equal."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "reliability" / "peer_diff.py"
    spec = importlib.util.spec_from_file_location("peer_diff", path)
    pd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pd)
    t = pd.Tally()
    for seed in range(40):
        pd.fbgemm_case(t, seed)
    if importlib.util.find_spec("torchrec") is not None:
        for seed in range(40):
            pd.torchrec_case(t, seed)
    assert not t.fails, t.fails
    assert sum(c[0] for c in t.counts.values()) > 500  # cases actually compared
