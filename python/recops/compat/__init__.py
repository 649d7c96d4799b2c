"""Drop-in forms of upstream APIs (jagged_ops.md §1.4): ``recops.compat.fbgemm``."""
