"""causal_conv1d's ``[B, T, D]`` view wrapper (training_ops.md §2: MindSpeed's and fla's token-major
layout). Exported as ``recops.causal_conv1d_btd`` (by ``recops._kit``)."""

__all__ = ["causal_conv1d_btd"]


def causal_conv1d_btd(x, weight, *args, residual=None, **kwargs):
    """``recops.causal_conv1d`` on ``x [B, T, D]`` through its channel-last view (no copy).

    The other arguments are ``recops.causal_conv1d``'s; ``residual`` (keyword only here) is
    ``[B, T, D]`` like x. Returns ``(y, final_state)`` with ``y [B, T, D]``, a transposed view of
    the op's channel-first output (states stay ``[N, D, S]``).
    """
    import recops  # here, not at import time: recops imports this module

    # The [B, T, D] view needs x (and residual) of rank 3; say so before transpose's IndexError.
    for name, t in (("x", x), ("residual", residual)):
        if t is not None and getattr(t, "dim", lambda: 3)() != 3:
            raise ValueError(f"recops.causal_conv1d_btd: {name} must be [B, T, D] (rank 3), "
                             f"got shape {tuple(t.shape)}")
    if residual is not None:
        residual = residual.transpose(1, 2)
    y, final_state = recops.causal_conv1d(x.transpose(1, 2), weight, *args, residual=residual,
                                          **kwargs)
    return y.transpose(1, 2), final_state
