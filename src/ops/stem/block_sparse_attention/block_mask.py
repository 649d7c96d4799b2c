"""The Stem family's block-mask helpers (``stem_indexer.md``, "Python helpers"): the indexer's
selection (``sparse_indices``, ``sparse_seq_len``) as a dense block mask or as a FlexAttention
``BlockMask`` with ``block_sparse_attention``'s token rule. Exported as ``recops.<name>`` (by
``recops._kit``) and as ``recops.stem.<name>`` (python/recops/stem.py).
"""

import torch

__all__ = ["to_dense_block_mask", "to_flex_block_mask"]


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
