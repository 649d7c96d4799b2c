"""The `recops` console script of the installed package: runs the CLI that `pip install .` puts in
the package (recops/bin/recops) with the package's case files (recops/_ops) unless
RECOPS_SOURCE_DIR names others."""

import os
import sys
from pathlib import Path


def main():
    here = Path(__file__).resolve().parent
    exe = here / "bin" / "recops"
    if not exe.is_file():
        sys.exit(f"recops: this installation has no CLI ({exe} is missing); in a source checkout "
                 "it is build/bin/recops")
    env = dict(os.environ)
    env.setdefault("RECOPS_SOURCE_DIR", str(here / "_ops"))
    os.execve(str(exe), [str(exe)] + sys.argv[1:], env)


if __name__ == "__main__":
    main()
