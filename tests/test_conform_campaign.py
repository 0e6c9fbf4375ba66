"""Conformance in campaigns (issue 21 item 5, ``rmqha.models.campaign``): runs of ``rmqha simulate`` and ``rmqha fuzz``
that the model covers are validated against it as they run; a step that leaves the model is the catalogue violation
MODEL-CONFORM, recorded in the trace, replayed, explained and shrunk like any other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rmqha.impl import bugs as B
from rmqha.impl.findings import FINDINGS
from rmqha.impl.invariants import BY_ID
from rmqha.impl.sim import runner
from rmqha.impl.sim.config import default_config
from rmqha.impl.sim.tracefile import read_text
from rmqha.impl.trace import parse
from rmqha.models import campaign
from rmqha.spark_fuzz.findings import explain, shrink_violation

from rmqha.cli import main

DOCS = Path(__file__).resolve().parent.parent / "docs" / "findings"
INDEX = json.loads((DOCS / "index.json").read_text())
LEAVE_THE_MODEL = ("F-TRANSFER-EPOCH-STALE", "F-TRANSFER-NEGATIVE-BATCH")


def _finding_header(fid: str, **changes: Any) -> dict[str, Any]:
    header, _lines, _footer = parse(read_text(str(DOCS / INDEX[fid]["trace"])))
    return dict({k: v for k, v in header.items() if k not in ("format", "version")}, **changes)


def _without_boundary(fid: str) -> dict[str, Any]:
    h = _finding_header(fid, conform=True)
    return dict(h, disabledInvariants=sorted({*h.get("disabledInvariants", []), "HA-EPOCH-BOUNDARY"}))


def test_model_conform_is_in_the_catalogue_and_checked_above_the_core():
    inv = BY_ID["MODEL-CONFORM"]
    assert inv.checked_by.startswith("models/campaign.py") and not inv.on and not inv.reads
    assert inv.check(None) is None  # the core only states it


@pytest.mark.parametrize("fid", LEAVE_THE_MODEL)
def test_a_run_that_leaves_the_model_fails_model_conform_and_its_fix_removes_it(fid):
    """These findings' batches lie in no epoch their header names: the catalogue (HA-EPOCH-BOUNDARY) and the model
    (Transfer) reject the same step, and the catalogue's check runs first. With it off, the validated run stops there
    on MODEL-CONFORM; with the finding's fix it is clean."""
    step = INDEX[fid]["step"]
    both = campaign.run_header(_finding_header(fid, conform=True), keep=False).violation
    assert both is not None and (both.invariant, both.step) == ("HA-EPOCH-BOUNDARY", step)
    h = _without_boundary(fid)
    v = campaign.run_header(h, keep=False).violation
    assert v is not None and (v.invariant, v.step) == ("MODEL-CONFORM", step)
    assert "Transfer" in v.message and v.state["divergence"]["action"] == "Transfer"
    plain = runner.run_header(dict(h, conform=False), keep=False).violation  # the same run, not validated
    assert plain is None or plain.step > step
    assert campaign.run_header(dict(h, bugs=sorted([*h["bugs"], FINDINGS[fid].fix])), keep=False).violation is None


def test_a_model_conform_violation_is_explained_shrunk_and_replayed():
    h = _without_boundary("F-TRANSFER-EPOCH-STALE")
    v = campaign.violation_of(h)
    assert v is not None and v["invariant"] == "MODEL-CONFORM"
    assert explain(h, v) == "F-TRANSFER-EPOCH-STALE"
    res = shrink_violation(h, v, 12)
    assert res["invariant"] == "MODEL-CONFORM" and res["replays"] and res["header"]["conform"] is True
    again = campaign.run_header(res["header"])
    assert again.violation is not None and again.violation.invariant == "MODEL-CONFORM"
    assert again.digest == res["hash"]


def test_a_validated_run_says_so_in_its_header_and_replays_byte_for_byte():
    cfg = default_config("safe")
    r = campaign.run(cfg, 3, 1500, bugs=list(B.FIXES_ALL))
    assert r.violation is None and r.text is not None
    header, _lines, _footer = parse(r.text)
    assert header["conform"] is True
    assert campaign.run_header(header).text == r.text
    with pytest.raises(ValueError, match="validated against the model"):
        runner.run_header(header)
    off = campaign.run(cfg, 3, 1500, bugs=list(B.FIXES_ALL), conform=False)
    assert off.text is not None and "conform" not in parse(off.text)[0]
    # the validation only watches: the run's steps are the same with it and without
    assert [json.loads(x) for x in off.text.splitlines()[1:-1]] == [json.loads(x) for x in r.text.splitlines()[1:-1]]


def test_scope_leaves_out_what_the_model_does_not_cover():
    safe = default_config("safe")
    assert campaign.scope(safe, list(B.FIXES_ALL)) is None
    assert campaign.scope(safe, ["unclean-election"]) is None  # a setting the model maps
    assert "code switch" in (campaign.scope(safe, [B.ACK_LOCAL_SSS_ONLY]) or "")
    assert "outside the model" in (campaign.scope(default_config("fidelity"), []) or "")
    assert "legacy" in (campaign.scope(default_config("legacy-sync"), []) or "")


def test_simulate_validates_by_default_and_no_conform_turns_it_off(capsys, tmp_path):
    trace = tmp_path / "t.jsonl"
    assert main(["simulate", "--seed", "2", "--steps", "600", "--fix", "all", "--json", "--trace", str(trace)]) == 0
    assert json.loads(capsys.readouterr().out)["conform"] == "checked"
    assert parse(trace.read_text())[0]["conform"] is True
    assert main(["replay", str(trace)]) == 0
    capsys.readouterr()
    assert main(["simulate", "--seed", "2", "--steps", "600", "--fix", "all", "--json", "--no-conform"]) == 0
    assert json.loads(capsys.readouterr().out)["conform"] == "n/a: --no-conform"
    assert main(["simulate", "--seed", "2", "--steps", "600", "--profile", "fidelity", "--fix", "all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["conform"].startswith("n/a: outside the model")
    assert main(["simulate", "--seeds", "1-2", "--steps", "600", "--fix", "all", "--jobs", "1", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["conform"] == "checked" and summary["violations"] == 0


def test_a_stale_validation_leaves_the_model_and_its_finding_explains_it():
    """Without the fixes (``rmqha simulate --seeds 1-100``, seed 57), the DLedger controller validates an admin
    election on a state that lacks an earlier, still uncommitted election: the model's ElectMaster has no such
    result, the first thing that sees it. F-DLEDGER-STALE-VALIDATION's fix removes it, and explains it."""
    r = campaign.run(default_config("safe"), 57, 2755, record=False)
    assert r.violation is not None and (r.violation.invariant, r.violation.step) == ("MODEL-CONFORM", 2754)
    assert r.violation.state["divergence"]["guard"] == "elect_policy"
    header = runner.header_for(default_config("safe"), 57, 2755, [], None, conform=True)
    assert explain(header, r.violation.to_dict()) == "F-DLEDGER-STALE-VALIDATION"
