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
    except (RuntimeError, NotImplementedError) as e:
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
