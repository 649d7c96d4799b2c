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


def dense_to_jagged(dense: torch.Tensor, x_offsets: List[torch.Tensor],
                    total_L: Optional[int] = None) -> Tuple[torch.Tensor, List[torch.Tensor]]:
    """FBGEMM form: returns ``(values, offsets)`` with the offsets list passed in. ``total_L``
    must equal ``offsets[0][-1]`` (jagged_ops.md §2.2): FBGEMM's CPU op pads a larger one with
    zero rows, recops raises (slice or pad the result instead)."""
    off = _one(x_offsets, "x_offsets", "dense_to_jagged")
    return _ops.dense_to_jagged(dense, off, total_L), list(x_offsets)


def jagged_2d_to_dense(values: torch.Tensor, offsets: torch.Tensor,
                       max_sequence_length: int) -> torch.Tensor:
    """``[total_L, D]`` -> ``[B, max_sequence_length, D]``, padding 0."""
    return _ops.jagged_to_padded_dense(values, offsets, max_sequence_length, 0.0)


def jagged_1d_to_dense(values: torch.Tensor, offsets: torch.Tensor, max_sequence_length: int,
                       padding_value: int = 0) -> torch.Tensor:
    """``[total_L]`` -> ``[B, max_sequence_length]``."""
    return _ops.jagged_to_padded_dense(values, offsets, max_sequence_length, float(padding_value))


def _stacked_to_dense(values, lengths, offset_per_key, max_lengths_per_key, padding_value, fn):
    if lengths.dim() != 2:
        raise ValueError(f"recops.compat.fbgemm.{fn}: lengths must be [num_keys, B], got shape "
                         f"{tuple(lengths.shape)}")
    T = lengths.size(0)
    if len(offset_per_key) != T + 1 or len(max_lengths_per_key) != T:
        raise ValueError(f"recops.compat.fbgemm.{fn}: offset_per_key needs num_keys + 1 = {T + 1} "
                         f"entries (got {len(offset_per_key)}) and max_lengths_per_key {T} (got "
                         f"{len(max_lengths_per_key)})")
    out = []
    for t in range(T):
        offsets = _ops.complete_cumsum(lengths[t])
        part = values[offset_per_key[t]:offset_per_key[t + 1]]
        out.append(_ops.jagged_to_padded_dense(part, offsets, max_lengths_per_key[t],
                                               float(padding_value)))
    return out


def stacked_jagged_1d_to_dense(values: torch.Tensor, lengths: torch.Tensor,
                               offset_per_key: List[int], max_lengths_per_key: List[int],
                               padding_value: int = 0) -> List[torch.Tensor]:
    """One ``[B, max_lengths_per_key[t]]`` dense tensor per key t of a KJT's 1-D ``values``:
    ``lengths`` is ``[num_keys, B]``, key t's values are ``values[offset_per_key[t] :
    offset_per_key[t + 1]]`` (num_keys + 1 entries, TorchRec's ``offset_per_key``; FBGEMM's
    ``stacked_jagged_1d_to_dense``; each key is ``recops.jagged_to_padded_dense``, so it is
    differentiable)."""
    return _stacked_to_dense(values, lengths, offset_per_key, max_lengths_per_key, padding_value,
                             "stacked_jagged_1d_to_dense")


def stacked_jagged_2d_to_dense(values: torch.Tensor, lengths: torch.Tensor,
                               offset_per_key: List[int], max_lengths_per_key: List[int],
                               padding_value: int = 0) -> List[torch.Tensor]:
    """The 2-D form: ``values [N, D]`` gives one ``[B, max_lengths_per_key[t], D]`` per key."""
    return _stacked_to_dense(values, lengths, offset_per_key, max_lengths_per_key, padding_value,
                             "stacked_jagged_2d_to_dense")


def pack_segments(t_in: torch.Tensor, lengths: torch.Tensor, max_length: int) -> torch.Tensor:
    """``t_in [N, *E]`` cut into ``B`` segments by ``lengths [B]`` -> ``[B, max_length, *E]``,
    zero padded, segments longer than ``max_length`` truncated (FBGEMM / Caffe2's
    ``pack_segments``; ``recops.jagged_to_padded_dense`` on the lengths' offsets, so differentiable
    in ``t_in``, with 0 for the truncated rows' gradient where FBGEMM's CPU backward leaves them
    unwritten)."""
    return pack_segments_v2(t_in, lengths, max_length)[0]


def pack_segments_v2(t_in: torch.Tensor, lengths: torch.Tensor, max_length: int,
                     pad_minf: bool = False, return_presence_mask: bool = False
                     ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """``pack_segments`` padding with ``-inf`` when ``pad_minf``, and with ``return_presence_mask``
    also the ``[B, max_length]`` bool mask of the positions holding a row (else None)."""
    out = _ops.jagged_to_padded_dense(t_in, _ops.complete_cumsum(lengths), max_length,
                                      float("-inf") if pad_minf else 0.0)
    mask = None
    if return_presence_mask:
        pos = torch.arange(max_length, device=lengths.device)
        mask = pos.unsqueeze(0) < lengths.reshape(-1, 1)
    return out, mask


def asynchronous_batched_complete_cumsum(values: torch.Tensor) -> torch.Tensor:
    """``[B, n]`` -> ``[B, n+1]``: each row's complete cumsum (FBGEMM's batched form; 2-D only, as
    FBGEMM's)."""
    if values.dim() != 2:
        raise ValueError(f"recops.compat.fbgemm.asynchronous_batched_complete_cumsum: values must "
                         f"be 2-D [B, n], got shape {tuple(values.shape)}")
    return _ops.asynchronous_complete_cumsum(values)


def invert_permute(permute: torch.Tensor) -> torch.Tensor:
    """``inv`` with ``inv[permute[i]] = i`` (``permute`` a permutation of ``0..n-1``)."""
    inv = torch.empty_like(permute)
    inv[permute.long()] = torch.arange(permute.numel(), dtype=permute.dtype,
                                       device=permute.device)
    return inv


def offsets_range(offsets: torch.Tensor, range_size: int) -> torch.Tensor:
    """``out[i] = i - offsets[k]`` for the last k with ``offsets[k] <= i`` (0 before
    ``offsets[0]``), ``i < range_size``: each segment's positions 0, 1, ... given its start
    offsets (FBGEMM's ``offsets_range``; a composition of torch ops, no host sync)."""
    if offsets.dim() != 1:
        raise ValueError(f"recops.compat.fbgemm.offsets_range: offsets must be 1-D, got shape "
                         f"{tuple(offsets.shape)}")
    if range_size < 0:
        raise ValueError(f"recops.compat.fbgemm.offsets_range: range_size={range_size} must be "
                         f">= 0")
    idx = torch.arange(range_size, dtype=offsets.dtype, device=offsets.device)
    if offsets.numel() == 0:
        return torch.zeros_like(idx)
    seg = torch.searchsorted(offsets, idx, right=True) - 1
    start = offsets[seg.clamp(min=0)]
    return torch.where(seg >= 0, idx - start, torch.zeros_like(idx))


def batched_dense_vec_jagged_2d_mul(v: torch.Tensor, a_values: torch.Tensor,
                                    a_offsets: torch.Tensor) -> torch.Tensor:
    """``out[b·H + h] = v[b·H + h, :n_b] · A_b[:n_b, h·D:(h+1)·D]`` with ``v [B·H, max_N]``,
    ``a_values [total_L, H·D]`` jagged by ``a_offsets [B+1]`` and ``n_b = min(L_b, max_N)``;
    returns ``[B·H, D]`` (FBGEMM's ``batched_dense_vec_jagged_2d_mul``). Composed of
    ``recops.dense_to_jagged`` and one ``recops.jagged_jagged_bmm`` per head, so it is
    differentiable in ``v`` and ``a_values``."""
    fn = "recops.compat.fbgemm.batched_dense_vec_jagged_2d_mul"
    if v.dim() != 2 or a_values.dim() != 2 or a_offsets.dim() != 1:
        raise ValueError(f"{fn}: v must be [B*H, max_N], a_values [total_L, H*D] and a_offsets "
                         f"[B+1]; got {tuple(v.shape)}, {tuple(a_values.shape)}, "
                         f"{tuple(a_offsets.shape)}")
    B = a_offsets.numel() - 1
    if B < 0 or (B == 0 and v.size(0) != 0) or (B > 0 and v.size(0) % B != 0):
        raise ValueError(f"{fn}: v has {v.size(0)} rows, not a multiple of B = {B} "
                         f"(a_offsets has {a_offsets.numel()} entries)")
    H = v.size(0) // B if B > 0 else 1
    if a_values.size(1) % H != 0:
        raise ValueError(f"{fn}: a_values has {a_values.size(1)} columns, not a multiple of "
                         f"H = {H}")
    D, max_N = a_values.size(1) // H, v.size(1)
    # v as jagged rows [total_L, H]: row n of sequence b holds v[b·H + h, n] (0 past max_N).
    x = _ops.dense_to_jagged(v.reshape(B, H, max_N).transpose(1, 2), a_offsets, a_values.size(0))
    outs = [_ops.jagged_jagged_bmm(x[:, h:h + 1], a_values[:, h * D:(h + 1) * D], a_offsets,
                                   max_N) for h in range(H)]  # each [B, 1, D]
    return torch.cat(outs, dim=1).reshape(B * H, D)


def asynchronous_complete_cumsum(t_in: torch.Tensor) -> torch.Tensor:
    """``[n]`` -> ``[n+1]`` (``[R, n]`` -> ``[R, n+1]``), input dtype."""
    return _ops.asynchronous_complete_cumsum(t_in)


def asynchronous_exclusive_cumsum(t_in: torch.Tensor) -> torch.Tensor:
    return _ops.asynchronous_exclusive_cumsum(t_in)


def asynchronous_inclusive_cumsum(t_in: torch.Tensor) -> torch.Tensor:
    return _ops.asynchronous_inclusive_cumsum(t_in)


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


def permute_sparse_data(permute: torch.Tensor, lengths: torch.Tensor, values: torch.Tensor,
                        weights: Optional[torch.Tensor] = None,
                        permuted_lengths_sum: Optional[int] = None
                        ) -> Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
    """FBGEMM's older name of ``permute_2D_sparse_data`` (the same arguments and returns)."""
    return permute_2D_sparse_data(permute, lengths, values, weights, permuted_lengths_sum)


def permute_2D_sparse_data_input1D(permute: torch.Tensor, lengths: torch.Tensor,
                                   values: torch.Tensor, stride: int,
                                   weights: Optional[torch.Tensor] = None,
                                   permuted_lengths_sum: Optional[int] = None
                                   ) -> Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
    """``permute_2D_sparse_data`` with ``lengths`` flattened to 1-D (``[T * stride]``, read as
    ``[T, stride]``) and the permuted lengths returned 1-D, as TorchRec calls it under
    ``torch.compile``."""
    if stride <= 0 or lengths.numel() % stride != 0:
        raise ValueError(f"recops.compat.fbgemm.permute_2D_sparse_data_input1D: lengths has "
                         f"{lengths.numel()} entries, not a multiple of stride = {stride}")
    out = permute_2D_sparse_data(permute, lengths.reshape(-1, stride), values, weights,
                                 permuted_lengths_sum)
    return out[0].reshape(-1), out[1], out[2]
