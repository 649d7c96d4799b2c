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

__all__ = []


@torch.library.register_fake("recops::keyed_jagged_index_select_dim1")
def _keyed_jagged_index_select_dim1_fake(values, lengths, offsets, indices, batch_size,
                                         weights=None, selected_lengths_sum=None):
    if selected_lengths_sum is None:
        try:
            ctx = torch.library.get_ctx()
        except RuntimeError as e:  # meta tensors (not FakeTensors): no data, no unbacked size
            raise RuntimeError(
                "keyed_jagged_index_select_dim1: selected_lengths_sum must be given for tensors "
                "without data (Meta); under torch.compile it may be omitted") from e
        selected_lengths_sum = ctx.new_dynamic_size()
    return torch.ops.recops._keyed_jagged_index_select_dim1_meta(
        values, lengths, offsets, indices, batch_size, weights, selected_lengths_sum)
