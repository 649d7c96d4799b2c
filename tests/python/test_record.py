"""`recops record` writes safetensors that the Python loaders read: safetensors (numpy and torch)
and torch, with the dtypes, shapes, metadata and values the CLI recorded."""

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from _cli import recops_binary
import torch
from safetensors import safe_open
from safetensors.numpy import load_file as load_numpy
from safetensors.torch import load_file as load_torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    binary = recops_binary()
    if binary is None:
        pytest.skip("no recops binary: build it (make build) or set RECOPS_BIN")
    out = tmp_path_factory.mktemp("recorded")
    cmd = [binary, "record", "--backend", "cpu", "--op", "jagged_to_padded_dense,complete_cumsum",
           "--case", "tile_edges_d,n37", "--out", str(out), "--cases-dir", str(ROOT / "src" / "ops")]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    manifest = json.loads((out / "manifest.json").read_text())
    return out, manifest


def _entry(manifest, op, case, dtype, out_dtype=None):
    for e in manifest["cases"]:
        if (e["op"], e["case"], e["dtype"], e.get("out_dtype")) == (op, case, dtype, out_dtype):
            return e
    raise KeyError((op, case, dtype, out_dtype))


def test_manifest_fields(recording):
    _, manifest = recording
    assert manifest["backend"] == "cpu" and manifest["cases"]
    for e in manifest["cases"]:
        for field in ("op", "case", "dtype", "seed", "device", "commit", "versions", "impl",
                      "inputs", "outputs"):
            assert field in e, field


def test_cumsum_values_load_in_torch_and_numpy(recording):
    out, manifest = recording
    e = _entry(manifest, "complete_cumsum", "n37", "int32", "int64")
    inp = load_torch(str(out / e["inputs"]))
    res = load_torch(str(out / e["outputs"]))
    assert inp["t"].dtype == torch.int32 and inp["t"].shape == (37,)
    assert res["out"].dtype == torch.int64 and res["out"].shape == (38,)
    expected = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(inp["t"].long(), 0)])
    assert torch.equal(res["out"], expected)
    assert np.array_equal(load_numpy(str(out / e["outputs"]))["out"], expected.numpy())
    with safe_open(str(out / e["outputs"]), "pt") as f:
        assert f.metadata()["op"] == "complete_cumsum" and f.metadata()["case"] == "n37"


def test_manifest_names_and_scalar_args(recording):
    # args: the non-tensor arguments the row states under their table names (recops.testing
    # maps them onto the schema); input_names / output_names: the tensors in the op's order.
    _, manifest = recording
    e = _entry(manifest, "jagged_to_padded_dense", "tile_edges_d", "fp16")
    assert e["args"] == {"max_seq_len": 65}
    assert e["input_names"] == ["values", "seq_offsets"] and e["output_names"] == ["out"]
    e = _entry(manifest, "complete_cumsum", "n37", "int32", "int64")
    assert e["args"] == {"out_dtype": "int64"} and e["input_names"] == ["t"]
    assert _entry(manifest, "complete_cumsum", "n37", "int32", "int32")["args"] == {
        "out_dtype": "int32"}


def test_bf16_padded_values_match_the_jagged_rows(recording):
    out, manifest = recording
    e = _entry(manifest, "jagged_to_padded_dense", "tile_edges_d", "bf16")
    inp = load_torch(str(out / e["inputs"]))
    res = load_torch(str(out / e["outputs"]))["out"]
    values, offsets = inp["values"], inp["seq_offsets"]
    assert values.dtype == torch.bfloat16 and res.dtype == torch.bfloat16
    assert res.shape[0] == offsets.numel() - 1 and res.shape[2] == values.shape[1]
    for b in range(res.shape[0]):
        rows = values[offsets[b]:offsets[b + 1]][: res.shape[1]]
        assert torch.equal(res[b, : rows.shape[0]], rows)


def test_compare_json_verdicts(recording, tmp_path):
    out, manifest = recording
    report = tmp_path / "compare.json"
    cmd = [recops_binary(), "compare", str(out), "--backend", "cpu", "--impl", "reference",
           "--json", str(report), "--cases-dir", str(ROOT / "src" / "ops")]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    rows = json.loads(report.read_text())
    assert len(rows) == len(manifest["cases"])
    for r in rows:
        assert r["verdict"] == "PASS", r
        assert r["impl"] == "reference" and r["recorded_impl"] == "cpu_generic"
        assert r["recorded_commit"] == manifest["commit"] and r["reproducer"] == ""


def test_record_filters_like_check(tmp_path):
    binary = recops_binary()
    if binary is None:
        pytest.skip("no recops binary")
    cmd = [binary, "record", "--backend", "cpu", "--op", "jagged_to_padded_dense,complete_cumsum",
           "--case", "tile_edges,n37", "--offsets-dtype", "int32", "--dtype", "fp16",
           "--out", str(tmp_path), "--cases-dir", str(ROOT / "src" / "ops")]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    cases = json.loads((tmp_path / "manifest.json").read_text())["cases"]
    # complete_cumsum lists no offsets dtype: --offsets-dtype leaves only the jagged row.
    assert [(e["op"], e["case"], e["dtype"], e["offsets_dtype"]) for e in cases] == [
        ("jagged_to_padded_dense", "tile_edges", "fp16", "int32")]
