"""``split_1d_jagged``: the inverse of ``concat_1d_jagged`` (README.md), computed by the op
``concat_1d_jagged_bwd`` (the split is the concat's adjoint). The caller gives the parts' shapes,
so nothing reads offsets on the host (no CUDA sync). Its gradient is the concat.
Exported as ``recops.split_1d_jagged`` (by ``recops._kit``)."""

from typing import Optional, Sequence, Tuple, Union

import torch

__all__ = ["split_1d_jagged"]

Shape = Union[int, Sequence[int]]


def _standin(values: torch.Tensor, shape: Shape, name: str, jagged: bool) -> torch.Tensor:
    # A tensor of the part's shape with no data of its own (strides 0): the op reads only its
    # shape. Jagged parts: [T]; dense parts: [B] or [B, S].
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if len(shape) != 1 and (jagged or len(shape) != 2):
        raise ValueError(f"split_1d_jagged: {name} must be [T] for a jagged part or [B] / [B, S] "
                         f"for a dense one, got {list(shape)}")
    return values.new_empty(1).as_strided(shape, (0,) * len(shape))


class _Split(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values, like_a, offsets_a, like_b, offsets_b):
        ctx.save_for_backward(offsets_a, offsets_b)
        return tuple(torch.ops.recops.concat_1d_jagged_bwd(values, like_a, offsets_a, like_b,
                                                           offsets_b))

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
    like_a = _standin(values, shape_a, "shape_a", offsets_a is not None)
    like_b = _standin(values, shape_b, "shape_b", offsets_b is not None)
    return _Split.apply(values, like_a, offsets_a, like_b, offsets_b)
