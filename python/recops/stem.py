"""Sparse long-context prefill, the Stem pipeline (``stem_indexer.md``): wrappers of
``torch.ops.recops.stem_prepare`` / ``stem_indexer`` / ``stem_indexer_metadata`` /
``block_sparse_attention`` (argument names, defaults, docs; no math) and two helpers that turn the
indexer's output into a dense block mask or a FlexAttention ``BlockMask``.

Pipeline::

    qflat, kflat, vbias = stem_prepare(q, k, v, cu_seqlens_q, kv_seq_lens, cu_seqlens_kv=...)
    meta = stem_indexer_metadata(q_seq_lens, kv_seq_lens, Nq, Nk, dim_qkflat=qflat.shape[-1])
    idx, n = stem_indexer(qflat, kflat, vbias, q_seq_lens, kv_seq_lens, metadata=meta)
    out, lse = block_sparse_attention(q, k, v, idx, n, cu_seqlens_q=..., kv_seq_lens=...,
                                      cu_seqlens_kv=...)

Letters: ``B`` batches, ``Nq``/``Nk`` query/KV heads (``Nq % Nk == 0``), ``D`` head dim,
``Bs = stem_block_size`` (128), ``Ts = stem_stride`` (16), ``R = Bs/Ts``, ``Df = Ts·D``; per batch
``Lq``, ``Lk`` tokens, ``Qb = ceil(Lq/Bs)``, ``Kb = ceil(Lk/Bs)``; ``Qmax``/``Kmax`` the padded
block dimensions. Errors (spec §10): ``TypeError`` for dtypes, ``NotImplementedError`` for
unsupported devices/shapes, ``ValueError`` otherwise; each names the argument and the rule.
"""

from typing import Optional, Tuple

import torch

_ops = torch.ops.recops


def stem_prepare(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens_q: torch.Tensor,
    kv_seq_lens: torch.Tensor,
    *,
    cu_seqlens_kv: Optional[torch.Tensor] = None,
    block_table: Optional[torch.Tensor] = None,
    q_scale: Optional[torch.Tensor] = None,
    k_scale: Optional[torch.Tensor] = None,
    v_scale: Optional[torch.Tensor] = None,
    max_q_blocks: int = -1,
    max_kv_blocks: int = -1,
    stem_block_size: int = 128,
    stem_stride: int = 16,
    lambda_mag: float = 0.3,
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Block representatives and the value-magnitude bias (spec §6).

    ``qflat[b,hq,i, g·D:(g+1)·D] = bf16(Σ_r q[i·Bs + g + r·Ts])`` (natural group order),
    ``kflat`` the same over keys with the groups mirrored (``Ts-1-g``), and
    ``vbias[b,hk,j] = (1/R) Σ_r λ·max(0, z_{jR+r})`` with ``z`` the standardised log of the
    per-group max value norm over the padded ``R·Kb`` groups.

    Args:
        q: ``[Tq, Nq, D]`` bf16/fp16/float8_e4m3fn, packed by ``cu_seqlens_q`` ``[B+1]`` int32.
        k, v: q's dtype; packed ``[Tk, Nk, D]`` with ``cu_seqlens_kv`` ``[B+1]``, or paged
            ``[pages, page_size, Nk, D]`` with ``block_table`` ``[B, max_pages]`` (exactly one).
        kv_seq_lens: ``[B]`` int32 key tokens per batch.
        q_scale, k_scale: fp32 ``[1]`` or per token and head; v_scale: ``[1]`` or ``[Nk]``.
        max_q_blocks, max_kv_blocks: ``Qmax``/``Kmax``; -1 reads the lengths on the host (not
            allowed under ``torch.compile``: pass them).
    Returns:
        ``qflat`` bf16 ``[B, Nq, Qmax, Df]``, ``kflat`` bf16 ``[B, Nk, Kmax, Df]``,
        ``vbias`` fp32 ``[B, Nk, Kmax]``.
    """
    return _ops.stem_prepare(
        q, k, v, cu_seqlens_q, kv_seq_lens, cu_seqlens_kv=cu_seqlens_kv, block_table=block_table,
        q_scale=q_scale, k_scale=k_scale, v_scale=v_scale, max_q_blocks=max_q_blocks,
        max_kv_blocks=max_kv_blocks, stem_block_size=stem_block_size, stem_stride=stem_stride,
        lambda_mag=lambda_mag)


def stem_indexer_metadata(
    q_seq_lens: torch.Tensor,
    kv_seq_lens: torch.Tensor,
    q_heads: int,
    kv_heads: int,
    *,
    causal: bool = True,
    stem_block_size: int = 128,
    dim_qkflat: int = 2048,
    window_size: int = 4,
) -> torch.Tensor:
    """The optional load-balancing plan of ``stem_indexer`` (spec §5): int32
    ``[2·B·kv_heads + 17]``. Results are identical with and without it; a plan made for other
    lengths, heads or attributes raises ``ValueError`` in ``stem_indexer``."""
    return _ops.stem_indexer_metadata(
        q_seq_lens, kv_seq_lens, q_heads, kv_heads, causal=causal,
        stem_block_size=stem_block_size, dim_qkflat=dim_qkflat, window_size=window_size)


def stem_indexer(
    qflat: torch.Tensor,
    kflat: torch.Tensor,
    vbias: torch.Tensor,
    q_seq_lens: torch.Tensor,
    kv_seq_lens: torch.Tensor,
    *,
    num_prompt_tokens: Optional[torch.Tensor] = None,
    metadata: Optional[torch.Tensor] = None,
    causal: bool = True,
    stem_block_size: int = 128,
    stem_stride: int = 16,
    alpha: float = 1.0,
    initial_blocks: int = 4,
    window_size: int = 4,
    k_block_num_rate_medium: float = 0.2,
    k_block_num_bias_medium: int = 30,
    k_block_num_rate_large: float = 0.1,
    k_block_num_bias_large: int = 30,
    topk_score_precision: int = 1,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Block selection (spec §3.2). For each (batch, query head, query block ``i``): the visible
    key blocks ``[0, V)`` (right-down causal by block counts), the forced sink ``[0, I)`` and
    window ``[V-Wn, V)`` blocks, and the ``K̂`` best other blocks by
    ``S_j = <qflat_i, kflat_j>/R² + vbias_j`` (ties to the lower ``j``; ``K̂`` from the
    position-decay budget of the prompt's block count ``P``, capped at 256).

    Args:
        qflat: bf16 ``[B, Nq, Qmax, Df]``; kflat: bf16 ``[B, Nk, Kmax, Df]``;
            vbias: fp32 ``[B, Nk, Kmax]`` (``stem_prepare``'s outputs).
        q_seq_lens, kv_seq_lens: int32 ``[B]`` tokens; num_prompt_tokens: int32 ``[B]``
            (>= kv_seq_lens, default kv_seq_lens) picks the budget tier.
        metadata: the plan of ``stem_indexer_metadata`` (optional).
        topk_score_precision: 1 ranks fp32 scores, 2 ranks their bf16 rounding.
    Returns:
        ``sparse_indices`` int32 ``[B, Nq, Qmax, Kmax]`` (the row's ``L`` ids in any order, then
        -1) and ``sparse_seq_len`` int32 ``[B, Nq, Qmax]`` (``L``; 0 for empty rows).
    """
    return _ops.stem_indexer(
        qflat, kflat, vbias, q_seq_lens, kv_seq_lens, num_prompt_tokens=num_prompt_tokens,
        metadata=metadata, causal=causal, stem_block_size=stem_block_size,
        stem_stride=stem_stride, alpha=alpha, initial_blocks=initial_blocks,
        window_size=window_size, k_block_num_rate_medium=k_block_num_rate_medium,
        k_block_num_bias_medium=k_block_num_bias_medium,
        k_block_num_rate_large=k_block_num_rate_large,
        k_block_num_bias_large=k_block_num_bias_large,
        topk_score_precision=topk_score_precision)


def block_sparse_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    sparse_indices: torch.Tensor,
    sparse_seq_len: torch.Tensor,
    *,
    cu_seqlens_q: torch.Tensor,
    kv_seq_lens: torch.Tensor,
    cu_seqlens_kv: Optional[torch.Tensor] = None,
    block_table: Optional[torch.Tensor] = None,
    softmax_scale: Optional[float] = None,
    causal: bool = True,
    sparse_block_size: int = 128,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Softmax attention over the selected key blocks only (spec §7). Query token ``t`` of
    batch ``b`` (block ``i = t // Bs``) attends to the keys ``s`` of its row's selected blocks
    with ``s < Lk`` and, when causal, ``s <= Lk - Lq + t`` (right-down, cut at token level); GQA
    maps query head ``hq`` to KV head ``hq // (Nq/Nk)``; fp32 softmax; a row without keys gives
    0 and ``lse = -inf``.

    Args:
        q: bf16/fp16 ``[Tq, Nq, D]``; k, v: packed ``[Tk, Nk, D]`` (``cu_seqlens_kv``) or paged
            ``[pages, page_size, Nk, D]`` (``block_table``).
        sparse_indices, sparse_seq_len: ``stem_indexer``'s outputs (ids unique, in ``[0, Kb)``).
        softmax_scale: default ``1/sqrt(D)``.
    Returns:
        ``out`` ``[Tq, Nq, D]`` in q's dtype and ``lse`` fp32 ``[Nq, Tq]`` (natural log).
    """
    return _ops.block_sparse_attention(
        q, k, v, sparse_indices, sparse_seq_len, cu_seqlens_q=cu_seqlens_q,
        kv_seq_lens=kv_seq_lens, cu_seqlens_kv=cu_seqlens_kv, block_table=block_table,
        softmax_scale=softmax_scale, causal=causal, sparse_block_size=sparse_block_size)


def to_dense_block_mask(sparse_indices: torch.Tensor, sparse_seq_len: torch.Tensor) -> torch.Tensor:
    """uint8 ``[B, Nq, Qmax, Kmax]``: 1 where ``j`` is in the row's valid prefix (a scatter)."""
    kmax = sparse_indices.shape[-1]
    valid = torch.arange(kmax, device=sparse_indices.device) < sparse_seq_len.unsqueeze(-1)
    ids = torch.where(valid, sparse_indices.long(), torch.full_like(sparse_indices, kmax).long())
    mask = torch.zeros(*sparse_indices.shape[:-1], kmax + 1, dtype=torch.uint8,
                       device=sparse_indices.device)
    mask.scatter_(-1, ids, 1)
    return mask[..., :kmax].contiguous()


def to_flex_block_mask(
    sparse_indices: torch.Tensor,
    sparse_seq_len: torch.Tensor,
    q_seq_lens: torch.Tensor,
    kv_seq_lens: torch.Tensor,
    *,
    causal: bool = True,
    block_size: int = 128,
):
    """A FlexAttention ``BlockMask`` for padded ``[B, Nq, Qmax·Bs, D]`` queries and
    ``[B, Nk, Kmax·Bs, D]`` keys (use ``enable_gqa=True`` when ``Nq != Nk``): the selected
    blocks as partial blocks, with a ``mask_mod`` for the token rule of
    ``block_sparse_attention`` (``kv < Lk``, ``q < Lq``, causal ``kv <= Lk - Lq + q``)."""
    from torch.nn.attention.flex_attention import BlockMask

    qmax, kmax = sparse_indices.shape[2], sparse_indices.shape[3]
    lq = q_seq_lens.to(torch.int64)
    lk = kv_seq_lens.to(torch.int64)

    def mask_mod(b, h, q_idx, kv_idx):
        ok = (kv_idx < lk[b]) & (q_idx < lq[b])
        if causal:
            ok = ok & (kv_idx <= lk[b] - lq[b] + q_idx)
        return ok

    return BlockMask.from_kv_blocks(
        sparse_seq_len.to(torch.int32),
        sparse_indices.clamp_min(0).to(torch.int32),
        BLOCK_SIZE=block_size,
        mask_mod=mask_mod,
        seq_lengths=(qmax * block_size, kmax * block_size),
    )
