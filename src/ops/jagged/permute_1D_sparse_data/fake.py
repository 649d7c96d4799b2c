"""The FakeTensor kernel of ``permute_1D_sparse_data`` (imported by ``recops._kit``; exports
nothing).

With ``permuted_lengths_sum`` omitted the size of permuted_values and permuted_weights is the
sum of the permuted lengths, which only a FakeTensor can represent (an unbacked SymInt created
here). The shapes themselves come from C++: the Meta kernel of the helper op
``_permute_1D_sparse_data_meta`` (its argument table: ``permute_def`` in
``../common/permute_entry.h``; its hook in ``binding.cpp``). A given ``permuted_lengths_sum``
(FBGEMM's argument) is passed through.
"""

import torch

from recops.ops import unbacked_size

__all__ = []


@torch.library.register_fake("recops::permute_1D_sparse_data")
def _permute_1D_sparse_data_fake(permute, lengths, values, weights=None,
                                   permuted_lengths_sum=None):
    if permuted_lengths_sum is None:
        permuted_lengths_sum = unbacked_size(
            "permute_1D_sparse_data", "permuted_lengths_sum", permute=permute, lengths=lengths,
            values=values, weights=weights)
    return torch.ops.recops._permute_1D_sparse_data_meta(permute, lengths, values, weights,
                                                          permuted_lengths_sum)
