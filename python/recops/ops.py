"""Python wrappers of the ``torch.ops.recops`` operators: argument names, defaults, docstrings.

No math and no shape logic lives here; autograd comes from the binding's Autograd kernels, so
``torch.ops.recops.X`` and ``recops.X`` behave the same. The one exception is the FakeTensor kernel
of ``dense_to_jagged`` (below): only Python can create the unbacked size it needs when
``total_L`` is omitted.
"""

from typing import Optional

import torch

_ops = torch.ops.recops


def dense_to_jagged(
    dense: torch.Tensor,
    seq_offsets: torch.Tensor,
    total_L: Optional[int] = None,
) -> torch.Tensor:
    """Gathers the valid rows of a dense batch into a jagged values tensor.

    Args:
        dense: ``[B, S, *E]``, any dtype recops supports.
        seq_offsets: ``[B+1]`` int32 or int64 on dense's device, valid offsets.
        total_L: ``seq_offsets[B]``. When omitted it is read from ``seq_offsets`` (on CUDA a
            device-to-host copy and a synchronisation; under torch.compile an unbacked size).

    Returns:
        ``[total_L, *E]``: row ``seq_offsets[b] + l`` is ``dense[b, l]`` for ``l < min(L_b, S)``
        and 0 for ``l >= S``.

    Differentiable in ``dense``: the gradient is ``jagged_to_padded_dense(grad, seq_offsets, S, 0)``.
    Double backward raises.

    Raises:
        RuntimeError naming the argument and the rule: ``dense.size(0) != B``; ``total_L`` that
        disagrees with ``seq_offsets[B]``; invalid offsets (as in ``jagged_to_padded_dense``);
        tensors on different devices.
    """
    return _ops.dense_to_jagged(dense, seq_offsets, total_L)


def complete_cumsum(t: torch.Tensor, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """Offsets from lengths: ``[n] -> [n+1]`` (or ``[R, n] -> [R, n+1]`` row by row), with
    ``out[0] = 0`` and ``out[i+1] = out[i] + t[i]``.

    ``t`` is int32 or int64; ``out_dtype`` (int32 or int64) defaults to t's dtype. Sums accumulate
    in int64; an int32 result that overflows raises (CPU always, CUDA with validation on).
    Not differentiable. FBGEMM's name: ``asynchronous_complete_cumsum``.
    """
    return _ops.complete_cumsum(t, out_dtype)


def exclusive_cumsum(t: torch.Tensor, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """``out[i] = sum(t[j] for j < i)`` over the flattened tensor; same shape as ``t``.

    int32/int64 in and out (``out_dtype`` defaults to t's dtype); int32 overflow raises as in
    ``complete_cumsum``. Not differentiable. FBGEMM's name: ``asynchronous_exclusive_cumsum``.
    """
    return _ops.exclusive_cumsum(t, out_dtype)


def inclusive_cumsum(t: torch.Tensor, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """``out[i] = sum(t[j] for j <= i)`` over the flattened tensor; same shape as ``t``.

    int32/int64 in and out (``out_dtype`` defaults to t's dtype); int32 overflow raises as in
    ``complete_cumsum``. Not differentiable. FBGEMM's name: ``asynchronous_inclusive_cumsum``.
    """
    return _ops.inclusive_cumsum(t, out_dtype)


def set_validate(on: bool) -> None:
    """Turns the validation of offset contents for CUDA calls on or off (the CPU always validates).

    With it on, each CUDA call checks its offsets (first 0, non-decreasing, last = total_L) and
    int32 overflow with one device-to-host copy and a synchronisation, and raises the CPU's error.
    Default: off in release builds, on in debug builds; ``RECOPS_VALIDATE=0|1`` at load.
    """
    _ops.set_validate(bool(on))


# ---- FakeTensor kernel of dense_to_jagged -------------------------------------------------------
# With total_L omitted the output size is seq_offsets[B], which only a FakeTensor can represent (an
# unbacked SymInt created here). The shape itself comes from C++ (the public shape function, via
# the Meta kernel of the helper op _dense_to_jagged_meta; src/torch/ops/dense_to_jagged_meta.cpp).
@torch.library.register_fake("recops::dense_to_jagged")
def _dense_to_jagged_fake(dense, seq_offsets, total_L=None):
    if total_L is None:
        total_L = torch.library.get_ctx().new_dynamic_size()
    return _ops._dense_to_jagged_meta(dense, seq_offsets, total_L)
