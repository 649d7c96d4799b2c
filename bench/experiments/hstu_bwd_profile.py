"""Per-kernel times of one recops HSTU forward+backward through autograd (torch.profiler, CUPTI),
at the issue's shape: B=32, S=4096, H=4, d=dv=128, bf16, causal, full-length jagged batch.
Separates the kernels' own time from the autograd and gradient-accumulation work that
bench/hstu_cuda.py's fwd+bwd time included (before it set the gradients to None per step), then
times the backward op alone in a loop (the conditions of bench/experiments/hstu_bwd_wgmma.cu).  python3 bench/experiments/hstu_bwd_profile.py"""
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


for _ in range(3):
    fb()
torch.cuda.synchronize()
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
    for _ in range(5):
        fb()
    torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10, max_name_column_width=70))

bwd = lambda: torch.ops.recops.hstu_attn_bwd(dout, q.detach(), k.detach(), v.detach(), off, off, S, S)  # noqa: E731
for _ in range(3):
    bwd()
torch.cuda.synchronize()
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
    for _ in range(5):
        bwd()
    torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=4, max_name_column_width=70))
