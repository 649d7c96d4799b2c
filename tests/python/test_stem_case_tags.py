"""The Stem drivers of the recops CLI refuse a case tag's value they do not take (issue 21):
`scores=zipf` gave random scores, `sel=`, `bad=`, `qscale=`... fell back to a default, a bare flag
ignored its value. Each is now an error naming the tag, the value and the values it takes. Sizes
from tags no longer crash the attention driver."""

import subprocess

import pytest

from _cli import recops_binary

_FOLDER = {
    "stem_indexer": "stem/indexer",
    "stem_indexer_metadata": "stem/indexer",
    "stem_prepare": "stem/prepare",
    "block_sparse_attention": "stem/block_sparse_attention",
}
_IDX_BAD = ("qflat_dtype, qflat_rank, df_mismatch, vbias_shape, vbias_dtype, neg_len, lens_dtype, "
            "meta_stale, meta_numel")
_KV_BAD = "cu_not_monotone, dtype_mix, no_kv_layout, page_id, both_kv_layouts"


def _check(tmp_path, op, tags):
    binary = recops_binary()
    if binary is None:
        pytest.skip("no recops binary")
    d = tmp_path / _FOLDER[op]
    d.mkdir(parents=True)
    standard = "double" if op == "block_sparse_attention" else "exact"  # as the ops' cases.yaml
    (d / "cases.yaml").write_text(f"op: {op}\nstandard: {standard}\ncases:\n  - id: tagged\n"
                                  f"    lengths: [9]\n    shape: [2, 1, 16]\n    tags: [{tags}]\n")
    return subprocess.run([binary, "check", "--op", op, "--backend", "cpu", "--cases-dir",
                           str(tmp_path)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("op,tags,msg", [
    ("stem_indexer", "scores=zipf",
     "tag 'scores': 'zipf' is not one of zero, vbias_j, vbias_negj, near_tie, inf_nan"),
    ("stem_indexer", "scores", "tag 'scores': '' is not one of zero, vbias_j"),
    ("stem_indexer", "bad=typo", f"tag 'bad': 'typo' is not one of {_IDX_BAD}"),
    ("stem_indexer", "prec=4", "tag 'prec': '4' is not one of 1, 2, 3"),
    ("stem_indexer", "path=7", "tag 'path': '7' is not one of 0, 1, 2, 3"),
    ("stem_indexer", "path=2, gemm_rows=0", "tag 'gemm_rows': '0' is not an integer >= 1"),
    ("stem_indexer", "gemm_rows=256", "gemm_rows= is path 3's and needs path=3"),
    ("stem_indexer", "noncausal=1", "tag 'noncausal' takes no value, got 'noncausal=1'"),
    ("stem_indexer", "kslice=yes", "tag 'kslice' takes no value, got 'kslice=yes'"),
    ("stem_indexer", "meta=0", "tag 'meta' takes no value, got 'meta=0'"),
    ("stem_indexer", "bad=meta_stale", "bad=meta_stale needs the tag `meta`"),
    ("stem_indexer", "bs", "tag 'bs': '' is not an integer"),
    ("stem_indexer", "alpha=", "tag 'alpha': '' is not a number"),
    ("stem_indexer", "prompt", "prompt= needs one length per batch"),
    ("stem_indexer", "prompt=900, prompt_extra=5", "prompt= and prompt_extra= exclude each other"),
    ("stem_indexer", "paged=16", "unknown tag 'paged' for op stem_indexer"),
    ("stem_indexer_metadata", "bad=neg_len", "tag 'bad': 'neg_len' is not one of lens_dtype"),
    ("stem_indexer_metadata", "scores=zipf", "tag 'scores': 'zipf' is not one of zero"),
    ("block_sparse_attention", "sel=some", "tag 'sel': 'some' is not one of all, rand, empty"),
    ("block_sparse_attention", "fa_rows=64", "tag 'fa_rows': '64' is not one of 16, 32"),
    ("block_sparse_attention", "bad=oob",
     f"tag 'bad': 'oob' is not one of dup_id, oob_id, {_KV_BAD}"),
    ("block_sparse_attention", "noncausal=yes", "tag 'noncausal' takes no value"),
    ("block_sparse_attention", "paged=0", "tag 'paged': '0' is not an integer >= 1"),
    ("block_sparse_attention", "bad=page_id", "bad=page_id needs paged K/V (paged=PS)"),
    ("block_sparse_attention", "paged=16, bad=dtype_mix", "bad=dtype_mix needs packed K/V"),
    # Sizes the attention driver's selection is built from (bs=0 divided by zero, qmax=2^62
    # wrapped the selection's size, kmax below Kb wrote past a row): the case or the op refuses.
    ("block_sparse_attention", "bs=0", "recops.block_sparse_attention: sparse_block_size=0 must"),
    ("block_sparse_attention", "qmax=4611686018427387904",
     "qmax=4611686018427387904, kmax=1: the selection [B, Nq, Qmax, Kmax] has more than 2^32 ids"),
    ("block_sparse_attention", "qmax=-3", "tag 'qmax': '-3' is not an integer >= 0"),
    ("block_sparse_attention", "kv=300, kmax=1, bs=32",
     "kv_seq_lens[0]=300 exceeds the limit Kmax·sparse_block_size = 1·32"),
    ("stem_prepare", "qscale=channel", "tag 'qscale': 'channel' is not one of tensor, token"),
    ("stem_prepare", "kscale=head", "tag 'kscale': 'head' is not one of tensor, token"),
    ("stem_prepare", "vscale=token", "tag 'vscale': 'token' is not one of tensor, head"),
    ("stem_prepare", "bad=dup_id", f"tag 'bad': 'dup_id' is not one of {_KV_BAD}"),
    ("stem_prepare", "paged=-16", "tag 'paged': '-16' is not an integer >= 1"),
    ("stem_prepare", "bad=both_kv_layouts", "bad=both_kv_layouts needs paged K/V"),
])
def test_unknown_tag_value_named(tmp_path, op, tags, msg):
    proc = _check(tmp_path, op, tags)
    assert proc.returncode != 0
    assert msg in proc.stdout + proc.stderr


@pytest.mark.parametrize("op,tags", [
    ("stem_indexer", "scores=inf_nan, prec=2, kslice, noncausal"),
    ("stem_indexer_metadata", "noncausal, window=2"),
    ("block_sparse_attention", "sel=all, fa_rows=32, paged=16"),
    ("stem_prepare", "qscale=token, kscale=token, vscale=head, paged=16"),
])
def test_accepted_tag_values_still_run(tmp_path, op, tags):
    proc = _check(tmp_path, op, tags)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 failed" in proc.stdout + proc.stderr
