"""scripts/new_op.py: the template makes a complete op folder with every placeholder filled, and
the generated C++ compiles against the tree (syntax only, so the test stays cheap). The full
build of a generated op (list, check, opcheck) is docs/adding_an_op.md's walk."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_new_op_fills_the_template(tmp_path):
    root = tmp_path / "repo"
    (root / "src" / "ops").mkdir(parents=True)
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "new_op.py"), "tiny_op",
                        "--family", "fam", "--root", str(root)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    folder = root / "src" / "ops" / "fam" / "tiny_op"
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    for must in ["README.md", "params.h", "tiny_op.h", "tiny_op.cpp", "impls.h", "reference.cpp",
                 "cpu/tiny_op_cpu.cpp", "cuda/kernel.cuh", "cuda/launch.cu", "cuda/tiles.h",
                 "cases.yaml", "perf.yaml", "driver.cpp", "test_tiny_op.cpp", "test_tiny_op.py"]:
        assert must in files, files
    for p in folder.rglob("*"):
        if p.is_file():
            assert not re.search(r"__(op|Op|family)__", p.read_text()), p
    # A second run refuses to overwrite, and a bad name is refused with the rule.
    again = subprocess.run([sys.executable, str(ROOT / "scripts" / "new_op.py"), "tiny_op",
                            "--family", "fam", "--root", str(root)], capture_output=True, text=True)
    assert again.returncode == 1 and "exists already" in again.stderr
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "new_op.py"), "Bad-Name",
                          "--family", "fam", "--root", str(root)], capture_output=True, text=True)
    assert bad.returncode == 2 and "snake_case" in bad.stderr


@pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler")
def test_generated_cpp_compiles(tmp_path):
    root = tmp_path / "repo"
    (root / "src" / "ops").mkdir(parents=True)
    subprocess.run([sys.executable, str(ROOT / "scripts" / "new_op.py"), "tiny_op", "--family",
                    "fam", "--root", str(root)], check=True, capture_output=True)
    folder = root / "src" / "ops" / "fam" / "tiny_op"
    # The generated folder is found as src/ops/fam/tiny_op through its own root; the rest of the
    # tree (core, tools) through this repository.
    incs = ["-I", str(root / "src"), "-I", str(ROOT / "src"), "-I", str(ROOT / "include"),
            "-I", str(ROOT)]
    for src in ["tiny_op.cpp", "reference.cpp", "cpu/tiny_op_cpu.cpp", "driver.cpp"]:
        r = subprocess.run(["c++", "-std=c++20", "-fsyntax-only", "-fopenmp",
                            "-DRECOPS_OP_FOLDER_ID=fam_tiny_op", *incs, str(folder / src)],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{src}:\n{r.stderr[-3000:]}"
