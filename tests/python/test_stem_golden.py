"""The Stem goldens are independent of what they judge (issue 21): the indexer's reference used to
call visible_blocks, forced_set and budget_k from common/stem_rules.h, the header the CPU and CUDA
implementations compile, so `recops check` could not catch a mistake there. The references now
derive the rules from the spec; this checks that they include no family code, and that the CPU
implementation agrees with them on every case."""

import re
import subprocess
from pathlib import Path

import pytest

from _cli import recops_binary

STEM = Path(__file__).resolve().parents[2] / "src" / "ops" / "stem"


@pytest.mark.parametrize("ref", sorted(STEM.glob("*/reference*.cpp")), ids=lambda p: p.parent.name)
def test_reference_shares_no_code_with_the_implementations(ref):
    text = ref.read_text()
    own = f"ops/stem/{ref.parent.name}/"
    for inc in re.findall(r'#include "([^"]+)"', text):
        # Its own declarations (impls.h, params.h) and generic headers only; never common/.
        assert inc.startswith((own, "recops/", "core/")), f"{ref.name} includes {inc}"
    # A call into the family's namespace (stem::visible_blocks(...)) would be shared code.
    calls = re.findall(r"\bstem::(\w+)\s*\(", text)
    assert not calls, f"{ref.parent.name}/{ref.name} calls stem::{calls}"


def test_cpu_agrees_with_the_independent_reference():
    binary = recops_binary()
    if binary is None:
        pytest.skip("no recops binary")
    proc = subprocess.run([binary, "check", "--op", "stem_indexer", "--op",
                           "stem_indexer_metadata", "--backend", "cpu"],
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert re.search(r"[1-9][0-9]* passed, 0 failed", out), out[-3000:]
