"""Liger-Kernel's names and argument orders (``liger_kernel.transformers``, checked against
liger-kernel 0.8.5) over the recops training ops, for drop-in use.

Served: ``liger_rms_norm`` / ``LigerRMSNorm`` (recops ``rms_norm``), ``liger_fused_add_rms_norm``
/ ``LigerFusedAddRMSNorm`` (an add, then ``rms_norm``), ``liger_layer_norm`` /
``LigerLayerNorm`` (``layer_norm``), ``liger_cross_entropy`` /
``LigerCrossEntropyLoss`` (``fused_cross_entropy``), ``liger_fused_linear_cross_entropy`` /
``LigerFusedLinearCrossEntropyLoss`` (``chunk_loss``), ``liger_swiglu`` / ``LigerSwiGLUMLP``
(``clipped_swiglu`` with alpha=1, no clipping, no linear offset, non-interleaved), and
``apply_recops_to_llama`` in the style of ``apply_liger_kernel_to_llama``.

Differences from Liger, all deliberate:
- RMSNorm rounds once (training_ops.md §2.5): ``casting_mode`` is accepted and ignored, so "llama"
  and "gemma" give the same result (identical in fp32); ``in_place`` and ``row_mode`` are memory /
  scheduling hints and are ignored.
- Cross entropy: Liger's ``weight`` is a per-class weight ``[V]``; recops' CE has a per-token weight
  instead, so a class weight raises NotImplementedError. ``size_average`` / ``reduce`` are
  placeholders in Liger too (ignored). With every row ignored, "mean" gives 0 (Liger and torch: NaN).
  ``return_token_accuracy`` / ``return_predicted_tokens`` are not served.
- Fused linear cross entropy: as cross entropy above (``ce_weight``, a class weight, is not
  served; nor ``use_token_scaling``). ``accum_dtype`` keeps Liger's meaning: None accumulates dW/db
  in the parameters' dtype (recops ``accum_dtype=hidden.dtype``), ``torch.float32`` in fp32 (the
  recops default). The loss and gradients use fp32 logits (Liger rounds them to the input dtype).
- ``liger_swiglu(a, b)`` concatenates a and b (one extra copy) because recops' op reads ``[..., 2I]``.
- Weights of another dtype than the activations (fp32 parameters with bf16 / fp16 activations, as
  under autocast): the norms then run on copies of both in the promoted dtype (fp32 there) and
  round the output to the activations' dtype (one extra pass each way), where recops' ops take
  one dtype; Liger reads mixed dtypes in its kernels. The weight gradient comes back in the weight's dtype.
  ``chunk_mem_const`` (a chunking hint of Liger's fused linear CE) is accepted and ignored.

Not served (NotImplementedError naming why): rope and qwen2vl_mrope (Llama's rotate-half RoPE;
recops' ``inplace_rope_`` is DeepSeek V4's interleaved form), group_norm, geglu, jsd, kl_div, tvd,
dyt, sparsemax.
"""

from dataclasses import dataclass
from types import MethodType
from typing import Callable, Optional

import torch
from torch import nn

from .. import chunk_loss, clipped_swiglu, fused_cross_entropy, layer_norm, rms_norm


def _missing(liger_name: str, recops_op: str, why: str = "") -> Callable:
    def fn(*args, **kwargs):
        raise NotImplementedError(
            f"recops.compat.liger.{liger_name}: "
            + (why or f"needs the recops op '{recops_op}', which is not implemented yet"))

    fn.__name__ = liger_name
    fn.__doc__ = f"Not served: {why or f'needs the recops op ``{recops_op}``'}."
    return fn


def _promoted(op, x: torch.Tensor, *params: Optional[torch.Tensor], **kwargs) -> torch.Tensor:
    """op(x, *params, **kwargs) where params (weight, bias) may have another dtype than x (fp32
    parameters under autocast): then on copies of all of them in the promoted dtype (bf16 with
    fp32: fp32; fp64 with fp32: fp64), the output rounded to x's dtype."""
    if all(p is None or p.dtype == x.dtype for p in params):
        return op(x, *params, **kwargs)
    wide = x.dtype
    for p in params:
        if p is not None:
            wide = torch.promote_types(wide, p.dtype)
    return op(x.to(wide), *(None if p is None else p.to(wide) for p in params),
              **kwargs).to(x.dtype)


# ---- RMSNorm -----------------------------------------------------------------------------------


def liger_rms_norm(X: torch.Tensor, W: Optional[torch.Tensor], eps: float, offset: float = 0.0,
                   casting_mode: str = "llama", in_place: bool = True) -> torch.Tensor:
    """``X * rsqrt(mean(X²) + eps) * (offset + W)`` over the last dim (W None: no weight)."""
    if casting_mode not in ("llama", "gemma", "none"):
        raise ValueError(f"liger_rms_norm: casting_mode must be 'llama', 'gemma' or 'none', got "
                         f"{casting_mode!r}")
    del in_place
    return _promoted(rms_norm, X, W, eps=float(eps), weight_offset=float(offset))


class LigerRMSNorm(nn.Module):
    """``liger_kernel.transformers.LigerRMSNorm``: the same constructor and parameter."""

    def __init__(self, hidden_size, eps=1e-6, offset=0.0, casting_mode="llama", init_fn="ones",
                 in_place=True, row_mode=None, elementwise_affine=True):
        super().__init__()
        if init_fn not in ("ones", "zeros"):
            raise ValueError(f"LigerRMSNorm: init_fn must be 'ones' or 'zeros', got {init_fn!r}")
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            init = torch.ones if init_fn == "ones" else torch.zeros
            self.weight = nn.Parameter(init(hidden_size))
        else:
            self.register_parameter("weight", None)
        self.variance_epsilon = eps
        self.offset = offset
        self.casting_mode = casting_mode
        self.in_place = in_place
        self.row_mode = row_mode

    def forward(self, hidden_states):
        return liger_rms_norm(hidden_states, self.weight, self.variance_epsilon, self.offset,
                              self.casting_mode, self.in_place)

    def extra_repr(self):
        shape = tuple(self.weight.shape) if self.weight is not None else None
        return f"weight_shape={shape}, eps={self.variance_epsilon}, offset={self.offset}"


def liger_fused_add_rms_norm(X: torch.Tensor, R: torch.Tensor, W: Optional[torch.Tensor],
                             eps: float, offset: float = 0.0, casting_mode: str = "llama",
                             in_place: bool = True):
    """Liger's residual-add RMSNorm: ``S = X + R`` (in X's dtype, rounded once, as Liger stores
    it) and ``Y = liger_rms_norm(S, W, eps, offset)``; returns ``(Y, S)``. Here a composition: the
    add is its own pass (Liger fuses it into the norm's kernel); ``in_place`` is ignored."""
    if R.shape != X.shape:
        raise ValueError(f"liger_fused_add_rms_norm: R must have X's shape {tuple(X.shape)}, got "
                         f"{tuple(R.shape)}")
    S = X + R.to(X.dtype)
    return liger_rms_norm(S, W, eps, offset, casting_mode), S


class LigerFusedAddRMSNorm(nn.Module):
    """``liger_kernel.transformers.LigerFusedAddRMSNorm``: the same constructor and parameter;
    ``forward(hidden_states, residual)`` returns ``(normed, hidden_states + residual)``."""

    def __init__(self, hidden_size, eps=1e-6, offset=0.0, casting_mode="llama", init_fn="ones",
                 in_place=False):
        super().__init__()
        if init_fn not in ("ones", "zeros"):
            raise ValueError(f"LigerFusedAddRMSNorm: init_fn must be 'ones' or 'zeros', got "
                             f"{init_fn!r}")
        self.weight = nn.Parameter(torch.ones(hidden_size) if init_fn == "ones"
                                   else torch.zeros(hidden_size))
        self.variance_epsilon, self.offset = eps, offset
        self.casting_mode, self.in_place = casting_mode, in_place

    def forward(self, hidden_states, residual):
        return liger_fused_add_rms_norm(hidden_states, residual, self.weight, self.variance_epsilon,
                                        self.offset, self.casting_mode, self.in_place)

    def extra_repr(self):
        return (f"{tuple(self.weight.shape)}, eps={self.variance_epsilon}, offset={self.offset}, "
                f"in_place={self.in_place}")


# ---- LayerNorm ---------------------------------------------------------------------------------


def liger_layer_norm(X: torch.Tensor, W: Optional[torch.Tensor], B: Optional[torch.Tensor],
                     eps: float) -> torch.Tensor:
    """``(X - mean) * rsqrt(var + eps) * W + B`` over the last dim (biased variance; W / B None:
    1 / 0), X's dtype; differentiable in X, W and B (recops ``layer_norm``)."""
    return _promoted(layer_norm, X, W, B, eps=float(eps))


class LigerLayerNorm(nn.Module):
    """``liger_kernel.transformers.LigerLayerNorm``: the same constructor and parameters (weight
    ones or zeros by ``init_fn``; bias zeros, or random with ``bias=True`` as Liger draws it).
    ``impl`` / ``mode`` / ``backend`` select Liger's kernels and are kept but not read."""

    def __init__(self, hidden_size, eps=1e-6, bias=False, init_fn="ones", impl=None, mode=None,
                 backend=None):
        super().__init__()
        if init_fn not in ("ones", "zeros"):
            raise ValueError(f"LigerLayerNorm: init_fn must be 'ones' or 'zeros', got {init_fn!r}")
        self.hidden_size = hidden_size
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size) if init_fn == "ones"
                                   else torch.zeros(hidden_size))
        self.bias = nn.Parameter(torch.randn(hidden_size) if bias else torch.zeros(hidden_size))
        self.variance_epsilon = eps
        self.impl = impl if impl is not None else backend
        self.mode = mode

    def forward(self, hidden_states):
        return liger_layer_norm(hidden_states, self.weight, self.bias, self.variance_epsilon)

    def extra_repr(self):
        return f"{self.hidden_size}, eps={self.eps}"


# ---- cross entropy -----------------------------------------------------------------------------


@dataclass
class CrossEntropyOutput:
    """Liger's return type when ``return_z_loss`` is set."""

    loss: torch.Tensor
    z_loss: Optional[torch.Tensor] = None
    token_accuracy: Optional[torch.Tensor] = None
    predicted_tokens: Optional[torch.Tensor] = None


def liger_cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100,
                        reduce=None, reduction: str = "mean", label_smoothing: float = 0.0,
                        lse_square_scale: float = 0.0, softcap: Optional[float] = None,
                        return_z_loss: bool = False, return_token_accuracy: bool = False,
                        return_predicted_tokens: bool = False):
    """Cross entropy of ``input [N, V]`` logits and ``target [N]`` labels with label smoothing,
    the z-loss term ``lse_square_scale * lse²`` (included in the loss) and an optional softcap.
    Returns the loss, or ``CrossEntropyOutput(loss, z_loss)`` when ``return_z_loss``."""
    del size_average, reduce  # placeholders in Liger as well
    if weight is not None:
        raise NotImplementedError(
            "liger_cross_entropy: weight (a per-class weight [V]) is not served; recops' "
            "fused_cross_entropy takes a per-token weight")
    if return_token_accuracy or return_predicted_tokens:
        raise NotImplementedError(
            "liger_cross_entropy: return_token_accuracy / return_predicted_tokens are not served")
    if softcap is not None and not softcap > 0:
        raise ValueError(f"liger_cross_entropy: softcap must be > 0 or None, got {softcap}")
    loss, z_loss = fused_cross_entropy(input, target, ignore_index=int(ignore_index),
                                       label_smoothing=float(label_smoothing),
                                       z_loss_scale=float(lse_square_scale),
                                       softcap=float(softcap or 0.0), reduction=reduction)
    if not return_z_loss:
        return loss
    return CrossEntropyOutput(loss=loss, z_loss=z_loss)


class LigerCrossEntropyLoss(nn.Module):
    """``liger_kernel.transformers.LigerCrossEntropyLoss``: the same constructor."""

    def __init__(self, weight=None, ignore_index: int = -100, lse_square_scale: float = 0.0,
                 label_smoothing: float = 0.0, reduction: str = "mean",
                 softcap: Optional[float] = None, return_z_loss: bool = False,
                 return_token_accuracy: bool = False, return_predicted_tokens: bool = False):
        super().__init__()
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"LigerCrossEntropyLoss: label_smoothing must be in [0, 1], got "
                             f"{label_smoothing}")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"LigerCrossEntropyLoss: reduction must be 'mean', 'sum' or 'none', "
                             f"got {reduction!r}")
        if softcap is not None and not softcap > 0:
            raise ValueError(f"LigerCrossEntropyLoss: softcap must be > 0 or None, got {softcap}")
        self.weight = weight
        self.ignore_index = ignore_index
        self.lse_square_scale = lse_square_scale
        self.label_smoothing = label_smoothing
        self.reduction = reduction
        self.softcap = softcap
        self.return_z_loss = return_z_loss
        self.return_token_accuracy = return_token_accuracy
        self.return_predicted_tokens = return_predicted_tokens

    def forward(self, _input: torch.Tensor, target: torch.Tensor):
        return liger_cross_entropy(
            _input, target, self.weight, ignore_index=self.ignore_index,
            reduction=self.reduction, label_smoothing=self.label_smoothing,
            lse_square_scale=self.lse_square_scale, softcap=self.softcap,
            return_z_loss=self.return_z_loss, return_token_accuracy=self.return_token_accuracy,
            return_predicted_tokens=self.return_predicted_tokens)


# ---- fused linear cross entropy ------------------------------------------------------------------


def liger_fused_linear_cross_entropy(input, weight, target, bias=None, ce_weight=None,
                                     ignore_index: int = -100, lse_square_scale: float = 0.0,
                                     label_smoothing: float = 0.0, reduction: str = "mean",
                                     softcap: Optional[float] = None, return_z_loss: bool = False,
                                     accum_dtype=None, use_token_scaling: bool = False,
                                     return_token_accuracy: bool = False,
                                     return_predicted_tokens: bool = False,
                                     chunk_mem_const: int = 1):
    """Cross entropy of ``input [N, D] @ weight[V, D].T (+ bias)`` against ``target [N]`` without
    the ``[N, V]`` logits (recops ``chunk_loss``). Returns the loss, or
    ``CrossEntropyOutput(loss, z_loss)`` when ``return_z_loss``. ``chunk_mem_const`` (Liger's chunk
    size hint, a positive int) is checked and not read: chunk_loss plans its own chunks."""
    if isinstance(chunk_mem_const, bool) or not isinstance(chunk_mem_const, int) or \
            chunk_mem_const < 1:
        raise ValueError(f"liger_fused_linear_cross_entropy: chunk_mem_const must be a positive "
                         f"integer, got {chunk_mem_const!r}")
    if ce_weight is not None:
        raise NotImplementedError(
            "liger_fused_linear_cross_entropy: ce_weight (a per-class weight [V]) is not served; "
            "recops' chunk_loss takes a per-token weight")
    if use_token_scaling or return_token_accuracy or return_predicted_tokens:
        raise NotImplementedError(
            "liger_fused_linear_cross_entropy: use_token_scaling / return_token_accuracy / "
            "return_predicted_tokens are not served")
    if softcap is not None and not softcap > 0:
        raise ValueError(
            f"liger_fused_linear_cross_entropy: softcap must be > 0 or None, got {softcap}")
    acc = input.dtype if accum_dtype is None else accum_dtype
    acc = None if acc in (torch.float32, torch.float64) else acc
    loss, z_loss = chunk_loss(input, weight, target, bias, ignore_index=int(ignore_index),
                              label_smoothing=float(label_smoothing),
                              z_loss_scale=float(lse_square_scale), softcap=float(softcap or 0.0),
                              reduction=reduction, accum_dtype=acc)
    if not return_z_loss:
        return loss
    return CrossEntropyOutput(loss=loss, z_loss=z_loss)


class LigerFusedLinearCrossEntropyLoss(nn.Module):
    """``liger_kernel.transformers.LigerFusedLinearCrossEntropyLoss``: the same constructor and
    ``forward(lin_weight, _input, target, bias=None)``."""

    def __init__(self, ce_weight=None, ignore_index: int = -100, lse_square_scale: float = 0.0,
                 label_smoothing: float = 0.0, reduction: str = "mean",
                 softcap: Optional[float] = None, return_z_loss: bool = False,
                 accum_dtype=None, use_token_scaling: bool = False,
                 return_token_accuracy: bool = False, return_predicted_tokens: bool = False):
        super().__init__()
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"LigerFusedLinearCrossEntropyLoss: label_smoothing must be in "
                             f"[0, 1], got {label_smoothing}")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"LigerFusedLinearCrossEntropyLoss: reduction must be 'mean', 'sum' "
                             f"or 'none', got {reduction!r}")
        self.ce_weight = ce_weight
        self.ignore_index = ignore_index
        self.lse_square_scale = lse_square_scale
        self.label_smoothing = label_smoothing
        self.reduction = reduction
        self.softcap = softcap
        self.return_z_loss = return_z_loss
        self.accum_dtype = accum_dtype
        self.use_token_scaling = use_token_scaling
        self.return_token_accuracy = return_token_accuracy
        self.return_predicted_tokens = return_predicted_tokens

    def forward(self, lin_weight, _input, target, bias=None):
        return liger_fused_linear_cross_entropy(
            _input, lin_weight, target, bias, self.ce_weight, self.ignore_index,
            self.lse_square_scale, self.label_smoothing, self.reduction, self.softcap,
            self.return_z_loss, self.accum_dtype, self.use_token_scaling,
            self.return_token_accuracy, self.return_predicted_tokens)


# ---- SwiGLU ------------------------------------------------------------------------------------


def liger_swiglu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``silu(a) * b``: recops ``clipped_swiglu`` of ``cat(a, b)`` with alpha=1, limit=inf,
    linear_offset=0, interleaved=False."""
    if a.shape != b.shape:
        raise ValueError(f"liger_swiglu: a and b must have the same shape, got {list(a.shape)} "
                         f"and {list(b.shape)}")
    return clipped_swiglu(torch.cat([a, b], dim=-1), alpha=1.0, limit=float("inf"),
                          linear_offset=0.0, interleaved=False)


def _check_act(name: str, config) -> None:
    if config.hidden_act not in ("silu", "swish"):
        raise ValueError(f"{name}: hidden_act must be 'silu' or 'swish', got "
                         f"{config.hidden_act!r}")


def _swiglu_mlp_forward(self, x):
    return self.down_proj(liger_swiglu(self.gate_proj(x), self.up_proj(x)))


class LigerSwiGLUMLP(nn.Module):
    """``liger_kernel.transformers.LigerSwiGLUMLP``: ``down(silu(gate(x)) * up(x))``."""

    def __init__(self, config):
        super().__init__()
        _check_act("LigerSwiGLUMLP", config)
        self.config = config
        self.hidden_size = config.hidden_size
        self.intermediate_size = config.intermediate_size
        bias = bool(getattr(config, "mlp_bias", False))
        self.gate_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=bias)
        self.up_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=bias)
        self.down_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=bias)

    forward = _swiglu_mlp_forward


# ---- not served --------------------------------------------------------------------------------

_ROPE_WHY = ("Llama's rotate-half (NeoX) RoPE with cos / sin of the full head is not served; "
             "recops' inplace_rope_ is DeepSeek V4's interleaved (GPT-J) rotation of a trailing "
             "slice")
liger_rope = _missing("liger_rope", "inplace_rope_", _ROPE_WHY)
liger_rotary_pos_emb = _missing("liger_rotary_pos_emb", "inplace_rope_", _ROPE_WHY)
liger_qwen2vl_mrope = _missing("liger_qwen2vl_mrope", "inplace_rope_",
                               _ROPE_WHY + " (nor mrope sections)")
liger_group_norm = _missing("liger_group_norm", "group_norm")
liger_geglu = _missing("liger_geglu", "geglu")
liger_jsd = _missing("liger_jsd", "jsd")
liger_fused_linear_jsd = _missing("liger_fused_linear_jsd", "fused_linear_jsd")
liger_kl_div = _missing("liger_kl_div", "kl_div")
liger_tvd = _missing("liger_tvd", "tvd")
liger_dyt = _missing("liger_dyt", "dyt")
liger_sparsemax = _missing("liger_sparsemax", "sparsemax")

# ---- HF Llama patch ----------------------------------------------------------------------------


def _rms_norm_module_forward(self, hidden_states):
    return liger_rms_norm(hidden_states, self.weight, self.variance_epsilon,
                          getattr(self, "offset", 0.0))


def _fixed_cross_entropy(source, target, num_items_in_batch=None, ignore_index: int = -100,
                         **kwargs):
    # transformers.loss.loss_utils.fixed_cross_entropy with recops' CE: a sum divided by the
    # caller's token count when it gives one (gradient accumulation), else the mean.
    reduction = "sum" if num_items_in_batch is not None else "mean"
    loss, _ = fused_cross_entropy(source, target, ignore_index=int(ignore_index),
                                  reduction=reduction)
    if reduction == "sum":
        if torch.is_tensor(num_items_in_batch):
            num_items_in_batch = num_items_in_batch.to(loss.device)
        loss = loss / num_items_in_batch
    return loss


_SAVED: dict = {}


def _save(obj, name: str) -> None:
    _SAVED.setdefault((obj, name), getattr(obj, name))


def _import_llama():
    try:
        from transformers.loss import loss_utils
        from transformers.models.llama import modeling_llama
    except ImportError as e:
        raise ImportError(
            "recops.compat.liger.apply_recops_to_llama needs the 'transformers' package "
            f"(pip install transformers): {e}") from e
    return modeling_llama, loss_utils


def _lce_forward(self, input_ids=None, attention_mask=None, position_ids=None,
                 past_key_values=None, inputs_embeds=None, labels=None, use_cache=None,
                 cache_position=None, logits_to_keep=0, **kwargs):
    """``LlamaForCausalLM.forward`` with Liger's fused linear cross entropy: in training with
    labels the loss comes from recops ``chunk_loss`` on the last hidden states and lm_head's
    weight, without the [tokens, vocab] logits (returned as None), with HF's label shift and
    ``num_items_in_batch`` (sum / count) as ``ForCausalLMLoss``; otherwise HF's own path."""
    from transformers.modeling_outputs import CausalLMOutputWithPast
    num_items = kwargs.pop("num_items_in_batch", None)
    shift_labels = kwargs.pop("shift_labels", None)
    outputs = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         position_ids=position_ids, past_key_values=past_key_values,
                         inputs_embeds=inputs_embeds, use_cache=use_cache,
                         cache_position=cache_position, **kwargs)
    hidden = outputs.last_hidden_state
    loss = logits = None
    if self.training and (labels is not None or shift_labels is not None):
        if shift_labels is None:  # as ForCausalLMLoss: position i predicts label i + 1
            shift_labels = torch.nn.functional.pad(labels, (0, 1), value=-100)[..., 1:]
        h = hidden.reshape(-1, hidden.size(-1))
        w, b = self.lm_head.weight, self.lm_head.bias
        if w.dtype != h.dtype:  # fp32 parameters under autocast: lm_head would run in h's dtype
            w, b = w.to(h.dtype), (None if b is None else b.to(h.dtype))
        reduction = "sum" if num_items is not None else "mean"
        loss, _ = chunk_loss(h, w, shift_labels.reshape(-1).to(h.device), b, ignore_index=-100,
                             reduction=reduction)
        if num_items is not None:
            loss = loss / (num_items.to(loss.device) if torch.is_tensor(num_items) else num_items)
    else:
        keep = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
        logits = self.lm_head(hidden[:, keep, :])
        if labels is not None or shift_labels is not None:
            loss = self.loss_function(logits=logits, labels=labels,
                                      vocab_size=self.config.vocab_size,
                                      num_items_in_batch=num_items, shift_labels=shift_labels,
                                      **kwargs)
    return CausalLMOutputWithPast(loss=loss, logits=logits,
                                  past_key_values=outputs.past_key_values,
                                  hidden_states=outputs.hidden_states,
                                  attentions=outputs.attentions)


def apply_recops_to_llama(rms_norm: bool = True, cross_entropy: bool = True, swiglu: bool = True,
                          model: Optional[nn.Module] = None, rope: bool = False,
                          fused_linear_cross_entropy: bool = False) -> None:
    """Patches HF ``transformers.models.llama.modeling_llama`` to use recops, as
    ``apply_liger_kernel_to_llama`` does with Liger: ``LlamaRMSNorm`` -> ``LigerRMSNorm`` (recops
    ``rms_norm``), ``LlamaMLP`` -> ``LigerSwiGLUMLP``, and the causal-LM loss's
    ``transformers.loss.loss_utils.fixed_cross_entropy`` -> recops ``fused_cross_entropy`` (Liger
    replaces ``torch.nn.functional.cross_entropy`` process-wide instead).
    ``fused_linear_cross_entropy``: ``LlamaForCausalLM.forward`` computes the training loss by
    recops ``chunk_loss`` without materialising the logits (Liger's ``lce_forward``; the logits
    are None then, as Liger's); evaluation and calls without labels keep HF's path, whose loss
    the cross_entropy patch serves. The class patches act on models built afterwards (and the
    forward on existing ones); pass ``model`` to also patch an existing instance's modules.
    ``revert_recops_llama()`` undoes the module-level patches. rope raises NotImplementedError
    (Llama's rotate-half RoPE; recops' ``inplace_rope_`` is the interleaved form)."""
    if rope:
        raise NotImplementedError("apply_recops_to_llama: rope: " + _ROPE_WHY)
    modeling_llama, loss_utils = _import_llama()
    original_rms = _SAVED.get((modeling_llama, "LlamaRMSNorm"), modeling_llama.LlamaRMSNorm)
    original_mlp = _SAVED.get((modeling_llama, "LlamaMLP"), modeling_llama.LlamaMLP)
    if rms_norm:
        _save(modeling_llama, "LlamaRMSNorm")
        modeling_llama.LlamaRMSNorm = LigerRMSNorm
    if swiglu:
        _save(modeling_llama, "LlamaMLP")
        modeling_llama.LlamaMLP = LigerSwiGLUMLP
    if cross_entropy:
        _save(loss_utils, "fixed_cross_entropy")
        loss_utils.fixed_cross_entropy = _fixed_cross_entropy
    if fused_linear_cross_entropy:
        _save(modeling_llama.LlamaForCausalLM, "forward")
        modeling_llama.LlamaForCausalLM.forward = _lce_forward
    if model is None:
        return
    for module in model.modules():
        if rms_norm and isinstance(module, (original_rms, LigerRMSNorm)):
            module.forward = MethodType(_rms_norm_module_forward, module)
        if swiglu and isinstance(module, original_mlp):
            _check_act("apply_recops_to_llama", module.config)
            module.forward = MethodType(_swiglu_mlp_forward, module)


def revert_recops_llama() -> None:
    """Restores what ``apply_recops_to_llama`` replaced at module level (patched instances keep
    their recops forward)."""
    for (obj, name), value in list(_SAVED.items()):
        setattr(obj, name, value)
    _SAVED.clear()
