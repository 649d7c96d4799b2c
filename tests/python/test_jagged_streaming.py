"""The jagged conversions on outputs of 4 MiB or more, which the CPU path writes with streaming
stores (src/ops/jagged/common/cpu_stream.h): rows that do not start 16-byte aligned (odd D),
padding rows, sequences longer than max_seq_len (truncated on the way to dense, zero rows on the
way back), against plain PyTorch; the small cases of cases.yaml stay below the threshold."""

import pytest
import torch

import recops


def batch(D, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 96, (400,), generator=g)
    lengths[::17] = 140  # longer than max_seq_len = 128
    offsets = torch.zeros(lengths.numel() + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths, 0)
    values = torch.randn((int(offsets[-1]), D), generator=g, dtype=torch.float64).to(dtype)
    return values, offsets, lengths


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("D", [129, 128])
def test_large_conversions_match_torch(dtype, D):
    values, offsets, lengths = batch(D, dtype)
    S = 128
    dense = recops.jagged_to_padded_dense(values, offsets, S, padding_value=-7.0)
    assert dense.numel() * dense.element_size() >= 4 << 20
    want = torch.full((lengths.numel(), S, D), -7.0, dtype=dtype)
    for b, n in enumerate(lengths.tolist()):
        m = min(n, S)
        want[b, :m] = values[int(offsets[b]):int(offsets[b]) + m]
    assert torch.equal(dense, want)

    src = torch.randn((lengths.numel(), S, D), dtype=torch.float64).to(dtype)
    back = recops.dense_to_jagged(src, offsets, int(offsets[-1]))
    assert back.numel() * back.element_size() >= 4 << 20
    want_j = torch.zeros_like(values)
    for b, n in enumerate(lengths.tolist()):
        m = min(n, S)
        want_j[int(offsets[b]):int(offsets[b]) + m] = src[b, :m]
    assert torch.equal(back, want_j)
