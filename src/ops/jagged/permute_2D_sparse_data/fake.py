"""The FakeTensor kernel of ``permute_2D_sparse_data`` (imported by ``recops._kit``; exports
nothing).

With ``permuted_lengths_sum`` omitted the size of permuted_values and permuted_weights is the
sum of the permuted lengths, which only a FakeTensor can represent (an unbacked SymInt created
here). The shapes themselves come from C++: the Meta kernel of the helper op
``_permute_2D_sparse_data_meta`` (its argument table: ``permute_def`` in
``../common/permute_entry.h``; its hook in ``binding.cpp``). A given ``permuted_lengths_sum``
(FBGEMM's argument) is passed through.
"""

import torch

__all__ = []


@torch.library.register_fake("recops::permute_2D_sparse_data")
def _permute_2D_sparse_data_fake(permute, lengths, values, weights=None,
                                   permuted_lengths_sum=None):
    if permuted_lengths_sum is None:
        try:
            ctx = torch.library.get_ctx()
        except RuntimeError as e:  # meta tensors (not FakeTensors): no data, no unbacked size
            raise RuntimeError(
                "permute_2D_sparse_data: permuted_lengths_sum must be given for tensors without "
                "data (Meta); under torch.compile it may be omitted") from e
        permuted_lengths_sum = ctx.new_dynamic_size()
    return torch.ops.recops._permute_2D_sparse_data_meta(permute, lengths, values, weights,
                                                          permuted_lengths_sum)
