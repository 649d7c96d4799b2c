"""Plain PyTorch compositions of the recops ops: the oracle of the binding tests (exact for these
data-movement and integer ops) and the peers of bench/jagged_peers.py."""

import torch


_BIT_MOVED = (torch.float8_e4m3fn,)  # dtypes torch's CPU indexing lacks: moved as uint8 bits


def jagged_to_padded_dense(values, seq_offsets, max_seq_len, padding_value=0.0):
    """[total_L, *E] -> [B, max_L, *E]: a padded tensor, then one masked gather of valid rows."""
    if values.dtype in _BIT_MOVED:
        pad_bits = int(torch.tensor([padding_value]).to(values.dtype).view(torch.uint8)[0])
        out = jagged_to_padded_dense(values.view(torch.uint8), seq_offsets, max_seq_len, pad_bits)
        return out.view(values.dtype)
    offsets = seq_offsets.to(torch.int64)
    B = offsets.numel() - 1
    out = torch.full((B, max_seq_len, *values.shape[1:]), padding_value, dtype=values.dtype,
                     device=values.device)
    if B == 0 or max_seq_len == 0:
        return out
    lengths = (offsets[1:] - offsets[:-1]).clamp(max=max_seq_len)
    pos = torch.arange(max_seq_len, device=values.device)
    mask = pos[None, :] < lengths[:, None]  # [B, max_L]
    src = (offsets[:-1, None] + pos[None, :])[mask]
    out[mask] = values[src]
    return out


def dense_to_jagged(dense, seq_offsets, total_L=None):
    """[B, S, *E] -> [total_L, *E]: row (b, l) = dense[b, l] for l < S, 0 beyond."""
    if dense.dtype in _BIT_MOVED:
        return dense_to_jagged(dense.view(torch.uint8), seq_offsets, total_L).view(dense.dtype)
    offsets = seq_offsets.to(torch.int64)
    if total_L is None:
        total_L = int(offsets[-1])
    B, S = dense.shape[0], dense.shape[1]
    out = torch.zeros((total_L, *dense.shape[2:]), dtype=dense.dtype, device=dense.device)
    if total_L == 0 or B == 0:
        return out
    lengths = offsets[1:] - offsets[:-1]
    b_idx = torch.repeat_interleave(torch.arange(B, device=dense.device), lengths)
    l_idx = torch.arange(total_L, device=dense.device) - offsets[:-1][b_idx]
    keep = l_idx < S
    out[keep] = dense[b_idx[keep], l_idx[keep]]
    return out


def complete_cumsum(t, out_dtype=None):
    out_dtype = out_dtype or t.dtype
    c = torch.cumsum(t.to(torch.int64), dim=-1)
    c = torch.nn.functional.pad(c, (1, 0))
    return c.to(out_dtype)


def inclusive_cumsum(t, out_dtype=None):
    out_dtype = out_dtype or t.dtype
    return torch.cumsum(t.reshape(-1).to(torch.int64), 0).reshape(t.shape).to(out_dtype)


def exclusive_cumsum(t, out_dtype=None):
    out_dtype = out_dtype or t.dtype
    flat = t.reshape(-1).to(torch.int64)
    return (torch.cumsum(flat, 0) - flat).reshape(t.shape).to(out_dtype)


def int32_overflows(t, op):
    """True when the exact int64 result does not fit int32."""
    flat = t.reshape(-1).to(torch.int64) if op != "complete_cumsum" else t.to(torch.int64)
    c = torch.cumsum(flat, dim=-1)
    if c.numel() == 0:
        return False
    return bool((c > 2**31 - 1).any() or (c < -(2**31)).any())
