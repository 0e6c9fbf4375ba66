"""Every documented finding replays from its committed trace, byte for byte, and its fix switch removes it.

The traces in ``docs/findings/traces/`` are written by ``scripts/derive_findings.py``; ``docs/findings/index.json``
records each one's seed, hash and violation. A change to the core that alters any of them shows up here first:
re-derive the traces (and re-read the write-ups) rather than editing the expectations.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rmqha.impl.findings import FINDINGS
from rmqha.impl.sim.runner import run_header
from rmqha.impl.trace import parse

from rmqha.files import read_trace_text

DOCS = Path(__file__).resolve().parent.parent / "docs" / "findings"
INDEX = json.loads((DOCS / "index.json").read_text())


def test_every_finding_has_a_trace_and_a_write_up():
    assert sorted(INDEX) == sorted(FINDINGS)
    for fid in FINDINGS:
        assert (DOCS / INDEX[fid]["trace"]).exists(), fid
        assert (DOCS / f"{fid}.md").exists(), fid


@pytest.mark.parametrize("fid", sorted(INDEX))
def test_finding_trace_replays_and_fix_removes_it(fid):
    entry = INDEX[fid]
    text = read_trace_text(str(DOCS / entry["trace"]))
    header, _lines, footer = parse(text)
    assert footer["hash"] == entry["hash"]
    again = run_header(header)
    assert again.text == text, "the trace no longer reproduces: re-derive it (scripts/derive_findings.py)"
    assert again.violation is not None and again.violation.invariant == entry["invariant"]
    assert again.violation.invariant in FINDINGS[fid].invariants
    assert FINDINGS[fid].fix not in header["bugs"]
    fixed = run_header(dict(header, bugs=sorted([*header["bugs"], FINDINGS[fid].fix])), keep=False)
    assert fixed.violation is None, fixed.violation
