"""``split_2d_jagged``: the inverse of ``concat_2d_jagged`` (README.md), computed by the op
``concat_2d_jagged_bwd`` (the split is the concat's adjoint). The caller gives the parts' row
counts, so nothing reads offsets on the host (no CUDA sync). Its gradient is the concat.
Exported as ``recops.split_2d_jagged`` (by ``recops._kit``)."""

import operator
from typing import Optional, Tuple

import torch

__all__ = ["split_2d_jagged"]


def _as_split_error(e: RuntimeError) -> RuntimeError:
    # The op behind the split is concat_2d_jagged_bwd; its messages name its own arguments. Say the
    # function the caller called, and how the names map (grad is values; values_a / values_b
    # stand for the parts).
    msg = str(e).split("\n")[0].replace("concat_2d_jagged_bwd: ", "")
    # The outputs grad_a / grad_b are the parts; their sizes come from rows_a / rows_b.
    msg = msg.replace("output grad_a", "output grad_a (part A, of rows_a)")
    msg = msg.replace("output grad_b", "output grad_b (part B, of rows_b)")
    return RuntimeError(f"split_2d_jagged: {msg} (the split runs concat_2d_jagged_bwd: its grad is values, "
                        f"values_a / values_b the parts A and B)")


def _check_args(values, offsets_a, offsets_b) -> None:
    if not isinstance(values, torch.Tensor):
        raise TypeError(f"split_2d_jagged: values must be a tensor, got {type(values).__name__}")
    for name, off in (("offsets_a", offsets_a), ("offsets_b", offsets_b)):
        if off is not None and not isinstance(off, torch.Tensor):
            raise TypeError(f"split_2d_jagged: {name} must be a tensor or None, got "
                            f"{type(off).__name__}")


def _check_size(name: str, n, row: int) -> None:
    # A part's size: an int >= 0 whose rows of `row` elements fit int64.
    if isinstance(n, torch.SymInt):
        return  # traced (torch.compile): the op's shape function checks it
    if isinstance(n, bool):
        raise TypeError(f"split_2d_jagged: {name} must be an int, got bool")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"split_2d_jagged: {name} must be an int, got {type(n).__name__}") from None
    if n < 0:
        raise ValueError(f"split_2d_jagged: {name}={n} must be >= 0")
    if n * max(row, 1) >= 2**63:
        raise ValueError(f"split_2d_jagged: {name}={n} times the row size {row} overflows int64")


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
        try:
            return tuple(torch.ops.recops.concat_2d_jagged_bwd(values, shape_a, offsets_a,
                                                               shape_b, offsets_b, k, is_replace))
        except RuntimeError as e:
            raise _as_split_error(e) from e

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
    _check_args(values, offsets_a, offsets_b)
    if values.dim() < 1:
        raise ValueError("split_2d_jagged: values must be [rows, D], got a 0-D tensor")
    if offsets_a is None and offsets_b is None:
        raise ValueError("split_2d_jagged: give offsets_a or offsets_b (B comes from them)")
    D = values.size(-1)
    _check_size("rows_a", rows_a, D)
    _check_size("rows_b", rows_b, D)
    for name, S in (("dense_size_a", dense_size_a), ("dense_size_b", dense_size_b)):
        if S is not None:
            _check_size(name, S, D)
    B = (offsets_a if offsets_a is not None else offsets_b).numel() - 1
    for off, S, side in ((offsets_a, dense_size_a, "a"), (offsets_b, dense_size_b, "b")):
        if off is None and (S is None or S < 0):
            raise ValueError(f"split_2d_jagged: dense_size_{side} >= 0 is needed when "
                             f"offsets_{side} is None")
    shape_a = _shape_of(values, rows_a, offsets_a, dense_size_a, B)
    shape_b = _shape_of(values, rows_b, offsets_b, dense_size_b, B)
    return _Split.apply(values, shape_a, offsets_a, shape_b, offsets_b, n_prefix_to_right,
                        is_replace)
