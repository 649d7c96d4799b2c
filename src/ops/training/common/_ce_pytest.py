"""Helper of the cross-entropy ops' tests (fused_cross_entropy, chunk_loss): the loss of
training_ops.md §3.1 as a torch composition. Not collected itself (the leading underscore); each
op's test_<op>.py imports it."""

import torch
import torch.nn.functional as F


def torch_ce(z, y, w, ignore_index, eps, lam, cap, reduction):
    """training_ops.md §3.1 on logits z (in z's dtype, fp64 in the tests), rows weighted by w."""
    if cap > 0:
        z = cap * torch.tanh(z / cap)
    keep = y != ignore_index
    per = F.cross_entropy(z, y, reduction="none", ignore_index=ignore_index, label_smoothing=eps)
    lse = torch.logsumexp(z, dim=-1)
    zl = torch.where(keep, lam * lse * lse, torch.zeros_like(lse))
    w = torch.ones_like(lse) if w is None else w.to(z.dtype)
    loss, zl = (per + zl) * w, zl * w
    if reduction == "none":
        return loss, zl
    if reduction == "sum":
        return loss.sum(), zl.sum()
    dn = (w * keep).sum()
    if dn == 0:
        return loss.sum() * 0, zl.sum() * 0
    return loss.sum() / dn, zl.sum() / dn
