"""generative-recommenders' (and recsys-examples') jagged concat/split names over
``recops.concat_1d_jagged``, ``recops.concat_2d_jagged`` and ``recops.split_2d_jagged``
(jagged_ops.md §3), with upstream's argument orders. 2-D forms: a side whose offsets are None is
dense, given flattened as ``[B * max_len_<side>, D]``. ``max_seq_len`` and ``kernel`` are accepted
and ignored (upstream uses them for the Triton grid and the backend choice). Tested in
src/ops/jagged/concat_2d_jagged/test_concat_2d_jagged.py and
src/ops/jagged/concat_1d_jagged/test_concat_1d_jagged.py."""

from typing import Optional, Tuple

import torch

from .. import concat_1d_jagged, concat_2d_jagged, split_2d_jagged

__all__ = ["concat_1d_jagged_jagged", "concat_2D_jagged", "split_2D_jagged"]


def _batch(offsets_left, offsets_right) -> int:
    if offsets_left is None and offsets_right is None:
        raise ValueError("offsets_left and offsets_right cannot both be None")
    return (offsets_left if offsets_left is not None else offsets_right).numel() - 1


def concat_1d_jagged_jagged(lengths_left: torch.Tensor, values_left: torch.Tensor,
                            lengths_right: torch.Tensor, values_right: torch.Tensor) -> torch.Tensor:
    """generative-recommenders' ``torch.ops.hstu.concat_1d_jagged_jagged``: per sample
    ``[left_b, right_b]`` of two jagged 1-D tensors given by lengths -> the values (the output
    lengths are ``lengths_left + lengths_right``). ``recops.concat_1d_jagged`` over offsets."""
    cumsum = torch.ops.recops.complete_cumsum
    values, _ = concat_1d_jagged(values_left.reshape(-1), cumsum(lengths_left, torch.int64),
                                 values_right.reshape(-1), cumsum(lengths_right, torch.int64))
    return values


def concat_2D_jagged(max_seq_len: int, values_left: torch.Tensor, values_right: torch.Tensor,
                     max_len_left: Optional[int] = None, max_len_right: Optional[int] = None,
                     offsets_left: Optional[torch.Tensor] = None,
                     offsets_right: Optional[torch.Tensor] = None, kernel=None) -> torch.Tensor:
    """Per sample ``[left_b, right_b]`` -> ``[rows_left + rows_right, D]``."""
    del max_seq_len, kernel
    B = _batch(offsets_left, offsets_right)
    if offsets_left is None:
        values_left = values_left.reshape(B, max_len_left, values_left.size(-1))
    if offsets_right is None:
        values_right = values_right.reshape(B, max_len_right, values_right.size(-1))
    return concat_2d_jagged(values_left, offsets_left, values_right, offsets_right)


def split_2D_jagged(max_seq_len: int, values: torch.Tensor, total_len_left: Optional[int] = None,
                    total_len_right: Optional[int] = None, max_len_left: Optional[int] = None,
                    max_len_right: Optional[int] = None,
                    offsets_left: Optional[torch.Tensor] = None,
                    offsets_right: Optional[torch.Tensor] = None,
                    kernel=None) -> Tuple[torch.Tensor, torch.Tensor]:
    """The inverse of ``concat_2D_jagged``; a dense side comes back ``[B * max_len, D]``. A
    jagged side's total length is read from its offsets (a device sync) when not given."""
    del max_seq_len, kernel
    B = _batch(offsets_left, offsets_right)
    if offsets_left is not None and total_len_left is None:
        total_len_left = int(offsets_left[-1])
    if offsets_right is not None and total_len_right is None:
        total_len_right = int(offsets_right[-1])
    left, right = split_2d_jagged(values, offsets_left, offsets_right, total_len_left or 0,
                                  total_len_right or 0, max_len_left, max_len_right)
    D = values.size(-1)
    return left.reshape(-1, D), right.reshape(-1, D)
