"""Conformance (rmqha/conform.py): random safe runs are model transitions step by step; a deliberately
non-conforming change (a bug switch) is reported at the event where it acts; findings show where they act."""

import json
from pathlib import Path

import pytest
from rmqha.impl import bugs as B
from rmqha.impl.sim.abstraction import abstract_state
from rmqha.impl.sim.config import default_config
from rmqha.impl.sim.runner import header_for, run
from rmqha.impl.sim.scenarios import SCENARIOS
from rmqha.impl.sim.world import Simulation
from rmqha.impl.trace import parse
from rmqha.models.conform import Validator, model_config, validate
from rmqha.models.controller_mode import NONE

from rmqha.cli import main

ROOT = Path(__file__).resolve().parent.parent
FINDINGS = ROOT / "docs" / "findings" / "traces"

# the switches whose deviation is in a checked variable, and the model action that rejects it
CONTROL_PLANE = {"alter-skip-sss-epoch-check": "ControllerAlter", "consistent-point-uses-max": "Handshake",
                 "elect-ignores-liveness": "ElectMaster", "transfer-crosses-epoch": "Transfer"}


def _scenario_header(name: str, on: bool) -> tuple[dict, object]:
    s = SCENARIOS[name]
    cfg = s.config_for(on)
    r = run(cfg, s.seed, 200_000, bugs=s.bugs(on), schedule=s.schedule, max_time=s.max_time, disabled=s.disabled,
            record=False)
    return header_for(cfg, s.seed, 200_000, s.bugs(on), s.schedule, s.max_time, None, s.disabled), r.violation


def test_hundreds_of_random_safe_runs_conform():
    cfg = default_config("safe")
    bad, steps = [], 0
    for seed in range(1, 201):
        rep = validate(header_for(cfg, seed, 1200, list(B.FIXES_ALL), None))
        steps += rep.steps
        if not rep.conforms:
            bad.append((seed, rep.divergence.to_dict()))
    assert not bad, bad[:3]
    assert steps > 200 * 1000


@pytest.mark.parametrize("name", sorted(CONTROL_PLANE))
def test_a_bug_switch_is_rejected_at_the_event_where_it_acts(name):
    header, violation = _scenario_header(name, on=True)
    rep = validate(header)
    assert not rep.conforms
    d = rep.divergence
    assert d.action == CONTROL_PLANE[name], d.to_dict()
    assert violation is not None and d.step == violation.step  # the catalogue sees the damage at the same step
    assert d.guard and d.detail and d.event
    header_off, _ = _scenario_header(name, on=False)
    assert validate(header_off).conforms


def test_data_plane_switches_are_outside_the_checked_projection():
    """Acks and confirmOffset are not model-checked variables here (the catalogue checks them): documented."""
    header, violation = _scenario_header("ack-local-sss-only", on=True)
    assert violation is not None and validate(header).conforms


@pytest.mark.parametrize("finding,action", [("F-DLEDGER-STALE-VALIDATION", "ControllerAlter"),
                                            ("F-TRANSFER-EPOCH-STALE", "Transfer")])
def test_findings_diverge_where_rocketmq_leaves_the_model(finding, action):
    import gzip

    header, _lines, _footer = parse(gzip.decompress((FINDINGS / f"{finding}.jsonl.gz").read_bytes()).decode())
    rep = validate(header)
    assert not rep.conforms and rep.divergence.action == action


def test_the_abstraction_is_the_models_vocabulary():
    cfg = default_config("safe")
    sim = Simulation(cfg, 3, schedule=[], max_steps=100_000, max_time=20_000)
    sim.run()
    a = abstract_state(sim)
    master = a["ctlMaster"]
    assert master != NONE and a["role"][master] == master and a["ctlSSS"] >> master & 1
    assert a["registered"] == 0b111 and all(a["alive"]) and all(a["reach"])
    assert all(r == master for i, r in enumerate(a["role"]) if i != master)
    assert a["bME"] == (a["ctlME"],) * 3 and a["epochs"][master][-1][0] == a["ctlME"]
    v = Validator(sim, model_config(header_for(cfg, 3, 1, [], None)))
    s = v._state(a)  # builds the model's State: the abstraction is total
    assert s.ctlMaster == master and len(s.log[master]) == a["log"][master]


def test_cli_conform_exit_codes_and_json(tmp_path, capsys):
    res = run(default_config("safe"), 1, 1, record=True)
    good = tmp_path / "good.jsonl"
    good.write_text(res.text)
    s = SCENARIOS["alter-skip-sss-epoch-check"]
    bad_run = run(s.config_for(True), s.seed, 200_000, bugs=s.bugs(True), schedule=s.schedule, max_time=s.max_time,
                  disabled=s.disabled)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(bad_run.text)
    assert main(["conform", str(good)]) == 0
    assert main(["conform", str(good), str(bad), "--json", "--jobs", "1"]) == 1
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert [r["conforms"] for r in out] == [True, False]
    assert out[1]["divergence"]["guard"] == "alterSyncStateSet check 5-sss-epoch"
    assert main(["conform", "--seeds", "1-2", "--steps", "300", "--fix", "all", "--jobs", "1"]) == 0
    assert main(["conform"]) == 2
    assert main(["conform", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["conform", "--seeds", "1-2", "--profile", "legacy-sync"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err


def test_a_run_outside_the_model_is_refused_in_one_line():
    """The model covers one controller, one implicit queue and logs from offset 0: a trace of the fidelity profile
    (docs/fidelity.md) gets a one-line reason, and a campaign reports its conformance as n/a."""
    import pytest
    from rmqha.impl.sim.config import default_config
    from rmqha.impl.sim.runner import header_for
    from rmqha.models.conform import validate
    from rmqha.spark_fuzz.findings import conformance

    header = header_for(default_config("fidelity"), 1, 2000, [], None, None, "fidelity", [])
    with pytest.raises(ValueError, match="a replicated controller group, topic queues"):
        validate(header)
    assert conformance(header)[0] == "n/a"
