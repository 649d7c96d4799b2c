"""The FakeTensor kernel of ``jagged_index_select`` (imported by ``recops._kit``; exports
nothing).

With ``num_dense_output_rows`` omitted the output size is the sum of ``seq_lengths[indices]``,
which only a FakeTensor can represent (an unbacked SymInt created here; a plain K = 0 gives 0).
The shapes themselves come from C++: the Meta kernel of the helper op
``_jagged_index_select_meta`` (its argument table in ``jagged_index_select.cpp``, its hook in
``binding.cpp``). A given ``num_dense_output_rows`` (FBGEMM's argument) is passed through.
"""

import torch

from recops.ops import unbacked_size

__all__ = []


@torch.library.register_fake("recops::jagged_index_select")
def _jagged_index_select_fake(values, seq_lengths, indices, num_dense_output_rows=None):
    if num_dense_output_rows is None:
        K = indices.shape[0] if indices.dim() == 1 else None
        if isinstance(K, int) and K == 0:
            num_dense_output_rows = 0  # nothing selected: the size is known without data
        else:
            num_dense_output_rows = unbacked_size(
                "jagged_index_select", "num_dense_output_rows (the sum of seq_lengths[indices])",
                values=values, seq_lengths=seq_lengths, indices=indices)
    return torch.ops.recops._jagged_index_select_meta(values, seq_lengths, indices,
                                                      num_dense_output_rows)
