"""TorchRec's ``JaggedTensor`` and ``KeyedJaggedTensor`` through the recops ops: the calls TorchRec
itself makes to FBGEMM for them, taking and returning TorchRec objects.

* ``to_padded_dense(jt, desired_length=None, padding_value=0.0)``: ``JaggedTensor.to_padded_dense``
  (``recops.jagged_to_padded_dense``);
* ``kjt_to_padded_dense(kjt, max_lengths=None, padding_value=0.0)``: one padded tensor per key;
* ``kjt_index_select_dim1(kjt, indices)``: the same batch positions of every key, in order
  (``recops.keyed_jagged_index_select_dim1``; weights follow);
* ``kjt_permute(kjt, indices)``: ``KeyedJaggedTensor.permute`` (keys reordered, selected or
  repeated; ``recops.permute_2D_sparse_data`` on the ``[keys, stride]`` lengths).

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
    ``len(indices)``)."""
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
    """``KeyedJaggedTensor.permute(indices)``: key ``i`` of the result is key ``indices[i]``."""
    keys = list(kjt.keys())
    stride = kjt.stride()
    lengths = kjt.lengths().view(len(keys), stride)
    permute = torch.tensor(indices, dtype=torch.int64, device=lengths.device)
    total = int(lengths[permute].sum()) if len(keys) else 0
    weights = kjt.weights_or_none()
    p_lengths, p_values, p_weights = _ops.permute_2D_sparse_data(permute, lengths, kjt.values(),
                                                                 weights, total)
    return _kjt_class()(keys=[keys[i] for i in indices], values=p_values,
                        lengths=p_lengths.reshape(-1),
                        weights=p_weights if weights is not None else None, stride=stride)
