"""Drop-in forms of upstream APIs: ``recops.compat.fbgemm`` and ``recops.compat.sll`` (FBGEMM and
its SLL names, jagged_ops.md §1.4) and
``recops.compat.nvidia`` / ``recops.compat.meta`` (NVIDIA's ``hstu_attn_varlen_func``, Meta's
``hstu_mha``; hstu_attention.md §4), ``recops.compat.fbgemm_hstu`` (FBGEMM's ``experimental/hstu``
form of NVIDIA's function), ``recops.compat.mxrec`` (the seed's ``hstu_jagged`` /
``hstu_dense``); ``recops.compat.liger`` and ``recops.compat.fla`` (Liger-Kernel's and fla-core's
training-op names, with ``apply_recops_to_llama``; training_ops.md §7)."""

from .meta import hstu_mha  # noqa: F401
from .nvidia import hstu_attn_qkvpacked_func, hstu_attn_varlen_func  # noqa: F401
from .mxrec import hstu_dense, hstu_jagged  # noqa: F401
