"""The FakeTensor kernel of ``keyed_jagged_index_select_dim1`` (imported by ``recops._kit``;
exports nothing).

With ``selected_lengths_sum`` omitted the output size R is the sum of the selected segments'
lengths, which only a FakeTensor can represent (an unbacked SymInt created here). The shapes
themselves come from C++: the Meta kernel of the helper op
``_keyed_jagged_index_select_dim1_meta`` (its argument table in
``keyed_jagged_index_select_dim1.cpp``, its hook in ``binding.cpp``). A given
``selected_lengths_sum`` (FBGEMM's argument) is passed through.
"""

import torch

from recops.ops import unbacked_size

__all__ = []


@torch.library.register_fake("recops::keyed_jagged_index_select_dim1")
def _keyed_jagged_index_select_dim1_fake(values, lengths, offsets, indices, batch_size,
                                         weights=None, selected_lengths_sum=None):
    if selected_lengths_sum is None:
        selected_lengths_sum = unbacked_size(
            "keyed_jagged_index_select_dim1", "selected_lengths_sum", values=values, lengths=lengths,
            offsets=offsets, indices=indices, weights=weights)
    return torch.ops.recops._keyed_jagged_index_select_dim1_meta(
        values, lengths, offsets, indices, batch_size, weights, selected_lengths_sum)
