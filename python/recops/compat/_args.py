"""Binding of positional and keyword arguments by name for the compat wrappers whose upstream
function has changed its positional order between releases (``meta.hstu_mha``,
``nvidia.hstu_attn_varlen_func``): the caller picks the order, this does the rest with Python's
own error messages."""


def bind(fn_name, args, kwargs, order, defaults, required, aliases=None, strict=True) -> dict:
    """``{name: value}`` of a call: ``args`` in ``order``, then ``kwargs`` (through ``aliases``),
    over ``defaults``. Raises TypeError, naming ``fn_name``, for too many positional arguments, a
    value given twice, a missing name of ``required`` and (``strict``) a keyword that is neither
    required nor in ``defaults``; without ``strict`` such keywords are kept (options the caller
    ignores)."""
    if len(args) > len(order):
        raise TypeError(f"{fn_name}: takes at most {len(order)} positional arguments, got "
                        f"{len(args)}")
    got = dict(zip(order, args))
    for key, value in kwargs.items():
        name = (aliases or {}).get(key, key)
        if strict and name not in defaults and name not in required:
            raise TypeError(f"{fn_name}: unexpected keyword argument '{key}'")
        if name in got:
            raise TypeError(f"{fn_name}: got multiple values for argument '{name}'")
        got[name] = value
    for name in required:
        if name not in got:
            raise TypeError(f"{fn_name}: missing required argument '{name}'")
    return {**defaults, **got}
