"""FBGEMM SLL's names and argument orders (``torch.ops.fbgemm.sll_X`` / ``fbgemm_gpu.sll``) over the
recops ops, for drop-in use (jagged_ops.md §1.4). ``use_fbgemm_kernel`` is accepted and ignored:
there is one implementation per device here. The differences from SLL are recops' fixes, listed in
jagged_ops.md §4 (rows past ``max_seq_len`` are 0 in every jagged output, where SLL's CPU path
leaves them unwritten). Each function is a thin adapter; tests/python/test_fbgemm_parity.py checks
it against SLL's CPU ops on the same inputs where fbgemm_gpu is installed."""

from typing import Tuple

import torch

_ops = torch.ops.recops


def sll_jagged_dense_elementwise_add(x: torch.Tensor, x_offsets: torch.Tensor, y: torch.Tensor,
                                     max_seq_len: int,
                                     use_fbgemm_kernel: bool = True) -> torch.Tensor:
    """``x [total_L, D]`` jagged + ``y [B, max_seq_len, D]`` -> jagged ``[total_L, D]``; rows past
    ``max_seq_len`` are 0."""
    del use_fbgemm_kernel
    return _ops.jagged_dense_elementwise_add(x, x_offsets, y[:, :max_seq_len])


def sll_jagged_softmax(x: torch.Tensor, x_offsets: torch.Tensor, max_seq_len: int,
                       use_fbgemm_kernel: bool = True) -> torch.Tensor:
    """Softmax over each sequence's first ``max_seq_len`` rows, per column; rows past it are 0."""
    del use_fbgemm_kernel
    return _ops.jagged_softmax(x, x_offsets, max_seq_len)


def sll_jagged_dense_bmm(x: torch.Tensor, y: torch.Tensor, x_offsets: torch.Tensor, N: int,
                         allow_tf32: bool, use_fbgemm_kernel: bool = True) -> torch.Tensor:
    """``x [total_L, K]`` jagged times ``y [B, K, N']`` per sequence -> ``[total_L, N']``; ``N`` is
    SLL's name for the longest sequence (rows past it are 0)."""
    del use_fbgemm_kernel
    return _ops.jagged_dense_bmm(x, x_offsets, y, N, allow_tf32)


def sll_jagged_jagged_bmm(x: torch.Tensor, y: torch.Tensor, x_offsets: torch.Tensor, N: int,
                          allow_tf32: bool, use_fbgemm_kernel: bool = True) -> torch.Tensor:
    """``x [total_L, M]``, ``y [total_L, N']`` jagged -> ``[B, M, N']``, ``z[b] = x_bᵀ y_b`` over
    each sequence's first ``N`` rows."""
    del use_fbgemm_kernel
    return _ops.jagged_jagged_bmm(x, y, x_offsets, N, allow_tf32)


def sll_jagged2_to_padded_dense(values: torch.Tensor, offsets: torch.Tensor, max_length: int,
                                padding_value: float = 0.0) -> torch.Tensor:
    """Jagged² ``values`` (block b is N_b x N_b, ``offsets`` the complete cumsum of N_b²) ->
    ``[B, max_length, max_length]``; rows of a block are N_b apart (jagged_ops.md §4)."""
    return _ops.jagged2_to_padded_dense(values, offsets, max_length, padding_value)


def sll_jagged_dense_elementwise_mul_jagged_out(x: torch.Tensor, y: torch.Tensor,
                                                x_seq_lengths: torch.Tensor,
                                                x_offsets: torch.Tensor,
                                                max_seq_len: int) -> torch.Tensor:
    """SLL's name for ``recops.jagged2_dense_elementwise_mul``: ``x_b ⊙ y`` on each N_b x N_b
    block's ``min(N_b, max_seq_len)`` window, 0 outside it (SLL multiplies past the window when
    N_b > max_seq_len; jagged_ops.md §2.4 (b)). ``y`` may be larger than
    ``[max_seq_len, max_seq_len]``: its leading window is used, as SLL slices it."""
    return _ops.jagged2_dense_elementwise_mul(x, y[:max_seq_len, :max_seq_len], x_seq_lengths,
                                              x_offsets, max_seq_len)


def sll_jagged2_softmax(x: torch.Tensor, offsets: torch.Tensor, offsets_total: torch.Tensor,
                        max_seq_len: int, transpose: bool) -> torch.Tensor:
    """Softmax along the rows (``transpose=False``) or columns of each N_b x N_b block's window.
    ``offsets`` (the cumsum of N_b) is accepted and not needed: N_b is the exact square root of
    each block's size in ``offsets_total``."""
    del offsets
    return _ops.jagged2_softmax(x, offsets_total, max_seq_len, transpose)


def sll_dense_jagged_cat_jagged_out(a: torch.Tensor, b: torch.Tensor, b_offsets: torch.Tensor,
                                    max_seq_len: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Per sample ``[a[i], b_i]`` (``a [B]`` dense, ``b [total_L]`` jagged) -> ``(c, c_offsets)``
    with ``c_offsets = b_offsets + arange(B + 1)``; rows of ``b_i`` past ``max_seq_len`` are 0 (as
    SLL's Triton path; its CPU path copies them). ``recops.concat_1d_jagged`` with a dense ``[B]``
    first part; ``c_offsets`` keeps ``b_offsets``' dtype."""
    T = b.size(0)
    pos = torch.arange(T, device=b.device, dtype=b_offsets.dtype)
    sample = torch.searchsorted(b_offsets[1:], pos, right=True)
    keep = (pos - b_offsets[:-1][sample.clamp(max=max(b_offsets.numel() - 2, 0))]) < max_seq_len
    b = torch.where(keep, b, torch.zeros((), dtype=b.dtype, device=b.device))
    c, c_offsets = _ops.concat_1d_jagged(a, None, b, b_offsets)
    return c, c_offsets


def sll_array_jagged_bmm_jagged_out(x: torch.Tensor, y: torch.Tensor, x_lengths: torch.Tensor,
                                    x_offsets: torch.Tensor, y_lengths: torch.Tensor,
                                    y_offsets: torch.Tensor, z_lengths: torch.Tensor,
                                    z_offsets: torch.Tensor, max_seq_len: int,
                                    allow_tf32: bool = True) -> torch.Tensor:
    """Jagged² ``x`` (block b is N_b x N_b, ``x_offsets`` the cumsum of ``x_lengths`` = N_b²) times
    jagged ``y [sum N_b, D]`` (``y_lengths`` = N_b) -> ``z`` in y's layout: ``z_b = x_b[:n, :n]
    y_b[:n]``, n = min(N_b, max_seq_len), later rows 0. ``x_lengths``, ``z_lengths`` and
    ``z_offsets`` (SLL passes y's) are accepted and not needed; ``allow_tf32`` has no effect."""
    del x_lengths, z_lengths, z_offsets
    return _ops.array_jagged_bmm_jagged_out(x, y, y_lengths, x_offsets, y_offsets, max_seq_len,
                                            allow_tf32)


def sll_jagged_jagged_bmm_jagged_out(x: torch.Tensor, y: torch.Tensor, x_lengths: torch.Tensor,
                                     x_offsets: torch.Tensor, y_lengths: torch.Tensor,
                                     y_offsets: torch.Tensor, z_lengths: torch.Tensor,
                                     z_offsets: torch.Tensor, max_seq_len: int,
                                     allow_tf32: bool = True) -> torch.Tensor:
    """Jagged ``x``, ``y [sum N_b, D]`` -> jagged² ``z`` (block b N_b x N_b, ``z_offsets`` the
    cumsum of ``z_lengths`` = N_b²): ``x_b y_bᵀ`` on the ``min(N_b, max_seq_len)`` window, 0
    outside it (SLL's CPU path ignores max_seq_len). x and y must share one layout (SLL allows
    M_b ≠ N_b; recops' blocks are square). Reads ``z_offsets[-1]`` (a sync on CUDA, as SLL's
    ``.item()``); ``allow_tf32`` has no effect."""
    del y_lengths, z_lengths
    if y_offsets is not x_offsets and not torch.equal(y_offsets, x_offsets):
        raise ValueError("sll_jagged_jagged_bmm_jagged_out: y_offsets must equal x_offsets "
                         "(square blocks: x and y share one jagged layout)")
    return _ops.jagged_jagged_bmm_jagged_out(x, y, x_lengths, x_offsets, z_offsets,
                                             int(z_offsets[-1]), max_seq_len, allow_tf32)


def sll_multi_head_jagged_flash_attention(q_weights: torch.Tensor, k_weights: torch.Tensor,
                                          v_weights: torch.Tensor, offsets: torch.Tensor,
                                          max_seq_len: int,
                                          allow_tf32: bool = True) -> torch.Tensor:
    """``q, k, v [H, total_L, D]`` jagged -> ``[H, total_L, D]``: ``softmax(q kᵀ) v / max_seq_len``
    per head and sequence over its first ``max_seq_len`` rows (rows past it are 0). SLL's
    ``allow_tf32=True`` default is kept in the signature; no recops path uses TF32."""
    return _ops.multi_head_jagged_flash_attention(q_weights, k_weights, v_weights, offsets,
                                                  max_seq_len, allow_tf32)


def sll_jagged_dense_flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                     attn_bias: torch.Tensor, offsets: torch.Tensor,
                                     max_seq_len: int, allow_tf32: bool = True) -> torch.Tensor:
    """Jagged ``q``, ``v [sum L_b, D]``, dense ``k [B, D, T]``, ``attn_bias [B, S, T]`` (S >=
    max_seq_len) -> ``out [B, T, D]``: per target column t a softmax over each sequence's first
    ``max_seq_len`` rows of ``q_b k_b[:, t] + attn_bias``, times ``v``. Differentiable in q, k, v
    and attn_bias. SLL's signature and default ``allow_tf32=True`` (the recops op defaults to
    False); any D (CUDA D <= 256), lse kept in fp32, an empty sequence gives 0 (jagged_ops.md §4)."""
    return _ops.jagged_dense_flash_attention(q, k, v, attn_bias, offsets, max_seq_len, allow_tf32)
