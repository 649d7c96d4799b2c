"""The FakeTensor kernel of ``dense_to_jagged`` (imported by ``recops._kit``; exports nothing).

With ``total_L`` omitted the output size is ``seq_offsets[B]``, which only a FakeTensor can
represent (an unbacked SymInt created here). The shape itself comes from C++ (the public shape
function, via the Meta kernel of the helper op ``_dense_to_jagged_meta``; the argument table in
``dense_to_jagged.cpp`` and the symbolic-size hook in ``binding.cpp``).
"""

import torch

from recops.ops import unbacked_size

__all__ = []


@torch.library.register_fake("recops::dense_to_jagged")
def _dense_to_jagged_fake(dense, seq_offsets, total_L=None):
    if total_L is None:
        total_L = unbacked_size("dense_to_jagged", "total_L", dense=dense,
                                seq_offsets=seq_offsets)
    return torch.ops.recops._dense_to_jagged_meta(dense, seq_offsets, total_L)
