"""hstu_bwd_profile.py measured the CUDA kernels' times of one recops HSTU forward+backward and of
the backward alone (torch.profiler): hstu_bwd_profile_44332e2.log, hstu_bwd_profile_174e49f.log.

Shape: B=32, S=4096, H=4, d=dv=128, bf16, causal, full-length jagged batch. It separates the
kernels' own time from the autograd and gradient-accumulation work that bench/hstu_cuda.py's
fwd+bwd time included (before it set the gradients to None per step), then times the backward op
alone in a loop (as the standalone wgmma backward experiment did).
    python3 bench/experiments/hstu_bwd_profile.py"""
import torch

import recops

B, S, H, D = 32, 4096, 4, 128
torch.manual_seed(0)
dev = "cuda"
q, k, v = (torch.randn(B * S, H, D, device=dev, dtype=torch.bfloat16).requires_grad_(True)
           for _ in range(3))
off = torch.arange(0, (B + 1) * S, S, device=dev, dtype=torch.int64)
dout = torch.randn(B * S, H, D, device=dev, dtype=torch.bfloat16)


def fb():
    recops.hstu_attn(q, k, v, off, off, S, S).backward(dout)


def bwd():
    torch.ops.recops.hstu_attn_bwd(dout, q.detach(), k.detach(), v.detach(), off, off, S, S)


def profile(fn, rows):
    """Three warm-up calls, then the CUDA kernels of five calls, largest total first."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=rows,
                                    max_name_column_width=70))


profile(fb, 10)
profile(bwd, 4)
