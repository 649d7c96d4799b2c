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
