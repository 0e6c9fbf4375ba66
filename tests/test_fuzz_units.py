"""The fuzz campaign's parts without Spark: probe, swarm mixes, mutants, shrinking, journal, settings, CLI errors."""

import json
from pathlib import Path

import pytest
from rmqha.impl import bugs as B
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.faults import validate_actions
from rmqha.impl.sim.runner import header_for, run_header
from rmqha.impl.sim.scenarios import SCENARIOS
from rmqha.impl.sim.tracefile import read_text as read_trace_text
from rmqha.impl.trace import TraceRecorder, parse
from rmqha.spark_fuzz.campaign import Campaign, CampaignError, options_from
from rmqha.spark_fuzz.coverage import master_at
from rmqha.spark_fuzz.findings import explain, shrink_violation, signature, violation_of
from rmqha.spark_fuzz.journal import Journal
from rmqha.spark_fuzz.mutate import CorpusEntry, mutate
from rmqha.spark_fuzz.runs import probed_run
from rmqha.spark_fuzz.schedule import FAMILIES, draw_mix, ghost_schedule, mix_config
from rmqha.spark_fuzz.settings import FuzzSettings, settings_from_dict

from rmqha.cli import main

SAFE = default_config("safe")


def _header(seed: int, steps: int = 3000, bugs=(), schedule=None, cfg=None):
    cfg = cfg or mix_config(SAFE, draw_mix(seed, SAFE, FuzzSettings()))
    return header_for(cfg, seed, steps, sorted(bugs), schedule, None, "safe", [])


def test_probed_run_is_the_same_run():
    """The coverage probe and the action tap only read: same hash as runner.run, and the actions it took are the
    run's explicit schedule (which replays to the same violation)."""
    for seed in (2, 5):
        h = _header(seed, 4000, B.FIXES_ALL)
        rec = TraceRecorder(h, keep=False)
        pr = probed_run(h, want_actions=True, recorder=rec)
        plain = run_header(h, keep=False)
        assert rec.digest() == plain.digest
        assert (pr.violation is None) == (plain.violation is None) and pr.steps == plain.steps
        assert pr.states and all(isinstance(t, int) for t in pr.states.values())
        assert pr.witnesses.get("election", 0) >= 1 and pr.actions
        validate_actions(pr.actions, lambda n: True)


def test_swarm_mix_is_a_function_of_the_seed_and_lands_in_the_header():
    s = FuzzSettings()
    mixes = [draw_mix(seed, SAFE, s) for seed in range(1, 41)]
    assert mixes[:5] == [draw_mix(seed, SAFE, s) for seed in range(1, 6)]
    assert {m.family for m in mixes} == set(FAMILIES)  # every family shows up in 40 seeds
    assert {m.brokers for m in mixes} <= set(s.brokers) and len({m.brokers for m in mixes}) > 1
    for m in mixes:
        assert len(m.kinds()) >= 2
        core = FAMILIES[m.family].core
        assert all(m.weights[k] > 0 for k in core)
        cfg = mix_config(SAFE, m)
        assert cfg.faults.weights == m.weights and cfg.cluster.brokers == m.brokers
        assert config_from_dict(cfg.to_dict()).to_dict() == cfg.to_dict()
    off = config_from_dict({"faults": {"weights": {"crash-master": 0}}}, SAFE)
    assert all(draw_mix(seed, off, s).weights["crash-master"] == 0 for seed in range(1, 30))


def test_ghost_schedules_and_mutants_are_valid_and_deterministic():
    cfg = mix_config(SAFE, draw_mix(3, SAFE, FuzzSettings()))
    from rmqha.impl.rng import DetRng

    roles = [[1000, "b1", "M"], [9000, "b1", "D"], [12000, "b2", "M"]]
    a = ghost_schedule(cfg, DetRng(1), 5000, 90_000, master_at(roles), "g-")
    b = ghost_schedule(cfg, DetRng(1), 5000, 90_000, master_at(roles), "g-")
    assert a == b and a and all(5000 <= x["t"] for x in a)
    validate_actions(a, lambda n: n in ("ctl", "b1", "b2", "b3", "b4", "b5"))
    assert all(x["id"].startswith("g-") for x in a if "id" in x)
    pr = probed_run(_header(3, 3000, B.FIXES_ALL), want_actions=True)
    parent = CorpusEntry("g0.0", 3, cfg.to_dict(), "x", pr.actions, pr.roles, sorted(pr.states.values())[:4], pr.sim_ms)
    for n in range(12):
        s1, seed1, ops1 = mutate(parent, DetRng(n), f"m{n}")
        s2, seed2, ops2 = mutate(parent, DetRng(n), f"m{n}")
        assert (s1, seed1, ops1) == (s2, seed2, ops2)
        validate_actions(s1, lambda n: True)
        h = header_for(cfg, seed1, 1500, [], s1, None, "safe", [])
        assert run_header(h, keep=False).steps > 0


def test_shrink_keeps_the_invariant_and_replays():
    h = _header(1, 6000, [*B.FIXES_ALL, "transfer-crosses-epoch"])
    v = violation_of(h)
    inv = B.BUGS["transfer-crosses-epoch"].invariant
    assert v is not None and v["invariant"] == inv
    budget = 25  # with fix-slave-follows-current-master among the fixes, ddmin's first 20 candidates all pass
    res = shrink_violation(h, v, budget)
    assert res["invariant"] == inv and res["replays"]
    assert res["shrunkActions"] < res["originalActions"] and res["runs"] <= budget + 1 + 2
    assert res["shrunkSteps"] <= res["originalSteps"]
    assert res["conforms"] == "n/a" and res["signature"].startswith(inv + "|")
    import gzip

    text = gzip.decompress(res["trace"]).decode()
    assert signature(text) == res["signature"]
    assert run_header(res["header"]).text == text


def test_shrinking_a_progress_violation_ends_the_fault_phase_at_the_heal_point():
    """A LIVE-* violation is checked at the heal point plus its settle bound: the shrunk runs end their fault phase at
    that heal point, so their settle tails start where the original's did."""
    cfg = config_from_dict({"sim": {"progress": True}}, SAFE)
    h = header_for(cfg, 2, 3000, sorted([*B.FIXES_ALL, "ha-read-time-on-handshake-only"]), None, None, "safe", [])
    v = violation_of(h)
    assert v is not None and v["invariant"] == "LIVE-HA-TRANSFER"
    res = shrink_violation(h, v, 8)
    assert res["shrunk"] and res["invariant"] == "LIVE-HA-TRANSFER" and res["replays"]
    assert res["header"]["maxTime"] == v["t"] - 105_000 and res["t"] == v["t"]


def test_explain_names_the_documented_finding_or_the_expected_loss_config():
    cfg = config_from_dict({"store": {"allAckInSyncStateSet": False}}, SAFE)
    for seed in range(1, 12):
        h = header_for(cfg, seed, 20_000, ["allack-off", *B.FIXES_ALL], None, None, "safe",
                       list(SCENARIOS["allack-off"].disabled))
        v = violation_of(h)
        if v is not None and v["invariant"] == B.BUGS["allack-off"].invariant:
            assert explain(h, v) == "expected:allack-off"
            break
    else:
        pytest.fail("no acked-message loss with allAckInSyncStateSet off in 11 seeds")


def test_journal_drops_a_torn_last_line(tmp_path):
    j = Journal(str(tmp_path))
    j.append({"type": "start", "x": 1})
    j.append({"type": "plan", "batch": 0})
    with open(j.path, "ab") as fh:
        fh.write(b'{"type": "merged", "batch"')
    assert [r["type"] for r in j.read()] == ["start", "plan"]
    j.append({"type": "merged", "batch": 0})
    assert [r["type"] for r in j.read()] == ["start", "plan", "merged"]


def test_settings_are_validated_with_one_line():
    assert settings_from_dict({"families": {"admin": 3}, "brokers": {"4": 1}}).families["admin"] == 3
    for bad in ({"nope": 1}, {"families": {"nope": 1}}, {"include": 2}, {"brokers": {"x": 1}}, {"steps": 0},
                {"families": dict.fromkeys(FAMILIES, 0)}, {"scale": []}):
        with pytest.raises(ValueError) as e:
            settings_from_dict(bad)
        assert "\n" not in str(e.value) and "[fuzz]" in str(e.value)


def test_a_different_campaign_in_the_same_out_is_refused(tmp_path):
    cfg = SAFE.to_dict()
    Journal(str(tmp_path)).append({"type": "start", "identity": {"config": cfg, "bugs": ["x"]}})
    with pytest.raises(CampaignError, match="holds a different campaign"):
        Campaign(None, options_from(str(tmp_path), cfg, None))._resume()


@pytest.mark.parametrize("args", [
    ["fuzz", "--seeds", "0"],
    ["fuzz", "--budget", "-3"],
    ["fuzz", "--seeds", "3", "--budget", "4"],
    ["fuzz", "--bug", "no-such-bug"],
    ["fuzz", "--fix", "nothing"],
    ["fuzz", "--profile", "legacy-sync"],
    ["fuzz", "--config", "/no/such/file.toml"],
    ["fuzz", "--steps", "0"],
])
def test_fuzz_user_mistakes_are_one_line_exit_2(args, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rmqha: ")


def test_fuzz_bad_config_table_is_one_line_exit_2(tmp_path, capsys):
    for text in ("[fuzz]\nnope = 1\n", "[fuzz]\nfamilies = {nope = 1}\n", "[store]\nallAckInSyncStateSet = 3\n",
                 "[fuzz\n"):
        f = tmp_path / "c.toml"
        f.write_text(text)
        assert main(["fuzz", "--config", str(f), "--out", str(tmp_path / "o")]) == 2, text
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("rmqha: "), err
    assert json.dumps(FuzzSettings().to_dict())


def test_a_fuzzed_sync_expand_safe_violation_is_explained_by_gap_union():
    """A campaign's finding (``rmqha fuzz --budget 60``, safe profile): the overwritten proposal of F-GAP-UNION also
    lets a master propose a slave that lacks messages it acknowledged; that fix removes it, and explain says so."""
    path = Path(__file__).resolve().parent.parent / "docs" / "findings" / "traces" / "F-GAP-UNION-expand.jsonl.gz"
    text = read_trace_text(str(path))
    header, _lines, _footer = parse(text)
    again = run_header(header)
    assert again.text == text and again.violation is not None
    v = again.violation.to_dict()
    assert v["invariant"] == "SYNC-EXPAND-SAFE"
    assert explain(header, v) == "F-GAP-UNION"
