"""FBGEMM's ``experimental/hstu`` entry point (``hstu.cuda_hstu_attention.hstu_attn_varlen_func``,
NVIDIA's kernels packaged in FBGEMM) on top of ``recops.hstu_attn``: the same argument order and
defaults (provenance: the op's README).

Its conventions, where they differ from the canonical op:
- ``window_size`` defaults to ``(-1, -1)`` (no mask), ``alpha`` to 1.0, and the output is divided
  by ``max_seqlen_q`` (there is no ``scaling_seqlen``);
- ``has_drab`` asks for the gradient of ``rab`` (``has_drab=False`` detaches rab);
- ``is_delta_q``: FBGEMM needs it when ``max_seqlen_q < max_seqlen_k`` (the last query aligns with
  the last key); recops always aligns so, which is the same mask whenever the lengths are equal,
  and keeps FBGEMM's check on the maxima;
- ``descale_q`` / ``descale_k`` / ``descale_v`` are FBGEMM's FP8 scales: recops has no FP8 path,
  so a given one raises NotImplementedError.
"""

from typing import Optional, Tuple

import torch

from .. import hstu_attn


def hstu_attn_varlen_func(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    seq_offsets_q: torch.Tensor,
    seq_offsets_k: torch.Tensor,
    max_seqlen_q: int,
    max_seqlen_k: int,
    num_contexts: Optional[torch.Tensor] = None,
    num_targets: Optional[torch.Tensor] = None,
    target_group_size: int = 1,
    window_size: Tuple[int, int] = (-1, -1),
    alpha: float = 1.0,
    rab: Optional[torch.Tensor] = None,
    has_drab: bool = False,
    is_delta_q: bool = False,
    descale_q: Optional[torch.Tensor] = None,
    descale_k: Optional[torch.Tensor] = None,
    descale_v: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """FBGEMM ``hstu_attn_varlen_func``: ``SiLU(alpha · (Q Kᵀ + rab)) / max_seqlen_q · V`` under
    the context / target / window mask (see ``recops.hstu_attn`` for shapes and the mask)."""
    name = "fbgemm_hstu.hstu_attn_varlen_func"
    for arg, value in (("descale_q", descale_q), ("descale_k", descale_k),
                       ("descale_v", descale_v)):
        if value is not None:
            raise NotImplementedError(
                f"{name}: {arg} (FP8 inputs) is not implemented in recops; pass fp16/bf16/fp32 "
                "q, k, v without descale factors"
            )
    if has_drab and rab is None:
        raise ValueError(f"{name}: has_drab=True needs rab")
    if max_seqlen_q > max_seqlen_k:
        raise ValueError(
            f"{name}: max_seqlen_q={max_seqlen_q} > max_seqlen_k={max_seqlen_k} (needs Lq <= Lk)"
        )
    if max_seqlen_q < max_seqlen_k and not is_delta_q:
        raise ValueError(
            f"{name}: max_seqlen_q={max_seqlen_q} < max_seqlen_k={max_seqlen_k} needs "
            "is_delta_q=True (FBGEMM's rule: the last query aligns with the last key)"
        )
    if rab is not None and not has_drab:
        rab = rab.detach()
    return hstu_attn(
        q, k, v, seq_offsets_q, seq_offsets_k, max_seqlen_q, max_seqlen_k,
        num_contexts=num_contexts, num_targets=num_targets,
        target_group_size=target_group_size, window=tuple(window_size), mask_type="causal",
        rab=rab, alpha=alpha, silu_scale=1.0 / max_seqlen_q if max_seqlen_q > 0 else 1.0,
    )
