"""``split_2d_jagged``: the inverse of ``concat_2d_jagged`` (README.md), computed by the op
``concat_2d_jagged_bwd`` (the split is the concat's adjoint). The caller gives the parts' row
counts, so nothing reads offsets on the host (no CUDA sync). Its gradient is the concat.
Exported as ``recops.split_2d_jagged`` (by ``recops._kit``)."""

from typing import Optional, Tuple

import torch

__all__ = ["split_2d_jagged"]


def _shape_of(values: torch.Tensor, rows: int, offsets: Optional[torch.Tensor],
              S: Optional[int], B: int) -> torch.Tensor:
    # A stand-in with the part's shape and no data of its own (row strides 0): the op reads only
    # its shape and strides. Dense parts: [B, S, D]; jagged parts: [rows, D].
    D = values.size(-1)
    base = values.new_empty(D)
    if offsets is None:
        return base.as_strided((B, S, D), (0, 0, 1))
    return base.as_strided((rows, D), (0, 1))


class _Split(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values, shape_a, offsets_a, shape_b, offsets_b, k, is_replace):
        ctx.save_for_backward(offsets_a, offsets_b)
        ctx.args = (k, is_replace)
        return tuple(torch.ops.recops.concat_2d_jagged_bwd(values, shape_a, offsets_a, shape_b,
                                                           offsets_b, k, is_replace))

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        offsets_a, offsets_b = ctx.saved_tensors
        k, is_replace = ctx.args
        dv = torch.ops.recops.concat_2d_jagged(grad_a.contiguous(), offsets_a,
                                               grad_b.contiguous(), offsets_b, k, is_replace)
        return dv, None, None, None, None, None, None


def split_2d_jagged(values: torch.Tensor, offsets_a: Optional[torch.Tensor],
                    offsets_b: Optional[torch.Tensor], rows_a: int, rows_b: int,
                    dense_size_a: Optional[int] = None, dense_size_b: Optional[int] = None,
                    n_prefix_to_right: int = 0,
                    is_replace: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """Splits ``values [rows, D]`` (a ``concat_2d_jagged`` output) into A ``[rows_a, D]`` and B
    ``[rows_b, D]`` per sample. A side whose offsets are None is dense ``[B, S, D]`` with
    ``S = dense_size_*``. With ``is_replace`` the rows of A that B replaced come back 0 in A and B's
    rows that were not used come back 0 (the adjoint)."""
    if offsets_a is None and offsets_b is None:
        raise ValueError("split_2d_jagged: give offsets_a or offsets_b (B comes from them)")
    B = (offsets_a if offsets_a is not None else offsets_b).numel() - 1
    for off, S, side in ((offsets_a, dense_size_a, "a"), (offsets_b, dense_size_b, "b")):
        if off is None and (S is None or S < 0):
            raise ValueError(f"split_2d_jagged: dense_size_{side} >= 0 is needed when "
                             f"offsets_{side} is None")
    shape_a = _shape_of(values, rows_a, offsets_a, dense_size_a, B)
    shape_b = _shape_of(values, rows_b, offsets_b, dense_size_b, B)
    return _Split.apply(values, shape_a, offsets_a, shape_b, offsets_b, n_prefix_to_right,
                        is_replace)
