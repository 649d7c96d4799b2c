"""Helpers of the jagged² matmuls' tests (array_jagged_bmm_jagged_out,
jagged_jagged_bmm_jagged_out): random inputs and the torch formulas in fp64. Not collected
itself (the leading underscore); each op's test_<op>.py imports it."""

import torch

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


def make(sides, D, dtype=torch.float64, device="cpu", index_dtype=torch.int64):
    """sq [sum N^2], a, y [sum N, D], lengths, offsets (cumsum N), sq_offsets (cumsum N^2)."""
    lengths = torch.tensor(sides, dtype=torch.int64)
    offsets = torch.zeros(len(sides) + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths, 0)
    sq_offsets = torch.zeros(len(sides) + 1, dtype=torch.int64)
    sq_offsets[1:] = torch.cumsum(lengths ** 2, 0)

    def rand(*shape):
        return (torch.rand(*shape, dtype=torch.float64) * 2 - 1).to(dtype).to(device)

    sq, a, y = rand(int(sq_offsets[-1])), rand(int(offsets[-1]), D), rand(int(offsets[-1]), D)
    idx = [t.to(index_dtype).to(device) for t in (lengths, offsets, sq_offsets)]
    return sq, a, y, *idx


def blocks(lengths, offsets, sq_offsets):
    o, s = offsets.cpu().tolist(), sq_offsets.cpu().tolist()
    return [(N, o[b], s[b]) for b, N in enumerate(lengths.cpu().tolist())]


def torch_array(x, y, lengths, offsets, sq_offsets, max_len, transpose=False):
    """z(b, m) = sum_{k<n} x_b[m, k] y(b, k) (x_b^T with transpose) for m < n, else 0; fp64."""
    x, y = x.detach().cpu().double(), y.detach().cpu().double()
    z = torch.zeros_like(y)
    for N, o, s in blocks(lengths, offsets, sq_offsets):
        n = min(N, max_len)
        xb = x[s:s + N * N].view(N, N)
        xb = xb.T if transpose else xb
        z[o:o + n] = xb[:n, :n] @ y[o:o + n]
    return z


def torch_outer(x, y, lengths, offsets, sq_offsets, max_len):
    """z_b = x_b[:n] y_b[:n]^T in an N_b x N_b block (row stride N_b), 0 elsewhere; fp64."""
    x, y = x.detach().cpu().double(), y.detach().cpu().double()
    z = torch.zeros(int(sq_offsets[-1]), dtype=torch.float64)
    for N, o, s in blocks(lengths, offsets, sq_offsets):
        n = min(N, max_len)
        blk = torch.zeros(N, N, dtype=torch.float64)
        blk[:n, :n] = x[o:o + n] @ y[o:o + n].T
        z[s:s + N * N] = blk.flatten()
    return z


def close(out, ref, dtype):
    """Within a few roundings of the fp64 formula (sums in fp32 for 16-bit and fp32)."""
    tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
    torch.testing.assert_close(out.cpu().double(), ref, atol=tol[dtype], rtol=tol[dtype])
