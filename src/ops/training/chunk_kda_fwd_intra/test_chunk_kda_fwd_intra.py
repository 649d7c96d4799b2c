"""chunk_kda_fwd_intra through PyTorch: the torch formula, opcheck (schema, fake/Meta, autograd registration,
torch.compile) and gradcheck. Collected by `pytest src/ops` (scripts/test_all.sh)."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1,), (37, 97), (0, 5)])
def test_matches_formula(device, dtype, shape):
    x = torch.randn(shape, dtype=dtype, device=device)
    out = recops.chunk_kda_fwd_intra(x, -0.75)
    torch.testing.assert_close(out, (x.float() * -0.75).to(dtype))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x = torch.randn(7, 5, device=device, requires_grad=True)
    torch.library.opcheck(torch.ops.recops.chunk_kda_fwd_intra.default, (x, 2.5))
    torch.library.opcheck(torch.ops.recops.chunk_kda_fwd_intra_bwd.default,
                          (torch.randn(7, 5, device=device), x.detach(), 2.5))


def test_gradcheck():
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: recops.chunk_kda_fwd_intra(t, 1.25), (x,))


def test_noncontiguous_input_is_copied():
    x = torch.randn(8, 6)[:, ::2]
    torch.testing.assert_close(recops.chunk_kda_fwd_intra(x, 2.0), x * 2.0)


def test_bad_dtype_names_the_argument():
    with pytest.raises(RuntimeError, match="x must be fp64, fp32, fp16 or bf16"):
        recops.chunk_kda_fwd_intra(torch.ones(3, dtype=torch.int32), 2.0)
