#!/usr/bin/env python3
"""Creates a new op folder from the template: ``scripts/new_op.py NAME --family FAMILY``.

Copies ``src/ops/_template/`` to ``src/ops/FAMILY/NAME/`` with the names filled in: ``__op__``
becomes NAME (in file names and contents), ``__Op__`` its CamelCase and ``__family__`` FAMILY.
The result is a complete, working op (``out = factor * x`` and its backward ``NAME_bwd``): after
the README's build, ``recops list`` shows it, ``recops check --op NAME`` runs its cases,
``torch.ops.recops.NAME`` and ``recops.NAME`` work, and nothing outside the new folder changed.
Then replace the scale by the op's math, following docs/adding_an_op.md.
"""

import argparse
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "src" / "ops" / "_template"
NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def fill(text: str, name: str, family: str) -> str:
    return (text.replace("__Op__", camel(name)).replace("__op__", name)
            .replace("__family__", family))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", help="the op's name (snake_case; also its folder, schema and CLI name)")
    ap.add_argument("--family", required=True, help="the family folder under src/ops")
    ap.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this one)")
    a = ap.parse_args(argv)
    for what, v in (("name", a.name), ("family", a.family)):
        if not NAME_RE.match(v) or v == "common":
            print(f"new_op.py: {what} {v!r} must be snake_case ([a-z][a-z0-9_]*) and not 'common'",
                  file=sys.stderr)
            return 2
    ops = a.root / "src" / "ops"
    dest = ops / a.family / a.name
    if dest.exists():
        print(f"new_op.py: {dest} exists already", file=sys.stderr)
        return 1
    taken = [p for p in ops.glob(f"*/{a.name}") if p.is_dir()]
    if taken:
        print(f"new_op.py: an op folder named {a.name!r} exists already: {taken[0]}", file=sys.stderr)
        return 1
    for src in sorted(TEMPLATE.rglob("*")):
        if src.is_dir() or "__pycache__" in src.parts:
            continue
        rel = Path(fill(str(src.relative_to(TEMPLATE)), a.name, a.family))
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(fill(src.read_text(), a.name, a.family))
        shutil.copymode(src, out)
    print(f"created {dest.relative_to(a.root)}/ (from src/ops/_template); next: docs/adding_an_op.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
