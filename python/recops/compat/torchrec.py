"""TorchRec's ``JaggedTensor`` and ``KeyedJaggedTensor`` through the recops ops: the calls TorchRec
itself makes to FBGEMM for them, taking and returning TorchRec objects.

* ``to_padded_dense(jt, desired_length=None, padding_value=0.0)``: ``JaggedTensor.to_padded_dense``
  (``recops.jagged_to_padded_dense``);
* ``kjt_to_padded_dense(kjt, max_lengths=None, padding_value=0.0)``: one padded tensor per key;
* ``kjt_index_select_dim1(kjt, indices)``: the same batch positions of every key, in order
  (``recops.keyed_jagged_index_select_dim1``; weights follow);
* ``kjt_permute(kjt, indices)``: ``KeyedJaggedTensor.permute`` (keys reordered, selected or
  repeated; ``recops.permute_2D_sparse_data`` on the ``[keys, stride]`` lengths, or for a
  variable-batch KJT ``recops.permute_1D_sparse_data`` over whole keys).

Data-dependent output sizes are read on the host once per call, as TorchRec does on the CPU
(``KeyedJaggedTensor.from_lengths_sync``); pass the sums yourself on CUDA inside a graph. torchrec
is imported when a KJT is built, so importing this module does not need it.
"""

from typing import Dict, List, Optional, Union

import torch

_ops = torch.ops.recops


def _kjt_class():
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
    return KeyedJaggedTensor


def to_padded_dense(jt, desired_length: Optional[int] = None,
                    padding_value: float = 0.0) -> torch.Tensor:
    """``[B, desired_length]`` (default: the longest sequence) from a 1-D ``JaggedTensor``."""
    offsets = jt.offsets()
    if desired_length is None:
        lengths = jt.lengths()
        desired_length = int(lengths.max()) if lengths.numel() else 0
    return _ops.jagged_to_padded_dense(jt.values(), offsets, desired_length, padding_value)


def kjt_to_padded_dense(kjt, max_lengths: Union[None, int, Dict[str, int]] = None,
                        padding_value: float = 0.0) -> Dict[str, torch.Tensor]:
    """``{key: [stride, max_len]}`` for every key of ``kjt`` (``max_lengths`` per key, one int for
    all, or each key's longest sequence)."""
    out = {}
    for key, jt in kjt.to_dict().items():
        want = max_lengths.get(key) if isinstance(max_lengths, dict) else max_lengths
        out[key] = to_padded_dense(jt, want, padding_value)
    return out


def kjt_index_select_dim1(kjt, indices: torch.Tensor):
    """A KJT holding, for every key, the batch positions ``indices`` of ``kjt`` (stride
    ``len(indices)``). A variable-batch KJT (a batch size per key) has no common batch positions
    and is refused."""
    if kjt.variable_stride_per_key():
        raise ValueError(f"recops.compat.torchrec.kjt_index_select_dim1: kjt has a batch size per "
                         f"key ({kjt.stride_per_key()}); selecting batch positions needs one "
                         f"stride for every key")
    weights = kjt.weights_or_none()
    lengths = kjt.lengths()
    keys = len(kjt.keys())
    total = int(lengths.view(keys, -1)[:, indices.long()].sum()) if keys else 0  # one host read
    out = _ops.keyed_jagged_index_select_dim1(kjt.values(), lengths, kjt.offsets(), indices,
                                              kjt.stride(), weights, total)
    return _kjt_class()(keys=list(kjt.keys()), values=out[0], lengths=out[1],
                        weights=out[2] if weights is not None else None,
                        stride=indices.numel())


def kjt_permute(kjt, indices: List[int]):
    """``KeyedJaggedTensor.permute(indices)``: key ``i`` of the result is key ``indices[i]``. A
    variable-batch KJT (``stride_per_key_per_rank``, each key its own batch size) is permuted as
    TorchRec does it: each key's lengths and its values as one segment
    (``recops.permute_1D_sparse_data``), the strides following their keys."""
    keys = list(kjt.keys())
    for i in indices:
        if not -len(keys) <= i < len(keys):
            raise IndexError(f"recops.compat.torchrec.kjt_permute: index {i} is out of range for "
                             f"{len(keys)} keys")
    indices = [i % len(keys) for i in indices]
    weights = kjt.weights_or_none()
    device = kjt.lengths().device
    permute = torch.tensor(indices, dtype=torch.int64, device=device)
    if kjt.variable_stride_per_key():
        strides = kjt.stride_per_key()
        per_key = kjt.length_per_key()  # host ints (TorchRec reads them the same way)
        p_lengths = _ops.permute_1D_sparse_data(
            permute, torch.tensor(strides, dtype=torch.int64, device=device), kjt.lengths(), None,
            sum(strides[i] for i in indices))[1]
        _, p_values, p_weights = _ops.permute_1D_sparse_data(
            permute, torch.tensor(per_key, dtype=torch.int64, device=device), kjt.values(), weights,
            sum(per_key[i] for i in indices))
        rank_strides = kjt.stride_per_key_per_rank()
        return _kjt_class()(keys=[keys[i] for i in indices], values=p_values, lengths=p_lengths,
                            weights=p_weights if weights is not None else None,
                            stride=kjt.stride(),
                            stride_per_key_per_rank=[list(rank_strides[i]) for i in indices])
    stride = kjt.stride()
    lengths = kjt.lengths().view(len(keys), stride)
    total = int(lengths[permute].sum()) if len(keys) else 0
    p_lengths, p_values, p_weights = _ops.permute_2D_sparse_data(permute, lengths, kjt.values(),
                                                                 weights, total)
    return _kjt_class()(keys=[keys[i] for i in indices], values=p_values,
                        lengths=p_lengths.reshape(-1),
                        weights=p_weights if weights is not None else None, stride=stride)
