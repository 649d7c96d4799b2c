"""Sparse long-context prefill, the Stem pipeline (``stem_indexer.md``), as one module:
``recops.stem.<name>`` is ``recops.<name>``. The four ops' wrappers are generated from their
argument tables (``src/ops/stem/*/``, python/recops/_kit.py); the two helpers that turn the
indexer's output into a dense block mask or a FlexAttention ``BlockMask`` live in
``src/ops/stem/block_sparse_attention/block_mask.py``.

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

from . import (  # noqa: F401
    block_sparse_attention,
    stem_indexer,
    stem_indexer_metadata,
    stem_prepare,
    to_dense_block_mask,
    to_flex_block_mask,
)

__all__ = [
    "stem_prepare",
    "stem_indexer",
    "stem_indexer_metadata",
    "block_sparse_attention",
    "to_dense_block_mask",
    "to_flex_block_mask",
]
