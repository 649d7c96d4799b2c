"""``recops.inplace_rope_`` for every supported torch (README.md, "torch.compile on older torch").

The op's schema returns its first argument (``Tensor(a!) x ... -> Tensor(a!)``, add_'s form),
which torch.compile functionalizes only where ``torch.Tag.inplace`` exists (2.13 has it; 2.11, the
GPU image's torch, has not and raises "Found a custom (non-ATen) operator whose output has alias
annotations"). There, while dynamo traces, the call becomes the same rotation out of place, the
op ``inplace_rope_bwd`` with ``inverse`` flipped (it computes ``R(∓θ)·dy`` into a new tensor),
copied back into x: the same kernel, the same values, and x is written as in eager. Its gradient
is again ``inplace_rope_bwd`` (the rotation's transpose). Eager calls always run the generated
wrapper, which ``extend`` wraps (``__extends__``: ``recops._kit`` passes it the generated
wrapper; signature, defaults and documentation stay the table's)."""

import functools

import torch

# Whether dynamo must avoid the aliasing schema (tests set it to exercise both paths anywhere).
OUT_OF_PLACE_UNDER_COMPILE = not hasattr(torch.Tag, "inplace")


class _Rotate(torch.autograd.Function):
    """y = R(θ)·x (R(−θ) with inverse) into a new tensor; dx = R(θ)ᵀ·dy."""

    @staticmethod
    def forward(ctx, x, cos, sin, inverse):
        ctx.save_for_backward(cos, sin)
        ctx.inverse = inverse
        return torch.ops.recops.inplace_rope_bwd(x, cos, sin, not inverse)

    @staticmethod
    def backward(ctx, dy):
        cos, sin = ctx.saved_tensors
        return torch.ops.recops.inplace_rope_bwd(dy, cos, sin, ctx.inverse), None, None, None


def _out_of_place(x, cos, sin, inverse=False):
    # The schema's arguments as the generated wrapper passes them (no Python faces on this op).
    return x.copy_(_Rotate.apply(x, cos, sin, inverse))


def extend(generated):
    def inplace_rope_(*args, **kwargs):
        if OUT_OF_PLACE_UNDER_COMPILE and torch.compiler.is_compiling():
            return _out_of_place(*args, **kwargs)
        return generated(*args, **kwargs)

    return functools.update_wrapper(inplace_rope_, generated)


__extends__ = {"inplace_rope_": extend}
