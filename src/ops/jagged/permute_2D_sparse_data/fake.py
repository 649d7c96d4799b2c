"""The FakeTensor kernel of ``permute_2D_sparse_data`` (imported by ``recops._kit``; exports
nothing), as ``../permute_1D_sparse_data/fake.py``: an unbacked size for permuted_values and
permuted_weights when ``permuted_lengths_sum`` is omitted, the shapes from the Meta kernel of the
helper op ``_permute_2D_sparse_data_meta`` (``binding.cpp``).
"""

import torch

from recops.ops import unbacked_size

__all__ = []


@torch.library.register_fake("recops::permute_2D_sparse_data")
def _permute_2D_sparse_data_fake(permute, lengths, values, weights=None,
                                   permuted_lengths_sum=None):
    if permuted_lengths_sum is None:
        permuted_lengths_sum = unbacked_size(
            "permute_2D_sparse_data", "permuted_lengths_sum", permute=permute, lengths=lengths,
            values=values, weights=weights)
    return torch.ops.recops._permute_2D_sparse_data_meta(permute, lengths, values, weights,
                                                          permuted_lengths_sum)
