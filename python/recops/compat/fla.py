"""fla-core's names and argument orders (``fla.modules``, checked against fla-core 0.6.0;
``fla.ops`` functions where named) over the recops training ops, for drop-in use.

Served: ``l2norm`` / ``l2_norm`` / ``L2Norm`` (recops ``l2norm``); ``rms_norm`` / ``RMSNorm``
(``rms_norm``); ``rms_norm_gated`` / ``FusedRMSNormGated`` (``rms_norm_gated``, norm before gate);
``rmsnorm_fn`` / ``RMSNormGated`` of ``fla.modules.layernorm_gated`` (``rms_norm_gated`` with
group_size and norm_before_gate); ``FusedLinearCrossEntropyLoss`` (``chunk_loss``; fla's
``num_chunks`` is a schedule hint and is ignored, recops chooses its chunks from the workspace
budget; ``logit_scale`` other than 1, ``use_l2warp`` and ``process_group`` raise
NotImplementedError); ``chunk_local_cumsum`` of ``fla.ops.utils.cumsum`` (``chunk_local_cumsum``;
fla-org/flash-linear-attention @ bc3b101d; differentiable here, fla's is not);
``chunk_scaled_dot_kkt_fwd`` of ``fla.ops.common.chunk_scaled_dot_kkt`` and ``solve_tril`` of
``fla.ops.utils.solve_tril`` (the GDN sub-ops ``chunk_scaled_dot_kkt`` and ``solve_tril``,
forward only as fla's); ``recompute_w_u_fwd`` of ``fla.ops.gated_delta_rule.wy_fast`` (the GDN
sub-op ``recompute_w_u_fwd``, forward only as fla's, returning ``(w, u)``); ``chunk_fwd_o`` of
``fla.ops.common.chunk_o`` (the GDN sub-op ``chunk_fwd_o``, forward only as fla's);
``chunk_bwd_dv_local`` of ``fla.ops.common.chunk_o`` (the GDN sub-op ``chunk_bwd_dv_local``,
forward only as fla's);
``chunk_gated_delta_rule_bwd_dhu`` of ``fla.ops.common.chunk_delta_h`` (the GDN sub-op of the same
name, forward only as fla's, returning ``(dh, dh0, dv2)``); ``chunk_gated_delta_rule_fwd_h`` of
``fla.ops.common.chunk_delta_h`` (the GDN sub-op of the same name, forward only as fla's, returning
``(h, v_new, final_state)``); ``chunk_bwd_dqkwg`` of ``fla.ops.common.chunk_o`` (the GDN sub-op
of the same name, forward only as fla's, returning ``(dq, dk, dw, dg)``);
``prepare_wy_repr_bwd`` of ``fla.ops.gated_delta_rule.wy_fast`` (the GDN sub-op of the same name,
the wy_fast backward, forward only as fla's, returning ``(dk, dv, db, dg)``);
``chunk_kda_bwd_wy_dqkg_fused`` of ``fla.ops.kda.chunk_bwd`` (the KDA sub-op of the same name,
forward only as fla's, returning ``(dq, dk, dv, db, dg, dA)`` with dq, dk at the HV value heads);
``chunk_kda_bwd_dAv`` of ``fla.ops.kda.chunk_bwd`` (the KDA sub-op ``chunk_kda_bwd_dav``, forward
only as fla's, returning ``(dA, dv)``); ``chunk_kda_bwd_intra`` of ``fla.ops.kda.chunk_intra``
(the KDA sub-op of the same name, forward only as fla's, returning ``(dq, dk, db, dg)`` with dq,
dk at the HV value heads);
``chunk_gated_delta_rule`` of ``fla.ops.gated_delta_rule`` (the composed GDN op
``chunk_gated_delta_rule``, natural-log g as fla's public API, returning ``(o, final_state)``;
differentiable through ``chunk_gated_delta_rule_bwd``); ``chunk_kda`` of ``fla.ops.kda`` (the
composed KDA op ``chunk_kda``, natural-log per-channel g, returning ``(o, final_state)``;
differentiable through ``chunk_kda_bwd``).

Differences from fla:
- ``residual`` / ``prenorm`` / ``residual_in_fp32`` are composed here: the sum ``x + residual`` (in
  residual's dtype, or fp32 with ``residual_in_fp32``, else x's dtype) is normalised and, with
  ``prenorm``, returned as the second output, as fla does; fla fuses the add into its kernel.
- ``rms_norm``'s ``bias`` is added after the recops op (fla fuses it): one more elementwise pass.
- recops' l2norm saves x and recomputes y in backward (fla saves the rounded y): training_ops §3.5.
- ``chunk_local_cumsum``: ``chunk_size`` defaults to 64 (fla requires it); ``chunk_indices`` (fla's
  precomputed (sequence, chunk) schedule) is accepted and not read, recops walks ``cu_seqlens``
  itself; ``head_first=True`` raises NotImplementedError and another keyword is a TypeError (fla
  swallows unknown keywords); bad input raises RuntimeError naming the argument where fla asserts.

- ``layer_norm`` / ``LayerNorm``: ``recops.layer_norm`` (bias applied inside the op), residual and
  prenorm as for rms_norm.
- ``causal_conv1d``: ``recops.causal_conv1d`` in fla's layout (x ``[B, T, D]``, weight ``[D, W]``,
  states ``[N, D, W]``, ``cu_seqlens`` = recops' ``seq_offsets``, the residual added after the
  activation). Every ``backend`` gives the same result (fla's 'cuda' backend returns the cache
  unchanged as its final state; recops returns the real final state); ``seq_idx`` (keyword) is
  passed through; ``cp_context`` raises NotImplementedError. ``ShortConvolution`` is the
  ``nn.Conv1d`` module on top of it; in decoding (``B * T == N``) the cache is updated in place as
  fla does.

Not served (NotImplementedError naming the missing recops op): group_norm and the gated
LayerNorm, the norm+linear fusions and rotary (``inplace_rope_``). fla's FusedCrossEntropyLoss is not wrapped (use ``recops.fused_cross_entropy`` or
``recops.compat.liger.LigerCrossEntropyLoss``).
"""

from typing import Optional

import torch
from torch import nn

from .. import causal_conv1d as _causal_conv1d
from .. import chunk_local_cumsum as _chunk_local_cumsum
from .. import layer_norm as _layer_norm
from .. import chunk_loss as _chunk_loss
from .. import l2norm as _l2norm
from .. import rms_norm as _rms_norm
from .. import rms_norm_gated as _rms_norm_gated


def _missing(fla_name: str, recops_op: str):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            f"recops.compat.fla.{fla_name}: needs the recops op '{recops_op}', which is not "
            "implemented yet")

    fn.__name__ = fla_name
    fn.__doc__ = f"Not served: needs the recops op ``{recops_op}``."
    return fn


def _with_residual(x, residual, residual_in_fp32):
    """fla's pre-norm residual: the tensor that is normalised (and returned with prenorm)."""
    if residual is None:
        return x.float() if residual_in_fp32 else x
    if residual.shape != x.shape:
        raise ValueError(f"residual must have x's shape {list(x.shape)}, got "
                         f"{list(residual.shape)}")
    return x.to(residual.dtype) + residual


def _finish(y, x, res_out, prenorm):
    y = y.to(x.dtype)
    return (y, res_out) if prenorm else y


# ---- l2norm ------------------------------------------------------------------------------------


def l2norm(x: torch.Tensor, eps: float = 1e-6,
           output_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """``x / sqrt(sum(x²) + eps)`` over the last dim (eps inside the root, as fla)."""
    return _l2norm(x, eps=float(eps), out_dtype=output_dtype)


l2_norm = l2norm


class L2Norm(nn.Module):
    """``fla.modules.L2Norm``."""

    def __init__(self, eps: float = 1e-6, output_dtype: Optional[torch.dtype] = None):
        super().__init__()
        self.eps = eps
        self.output_dtype = output_dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return l2norm(x, self.eps, self.output_dtype)


# ---- rms_norm ----------------------------------------------------------------------------------


def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor], bias: Optional[torch.Tensor],
             residual: Optional[torch.Tensor] = None, eps: float = 1e-5, prenorm: bool = False,
             residual_in_fp32: bool = False):
    """``fla.modules.layernorm.rms_norm``: ``rmsnorm(x [+ residual]) * weight + bias``; with
    ``prenorm`` also returns ``x + residual``."""
    res_out = _with_residual(x, residual, residual_in_fp32)
    w = weight.to(res_out.dtype) if weight is not None else None
    y = _rms_norm(res_out, w, eps=float(eps))
    if bias is not None:
        y = y + bias
    return _finish(y, x, res_out, prenorm)


class _Norm(nn.Module):
    """fla's norm modules: the same constructor, parameters and forward; ``_fn`` is the function."""

    def __init__(self, hidden_size: int, elementwise_affine: bool = True, bias: bool = False,
                 eps: float = 1e-5, device=None, dtype=None):
        super().__init__()
        self.hidden_size = hidden_size
        self.elementwise_affine = elementwise_affine
        self.eps = eps
        self.register_parameter("weight", None)
        self.register_parameter("bias", None)
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(hidden_size, device=device, dtype=dtype))
            if bias:
                self.bias = nn.Parameter(torch.zeros(hidden_size, device=device, dtype=dtype))

    def forward(self, x, residual=None, prenorm=False, residual_in_fp32=False):
        return type(self)._fn(x, self.weight, self.bias, residual=residual, eps=self.eps,
                              prenorm=prenorm, residual_in_fp32=residual_in_fp32)


class RMSNorm(_Norm):
    """``fla.modules.RMSNorm``: the same constructor and parameters."""

    _fn = staticmethod(rms_norm)


# ---- layer_norm --------------------------------------------------------------------------------


def layer_norm(x: torch.Tensor, weight: Optional[torch.Tensor], bias: Optional[torch.Tensor],
               residual: Optional[torch.Tensor] = None, eps: float = 1e-5, prenorm: bool = False,
               residual_in_fp32: bool = False, is_rms_norm: bool = False):
    """``fla.modules.layernorm.layer_norm``: ``layernorm(x [+ residual]) * weight + bias``; with
    ``prenorm`` also returns ``x + residual``; ``is_rms_norm`` makes it ``rms_norm`` (fla's flag
    on the same kernel)."""
    if is_rms_norm:
        return rms_norm(x, weight, bias, residual, eps, prenorm, residual_in_fp32)
    res_out = _with_residual(x, residual, residual_in_fp32)
    w = weight.to(res_out.dtype) if weight is not None else None
    b = bias.to(res_out.dtype) if bias is not None else None
    return _finish(_layer_norm(res_out, w, b, eps=float(eps)), x, res_out, prenorm)


class LayerNorm(_Norm):
    """``fla.modules.LayerNorm``: the same constructor and parameters."""

    _fn = staticmethod(layer_norm)


# ---- gated RMSNorm -----------------------------------------------------------------------------


def _activation(activation: str) -> str:
    if activation not in ("swish", "silu", "sigmoid"):
        raise ValueError(f"activation must be 'swish', 'silu' or 'sigmoid', got {activation!r}")
    return "silu" if activation == "swish" else activation


def rms_norm_gated(x: torch.Tensor, g: torch.Tensor, weight: Optional[torch.Tensor],
                   bias: Optional[torch.Tensor], activation: str = "swish",
                   residual: Optional[torch.Tensor] = None, prenorm: bool = False,
                   residual_in_fp32: bool = False, eps: float = 1e-6):
    """``fla.modules.fused_norm_gate.rms_norm_gated``: ``(rmsnorm(x [+ residual]) * weight + bias)
    * act(g)``, act = swish/silu or sigmoid."""
    act = _activation(activation)
    res_out = _with_residual(x, residual, residual_in_fp32)
    dt = res_out.dtype
    y = _rms_norm_gated(res_out, g.to(dt), weight.to(dt) if weight is not None else None,
                        bias.to(dt) if bias is not None else None, eps=float(eps),
                        activation=act)
    return _finish(y, x, res_out, prenorm)


class FusedRMSNormGated(nn.Module):
    """``fla.modules.FusedRMSNormGated``: the same constructor and parameters."""

    def __init__(self, hidden_size: int, elementwise_affine: bool = True, eps: float = 1e-5,
                 activation: str = "swish", device=None, dtype=None):
        super().__init__()
        _activation(activation)
        self.hidden_size = hidden_size
        self.elementwise_affine = elementwise_affine
        self.eps = eps
        self.activation = activation
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.register_parameter("bias", None)

    def forward(self, x, g, residual=None, prenorm=False, residual_in_fp32=False):
        return rms_norm_gated(x, g, self.weight, self.bias, self.activation, residual=residual,
                              prenorm=prenorm, residual_in_fp32=residual_in_fp32, eps=self.eps)


def rmsnorm_fn(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
               z: Optional[torch.Tensor] = None, eps: float = 1e-6,
               group_size: Optional[int] = None, norm_before_gate: bool = True) -> torch.Tensor:
    """``fla.modules.layernorm_gated.rmsnorm_fn`` (Mamba2): group RMSNorm gated by silu(z), the
    gate applied after the norm (``norm_before_gate``) or before it; z None: plain RMSNorm."""
    if z is None:
        if group_size not in (None, x.shape[-1]):
            raise NotImplementedError("rmsnorm_fn: group_size without z is not served")
        y = _rms_norm(x, weight, eps=float(eps))
        return y + bias if bias is not None else y
    return _rms_norm_gated(x, z, weight, bias, eps=float(eps), activation="silu",
                           group_size=int(group_size or 0),
                           norm_before_gate=bool(norm_before_gate))


class RMSNormGated(nn.Module):
    """``fla.modules.layernorm_gated.RMSNormGated``."""

    def __init__(self, hidden_size, eps=1e-5, group_size=None, norm_before_gate=True,
                 device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.group_size = group_size
        self.norm_before_gate = norm_before_gate
        self.weight = nn.Parameter(torch.ones(hidden_size, device=device, dtype=dtype))
        self.register_parameter("bias", None)

    def forward(self, x, z=None):
        return rmsnorm_fn(x, self.weight, self.bias, z=z, eps=self.eps,
                          group_size=self.group_size, norm_before_gate=self.norm_before_gate)


# ---- chunk_local_cumsum (fla.ops.utils.cumsum) -------------------------------------------------


def chunk_local_cumsum(g: torch.Tensor, chunk_size: int = 64, reverse: bool = False,
                       scale: Optional[float] = None, cu_seqlens: Optional[torch.Tensor] = None,
                       output_dtype: Optional[torch.dtype] = torch.float,
                       chunk_indices: Optional[torch.Tensor] = None, use_graph: bool = False,
                       **kwargs) -> torch.Tensor:
    """``fla.ops.utils.cumsum.chunk_local_cumsum``: per chunk of ``chunk_size`` positions
    (restarting at each ``cu_seqlens`` sequence start, B = 1), the inclusive cumsum over time of g
    ``[B, T, H]`` or ``[B, T, H, K]``, towards the chunk's end with ``reverse``, times ``scale``
    (None: 1), in ``output_dtype`` (None: g's dtype). ``use_graph`` (fla's CUDA-graph schedule)
    is accepted and not needed."""
    if "head_first" in kwargs:  # as fla 0.6.0: head_first was removed
        raise DeprecationWarning(
            "head_first has been removed. Inputs must be in `[B, T, H, ...]` format.")
    if kwargs:
        raise TypeError(f"chunk_local_cumsum: unexpected keyword arguments {sorted(kwargs)}")
    del chunk_indices, use_graph  # fla's schedule for cu_seqlens; recops derives its own
    return _chunk_local_cumsum(g, int(chunk_size), bool(reverse),
                               1.0 if scale is None else float(scale), cu_seqlens,
                               out_dtype=output_dtype or g.dtype)


# ---- causal_conv1d -----------------------------------------------------------------------------


def causal_conv1d(x: torch.Tensor, weight: Optional[torch.Tensor] = None,
                  bias: Optional[torch.Tensor] = None, residual: Optional[torch.Tensor] = None,
                  initial_state: Optional[torch.Tensor] = None,
                  output_final_state: Optional[bool] = False, activation: Optional[str] = None,
                  backend: Optional[str] = "triton", cu_seqlens: Optional[torch.Tensor] = None,
                  cu_seqlens_cpu: Optional[torch.Tensor] = None,
                  chunk_indices: Optional[torch.Tensor] = None, cp_context=None, **kwargs):
    """``fla.modules.convolution.causal_conv1d``: x ``[B, T, D]``, weight ``[D, W]``, states
    ``[N, D, W]``; returns ``(y [B, T, D], final_state or None)``."""
    seq_idx = kwargs.pop("seq_idx", None)
    if kwargs:
        raise TypeError(f"causal_conv1d: unexpected keyword arguments {sorted(kwargs)}")
    if weight is None:
        raise NotImplementedError("causal_conv1d: weight=None (no convolution) is not served")
    if cp_context is not None:
        raise NotImplementedError("causal_conv1d: cp_context (context parallelism) is not served")
    if backend not in (None, "triton", "cuda", "mix"):
        raise ValueError(f"causal_conv1d: backend must be 'triton', 'cuda' or 'mix', got {backend!r}")
    if activation not in (None, "silu", "swish"):
        raise NotImplementedError("causal_conv1d: activation must be None, 'silu' or 'swish', "
                                  f"got {activation!r}")
    del cu_seqlens_cpu, chunk_indices  # fla's precomputed schedules; recops walks the offsets
    x_bdt = x.transpose(1, 2)
    y, final_state = _causal_conv1d(
        x_bdt, weight, bias, initial_state, bool(output_final_state), activation or "none",
        seq_idx, cu_seqlens, residual=None if residual is None else residual.transpose(1, 2),
        weight_layout="DW", state_len=int(weight.shape[-1]))
    return y.transpose(1, 2), (final_state if output_final_state else None)


class ShortConvolution(nn.Conv1d):
    """``fla.modules.ShortConvolution``: a depthwise causal ``nn.Conv1d`` (weight ``[D, 1, W]``)
    whose forward is :func:`causal_conv1d`; in decoding (``B * T == N``) the cache is updated in
    place, as fla does."""

    def __init__(self, hidden_size: int, kernel_size: int, bias: bool = False,
                 activation: Optional[str] = "silu", backend: Optional[str] = "triton",
                 device=None, dtype=None, **kwargs):
        super().__init__(hidden_size, hidden_size, kernel_size, groups=hidden_size, bias=bias,
                         padding=kernel_size - 1, device=device, dtype=dtype)
        if activation not in (None, "silu", "swish"):
            raise ValueError(f"activation must be None, 'silu' or 'swish', got {activation!r}")
        if backend not in ("triton", "cuda"):
            raise ValueError(f"backend must be 'triton' or 'cuda', got {backend!r}")
        self.hidden_size = hidden_size
        self.activation = activation
        self.backend = backend

    def forward(self, x: torch.Tensor, residual: Optional[torch.Tensor] = None,
                mask: Optional[torch.Tensor] = None, cache: Optional[torch.Tensor] = None,
                output_final_state: bool = False, cu_seqlens: Optional[torch.Tensor] = None,
                chunk_indices: Optional[torch.Tensor] = None, **kwargs):
        B, T = x.shape[0], x.shape[1]
        N = B if cu_seqlens is None else len(cu_seqlens) - 1
        if mask is not None:
            if cu_seqlens is not None:
                raise ValueError("`mask` and `cu_seqlens` cannot be provided at the same time")
            x = x * mask.unsqueeze(-1).to(x.dtype)
        weight = self.weight.squeeze(1)
        if B * T == N:  # decoding: one token per sequence, the cache rolls in place
            if cache is None and output_final_state:
                cache = x.new_zeros(N, self.hidden_size, weight.shape[-1])
            y, state = causal_conv1d(x, weight, self.bias, residual, cache, cache is not None,
                                     self.activation, cu_seqlens=cu_seqlens, **kwargs)
            if cache is not None:
                with torch.no_grad():
                    cache.copy_(state)
            return y, cache
        return causal_conv1d(x, weight, self.bias, residual, cache, output_final_state,
                             self.activation, cu_seqlens=cu_seqlens, **kwargs)


# ---- not served --------------------------------------------------------------------------------

group_norm = _missing("group_norm", "group_norm")
GroupNorm = _missing("GroupNorm", "group_norm")
layer_norm_gated = _missing("layer_norm_gated", "layer_norm_gated")
FusedLayerNormGated = _missing("FusedLayerNormGated", "layer_norm_gated")
rms_norm_linear = _missing("rms_norm_linear", "rms_norm_linear")
RotaryEmbedding = _missing("RotaryEmbedding", "inplace_rope_")


class FusedLinearCrossEntropyLoss(nn.Module):
    """``fla.modules.FusedLinearCrossEntropyLoss``: the same constructor and
    ``forward(x, target, weight, bias=None)`` (x ``[..., D]``, target ``[...]``; a scalar loss)."""

    def __init__(self, ignore_index: int = -100, label_smoothing: float = 0.0,
                 logit_scale: float = 1.0, logit_softcapping: Optional[float] = None,
                 num_chunks: int = 8, reduction: str = "mean", use_l2warp: bool = False,
                 l2_penalty_factor: float = 1e-4, accumulate_grad_in_fp32: bool = True,
                 process_group=None):
        super().__init__()
        if reduction not in ("mean", "sum"):
            raise ValueError(f"FusedLinearCrossEntropyLoss: reduction must be 'mean' or 'sum', "
                             f"got {reduction!r}")
        if logit_scale != 1.0 or use_l2warp or process_group is not None:
            raise NotImplementedError(
                "FusedLinearCrossEntropyLoss: logit_scale != 1, use_l2warp and process_group are "
                "not served")
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.logit_softcapping = logit_softcapping
        self.num_chunks = num_chunks  # a schedule hint; recops chooses its own chunks
        self.reduction = reduction
        self.accumulate_grad_in_fp32 = accumulate_grad_in_fp32

    def forward(self, x: torch.Tensor, target: torch.Tensor, weight: torch.Tensor,
                bias: Optional[torch.Tensor] = None) -> torch.Tensor:
        acc = None if self.accumulate_grad_in_fp32 or x.dtype == torch.float64 else x.dtype
        loss, _ = _chunk_loss(x.reshape(-1, x.shape[-1]), weight, target.reshape(-1), bias,
                              ignore_index=int(self.ignore_index),
                              label_smoothing=float(self.label_smoothing),
                              softcap=float(self.logit_softcapping or 0.0),
                              reduction=self.reduction, accum_dtype=acc)
        return loss


# ---- chunk_scaled_dot_kkt_fwd (fla.ops.common.chunk_scaled_dot_kkt) ----------------------------
# fla-core 0.6.0, fla/ops/common/chunk_scaled_dot_kkt.py, chunk_scaled_dot_kkt_fwd (lines 84-135):
# fla's argument names and order over recops.chunk_scaled_dot_kkt. fla's kernel applies exp2 to
# the differences of g (log2 units, as its chunk_local_cumsum with scale = 1/ln 2 gives them), so
# gate_log2=True here. chunk_indices (fla's precomputed (sequence, chunk) schedule) is accepted
# and not read. Forward only, as fla's (its gradient is formed in the wy_fast backward).

from .. import chunk_scaled_dot_kkt as _chunk_scaled_dot_kkt  # noqa: E402


def chunk_scaled_dot_kkt_fwd(k: torch.Tensor, g: Optional[torch.Tensor] = None,
                             beta: Optional[torch.Tensor] = None,
                             cu_seqlens: Optional[torch.Tensor] = None, chunk_size: int = 64,
                             output_dtype: torch.dtype = torch.float32,
                             chunk_indices: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``fla.ops.common.chunk_scaled_dot_kkt.chunk_scaled_dot_kkt_fwd``: per chunk of
    ``chunk_size`` positions (restarting at each ``cu_seqlens`` sequence start, B = 1),
    ``A[t, hv, j] = beta[t, hv] * (k[t, h] . k[j, h]) * exp2(g[t, hv] - g[j, hv])`` for chunk
    column j before t, else 0; k ``[B, T, H, K]``, g (log2-unit chunk-local cumsum, optional) and
    beta ``[B, T, HV]``, h = hv // (HV // H). Returns ``[B, T, HV, chunk_size]`` in
    ``output_dtype`` (computed in fp32)."""
    if beta is None:
        raise ValueError("chunk_scaled_dot_kkt_fwd: beta [B, T, HV] is required")
    del chunk_indices  # fla's schedule for cu_seqlens; recops derives its own
    A = _chunk_scaled_dot_kkt(k, beta, g, cu_seqlens, int(chunk_size), True)
    return A if output_dtype in (None, torch.float32) else A.to(output_dtype)


# ---- solve_tril (fla.ops.utils.solve_tril; fla-core 0.6.0) -------------------------------------
# One self-contained block (its own import) so that merges with other appended blocks stay simple.

from .. import solve_tril as _solve_tril  # noqa: E402


def solve_tril(A: torch.Tensor, cu_seqlens: Optional[torch.Tensor] = None,
               chunk_indices: Optional[torch.Tensor] = None,
               output_dtype: Optional[torch.dtype] = torch.float) -> torch.Tensor:
    """``fla.ops.utils.solve_tril.solve_tril``: ``(I + A)^-1`` per chunk block of A
    ``[B, T, H, BT]`` (BT = 16, 32 or 64 = the chunk size; only the strictly lower part of each
    chunk's block is read), chunks restarting at each ``cu_seqlens`` sequence start (B = 1), in
    ``output_dtype`` (None: A's dtype). ``chunk_indices`` (fla's precomputed schedule) is accepted
    and not read. Forward only, as fla's (no gradient)."""
    del chunk_indices  # fla's schedule for cu_seqlens; recops derives its own
    return _solve_tril(A, cu_seqlens, out_dtype=output_dtype or A.dtype)


# ---- recompute_w_u_fwd (fla.ops.gated_delta_rule.wy_fast; fla-core 0.6.0) ----------------------
# fla-core 0.6.0, fla/ops/gated_delta_rule/wy_fast.py, recompute_w_u_fwd (lines 255-294): fla's
# argument names, order and return order (w, u) over recops.recompute_w_u_fwd. fla's kernel applies
# exp2 to g (log2 units: its GDN forward takes chunk_local_cumsum with scale = 1/ln 2), so
# gate_log2=True here. The chunk size is A's last dim, as in fla. chunk_indices (fla's precomputed
# (sequence, chunk) schedule) is accepted and not read. One self-contained block (its own import).

from .. import recompute_w_u_fwd as _recompute_w_u_fwd  # noqa: E402


def recompute_w_u_fwd(k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor, A: torch.Tensor,
                      g: Optional[torch.Tensor] = None, cu_seqlens: Optional[torch.Tensor] = None,
                      chunk_indices: Optional[torch.Tensor] = None):
    """``fla.ops.gated_delta_rule.wy_fast.recompute_w_u_fwd``: per chunk of BT = ``A.shape[-1]``
    positions (restarting at each ``cu_seqlens`` sequence start, B = 1), with A the chunks' rows of
    ``(I + A_kkt)^-1`` ``[B, T, HV, BT]``: ``u = A (beta * v)`` and
    ``w = A (beta * exp2(g) * k)`` (no factor without g; g the log2-unit chunk-local cumsum
    ``[B, T, HV]``), k ``[B, T, H, K]`` at key head hv // (HV // H), v ``[B, T, HV, V]``.
    Returns ``(w, u)``: w ``[B, T, HV, K]`` in k's dtype, u like v. Forward only, as fla's."""
    del chunk_indices  # fla's schedule for cu_seqlens; recops derives its own
    return _recompute_w_u_fwd(k, v, beta, A, g, cu_seqlens, gate_log2=True)


# ---- chunk_fwd_o (fla.ops.common.chunk_o; fla-core 0.6.0) --------------------------------------
# fla-core 0.6.0, fla/ops/common/chunk_o.py, chunk_fwd_o (lines 543-586): fla's argument names and
# order over recops.chunk_fwd_o. One self-contained block (its own import). fla's kernel applies
# exp2 to g and to its differences (log2 units, as its GDN forward's chunk_local_cumsum with
# scale = 1/ln 2 gives them), so gate_log2=True here; g_gamma (a per-head constant log2 decay per
# position) is folded into g; state_v_first (h stored [.., V, K]) is a transpose of h (the binding
# copies it dense). chunk_indices (fla's precomputed schedule) is accepted and not read. o is in
# v's dtype as fla's (recops computes it in q's dtype, then casts). Forward only, as fla's.

from .. import chunk_fwd_o as _chunk_fwd_o  # noqa: E402


def chunk_fwd_o(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, h: torch.Tensor,
                g: Optional[torch.Tensor] = None, g_gamma: Optional[torch.Tensor] = None,
                scale: Optional[float] = None, state_v_first: bool = False,
                cu_seqlens: Optional[torch.Tensor] = None, chunk_size: int = 64,
                chunk_indices: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``fla.ops.common.chunk_o.chunk_fwd_o``: per chunk c of ``chunk_size`` positions
    (restarting at each ``cu_seqlens`` sequence start, B = 1) and value head hv,
    ``o[t] = scale * exp2(g[t]) * h[c]^T q[t] + scale * sum_{j <= t in the chunk}
    exp2(g[t] - g[j]) * (q[t] . k[j]) * v[j]``; q, k ``[B, T, H, K]``, v ``[B, T, HV, V]``,
    h ``[B, NT, HV, K, V]`` (``[.., V, K]`` with state_v_first; with cu_seqlens the chunks of all
    sequences in order), g (log2-unit chunk-local cumsum, optional) ``[B, T, HV]``, g_gamma
    ``[HV]`` (adds ``g_gamma * (position in chunk + 1)`` to g), scale default ``K ** -0.5``.
    Returns ``[B, T, HV, V]`` in v's dtype."""
    del chunk_indices  # fla's schedule for cu_seqlens; recops derives its own
    bt = int(chunk_size)
    if state_v_first:
        h = h.transpose(-1, -2)
    if g_gamma is not None:
        T = q.shape[1]
        pos = torch.arange(T, device=q.device)
        if cu_seqlens is not None:
            starts = cu_seqlens[:-1].to(device=q.device, dtype=torch.long)
            pos = pos - torch.repeat_interleave(starts, torch.diff(cu_seqlens).to(q.device),
                                                output_size=T)
        gg = g_gamma.float()[None, None, :] * (pos % bt + 1).float()[None, :, None]
        gg = gg.expand(q.shape[0], T, g_gamma.shape[0])
        g = gg.contiguous() if g is None else g.float() + gg
    o = _chunk_fwd_o(q, k, v, h, g, None if scale is None else float(scale), cu_seqlens, bt, True)
    return o if o.dtype == v.dtype else o.to(v.dtype)


# ---- chunk_bwd_dv_local (fla.ops.common.chunk_o; fla-core 0.6.0) -------------------------------
# fla-core 0.6.0, fla/ops/common/chunk_o.py, chunk_bwd_dv_local (lines 654-706): fla's argument
# names, order and defaults over recops.chunk_bwd_dv_local (whose schema follows training_ops §4.3:
# q, k, g, do). One self-contained block (its own import). fla's kernel applies exp2 to the
# differences of g (log2 units), so gate_log2=True here; g_gamma (a per-head constant log2 decay
# per position) becomes g = g_gamma * (position in chunk + 1), and replaces g when both are given,
# as in fla's kernel. A (a precomputed attention matrix, fla's USE_A path) is not served.
# chunk_indices (fla's precomputed schedule) is accepted and not read. dv is in do's dtype, as
# fla's empty_like(do). Forward only, as fla's.

from .. import chunk_bwd_dv_local as _chunk_bwd_dv_local  # noqa: E402


def chunk_bwd_dv_local(q: torch.Tensor, k: torch.Tensor, do: torch.Tensor,
                       g: Optional[torch.Tensor] = None, g_gamma: Optional[torch.Tensor] = None,
                       A: Optional[torch.Tensor] = None, scale: Optional[float] = None,
                       cu_seqlens: Optional[torch.Tensor] = None, chunk_size: int = 64,
                       chunk_indices: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``fla.ops.common.chunk_o.chunk_bwd_dv_local``: per chunk of ``chunk_size`` positions
    (restarting at each ``cu_seqlens`` sequence start, B = 1) and value head hv,
    ``dv[j] = scale * sum_{i >= j in the chunk} exp2(g[i] - g[j]) * (q[i] . k[j]) * do[i]``;
    q, k ``[B, T, H, K]`` at key head hv // (HV // H), do ``[B, T, HV, V]``, g (log2-unit
    chunk-local cumsum, optional) ``[B, T, HV]``, g_gamma ``[HV]`` (g = g_gamma * (position in
    chunk + 1), used instead of g), scale default ``K ** -0.5``. Returns ``[B, T, HV, V]`` in do's
    dtype."""
    del chunk_indices  # fla's schedule for cu_seqlens; recops derives its own
    if A is not None:
        raise NotImplementedError("chunk_bwd_dv_local: A (a precomputed attention matrix) is not "
                                  "served; pass q, k and g")
    bt = int(chunk_size)
    if g_gamma is not None:
        B, T = q.shape[0], q.shape[1]
        ends = [0, T] if cu_seqlens is None else [int(x) for x in cu_seqlens.tolist()]
        step = torch.cat([torch.arange(e - s, device=q.device) % bt + 1
                          for s, e in zip(ends[:-1], ends[1:])] or
                         [torch.zeros(0, dtype=torch.long, device=q.device)])
        g = (step.float()[:, None] * g_gamma.float()[None, :]).unsqueeze(0).expand(B, -1, -1)
        g = g.contiguous()
    return _chunk_bwd_dv_local(q, k, g, do, None if scale is None else float(scale), cu_seqlens,
                               bt, True)


# ---- chunk_gated_delta_rule_bwd_dhu (fla.ops.common.chunk_delta_h; fla-core 0.6.0) -------------
# fla-core 0.6.0, fla/ops/common/chunk_delta_h.py, chunk_gated_delta_rule_bwd_dhu (lines 751-822):
# fla's argument names and order over recops.chunk_gated_delta_rule_bwd_dhu. One self-contained
# block (its own import). fla's kernel applies exp2 to g (log2 units), so gate_log2=True here.
# Outputs as fla's: dh [B, NT, HV, K, V] in q's dtype with NT = ceil(T / BT), or with cu_seqlens
# the exact chunk count (len(chunk_indices); recops sizes dh with the sync-free bound
# ceil(T / BT) + N and the spare chunks are cut off here, which reads cu_seqlens on the host as
# fla's prepare_chunk_indices does); dh0 fp32 like h0, or None without h0; dv2 like dv.
# state_v_first ([.., V, K] states) transposes h0, dht in and dh, dh0 out. gk (KDA's per-channel
# gate, log2 units like g: fla's USE_GK branch, lines 350-690) is passed on (recops' CPU and
# cuda_sm80 paths both serve it); chunk_indices gives only the count, chunk_offsets and use_graph
# (a CUDA-graph buffer cache) are accepted and not read. Forward only, as fla's.

from .. import chunk_gated_delta_rule_bwd_dhu as _chunk_gated_delta_rule_bwd_dhu  # noqa: E402


def chunk_gated_delta_rule_bwd_dhu(q: torch.Tensor, k: torch.Tensor, w: torch.Tensor,
                                   do: torch.Tensor, dv: torch.Tensor,
                                   g: Optional[torch.Tensor] = None,
                                   gk: Optional[torch.Tensor] = None,
                                   h0: Optional[torch.Tensor] = None,
                                   dht: Optional[torch.Tensor] = None,
                                   scale: Optional[float] = None, state_v_first: bool = False,
                                   cu_seqlens: Optional[torch.Tensor] = None,
                                   chunk_size: int = 64,
                                   chunk_indices: Optional[torch.Tensor] = None,
                                   chunk_offsets: Optional[torch.Tensor] = None,
                                   use_graph: bool = False):
    """``fla.ops.common.chunk_delta_h.chunk_gated_delta_rule_bwd_dhu``: per sequence and value
    head, dS = dht (or 0), then for the chunks c of ``chunk_size`` positions from last to first
    (restarting at each ``cu_seqlens`` start, B = 1): ``dh[c] = dS`` (the gradient of the state
    after chunk c), ``dv2[t] = dv[t] + exp2(g[L] - g[t]) * dS^T k[t]``,
    ``dS = exp2(g[L]) * dS + scale * sum_t exp2(g[t]) q[t] (x) do[t] - sum_t w[t] (x) dv2[t]``;
    dh0 = the final dS. With gk ``[B, T, HV, K]`` (KDA's per-channel log2-unit chunk-local
    cumsum; q, k are then the gated qg, kg) dS's row i also decays by ``exp2(gk[L, i])``. q, k ``[B, T, H, K]``, w ``[B, T, HV, K]``, do, dv ``[B, T, HV, V]``,
    g (log2-unit chunk-local cumsum, optional) ``[B, T, HV]``, h0, dht ``[N, HV, K, V]``
    (``[.., V, K]`` with state_v_first), scale default ``K ** -0.5``.
    Returns ``(dh, dh0, dv2)``: dh ``[B, NT, HV, K, V]`` in q's dtype, dh0 fp32 or None, dv2
    like dv."""
    del chunk_offsets, use_graph  # fla's precomputed offsets and graph buffers
    bt = int(chunk_size)
    if state_v_first:
        h0 = None if h0 is None else h0.transpose(-1, -2)
        dht = None if dht is None else dht.transpose(-1, -2)
    dh, dh0, dv2 = _chunk_gated_delta_rule_bwd_dhu(q, k, w, do, dv, g, h0, dht,
                                                   None if scale is None else float(scale),
                                                   cu_seqlens, bt, True, gk=gk)
    if cu_seqlens is not None:
        if chunk_indices is not None:
            count = int(chunk_indices.shape[0])
        else:
            lens = torch.diff(cu_seqlens.detach().to("cpu", torch.long))
            count = int(((lens + bt - 1) // bt).sum())
        dh = dh[:, :count]
    if h0 is None:
        dh0 = None
    if state_v_first:
        dh = dh.transpose(-1, -2).contiguous()
        dh0 = None if dh0 is None else dh0.transpose(-1, -2).contiguous()
    return dh, dh0, dv2


# ---- chunk_gated_delta_rule_fwd_h (fla.ops.common.chunk_delta_h; fla-core 0.6.0) ----------------
# fla-core 0.6.0, fla/ops/common/chunk_delta_h.py, chunk_gated_delta_rule_fwd_h (lines 688-747):
# fla's argument names, order and return order (h, v_new, final_state) over
# recops.chunk_gated_delta_rule_fwd_h. One self-contained block (its own import). fla's kernel
# applies exp2 to g and to its differences (log2 units), so gate_log2=True here. h has fla's NT:
# ceil(T / chunk_size), or with cu_seqlens the chunk count len(chunk_indices) (from chunk_indices,
# else from cu_seqlens_cpu, else read from cu_seqlens on the host, as fla's prepare_chunk_indices
# does). state_v_first (states stored [.., V, K]) transposes initial_state in and h / final_state
# out. save_new_value=False returns None for v_new (it is computed anyway); final_state is None
# without output_final_state, as fla's. gk (KDA's per-channel gate cumsum [B, T, HV, K], log2
# units as g; fla's USE_GK) is passed to recops' gk: the state's K rows decay by exp2(gk_L) per
# chunk (recops' CPU and cuda_sm80 paths). chunk_offsets is accepted and not read.
# Forward only, as fla's.

from .. import chunk_gated_delta_rule_fwd_h as _chunk_gated_delta_rule_fwd_h  # noqa: E402


def chunk_gated_delta_rule_fwd_h(k: torch.Tensor, w: torch.Tensor, u: torch.Tensor,
                                 g: Optional[torch.Tensor] = None,
                                 gk: Optional[torch.Tensor] = None,
                                 initial_state: Optional[torch.Tensor] = None,
                                 output_final_state: bool = False, chunk_size: int = 64,
                                 save_new_value: bool = True, state_v_first: bool = False,
                                 cu_seqlens: Optional[torch.Tensor] = None,
                                 cu_seqlens_cpu: Optional[torch.Tensor] = None,
                                 chunk_indices: Optional[torch.Tensor] = None,
                                 chunk_offsets: Optional[torch.Tensor] = None):
    """``fla.ops.common.chunk_delta_h.chunk_gated_delta_rule_fwd_h``: per sequence (batch row, or
    ``cu_seqlens`` segment with B = 1) and value head hv, with the fp32 state S ``[K, V]`` from
    ``initial_state`` (or 0), for each chunk c of ``chunk_size`` positions in order:
    ``h[c] = S``; ``v_new[t] = u[t] - w[t]^T S``; ``S = exp2(g[L]) S + sum_t exp2(g[L] - g[t])
    k[t, hv // (HV // H)] (x) v_new[t]`` (L the chunk's last position; no factors without g, the
    log2-unit chunk-local cumsum ``[B, T, HV]``). k ``[B, T, H, K]``, w ``[B, T, HV, K]``, u
    ``[B, T, HV, V]``, initial_state ``[N, HV, K, V]``. With ``gk`` (KDA's log2-unit per-channel
    chunk-local gate cumsum ``[B, T, HV, K]``) row i of the state also decays by
    ``exp2(gk[L, i])`` before the update (k is used as given: KDA passes it gated). Returns ``(h, v_new, final_state)``: h
    ``[B, NT, HV, K, V]`` in k's dtype (the chunks of all sequences in order with cu_seqlens),
    v_new like u (None with ``save_new_value=False``), final_state ``[N, HV, K, V]`` fp32 or None;
    the state tensors are ``[.., V, K]`` with ``state_v_first``. Forward only, as fla's."""
    del chunk_offsets  # fla's per-sequence chunk starts; recops derives its own
    bt = int(chunk_size)
    num_chunks = None
    if cu_seqlens is not None:
        if chunk_indices is not None:
            num_chunks = int(chunk_indices.shape[0])
        else:
            cu = (cu_seqlens_cpu if cu_seqlens_cpu is not None else cu_seqlens).tolist()
            num_chunks = sum((cu[i + 1] - cu[i] + bt - 1) // bt for i in range(len(cu) - 1))
    if state_v_first and initial_state is not None:
        initial_state = initial_state.transpose(-1, -2)
    h, v_new, ht = _chunk_gated_delta_rule_fwd_h(k, w, u, g, initial_state,
                                                 bool(output_final_state), cu_seqlens, bt, True,
                                                 num_chunks, gk=gk)
    if state_v_first:
        h = h.transpose(-1, -2).contiguous()
        ht = ht.transpose(-1, -2).contiguous() if output_final_state else ht
    return h, v_new if save_new_value else None, ht if output_final_state else None


# ---- chunk_bwd_dqkwg (fla.ops.common.chunk_o; fla-core 0.6.0) ----------------------------------
# fla-core 0.6.0, fla/ops/common/chunk_o.py, chunk_bwd_dqkwg (lines 709-793): fla's argument
# names, order and return (dq, dk, dw, dg) over recops.chunk_bwd_dqkwg. One self-contained block
# (its own import). fla's kernel applies exp2 to g (log2 units), so gate_log2=True here; its dg is
# the gradient with respect to the natural-log G (no ln 2 factor), as recops'. g_gamma (a per-head
# constant log2 decay) is used only without g, as in fla's kernel, and gives no dg (fla: None).
# w=None gives dw None (fla's dv is then not read). state_v_first (h, dh stored [.., V, K]) is a
# transpose. chunk_indices is accepted and not read. Forward only, as fla's.

from .. import chunk_bwd_dqkwg as _chunk_bwd_dqkwg  # noqa: E402


def _gamma_gates(g_gamma, B, T, cu_seqlens, chunk_size, device):
    """g_gamma[hv] * (position in its chunk + 1) as ``[B, T, HV]`` fp32, the chunks restarting
    at each cu_seqlens start."""
    t = torch.arange(T, device=device)
    if cu_seqlens is not None:
        lens = torch.diff(cu_seqlens).to(device)
        first = torch.repeat_interleave(cu_seqlens[:-1].to(device=device, dtype=torch.long), lens,
                                        output_size=T)
        t = t - first
    steps = (t % chunk_size + 1).float()
    return (steps[None, :, None] * g_gamma.float()[None, None, :]).expand(B, T, -1).contiguous()


def chunk_bwd_dqkwg(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor,
                    h: torch.Tensor, dh: torch.Tensor, w: Optional[torch.Tensor] = None,
                    g: Optional[torch.Tensor] = None, g_gamma: Optional[torch.Tensor] = None,
                    dv: Optional[torch.Tensor] = None, scale: Optional[float] = None,
                    state_v_first: bool = False, cu_seqlens: Optional[torch.Tensor] = None,
                    chunk_size: int = 64, chunk_indices: Optional[torch.Tensor] = None):
    """``fla.ops.common.chunk_o.chunk_bwd_dqkwg``: per chunk of ``chunk_size`` positions
    (restarting at each ``cu_seqlens`` sequence start, B = 1; L its last position), value head hv
    (key head hv // (HV // H)): ``ds_ij = scale * exp2(g_i - g_j) * (do_i . v_j)`` (j <= i),
    ``dq_i = scale * exp2(g_i) * h_c do_i + sum_j ds_ij k_j``,
    ``dk_j = exp2(g_L - g_j) * dh_c v_j + sum_i ds_ij q_i`` (summed over each key head's value
    heads), ``dw = -h_c dv`` and ``dg_t = q_t . dq_t - k_t . dk_t`` (+ the state terms at L).
    q, k ``[B, T, H, K]``; v, do, dv ``[B, T, HV, V]``; h, dh ``[B, NT, HV, K, V]`` (``[.., V, K]``
    with state_v_first); w ``[B, T, HV, K]``; g (log2-unit chunk-local cumsum) ``[B, T, HV]``;
    g_gamma ``[HV]``. Returns ``(dq, dk, dw, dg)``: dq, dk ``[B, T, H, K]`` in q's / k's dtype,
    dw like w (None without w), dg fp32 like g (None without g)."""
    del chunk_indices  # fla's schedule for cu_seqlens; recops derives its own
    bt = int(chunk_size)
    if state_v_first:
        h, dh = h.transpose(-1, -2), dh.transpose(-1, -2)
    gates = g
    if gates is None and g_gamma is not None:
        gates = _gamma_gates(g_gamma, q.shape[0], q.shape[1], cu_seqlens, bt, q.device)
    dq, dk, dw, dg = _chunk_bwd_dqkwg(q, k, v, w, gates, h, dh, do, dv if w is not None else None,
                                      None if scale is None else float(scale), cu_seqlens, bt,
                                      True)
    return dq, dk, (dw if w is not None else None), (dg if g is not None else None)


# ---- prepare_wy_repr_bwd (fla.ops.gated_delta_rule.wy_fast; fla-core 0.6.0) --------------------
# fla-core 0.6.0, fla/ops/gated_delta_rule/wy_fast.py, prepare_wy_repr_bwd (lines 297-347): fla's
# argument names, order and return (dk, dv, db, dg) over recops.prepare_wy_repr_bwd. One
# self-contained block (its own import). fla's kernel applies exp2 to g (log2 units), so
# gate_log2=True here; its dg is the gradient with respect to the natural-log G (no ln 2 factor),
# as recops'. The chunk size is A's last dim, as in fla. dk is fla's full dk of this stage (through
# w and through A_kkt), summed over each key head's value heads; dg is returned in g's dtype (fla's
# empty_like(g)), None without g. chunk_indices is accepted and not read. Forward only, as fla's.

from .. import prepare_wy_repr_bwd as _prepare_wy_repr_bwd  # noqa: E402


def prepare_wy_repr_bwd(k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor, A: torch.Tensor,
                        dw: torch.Tensor, du: torch.Tensor, g: Optional[torch.Tensor] = None,
                        cu_seqlens: Optional[torch.Tensor] = None,
                        chunk_indices: Optional[torch.Tensor] = None):
    """``fla.ops.gated_delta_rule.wy_fast.prepare_wy_repr_bwd``: the backward of
    ``w = A (beta * exp2(g) * k)``, ``u = A (beta * v)`` with A the chunks' rows of
    ``(I + A_kkt)^-1`` ``[B, T, HV, BT]`` (BT = ``A.shape[-1]``; chunks restart at each
    ``cu_seqlens`` start, B = 1) and ``A_kkt[t, j] = beta_t (k_t . k_j) exp2(g_t - g_j)``
    (j < t), given dw ``[B, T, HV, K]`` and du ``[B, T, HV, V]``. k ``[B, T, H, K]`` (key head
    hv // (HV // H)), v ``[B, T, HV, V]``, beta and g (log2-unit chunk-local cumsum)
    ``[B, T, HV]``. Returns ``(dk, dv, db, dg)``: dk like k, dv like v, db like beta, dg like g
    (the natural-log-unit gradient, fla's convention; None without g). Forward only, as fla's."""
    del chunk_indices  # fla's schedule for cu_seqlens; recops derives its own
    dk, dv, db, dg = _prepare_wy_repr_bwd(k, v, beta, g, A, dw, du, cu_seqlens, gate_log2=True)
    return dk, dv, db, (dg.to(g.dtype) if g is not None else None)


# ---- chunk_gated_delta_rule (fla.ops.gated_delta_rule; fla-core 0.6.0) ------------------------
# fla-core 0.6.0, fla/ops/gated_delta_rule/chunk.py, chunk_gated_delta_rule (lines 397-593): fla's
# public signature and return (o, final_state) over recops.chunk_gated_delta_rule. One
# self-contained block (its own import). fla's public g is the natural-log gate (its forward
# converts to log2 inside), which is what the recops op takes: no gate_log2 here. head_first in the
# keywords raises DeprecationWarning, as fla 0.6.0 does; transpose_state_layout is the deprecated
# name of state_v_first (states [.., V, K]: a transpose of initial_state in and final_state out).
# use_beta_sigmoid_in_kernel (with allow_neg_eigval: 2·sigmoid) and use_gate_in_kernel
# (g = -exp(A_log)·softplus(g + dt_bias)) are composed here in fp32 before the op. cu_seqlens_cpu
# and chunk_indices are accepted and not read; cp_context raises NotImplementedError. Forward only
# for now: inputs that require grad (with grad mode on) raise NotImplementedError.

from .. import chunk_gated_delta_rule as _chunk_gated_delta_rule  # noqa: E402

_GDN_KWARGS = {"chunk_size", "use_gate_in_kernel", "A_log", "dt_bias", "transpose_state_layout",
               "head_first"}


def chunk_gated_delta_rule(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                           beta: torch.Tensor, scale: Optional[float] = None,
                           initial_state: Optional[torch.Tensor] = None,
                           output_final_state: bool = False,
                           use_qk_l2norm_in_kernel: bool = False,
                           use_beta_sigmoid_in_kernel: bool = False,
                           allow_neg_eigval: bool = False, state_v_first: bool = False,
                           cu_seqlens: Optional[torch.Tensor] = None,
                           cu_seqlens_cpu: Optional[torch.Tensor] = None,
                           chunk_indices: Optional[torch.Tensor] = None, cp_context=None,
                           **kwargs):
    """``fla.ops.gated_delta_rule.chunk_gated_delta_rule``: per sequence (batch row, or
    ``cu_seqlens`` segment with B = 1) and value head hv (key head ``hv // (HV // H)``), with the
    state S ``[K, V]`` from ``initial_state`` (or 0), token by token:
    ``S = exp(g[t]) S``; ``S = S + beta[t] k[t] (x) (v[t] - S^T k[t])``; ``o[t] = scale S^T q[t]``
    (g the natural-log gate ``[B, T, HV]``, scale default ``K ** -0.5``; q and k l2-normalised
    first with ``use_qk_l2norm_in_kernel``). q, k ``[B, T, H, K]``; v ``[B, T, HV, V]``; beta
    ``[B, T, HV]``; initial_state ``[N, HV, K, V]`` (``[.., V, K]`` with state_v_first); keyword
    ``chunk_size`` 16, 32 or 64 (default 64). Returns ``(o, final_state)``: o ``[B, T, HV, V]`` in
    v's dtype, final_state ``[N, HV, K, V]`` fp32 or None without output_final_state.
    Differentiable in q, k, v, g, beta and initial_state (recops' chunk_gated_delta_rule_bwd)."""
    del cu_seqlens_cpu, chunk_indices  # fla's precomputed schedules; recops walks cu_seqlens
    if "transpose_state_layout" in kwargs:
        if state_v_first:
            raise ValueError("Cannot pass both `state_v_first` and the deprecated "
                             "`transpose_state_layout`.")
        import warnings
        warnings.warn("`transpose_state_layout` is deprecated and renamed to `state_v_first`.",
                      DeprecationWarning, stacklevel=2)
        state_v_first = bool(kwargs.pop("transpose_state_layout"))
    if "head_first" in kwargs:  # as fla 0.6.0: head_first was removed
        raise DeprecationWarning(
            "head_first has been removed. Inputs must be in `[B, T, H, ...]` format.")
    unknown = set(kwargs) - _GDN_KWARGS
    if unknown:
        raise TypeError(f"chunk_gated_delta_rule: unexpected keyword arguments {sorted(unknown)}")
    if cp_context is not None:
        raise NotImplementedError(
            "chunk_gated_delta_rule: cp_context (context parallelism) is not served")
    if q.shape[2] != k.shape[2]:
        raise ValueError(f"q and k must have the same number of heads, but got "
                         f"q.shape[2]={q.shape[2]} and k.shape[2]={k.shape[2]}")
    chunk_size = int(kwargs.get("chunk_size", 64))
    if chunk_size not in (16, 32, 64):
        raise ValueError(f"`chunk_size` must be 16, 32, or 64 for Gated Delta Rule, got "
                         f"{chunk_size}.")
    if allow_neg_eigval and not use_beta_sigmoid_in_kernel:
        raise ValueError("`allow_neg_eigval=True` requires `use_beta_sigmoid_in_kernel=True`.")
    if cu_seqlens is not None and q.shape[0] != 1:
        raise ValueError(f"The batch size is expected to be 1 rather than {q.shape[0]} when using "
                         f"`cu_seqlens`.")
    if kwargs.get("use_gate_in_kernel", False):
        A_log, dt_bias = kwargs.get("A_log"), kwargs.get("dt_bias")
        if A_log is None:
            raise ValueError("A_log must be provided when use_gate_in_kernel=True.")
        g = g.float() if dt_bias is None else g.float() + dt_bias.float()
        g = -A_log.float().exp() * torch.nn.functional.softplus(g)
    if use_beta_sigmoid_in_kernel:
        beta = beta.float().sigmoid() * (2.0 if allow_neg_eigval else 1.0)
    if state_v_first and initial_state is not None:
        initial_state = initial_state.transpose(-1, -2)
    o, ht = _chunk_gated_delta_rule(q, k, v, g, beta, None if scale is None else float(scale),
                                    initial_state, bool(output_final_state), cu_seqlens,
                                    bool(use_qk_l2norm_in_kernel), chunk_size)
    if not output_final_state:
        return o, None
    return o, (ht.transpose(-1, -2).contiguous() if state_v_first else ht)


# ---- chunk_kda_fwd_intra (fla.ops.kda.chunk_intra; fla-core 0.6.0) ------------------------------
# fla-core 0.6.0, fla/ops/kda/chunk_intra.py, chunk_kda_fwd_intra (lines 801-942): fla's argument
# names, order and return order (w, u, qg, kg, Aqk, Akk) over recops.chunk_kda_fwd_intra. fla's
# kernels apply exp2 to gk (log2 units: its chunk_kda cumsums with scale = 1/ln 2), so
# gate_log2=True here. qg is None unless disable_recompute, as fla returns it. safe_gate,
# lower_bound (fla's GPU gate-shift heuristics) and use_graph are accepted and ignored: recops'
# sub-block factorisation needs no gate bound. chunk_indices is accepted and not read. Akk is fp32
# (fla: k's dtype). One self-contained block (its own import).

from .. import chunk_kda_fwd_intra as _chunk_kda_fwd_intra  # noqa: E402


def chunk_kda_fwd_intra(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        gk: Optional[torch.Tensor] = None, beta: Optional[torch.Tensor] = None,
                        scale: Optional[float] = None, cu_seqlens: Optional[torch.Tensor] = None,
                        chunk_size: int = 64, chunk_indices: Optional[torch.Tensor] = None,
                        safe_gate: bool = False, lower_bound: Optional[float] = None,
                        disable_recompute: bool = False, use_graph: bool = False):
    """``fla.ops.kda.chunk_intra.chunk_kda_fwd_intra``: the KDA intra-chunk forward per chunk of
    ``chunk_size`` (32 or 64) positions (restarting at each ``cu_seqlens`` sequence start, B = 1),
    with gk the log2-unit chunk-local cumsum of the per-channel gates ``[B, T, HV, K]``:
    ``Aqk = scale * sum_d q_i k_j exp2(gk_i - gk_j)`` (j <= i), ``Akk = (I + M)^-1`` with
    ``M = beta_i * sum_d k_i k_j exp2(gk_i - gk_j)`` (j < i), ``w = Akk (beta * k * exp2(gk))``,
    ``u = Akk (beta * v)``, ``kg = k * exp2(gk_last - gk)``, ``qg = q * exp2(gk)``. Returns
    ``(w, u, qg, kg, Aqk, Akk)``; qg is None unless ``disable_recompute``. Forward only, as fla's."""
    del chunk_indices, safe_gate, lower_bound, use_graph  # GPU schedule and gate-shift hints
    if gk is None or beta is None:
        raise ValueError("chunk_kda_fwd_intra: gk and beta are required")
    if chunk_size not in (32, 64):
        raise ValueError(f"KDA intra chunk kernel only supports chunk_size 32 or 64, got "
                         f"{chunk_size}.")
    w, u, qg, kg, Aqk, Akk = _chunk_kda_fwd_intra(
        q, k, v, gk, beta, None if scale is None else float(scale), cu_seqlens, int(chunk_size),
        gate_log2=True)
    return w, u, (qg if disable_recompute else None), kg, Aqk, Akk


# ---- chunk_kda_bwd_wy_dqkg_fused (fla.ops.kda.chunk_bwd; fla-core 0.6.0) -----------------------
# fla-core 0.6.0, fla/ops/kda/chunk_bwd.py, chunk_kda_bwd_wy_dqkg_fused (lines 382-458): fla's
# argument names, order and return (dq, dk, dv, db, dg, dA) over recops.chunk_kda_bwd_wy_dqkg_fused.
# One self-contained block (its own import). fla's kernel applies exp2 to g (log2 units), so
# gate_log2=True here; its dg is the gradient with respect to the natural-log G (no ln 2 factor),
# as recops'. fla returns dq and dk fp32 at the HV value heads (its caller sums each group to H);
# recops sums inside the op, so with HV > H the op runs on q and k repeated to HV heads
# (repeat_interleave: value head hv sees its key head), which gives fla's per-value-head values.
# state_v_first transposes h and dh; chunk_indices, chunk_offsets and use_graph are accepted and
# not read. Forward only, as fla's.

from .. import chunk_kda_bwd_wy_dqkg_fused as _chunk_kda_bwd_wy_dqkg_fused  # noqa: E402


def chunk_kda_bwd_wy_dqkg_fused(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                v_new: torch.Tensor, g: torch.Tensor, beta: torch.Tensor,
                                A: torch.Tensor, h: torch.Tensor, do: torch.Tensor,
                                dh: torch.Tensor, dv: torch.Tensor, scale: Optional[float] = None,
                                state_v_first: bool = False,
                                cu_seqlens: Optional[torch.Tensor] = None, chunk_size: int = 64,
                                chunk_indices: Optional[torch.Tensor] = None,
                                chunk_offsets: Optional[torch.Tensor] = None,
                                use_graph: bool = False):
    """``fla.ops.kda.chunk_bwd.chunk_kda_bwd_wy_dqkg_fused``: per chunk of ``chunk_size``
    positions (restarting at each ``cu_seqlens`` start, B = 1; L its last position) and value head
    hv, with the per-channel log2 gate cumsum g ``[B, T, HV, K]``, ``e = exp2(g)``:
    ``dq = scale * e * (h_c do)``; ``dk = exp2(g_L - g) * (dh_c v_new) + beta * e * (A^T dw)``
    with ``dw = -h_c dv``; ``dv' = beta * (A^T dv)``; ``db``, ``dg`` and
    ``dA = -A^T (dv (beta v)^T + dw (beta e k)^T) A^T`` (strictly lower). A: the chunks' rows of
    ``(I + M)^-1`` ``[B, T, HV, BT]``; h, dh ``[B, NT, HV, K, V]`` (``[.., V, K]`` with
    state_v_first). Returns ``(dq, dk, dv, db, dg, dA)``: dq, dk fp32 ``[B, T, HV, K]``, dv like
    v, db fp32 like beta, dg fp32 like g (natural-log units), dA fp32 like A."""
    del chunk_indices, chunk_offsets, use_graph  # fla's schedules and CUDA-graph buffers
    if state_v_first:
        h, dh = h.transpose(-1, -2), dh.transpose(-1, -2)
    H, HV = q.shape[2], v.shape[2]
    if HV > H:
        q, k = q.repeat_interleave(HV // H, dim=2), k.repeat_interleave(HV // H, dim=2)
    return _chunk_kda_bwd_wy_dqkg_fused(q, k, v, v_new, g, beta, A, h, do, dh, dv,
                                        None if scale is None else float(scale), cu_seqlens,
                                        int(chunk_size), True)


# ---- chunk_kda_bwd_dAv (fla.ops.kda.chunk_bwd; fla-core 0.6.0) ----------------------------------
# fla-core 0.6.0, fla/ops/kda/chunk_bwd.py, chunk_kda_bwd_dAv (lines 324-380): fla's argument
# names, order and return (dA, dv) over recops.chunk_kda_bwd_dav. q and k are not read (fla's
# kernel takes them and never loads them); k's last dim only gives the default scale K^-1/2
# (fla's caller always passes scale; fla itself fails on None). v is v_new. dA is fp32, the
# gradient with respect to the unscaled Aqk / scale (fla multiplies do v^T by scale). A is
# required. chunk_indices and use_graph are accepted and not read. One self-contained block.

from .. import chunk_kda_bwd_dav as _chunk_kda_bwd_dav  # noqa: E402


def chunk_kda_bwd_dAv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor,
                      A: Optional[torch.Tensor] = None, scale: Optional[float] = None,
                      cu_seqlens: Optional[torch.Tensor] = None, chunk_size: int = 64,
                      chunk_indices: Optional[torch.Tensor] = None, use_graph: bool = False):
    """``fla.ops.kda.chunk_bwd.chunk_kda_bwd_dAv``: per chunk of ``chunk_size`` positions
    (restarting at each ``cu_seqlens`` start, B = 1) and value head: ``dv_j = sum_{i >= j} A_ij
    do_i`` (A = chunk_kda_fwd_intra's Aqk, its lower part) and ``dA_ij = scale * do_i . v_j`` for
    j <= i, else 0 (v = v_new). Returns ``(dA, dv)``: dA fp32 ``[B, T, HV, BT]``, dv like do.
    q is unused; k gives the default scale ``K ** -0.5``. Forward only, as fla's."""
    del q, chunk_indices, use_graph  # unused by fla's kernel; fla's schedules and graph buffers
    if A is None:
        raise ValueError("chunk_kda_bwd_dAv: A (the forward's Aqk) is required")
    if scale is None:
        scale = k.shape[-1] ** -0.5
    return _chunk_kda_bwd_dav(v, do, A, float(scale), cu_seqlens, int(chunk_size))


# ---- chunk_kda_bwd_intra (fla.ops.kda.chunk_intra; fla-core 0.6.0) ------------------------------
# fla-core 0.6.0, fla/ops/kda/chunk_intra.py, chunk_kda_bwd_intra (lines 945-1025): fla's argument
# names, order and return (dq, dk, db, dg) over recops.chunk_kda_bwd_intra. fla's kernel applies
# exp2 to g (log2 units), so gate_log2=True here; dg is in natural-log units (no ln 2 factor), as
# fla's. fla passes and returns dq and dk fp32 at the HV value heads (its caller sums each group
# afterwards); recops' dq and dk are at the H key heads, so with HV > H the op runs on q and k
# repeated to HV heads (repeat_interleave) with fla's per-value-head dq and dk, which gives fla's
# per-value-head results. fla reads dAkk's diagonal; recops reads only its strictly lower part
# (M is strictly lower; chunk_kda_bwd_wy_dqkg_fused's dA has a zero diagonal). safe_gate and
# lower_bound (fla's gate-shift heuristics), chunk_indices and use_graph are accepted and not read.
# One self-contained block (its own import).

from .. import chunk_kda_bwd_intra as _chunk_kda_bwd_intra  # noqa: E402


def chunk_kda_bwd_intra(q: torch.Tensor, k: torch.Tensor, g: torch.Tensor, beta: torch.Tensor,
                        dAqk: torch.Tensor, dAkk: torch.Tensor, dq: torch.Tensor,
                        dk: torch.Tensor, db: torch.Tensor, dg: torch.Tensor,
                        cu_seqlens: Optional[torch.Tensor] = None,
                        chunk_indices: Optional[torch.Tensor] = None, chunk_size: int = 64,
                        safe_gate: bool = False, lower_bound: Optional[float] = None,
                        use_graph: bool = False):
    """``fla.ops.kda.chunk_intra.chunk_kda_bwd_intra``: per chunk of ``chunk_size`` positions
    (restarting at each ``cu_seqlens`` start, B = 1) and value head, with the log2 gate cumsum g
    ``[B, T, HV, K]`` and ``E_ij = exp2(g_i - g_j)``: adds to dq, dk, db, dg the gradients of
    ``<dAqk, Ahat> + <dAkk, M>``, ``Ahat_ij = sum q_i k_j E_ij`` (j <= i),
    ``M_ij = beta_i sum k_i k_j E_ij`` (j < i). dq, dk fp32 ``[B, T, HV, K]`` in and out (fla's
    caller sums them to H); db, dg fp32 (dg in natural-log units). Returns ``(dq, dk, db, dg)``.
    Forward only, as fla's."""
    del chunk_indices, safe_gate, lower_bound, use_graph  # GPU schedule and gate-shift hints
    H, HV = q.shape[2], g.shape[2]
    if HV > H:
        q, k = q.repeat_interleave(HV // H, dim=2), k.repeat_interleave(HV // H, dim=2)
    return _chunk_kda_bwd_intra(q, k, g, beta, dAqk, dAkk, dq, dk, db, dg, cu_seqlens,
                                int(chunk_size), True)


# ---- chunk_kda (fla.ops.kda.chunk; fla-core 0.6.0) ---------------------------------------------
# fla-core 0.6.0, fla/ops/kda/chunk.py, chunk_kda (lines 216-420): fla's argument names, order and
# checks over recops.chunk_kda (natural-log per-channel g, chunk 64 as fla's default). The gate and
# beta activations fla fuses (use_gate_in_kernel: -exp(A_log)·softplus(g + dt_bias), or with
# lower_bound lower_bound·sigmoid(exp(A_log)·(g + dt_bias)); use_beta_sigmoid_in_kernel,
# allow_neg_eigval) are applied here in torch, differentiable through autograd. safe_gate,
# disable_recompute and use_graph are speed options of fla's kernels: accepted, no effect.
# return_intermediate_states and cp_context raise NotImplementedError. One self-contained block.

from .. import chunk_kda as _chunk_kda  # noqa: E402

_KDA_KWARGS = {"chunk_size", "A_log", "dt_bias", "transpose_state_layout", "head_first",
               "chunk_indices"}


def chunk_kda(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
              beta: torch.Tensor, scale: Optional[float] = None,
              initial_state: Optional[torch.Tensor] = None, output_final_state: bool = False,
              use_qk_l2norm_in_kernel: bool = False, use_gate_in_kernel: bool = False,
              use_beta_sigmoid_in_kernel: bool = False, allow_neg_eigval: bool = False,
              safe_gate: bool = False, lower_bound: Optional[float] = None,
              disable_recompute: bool = False, return_intermediate_states: bool = False,
              state_v_first: bool = False, cu_seqlens: Optional[torch.Tensor] = None,
              cu_seqlens_cpu: Optional[torch.Tensor] = None, cp_context=None,
              use_graph: bool = False, max_num_seqs: Optional[int] = None, **kwargs):
    """``fla.ops.kda.chunk_kda``: per sequence (batch row, or ``cu_seqlens`` segment with B = 1)
    and value head hv (key head ``hv // (HV // H)``), with the state S ``[K, V]`` from
    ``initial_state`` (or 0), token by token: ``S = diag(exp(g[t])) S`` (a per-channel decay of
    S's K rows); ``S = S + beta[t] k[t] (x) (v[t] - S^T k[t])``; ``o[t] = scale S^T q[t]`` (g the
    natural-log gate ``[B, T, HV, K]``, scale default ``K ** -0.5``; q and k l2-normalised first
    with ``use_qk_l2norm_in_kernel``). q, k ``[B, T, H, K]``; v ``[B, T, HV, V]``; beta
    ``[B, T, HV]``; initial_state ``[N, HV, K, V]`` (``[.., V, K]`` with state_v_first); keyword
    ``chunk_size`` 32 or 64 (default 64). Returns ``(o, final_state)``: o ``[B, T, HV, V]`` in
    v's dtype, final_state ``[N, HV, K, V]`` fp32 or None without output_final_state.
    Differentiable in q, k, v, g, beta and initial_state (recops' chunk_kda_bwd; the gate and beta
    activations through torch autograd)."""
    del cu_seqlens_cpu, safe_gate, disable_recompute, use_graph, max_num_seqs
    if "transpose_state_layout" in kwargs:
        if state_v_first:
            raise ValueError("Cannot pass both `state_v_first` and the deprecated "
                             "`transpose_state_layout`.")
        import warnings
        warnings.warn("`transpose_state_layout` is deprecated and renamed to `state_v_first`.",
                      DeprecationWarning, stacklevel=2)
        state_v_first = bool(kwargs.pop("transpose_state_layout"))
    if "head_first" in kwargs:
        raise DeprecationWarning(
            "head_first has been removed. Inputs must be in `[B, T, H, ...]` format.")
    unknown = set(kwargs) - _KDA_KWARGS
    if unknown:
        raise TypeError(f"chunk_kda: unexpected keyword arguments {sorted(unknown)}")
    if cp_context is not None:
        raise NotImplementedError("chunk_kda: cp_context (context parallelism) is not served")
    if return_intermediate_states:
        raise NotImplementedError("chunk_kda: return_intermediate_states is not served (recops "
                                  "keeps h in its workspace)")
    if q.shape[2] != k.shape[2]:
        raise ValueError(f"q and k must have the same number of heads, but got "
                         f"q.shape[2]={q.shape[2]} and k.shape[2]={k.shape[2]}")
    chunk_size = int(kwargs.get("chunk_size", 64))
    if chunk_size not in (32, 64):
        raise ValueError(f"`chunk_size` must be 32 or 64 for KDA, got {chunk_size}.")
    if allow_neg_eigval and not use_beta_sigmoid_in_kernel:
        raise ValueError("`allow_neg_eigval=True` requires `use_beta_sigmoid_in_kernel=True`.")
    if cu_seqlens is not None and q.shape[0] != 1:
        raise ValueError(f"The batch size is expected to be 1 rather than {q.shape[0]} when using "
                         f"`cu_seqlens`.")
    if use_gate_in_kernel:
        A_log, dt_bias = kwargs.get("A_log"), kwargs.get("dt_bias")
        HV, K = g.shape[2], g.shape[3]
        x = g.float() if dt_bias is None else g.float() + dt_bias.float().view(HV, K)
        if lower_bound is not None:
            a = 1.0 if A_log is None else A_log.float().exp().view(HV, 1)
            g = lower_bound * torch.sigmoid(a * x)
        else:
            if A_log is None:
                raise ValueError("A_log must be provided when use_gate_in_kernel=True and "
                                 "lower_bound is None.")
            g = -A_log.float().exp().view(HV, 1) * torch.nn.functional.softplus(x)
    if use_beta_sigmoid_in_kernel:
        beta = beta.float().sigmoid() * (2.0 if allow_neg_eigval else 1.0)
    if state_v_first and initial_state is not None:
        initial_state = initial_state.transpose(-1, -2).contiguous()
    o, ht = _chunk_kda(q, k, v, g, beta, None if scale is None else float(scale), initial_state,
                       bool(output_final_state), cu_seqlens, bool(use_qk_l2norm_in_kernel),
                       chunk_size)
    if not output_final_state:
        return o, None
    return o, (ht.transpose(-1, -2).contiguous() if state_v_first else ht)
