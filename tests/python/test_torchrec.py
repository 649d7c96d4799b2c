"""recops.compat.torchrec against TorchRec's own methods (which call FBGEMM's CPU ops) on the same
KeyedJaggedTensors; skips where torchrec is not installed."""

import pytest
import torch

torchrec = pytest.importorskip("torchrec", reason="torchrec is not installed in this venv")
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor  # noqa: E402

from recops.compat import torchrec as rt  # noqa: E402


def _kjt(seed, keys, B, weighted, dtype=torch.float32, idt=torch.int64):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 4, (len(keys) * B,), generator=g)
    lengths[0] = 0
    values = (torch.randn(int(lengths.sum()), generator=g) * 100).to(dtype)
    weights = torch.rand(values.shape, generator=g) if weighted else None
    return KeyedJaggedTensor(keys=keys, values=values, lengths=lengths.to(idt), weights=weights,
                             stride=B)


CASES = [(0, ["a"], 1, False), (1, ["a", "b", "c"], 5, False), (2, ["u", "v"], 7, True),
         (3, ["x", "y", "z", "w"], 3, True)]


@pytest.mark.parametrize("seed,keys,B,weighted", CASES)
def test_to_padded_dense(seed, keys, B, weighted):
    kjt = _kjt(seed, keys, B, weighted)
    for key, dense in rt.kjt_to_padded_dense(kjt).items():
        want = kjt[key].to_padded_dense()
        torch.testing.assert_close(dense, want, rtol=0, atol=0)
    for key, dense in rt.kjt_to_padded_dense(kjt, 2, padding_value=-1.0).items():
        torch.testing.assert_close(dense, kjt[key].to_padded_dense(2, padding_value=-1.0),
                                   rtol=0, atol=0)


@pytest.mark.parametrize("seed,keys,B,weighted", CASES)
def test_index_select_dim1(seed, keys, B, weighted):
    kjt = _kjt(seed, keys, B, weighted)
    idx = torch.randint(0, B, (B + 2,), generator=torch.Generator().manual_seed(seed))
    got = rt.kjt_index_select_dim1(kjt, idx)
    assert got.keys() == kjt.keys() and got.stride() == idx.numel()
    for key in keys:
        jt, src = got[key], kjt[key]
        want = [src.values()[int(src.offsets()[i]):int(src.offsets()[i + 1])] for i in idx]
        assert torch.equal(jt.lengths(), src.lengths()[idx])
        assert torch.equal(jt.values(), torch.cat(want) if want else src.values()[:0])
        if weighted:
            ww = [src.weights()[int(src.offsets()[i]):int(src.offsets()[i + 1])] for i in idx]
            assert torch.equal(jt.weights(), torch.cat(ww))


@pytest.mark.parametrize("seed,keys,B,weighted", CASES)
def test_permute(seed, keys, B, weighted):
    if not hasattr(torch.ops.recops, "permute_2D_sparse_data"):
        pytest.skip("this build has no permute_2D_sparse_data")
    kjt = _kjt(seed, keys, B, weighted)
    order = list(reversed(range(len(keys)))) + [0]
    got, want = rt.kjt_permute(kjt, order), kjt.permute(order)
    assert got.keys() == want.keys()
    assert torch.equal(got.lengths(), want.lengths().to(got.lengths().dtype))
    assert torch.equal(got.values(), want.values())
    if weighted:
        assert torch.equal(got.weights(), want.weights())


VBE = [(0, [2], [0], False), (1, [1, 4, 0], [2, 0, 0, 1], True), (2, [3, 0, 2, 5], [3, 1], True),
       (3, [2, 2], [], False)]


@pytest.mark.parametrize("seed,strides,order,weighted", VBE)
def test_permute_variable_batch(seed, strides, order, weighted):
    """A KJT with a batch size per key (stride_per_key_per_rank) is permuted as TorchRec's own
    permute does: whole keys move with their lengths, values, weights and strides."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 4, (sum(strides),), generator=g)
    values = torch.randn(int(lengths.sum()), generator=g)
    weights = torch.rand(values.shape, generator=g) if weighted else None
    kjt = KeyedJaggedTensor(keys=[f"f{i}" for i in range(len(strides))], values=values,
                            lengths=lengths, weights=weights,
                            stride_per_key_per_rank=[[s] for s in strides])
    got, want = rt.kjt_permute(kjt, order), kjt.permute(order)
    assert got.keys() == want.keys()
    assert got.stride_per_key() == want.stride_per_key() and got.stride() == want.stride()
    assert torch.equal(got.lengths(), want.lengths())
    assert torch.equal(got.values(), want.values())
    assert torch.equal(got.offsets(), want.offsets())
    if weighted:
        assert torch.equal(got.weights(), want.weights())


def test_variable_batch_refusals():
    kjt = KeyedJaggedTensor(keys=["a", "b"], values=torch.arange(7.),
                            lengths=torch.tensor([1, 2, 1, 1, 2]), stride_per_key_per_rank=[[2], [3]])
    with pytest.raises(ValueError, match=r"kjt_index_select_dim1: kjt has a batch size per key "
                       r"\(\[2, 3\]\)"):
        rt.kjt_index_select_dim1(kjt, torch.tensor([0]))
    with pytest.raises(IndexError, match=r"kjt_permute: index 2 is out of range for 2 keys"):
        rt.kjt_permute(kjt, [2])
