"""The README's examples work exactly as written (the brief: "every command the README shows must
work"): its Python block runs, and each `build/bin/recops ...` line of its shell blocks runs with
the built CLI, from a scratch directory. The C++ block is compiled and run by ctest
(`readme_cpp_example`, tests/cpp/CMakeLists.txt); `make run` / `make test` are what CI runs."""

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import torch

from _cli import recops_binary

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _blocks(lang):
    return re.findall(r"```" + lang + r"\n(.*?)```", README, flags=re.S)


@pytest.mark.parametrize("block", _blocks("python"), ids=lambda b: b.splitlines()[1][:40])
def test_python_example_runs(block):
    if "torchrec" in block:
        pytest.importorskip("torchrec", reason="the TorchRec example needs torchrec")
        if not hasattr(torch.ops.recops, "permute_2D_sparse_data"):
            pytest.skip("this build has no permute_2D_sparse_data")
    if "recops.onnx" in block:
        for mod in ("onnx", "onnxscript", "onnxruntime", "onnxruntime_extensions"):
            pytest.importorskip(mod, reason="the ONNX example needs " + mod)
    if "recops.tensorflow" in block:
        pytest.importorskip("tensorflow", reason="the TensorFlow example needs tensorflow-cpu")
        pytest.importorskip("recops.tensorflow", reason="librecops_tf.so is not built")
    exec(compile(block, "README.md", "exec"), {})


def _cli_lines():
    lines = []
    for block in _blocks("sh"):
        for line in block.splitlines():
            cmd = line.split("  #")[0].strip()
            if cmd.startswith("build/bin/recops"):
                lines.append(cmd)
    return lines


def test_readme_shows_cli_lines():
    assert len(_cli_lines()) >= 8


@pytest.mark.parametrize("line", _cli_lines())
def test_cli_line_runs(line, tmp_path):
    binary = recops_binary()
    if binary is None:
        pytest.skip("no recops binary: build it (make build) or set RECOPS_BIN")
    if "--backend cuda" in line and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    if line == "build/bin/recops check --backend cpu":
        pytest.skip("the whole CPU matrix: make test runs it (recops check --backend cpu)")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    for part in line.split("&&"):
        args = shlex.split(part.strip())
        if args[1:2] == ["<subcommand>"]:
            for sub in ("list", "check", "bench", "tune", "record", "compare", "report"):
                subprocess.run([binary, sub, "--help"], check=True, capture_output=True)
            continue
        args[0] = binary
        # Globs as the shell expands them, from the repository root; outputs into the scratch dir.
        expanded = []
        for a in args[1:]:
            expanded += sorted(str(p) for p in ROOT.glob(a)) if "*" in a else [a]
        if "--out" in expanded:
            i = expanded.index("--out")
            expanded[i + 1] = str(tmp_path / expanded[i + 1])
        r = subprocess.run([binary] + expanded, cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=900)
        assert r.returncode == 0, f"{line}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
