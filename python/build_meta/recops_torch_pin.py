"""scikit-build-core metadata provider (pyproject.toml): the wheel's dependencies, with torch pinned
to the release installed in the build environment, which is the one the binding compiles and links
against (`pip install --no-build-isolation .`). The binding loads only with that torch."""


def dynamic_metadata(field, settings, project=None):
    if field != "dependencies":
        raise RuntimeError(f"recops_torch_pin provides `dependencies`, not {field!r}")
    try:
        import torch
    except ImportError as e:
        raise RuntimeError(
            "recops: the binding is built against the torch of the build environment, and there "
            "is none: install torch first and build with `pip install --no-build-isolation .`"
        ) from e
    release = torch.__version__.split("+")[0]  # "2.15.0+cu132" -> 2.15.0 (any local build of it)
    return [f"torch=={release}"] + list(settings.get("others", []))
