"""Python wrappers of the ``torch.ops.recops`` operators that the op kit does not generate.

The ops with an argument table get their wrappers (argument names, defaults, docstrings) from
``recops._kit``, and their op folders' own Python (e.g. the FakeTensor kernel of
``dense_to_jagged``, ``src/ops/jagged/dense_to_jagged/fake.py``) is imported from there. No math
and no shape logic lives here; ``unbacked_size`` is the one step the op folders' fake kernels share.
"""

import torch

_ops = torch.ops.recops


def set_validate(on: bool) -> None:
    """Turns the validation of offset contents for CUDA calls on or off (the CPU always validates).

    With it on, each CUDA call checks its offsets (first 0, non-decreasing, last = total_L) and
    int32 overflow with one device-to-host copy and a synchronisation, and raises the CPU's error.
    Default: off in release builds, on in debug builds; ``RECOPS_VALIDATE=0|1`` at load.
    """
    _ops.set_validate(bool(on))


def unbacked_size(op: str, arg: str, **tensors) -> "torch.SymInt":
    """The size that the fake kernel of ``op``, called without its size argument ``arg``, gives a
    data-dependent output dimension: a new unbacked SymInt (FakeTensors: torch.compile, opcheck).
    Meta tensors have no data and cannot carry one: a RuntimeError naming ``arg`` says to pass it,
    or, when ``tensors`` (the call's tensor arguments by name) mix meta with other devices, names
    each one's device (the Meta kernel ran because one of them is meta).
    Used by the jagged ops' ``fake.py`` (e.g. ``src/ops/jagged/jagged_index_select/fake.py``).
    """
    try:
        ctx = torch.library.get_ctx()
    except RuntimeError as e:  # torch refuses the context on meta tensors
        devices = {n: t.device.type for n, t in tensors.items() if isinstance(t, torch.Tensor)}
        if "meta" in devices.values() and len(set(devices.values())) > 1:
            first = next(iter(devices))  # the C++ check's wording: the first tensor against one
            other = next(n for n, d in devices.items() if d != devices[first])  # elsewhere
            raise RuntimeError(f"{op}: {other} is on {devices[other]} while {first} is on "
                               f"{devices[first]}; every tensor argument must be on the same "
                               f"device") from e
        raise RuntimeError(f"{op}: {arg} must be given for tensors without data (Meta); under "
                           f"torch.compile it may be omitted") from e
    return ctx.new_dynamic_size()
