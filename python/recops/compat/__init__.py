"""Drop-in forms of upstream APIs: ``recops.compat.fbgemm`` (jagged_ops.md §1.4) and
``recops.compat.nvidia`` (NVIDIA's ``hstu_attn_varlen_func``, hstu_attention.md §4)."""

from .nvidia import hstu_attn_varlen_func  # noqa: F401
