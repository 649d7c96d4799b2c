"""Helpers of the GDN sub-ops' tests (chunk_scaled_dot_kkt, solve_tril, recompute_w_u_fwd,
chunk_fwd_o, chunk_bwd_dv_local, chunk_gated_delta_rule_fwd_h, chunk_gated_delta_rule_bwd_dhu,
chunk_bwd_dqkwg, prepare_wy_repr_bwd) and of the composed chunk_gated_delta_rule: the sequences of
a case, its chunks and chunk count and the gate input G as fla's tests condition it. Not collected itself
(the leading underscore); each op's test_<op>.py imports it."""

import math

import torch

import recops


def sequences(B, T, cu_seqlens):
    """(batch row, first, one past last) of every sequence: the B rows, or the packed ones."""
    if cu_seqlens is None:
        return [(b, 0, T) for b in range(B)]
    c = cu_seqlens.tolist()
    return [(0, c[n], c[n + 1]) for n in range(len(c) - 1)]


def n_chunks(B, T, cu_seqlens, bt):
    """h's NT: ceil(T / bt) per batch row, or the chunk count of the packed sequences."""
    if cu_seqlens is None:
        return (T + bt - 1) // bt
    return sum((e - s + bt - 1) // bt for _, s, e in sequences(B, T, cu_seqlens))


def chunks(B, T, cu_seqlens, bt):
    """(batch row, first, end, index in h) of every chunk, in fla's order."""
    out = []
    if cu_seqlens is None:
        for b in range(B):
            for ci, s in enumerate(range(0, T, bt)):
                out.append((b, s, min(s + bt, T), ci))
        return out
    c = cu_seqlens.tolist()
    for n in range(len(c) - 1):
        for s in range(c[n], c[n + 1], bt):
            out.append((0, s, min(s + bt, c[n + 1]), len(out)))
    return out


def gate_cumsum(gen, B, T, HV, chunk_size, cu, log2):
    """G [B, T, HV] fp32: recops' chunk-local cumsum of logsigmoid(U(0, 1)) drawn from gen (in
    log2 units with log2)."""
    decay = torch.nn.functional.logsigmoid(torch.rand(B, T, HV, generator=gen,
                                                      dtype=torch.float64))
    if log2:
        decay = decay / math.log(2.0)
    return recops.chunk_local_cumsum(decay.float(), chunk_size, seq_offsets=cu)
