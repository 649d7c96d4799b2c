"""``split_1d_jagged``: the inverse of ``concat_1d_jagged`` (README.md), computed by the op
``concat_1d_jagged_bwd`` (the split is the concat's adjoint). The caller gives the parts' shapes,
so nothing reads offsets on the host (no CUDA sync). Its gradient is the concat.
Exported as ``recops.split_1d_jagged`` (by ``recops._kit``)."""

import operator
from typing import Optional, Sequence, Tuple, Union

import torch

__all__ = ["split_1d_jagged"]


def _as_split_error(e: RuntimeError) -> RuntimeError:
    # The op behind the split is concat_1d_jagged_bwd; its messages name its own arguments. Say the
    # function the caller called, and how the names map (grad is values; values_a / values_b
    # stand for the parts).
    msg = str(e).split("\n")[0].replace("concat_1d_jagged_bwd: ", "")
    # The outputs grad_a / grad_b are the parts; their sizes come from shape_a / shape_b.
    msg = msg.replace("output grad_a", "output grad_a (part A, of shape_a)")
    msg = msg.replace("output grad_b", "output grad_b (part B, of shape_b)")
    return RuntimeError(f"split_1d_jagged: {msg} (the split runs concat_1d_jagged_bwd: its grad is values, "
                        f"values_a / values_b the parts A and B)")


def _check_args(values, offsets_a, offsets_b) -> None:
    if not isinstance(values, torch.Tensor):
        raise TypeError(f"split_1d_jagged: values must be a tensor, got {type(values).__name__}")
    for name, off in (("offsets_a", offsets_a), ("offsets_b", offsets_b)):
        if off is not None and not isinstance(off, torch.Tensor):
            raise TypeError(f"split_1d_jagged: {name} must be a tensor or None, got "
                            f"{type(off).__name__}")


def _check_size(name: str, n, row: int) -> None:
    # A part's size: an int >= 0 whose rows of `row` elements fit int64.
    if isinstance(n, torch.SymInt):
        return  # traced (torch.compile): the op's shape function checks it
    if isinstance(n, bool):
        raise TypeError(f"split_1d_jagged: {name} must be an int, got bool")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"split_1d_jagged: {name} must be an int, got {type(n).__name__}") from None
    if n < 0:
        raise ValueError(f"split_1d_jagged: {name}={n} must be >= 0")
    if n * max(row, 1) >= 2**63:
        raise ValueError(f"split_1d_jagged: {name}={n} times the row size {row} overflows int64")

Shape = Union[int, Sequence[int]]


def _standin(values: torch.Tensor, shape: Shape, name: str, jagged: bool) -> torch.Tensor:
    # A tensor of the part's shape with no data of its own (strides 0): the op reads only its
    # shape. Jagged parts: [T]; dense parts: [B] or [B, S].
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    for x in shape:
        _check_size(name, x, 1)
    if len(shape) != 1 and (jagged or len(shape) != 2):
        raise ValueError(f"split_1d_jagged: {name} must be [T] for a jagged part or [B] / [B, S] "
                         f"for a dense one, got {list(shape)}")
    return values.new_empty(1).as_strided(shape, (0,) * len(shape))


class _Split(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values, like_a, offsets_a, like_b, offsets_b):
        ctx.save_for_backward(offsets_a, offsets_b)
        try:
            return tuple(torch.ops.recops.concat_1d_jagged_bwd(values, like_a, offsets_a, like_b,
                                                               offsets_b))
        except RuntimeError as e:
            raise _as_split_error(e) from e

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        offsets_a, offsets_b = ctx.saved_tensors
        dv, _ = torch.ops.recops.concat_1d_jagged(grad_a, offsets_a, grad_b, offsets_b)
        return dv, None, None, None, None


def split_1d_jagged(values: torch.Tensor, offsets_a: Optional[torch.Tensor],
                    offsets_b: Optional[torch.Tensor], shape_a: Shape,
                    shape_b: Shape) -> Tuple[torch.Tensor, torch.Tensor]:
    """Splits ``values [T_A + T_B]`` (a ``concat_1d_jagged`` output) into its two parts, per
    sample ``[A_b, B_b]``. ``shape_a`` / ``shape_b`` are the parts' shapes: ``T`` (or ``[T]``) for
    a jagged part, whose ``offsets`` are given; ``[B]`` or ``[B, S]`` for a dense part (its
    ``offsets`` None). Differentiable in ``values``; the offsets get no gradient."""
    _check_args(values, offsets_a, offsets_b)
    like_a = _standin(values, shape_a, "shape_a", offsets_a is not None)
    like_b = _standin(values, shape_b, "shape_b", offsets_b is not None)
    return _Split.apply(values, like_a, offsets_a, like_b, offsets_b)
