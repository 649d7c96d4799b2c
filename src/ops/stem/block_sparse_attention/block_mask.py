"""The Stem family's block-mask helpers (``stem_indexer.md``, "Python helpers"): the indexer's
selection (``sparse_indices``, ``sparse_seq_len``) as a dense block mask or as a FlexAttention
``BlockMask`` with ``block_sparse_attention``'s token rule. Exported as ``recops.<name>`` (by
``recops._kit``) and as ``recops.stem.<name>`` (python/recops/stem.py).

The helpers validate their arguments as the ops do (spec §10): ``TypeError`` for a type or dtype,
``ValueError`` otherwise, each naming the helper, the argument and the rule. The checks of tensor
contents (lengths, ids) read the tensors on the host (one sync on CUDA); they are skipped while
``torch.compile`` traces and for tensors without data (meta, fake).
"""

import numbers

import torch

__all__ = ["to_dense_block_mask", "to_flex_block_mask"]


def _tensor(fn: str, name: str, x, ndim: int, what: str) -> None:
    """``x`` is an integer tensor of ``ndim`` dimensions (``what`` names them)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{fn}: {name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
        raise TypeError(f"{fn}: {name} must have an integer dtype (int32 from stem_indexer), "
                        f"got {x.dtype}")
    if x.dim() != ndim:
        raise ValueError(f"{fn}: {name} must be {ndim}-D {what}, got shape {list(x.shape)}")


def _same_device(fn: str, name: str, x: torch.Tensor, ref: str, r: torch.Tensor) -> None:
    if x.device != r.device:
        raise ValueError(f"{fn}: {name} is on {x.device} while {ref} is on {r.device}; every "
                         f"tensor argument must be on the same device")


def _has_values(*xs: torch.Tensor) -> bool:
    """Whether the contents can be read: not while torch.compile traces, not on meta/fake."""
    if torch.compiler.is_compiling():
        return False
    from torch._subclasses.fake_tensor import is_fake
    return not any(x.device.type == "meta" or is_fake(x) for x in xs)


def _first(bad: torch.Tensor) -> tuple:
    return tuple(int(v) for v in bad.nonzero()[0])


def _selection(fn: str, sparse_indices, sparse_seq_len) -> torch.Tensor:
    """Checks the indexer's output pair; returns the mask of the valid prefix (slot < length)."""
    _tensor(fn, "sparse_indices", sparse_indices, 4, "[B, Nq, Qmax, Kmax]")
    _tensor(fn, "sparse_seq_len", sparse_seq_len, 3, "[B, Nq, Qmax]")
    if sparse_seq_len.shape != sparse_indices.shape[:-1]:
        raise ValueError(f"{fn}: sparse_seq_len must have shape [B, Nq, Qmax] = "
                         f"{list(sparse_indices.shape[:-1])} (sparse_indices' leading dims), got "
                         f"{list(sparse_seq_len.shape)}")
    _same_device(fn, "sparse_seq_len", sparse_seq_len, "sparse_indices", sparse_indices)
    kmax = sparse_indices.shape[-1]
    slots = torch.arange(kmax, device=sparse_indices.device)
    valid = slots < sparse_seq_len.unsqueeze(-1)
    if not _has_values(sparse_indices, sparse_seq_len):
        return valid
    bad = (sparse_seq_len < 0) | (sparse_seq_len > kmax)
    if bad.any():
        at = _first(bad)
        raise ValueError(f"{fn}: sparse_seq_len{list(at)} = {int(sparse_seq_len[at])} must be in "
                         f"[0, Kmax = {kmax}]")
    bad = valid & ((sparse_indices < 0) | (sparse_indices >= kmax))
    if bad.any():
        at = _first(bad)
        raise ValueError(f"{fn}: sparse_indices{list(at)} = {int(sparse_indices[at])} is in the "
                         f"valid prefix (slot < sparse_seq_len = {int(sparse_seq_len[at[:3]])}) "
                         f"and must be a key block id in [0, Kmax = {kmax})")
    return valid


def _prefix_ids(sparse_indices: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """int64 ids of the valid prefix, Kmax (one column past the last block) elsewhere."""
    kmax = sparse_indices.shape[-1]
    return torch.where(valid, sparse_indices.long(), torch.full_like(sparse_indices, kmax).long())


def to_dense_block_mask(sparse_indices: torch.Tensor, sparse_seq_len: torch.Tensor) -> torch.Tensor:
    """uint8 ``[B, Nq, Qmax, Kmax]``: 1 where ``j`` is in the row's valid prefix (a scatter).

    ``sparse_indices`` ``[B, Nq, Qmax, Kmax]`` and ``sparse_seq_len`` ``[B, Nq, Qmax]`` are
    integer tensors on one device (``stem_indexer``'s outputs); each length is in ``[0, Kmax]``
    and each id of a valid prefix in ``[0, Kmax)`` (entries past the length are ignored)."""
    fn = "to_dense_block_mask"
    valid = _selection(fn, sparse_indices, sparse_seq_len)
    kmax = sparse_indices.shape[-1]
    ids = _prefix_ids(sparse_indices, valid)
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
    ``block_sparse_attention`` (``kv < Lk``, ``q < Lq``, causal ``kv <= Lk - Lq + q``).

    The selection is checked as in ``to_dense_block_mask``, and more, since FlexAttention reads
    every id: a valid prefix holds no id twice (its keys would count twice) and entries past the
    length are -1 or ids in ``[0, Kmax)``. ``q_seq_lens`` and ``kv_seq_lens`` are ``[B]`` integer
    tensors on the same device with ``0 <= Lq <= Qmax·block_size`` and
    ``0 <= Lk <= Kmax·block_size``; ``causal`` is a bool and ``block_size`` an int >= 1."""
    from torch.nn.attention.flex_attention import BlockMask

    fn = "to_flex_block_mask"
    if not isinstance(causal, bool):
        raise TypeError(f"{fn}: causal must be a bool, got {type(causal).__name__}")
    if isinstance(block_size, bool) or not isinstance(block_size, numbers.Integral):
        raise TypeError(f"{fn}: block_size must be an int, got {type(block_size).__name__}")
    block_size = int(block_size)
    if block_size < 1:
        raise ValueError(f"{fn}: block_size={block_size} must be >= 1")
    valid = _selection(fn, sparse_indices, sparse_seq_len)
    B, _, qmax, kmax = sparse_indices.shape
    limits = {"q_seq_lens": ("Qmax", qmax), "kv_seq_lens": ("Kmax", kmax)}
    for name, lens in (("q_seq_lens", q_seq_lens), ("kv_seq_lens", kv_seq_lens)):
        _tensor(fn, name, lens, 1, "[B]")
        if lens.shape[0] != B:
            raise ValueError(f"{fn}: {name} must have B = {B} entries (sparse_indices' batch), "
                             f"got {lens.shape[0]}")
        _same_device(fn, name, lens, "sparse_indices", sparse_indices)
    if _has_values(sparse_indices, sparse_seq_len, q_seq_lens, kv_seq_lens):
        for name, lens in (("q_seq_lens", q_seq_lens), ("kv_seq_lens", kv_seq_lens)):
            letter, blocks = limits[name]
            top = blocks * block_size
            bad = (lens < 0) | (lens > min(top, 2**63 - 1))
            if bad.any():
                b = _first(bad)[0]
                raise ValueError(f"{fn}: {name}[{b}] = {int(lens[b])} must be in [0, {letter}·"
                                 f"block_size = {top}]")
        bad = ~valid & ((sparse_indices < -1) | (sparse_indices >= kmax))
        if bad.any():
            at = _first(bad)
            raise ValueError(f"{fn}: sparse_indices{list(at)} = {int(sparse_indices[at])} is past "
                             f"the valid prefix and must be -1 or an id in [0, Kmax = {kmax})")
        ids = _prefix_ids(sparse_indices, valid)
        count = torch.zeros(*sparse_indices.shape[:-1], kmax + 1, dtype=torch.int32,
                            device=sparse_indices.device)
        count.scatter_add_(-1, ids, torch.ones_like(ids, dtype=torch.int32))
        bad = count[..., :kmax] > 1
        if bad.any():
            at = _first(bad)
            raise ValueError(f"{fn}: sparse_indices{list(at[:3])} holds id {at[3]} more than once "
                             f"in its valid prefix; ids must be unique (FlexAttention would count "
                             f"the block's keys twice)")
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
