"""FBGEMM's argument and return forms over the recops ops (``torch.ops.fbgemm.X`` ->
``recops.compat.fbgemm.X``), for drop-in use. Only one jagged dimension is supported (FBGEMM's
nested forms are out of scope, jagged_ops.md §1.1); every function here is a thin adapter and the
tests check it against the canonical op."""

from typing import List, Optional, Tuple

import torch

_ops = torch.ops.recops


def _one(seq, what: str, fn: str):
    if len(seq) != 1:
        raise ValueError(f"recops.compat.fbgemm.{fn}: {what} has {len(seq)} entries; recops "
                         f"supports exactly one jagged dimension")
    return seq[0]


def jagged_to_padded_dense(values: torch.Tensor, offsets: List[torch.Tensor],
                           max_lengths: List[int], padding_value: float = 0.0) -> torch.Tensor:
    """FBGEMM form: offsets and max_lengths are one-element lists. values ``[total_L, *E]`` ->
    ``[B, max_lengths[0], *E]``."""
    off = _one(offsets, "offsets", "jagged_to_padded_dense")
    max_l = _one(max_lengths, "max_lengths", "jagged_to_padded_dense")
    return _ops.jagged_to_padded_dense(values, off, max_l, padding_value)


def dense_to_jagged(dense: torch.Tensor, offsets: List[torch.Tensor],
                    total_L: Optional[int] = None) -> Tuple[torch.Tensor, List[torch.Tensor]]:
    """FBGEMM form: returns ``(values, offsets)`` with the offsets list passed in."""
    off = _one(offsets, "offsets", "dense_to_jagged")
    return _ops.dense_to_jagged(dense, off, total_L), list(offsets)


def jagged_2d_to_dense(values: torch.Tensor, offsets: torch.Tensor,
                       max_sequence_length: int) -> torch.Tensor:
    """``[total_L, D]`` -> ``[B, max_sequence_length, D]``, padding 0."""
    return _ops.jagged_to_padded_dense(values, offsets, max_sequence_length, 0.0)


def jagged_1d_to_dense(values: torch.Tensor, offsets: torch.Tensor, max_sequence_length: int,
                       padding_value: int = 0) -> torch.Tensor:
    """``[total_L]`` -> ``[B, max_sequence_length]``."""
    return _ops.jagged_to_padded_dense(values, offsets, max_sequence_length, float(padding_value))


def asynchronous_complete_cumsum(t: torch.Tensor) -> torch.Tensor:
    """``[n]`` -> ``[n+1]`` (``[R, n]`` -> ``[R, n+1]``), input dtype."""
    return _ops.asynchronous_complete_cumsum(t)


def asynchronous_exclusive_cumsum(t: torch.Tensor) -> torch.Tensor:
    return _ops.asynchronous_exclusive_cumsum(t)


def asynchronous_inclusive_cumsum(t: torch.Tensor) -> torch.Tensor:
    return _ops.asynchronous_inclusive_cumsum(t)


def _max_len(y: torch.Tensor) -> int:
    return y.size(1)


def jagged_dense_elementwise_add(x_values: torch.Tensor, x_offsets: List[torch.Tensor],
                                 y: torch.Tensor) -> torch.Tensor:
    """FBGEMM form, **dense** output: ``x`` padded with zeros to ``y``'s ``[B, max_L, D]`` plus
    ``y`` (rows of ``x`` past ``max_L`` are dropped; positions past a sequence's end are ``y``)."""
    off = _one(x_offsets, "x_offsets", "jagged_dense_elementwise_add")
    return _ops.jagged_to_padded_dense(x_values, off, _max_len(y), 0.0) + y


def jagged_dense_elementwise_add_jagged_output(
        x_values: torch.Tensor, x_offsets: List[torch.Tensor],
        y: torch.Tensor) -> Tuple[torch.Tensor, List[torch.Tensor]]:
    """FBGEMM form of ``recops.jagged_dense_elementwise_add``: returns ``(values, x_offsets)``."""
    off = _one(x_offsets, "x_offsets", "jagged_dense_elementwise_add_jagged_output")
    return _ops.jagged_dense_elementwise_add(x_values, off, y), list(x_offsets)


def jagged_dense_elementwise_mul(x_values: torch.Tensor, x_offsets: List[torch.Tensor],
                                 y: torch.Tensor) -> Tuple[torch.Tensor, List[torch.Tensor]]:
    """FBGEMM form of ``recops.jagged_dense_elementwise_mul``: returns ``(values, x_offsets)``."""
    off = _one(x_offsets, "x_offsets", "jagged_dense_elementwise_mul")
    return _ops.jagged_dense_elementwise_mul(x_values, off, y), list(x_offsets)


def jagged_softmax(values: torch.Tensor, x_offsets: torch.Tensor,
                   max_L: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """FBGEMM form of ``recops.jagged_softmax`` (softmax over each sequence's first ``max_L``
    rows, per column): returns ``(output, x_offsets)``."""
    return _ops.jagged_softmax(values, x_offsets, max_L), x_offsets


def jagged_dense_bmm(x_values: torch.Tensor, x_offsets: torch.Tensor, y: torch.Tensor,
                     max_L: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """FBGEMM form of ``recops.jagged_dense_bmm``: ``x [total_L, K]`` times ``y [B, K, N]`` per
    sequence; returns ``(z [total_L, N], x_offsets)``; rows past ``max_L`` are 0."""
    return _ops.jagged_dense_bmm(x_values, x_offsets, y, max_L), x_offsets


def jagged_jagged_bmm(x_values: torch.Tensor, y_values: torch.Tensor, x_offsets: torch.Tensor,
                      max_L: int) -> torch.Tensor:
    """FBGEMM form of ``recops.jagged_jagged_bmm``: ``z[b] = x_bᵀ y_b`` over each sequence's first
    ``max_L`` rows, ``[B, M, N]``."""
    return _ops.jagged_jagged_bmm(x_values, y_values, x_offsets, max_L)


def segment_sum_csr(batch_size: int, csr_seg: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``out[i] = sum(values[csr_seg[i]·batch_size : csr_seg[i+1]·batch_size])``."""
    return _ops.segment_sum_csr(batch_size, csr_seg, values)


def jagged_index_select(values: torch.Tensor, lengths: torch.Tensor, indices: torch.Tensor,
                        num_dense_output_rows: Optional[int] = None) -> List[torch.Tensor]:
    """FBGEMM form: ``[values of the selected sequences, their lengths]``."""
    return list(_ops.jagged_index_select(values, lengths, indices, num_dense_output_rows))


def keyed_jagged_index_select_dim1(values: torch.Tensor, lengths: torch.Tensor,
                                   offsets: torch.Tensor, indices: torch.Tensor, batch_size: int,
                                   weights: Optional[torch.Tensor] = None,
                                   selected_lengths_sum: Optional[int] = None
                                   ) -> List[torch.Tensor]:
    """FBGEMM form: the batch positions ``indices`` selected in every key of a KJT; returns
    ``[values, lengths]`` or, with ``weights``, ``[values, lengths, weights]``."""
    out = _ops.keyed_jagged_index_select_dim1(values, lengths, offsets, indices, batch_size,
                                              weights, selected_lengths_sum)
    return list(out) if weights is not None else [out[0], out[1]]


def permute_1D_sparse_data(permute: torch.Tensor, lengths: torch.Tensor, values: torch.Tensor,
                           weights: Optional[torch.Tensor] = None,
                           permuted_lengths_sum: Optional[int] = None
                           ) -> Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
    """FBGEMM form: ``(permuted_lengths, permuted_values, permuted_weights)``, the last ``None``
    without weights; output segment ``i`` is segment ``permute[i]`` of ``lengths`` (flattened, as
    FBGEMM reads it). An empty ``permute`` or ``lengths`` gives empty outputs, as FBGEMM's CPU op
    (its CUDA op returns clones of the inputs then)."""
    out = _ops.permute_1D_sparse_data(permute, lengths.reshape(-1), values, weights,
                                      permuted_lengths_sum)
    return out[0], out[1], out[2] if weights is not None else None


def permute_2D_sparse_data(permute: torch.Tensor, lengths: torch.Tensor, values: torch.Tensor,
                           weights: Optional[torch.Tensor] = None,
                           permuted_lengths_sum: Optional[int] = None
                           ) -> Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
    """FBGEMM form: ``(permuted_lengths [P, B], permuted_values, permuted_weights)``, the last
    ``None`` without weights; output row ``i`` is feature row ``permute[i]`` of ``lengths
    [T, B]``. Empty ``permute`` or B = 0 gives empty outputs, as FBGEMM's CPU op (its CUDA op
    returns clones of the inputs then). Forward only (FBGEMM's autograd formula, through
    ``invert_permute``, is not reproduced)."""
    out = _ops.permute_2D_sparse_data(permute, lengths, values, weights, permuted_lengths_sum)
    return out[0], out[1], out[2] if weights is not None else None
