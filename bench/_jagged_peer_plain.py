"""Plain PyTorch peers of bench/jagged_peers.py: each jagged op written as a composition of stock
torch ops, a few honest formulations per op (the bench reports the fastest). Every function starts
from what the recops op receives (values or dense, offsets on the device) so that index building is
timed too, and is differentiable through autograd where the op is.

Size letters as in jagged_ops.md: B sequences, total_L jagged rows, max_L (S for a dense operand)
the truncation bound, D the row width.
"""

from __future__ import annotations

import torch


def row_coords(offsets, total_L):
    """(b, l) of every jagged row: its sequence and its position in it."""
    B = offsets.numel() - 1
    lengths = offsets[1:] - offsets[:-1]
    b = torch.repeat_interleave(torch.arange(B, device=offsets.device), lengths,
                                output_size=total_L)
    return b, torch.arange(total_L, device=offsets.device) - offsets[:-1][b]


def valid_mask(offsets, S):
    """[B, S] bool: position l of sequence b holds a jagged row (l < min(L_b, S))."""
    lengths = offsets[1:] - offsets[:-1]
    return torch.arange(S, device=offsets.device)[None, :] < lengths[:, None]


# ---- conversions ----------------------------------------------------------------------------------
def to_dense_masked(values, offsets, max_L, pad):
    """Padded tensor + boolean-mask index_put of the valid rows (FBGEMM's benchmark reference)."""
    B = offsets.numel() - 1
    out = torch.full((B, max_L, *values.shape[1:]), pad, dtype=values.dtype, device=values.device)
    mask = valid_mask(offsets, max_L)
    pos = torch.arange(max_L, device=values.device)
    out[mask] = values[(offsets[:-1, None] + pos[None, :])[mask]]
    return out


def to_dense_index_copy(values, offsets, max_L, pad):
    """Padded tensor + index_copy of the valid jagged rows to their flat dense rows."""
    B = offsets.numel() - 1
    out = torch.full((B * max_L, *values.shape[1:]), pad, dtype=values.dtype, device=values.device)
    b, l = row_coords(offsets, values.shape[0])
    keep = l < max_L
    out.index_copy_(0, (b * max_L + l)[keep], values[keep])
    return out.view(B, max_L, *values.shape[1:])


def to_jagged_masked(dense, offsets, total_L):
    """Zeros + mask gather of the valid dense positions, scattered to their jagged rows."""
    S = dense.shape[1]
    out = torch.zeros((total_L, *dense.shape[2:]), dtype=dense.dtype, device=dense.device)
    mask = valid_mask(offsets, S)
    pos = torch.arange(S, device=dense.device)
    out[(offsets[:-1, None] + pos[None, :])[mask]] = dense[mask]
    return out


def to_jagged_index(dense, offsets, total_L):
    """Row index gather: dense[b(r), l(r)] for every jagged row r, zeroed where l >= S."""
    B, S = dense.shape[:2]
    if S == 0:
        return torch.zeros((total_L, *dense.shape[2:]), dtype=dense.dtype, device=dense.device)
    b, l = row_coords(offsets, total_L)
    keep = l < S
    rows = torch.where(keep, b * S + l, torch.zeros_like(l))
    out = dense.reshape(B * S, *dense.shape[2:]).index_select(0, rows)
    if not bool(keep.all()):
        out[~keep] = 0
    return out


def _gather_dense(y, offsets, total_L):
    """y[b(r), l(r)] for every jagged row r (row 0 of y where l >= S) and the keep mask."""
    B, S = y.shape[:2]
    b, l = row_coords(offsets, total_L)
    keep = l < S
    rows = torch.where(keep, b * S + l, torch.zeros_like(l))
    return y.reshape(B * S, *y.shape[2:]).index_select(0, rows), keep[:, None]


# ---- elementwise (jagged out) ---------------------------------------------------------------------
def add_index(x, offsets, y):
    """x + y gathered at every jagged row; rows past y's S pass x through."""
    g, keep = _gather_dense(y, offsets, x.shape[0])
    return torch.where(keep, x + g, x)


def add_masked(x, offsets, y):
    """x cloned, then the valid rows += y's valid positions (mask index)."""
    mask = valid_mask(offsets, y.shape[1])
    rows = (offsets[:-1, None] + torch.arange(y.shape[1], device=x.device)[None, :])[mask]
    return x.index_add(0, rows, y[mask])


def mul_index(x, offsets, y):
    """x * y gathered at every jagged row; 0 past y's S."""
    g, keep = _gather_dense(y, offsets, x.shape[0])
    return torch.where(keep, x * g, torch.zeros((), dtype=x.dtype, device=x.device))


def mul_masked(x, offsets, y):
    """Zeros, then the valid rows = x[rows] * y's valid positions (mask index)."""
    mask = valid_mask(offsets, y.shape[1])
    rows = (offsets[:-1, None] + torch.arange(y.shape[1], device=x.device)[None, :])[mask]
    out = torch.zeros_like(x)
    out[rows] = x[rows] * y[mask]
    return out


# ---- softmax along the jagged axis ----------------------------------------------------------------
def softmax_padded(x, offsets, max_L):
    """-inf padded [B, max_L, H], torch.softmax over the sequence axis, gathered back."""
    dense = to_dense_index_copy(x, offsets, max_L, float("-inf"))
    return to_jagged_index(torch.softmax(dense, dim=1), offsets, x.shape[0])


def softmax_segment(x, offsets, max_L):
    """Per-segment max (scatter_reduce), exp, per-segment sum (index_add), in fp32; truncated
    rows 0. The max is detached: the softmax does not depend on the shift."""
    B = offsets.numel() - 1
    b, l = row_coords(offsets, x.shape[0])
    keep = (l < max_L)[:, None]
    xf = torch.where(keep, x.float(), float("-inf"))
    idx = b[:, None].expand_as(xf)
    m = torch.full((B, x.shape[1]), float("-inf"), device=x.device)
    m = m.scatter_reduce(0, idx, xf.detach(), "amax")
    e = torch.exp(xf - m[b])
    s = torch.zeros((B, x.shape[1]), device=x.device).index_add(0, b, e)
    return torch.where(keep, e / s[b], 0.0).to(x.dtype)


# ---- bmm ------------------------------------------------------------------------------------------
def dense_bmm_padded(x, offsets, y, max_L):
    """Pad x to [B, max_L, K], torch.bmm with y [B, K, N], gather the valid rows back."""
    xp = to_dense_index_copy(x, offsets, max_L, 0.0)
    return to_jagged_index(torch.bmm(xp, y), offsets, x.shape[0])


def dense_bmm_loop(x, offsets, y, max_L):
    """One matmul per sequence (offsets read on the host: a sync, counted); truncated rows 0."""
    o = offsets.tolist()
    parts = []
    for b in range(len(o) - 1):
        n = min(o[b + 1] - o[b], max_L)
        parts.append(x[o[b]:o[b] + n] @ y[b])
        if o[b + 1] - o[b] > n:
            parts.append(x.new_zeros(o[b + 1] - o[b] - n, y.shape[2]))
    return torch.cat(parts) if parts else x.new_zeros(0, y.shape[2])


def jagged_bmm_padded(x, y, offsets, max_L):
    """Pad both to [B, max_L, *], then torch.bmm(xpᵀ, yp): [B, M, N]."""
    xp = to_dense_index_copy(x, offsets, max_L, 0.0)
    yp = to_dense_index_copy(y, offsets, max_L, 0.0)
    return torch.bmm(xp.transpose(1, 2), yp)


def jagged_bmm_loop(x, y, offsets, max_L):
    """One xᵀ·y matmul per sequence (offsets read on the host: a sync, counted)."""
    o = offsets.tolist()
    outs = []
    for b in range(len(o) - 1):
        n = min(o[b + 1] - o[b], max_L)
        outs.append(x[o[b]:o[b] + n].t() @ y[o[b]:o[b] + n])
    return torch.stack(outs)


# ---- attention -----------------------------------------------------------------------------------
def _key_fill(offsets, mask):
    """-inf where a key position is padding, but 0 for every position of an empty sequence: its
    softmax is then finite (and zeroed after), so no NaN reaches the gradients of k or the bias."""
    nonempty = (offsets[1:] > offsets[:-1]).view(-1, *([1] * (mask.dim() - 1)))
    return torch.where(nonempty, float("-inf"), 0.0)


def dense_flash_attention_padded(q, k, v, attn_bias, offsets, max_L):
    """q, v padded to [B, max_L, D]; s = q k + bias [B, max_L, T], -inf on padding; softmax over
    the sequence axis in fp32, rounded to the input dtype; out = pᵀ v [B, T, D]."""
    qp = to_dense_index_copy(q, offsets, max_L, 0.0)
    vp = to_dense_index_copy(v, offsets, max_L, 0.0)
    s = torch.bmm(qp, k) + attn_bias[:, :max_L]
    mask = valid_mask(offsets, max_L)[:, :, None]
    s = torch.where(mask, s, _key_fill(offsets, mask).to(s.dtype))
    p = torch.where(mask, torch.softmax(s.float(), dim=1), 0.0).to(q.dtype)
    return torch.bmm(p.transpose(1, 2), vp)


def multi_head_flash_attention_padded(q, k, v, offsets, max_L):
    """q, k, v [H, total_L, D] padded to [B, H, max_L, D]; s = q kᵀ with -inf on padded keys;
    softmax in fp32 / max_L, rounded to the input dtype; p v gathered back to [H, total_L, D]."""
    total_L = q.shape[1]

    def pad(x):  # [H, total_L, D] -> [B, H, max_L, D]
        return to_dense_index_copy(x.transpose(0, 1), offsets, max_L, 0.0).transpose(1, 2)

    qp, kp, vp = pad(q), pad(k), pad(v)
    s = torch.matmul(qp, kp.transpose(2, 3))
    mask = valid_mask(offsets, max_L)[:, None, None, :]
    s = torch.where(mask, s, _key_fill(offsets, mask).to(s.dtype))
    p = (torch.where(mask, torch.softmax(s.float(), dim=-1), 0.0) / max(max_L, 1)).to(q.dtype)
    out = torch.matmul(p, vp)  # [B, H, max_L, D]; rows m >= n_b dropped below
    return to_jagged_index(out.transpose(1, 2), offsets, total_L).transpose(0, 1)


# ---- segment_sum_csr / jagged_index_select ---------------------------------------------------------
def segment_sum_reduce(batch_size, csr_seg, values):
    """torch.segment_reduce over offsets csr_seg * batch_size (empty segments sum to 0)."""
    return torch.segment_reduce(values, "sum", offsets=csr_seg * batch_size, axis=0)


def segment_sum_index_add(batch_size, csr_seg, values):
    """Segment id per value, index_add into fp32 (fp64 for fp64), cast back."""
    S = csr_seg.numel() - 1
    lengths = (csr_seg[1:] - csr_seg[:-1]) * batch_size
    seg = torch.repeat_interleave(torch.arange(S, device=values.device), lengths,
                                  output_size=values.numel())
    acc = torch.float64 if values.dtype == torch.float64 else torch.float32
    out = torch.zeros(S, dtype=acc, device=values.device).index_add(0, seg, values.to(acc))
    return out.to(values.dtype)


def index_select_rows(values, lengths, indices, num_rows):
    """Row index of every selected row (sequence starts from a cumsum), then one index_select."""
    starts = torch.cumsum(lengths, 0) - lengths
    sel = lengths[indices]
    k = torch.repeat_interleave(torch.arange(indices.numel(), device=values.device), sel,
                                output_size=num_rows)
    out_starts = torch.cumsum(sel, 0) - sel
    rows = torch.arange(num_rows, device=values.device) - out_starts[k] + starts[indices][k]
    return values.index_select(0, rows)


def cumsum_plain(kind, t):
    if kind == "complete_cumsum":
        return torch.nn.functional.pad(torch.cumsum(t, -1, dtype=t.dtype), (1, 0))
    flat = t.reshape(-1)
    c = torch.cumsum(flat, 0, dtype=t.dtype)
    return (c - flat if kind == "exclusive_cumsum" else c).reshape(t.shape)


# ---- concat_1d_jagged -----------------------------------------------------------------------------
def _part_offsets(values, offsets):
    """A part's offsets; a dense part ([B] or [B, S], offsets None) counts S per sample."""
    if offsets is not None:
        return offsets
    S = values.shape[1] if values.dim() == 2 else 1
    return torch.arange(values.shape[0] + 1, device=values.device) * S


def concat_1d_gather(va, oa, vb, ob):
    """Per sample [A_b, B_b]: the output's source index in cat([A, B]) built by scattering each
    part's output positions, then one gather (differentiable through autograd)."""
    oa, ob = _part_offsets(va, oa), _part_offsets(vb, ob)
    Ta, Tb = va.numel(), vb.numel()
    out_off = oa + ob
    ba, na = row_coords(oa, Ta)
    bb, nb = row_coords(ob, Tb)
    pos_a = out_off[:-1][ba] + na
    pos_b = out_off[:-1][bb] + (oa[1:] - oa[:-1])[bb] + nb
    perm = torch.empty(Ta + Tb, dtype=torch.int64, device=va.device)
    perm[pos_a] = torch.arange(Ta, device=va.device)
    perm[pos_b] = torch.arange(Ta, Ta + Tb, device=va.device)
    return torch.cat([va.reshape(-1), vb.reshape(-1)])[perm], out_off


# ---- permute_1D / permute_2D_sparse_data ----------------------------------------------------------
def permute_sparse_gather(permute, lengths, values, weights, permuted_lengths_sum=None):
    """Output segment i is input segment permute[i] (1-D lengths [S]) or feature row permute[i]
    (2-D lengths [T, B]): the segments' starts from a cumsum, every output element's source index
    by repeat_interleave, then one gather of values (and weights). The output size is read back
    unless given."""
    two_d = lengths.dim() == 2
    B = lengths.shape[1] if two_d else 1
    flat = lengths.reshape(-1).to(torch.int64)
    starts = torch.zeros(flat.numel() + 1, dtype=torch.int64, device=flat.device)
    torch.cumsum(flat, 0, out=starts[1:])
    if two_d:
        seg = (permute.to(torch.int64)[:, None] * B
               + torch.arange(B, device=flat.device)[None, :]).reshape(-1)
    else:
        seg = permute.to(torch.int64)
    out_len = flat[seg]
    total = int(out_len.sum()) if permuted_lengths_sum is None else permuted_lengths_sum
    out_starts = torch.cumsum(out_len, 0) - out_len
    src = (torch.repeat_interleave(starts[:-1][seg] - out_starts, out_len, output_size=total)
           + torch.arange(total, device=flat.device))
    pl = (out_len.reshape(-1, B) if two_d else out_len).to(lengths.dtype)
    return pl, values[src], (weights[src] if weights is not None else None)
