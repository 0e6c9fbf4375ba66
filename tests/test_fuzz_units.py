"""The fuzz campaign's parts without Spark: probe, swarm mixes, mutants, shrinking, journal, settings, CLI errors."""

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from rmqha.impl import bugs as B
from rmqha.impl.findings import (
    FINDINGS,
    SEP,
    SET_RERUNS,
    FixSet,
    Triage,
    candidates,
    classify,
    explanation,
    explanation_ids,
    fix_set,
    is_documented,
    set_pool,
    triage,
)
from rmqha.impl.findings import in_play as in_play_fix
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.faults import validate_actions
from rmqha.impl.sim.runner import header_for, run_header
from rmqha.impl.sim.scenarios import SCENARIOS
from rmqha.impl.sim.tracefile import read_text as read_trace_text
from rmqha.impl.trace import TraceRecorder, parse
from rmqha.spark_fuzz.campaign import Campaign, CampaignError, options_from
from rmqha.spark_fuzz.coverage import master_at
from rmqha.spark_fuzz.findings import bucket, explain, shrink_violation, signature, violation_of
from rmqha.spark_fuzz.journal import Journal
from rmqha.spark_fuzz.mutate import CorpusEntry, mutate
from rmqha.spark_fuzz.outputs import RUNS, run_rows
from rmqha.spark_fuzz.runs import probed_run
from rmqha.spark_fuzz.schedule import FAMILIES, draw_mix, ghost_schedule, mix_config
from rmqha.spark_fuzz.settings import FuzzSettings, settings_from_dict

from rmqha.cli import main
from rmqha.cli.fuzz import _print_summary

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


# ------------------------------------------------------------------------------------ triage: sets of findings

DATA = Path(__file__).resolve().parent / "data" / "fuzz"
SETWIDE = ("SYNC-CONFIRM-HELD", "SYNC-DISPATCH-CONFIRMED")  # the set-wide state checks of issue 21


def _rerun(header):
    r = run_header(header, record=False)
    return r.violation.to_dict() if r.violation else None


def test_a_slave_dispatching_a_deposed_masters_tail_is_explained_by_slave_follows():
    """The README's main job's run ``g10.3`` (``tests/data/fuzz/README.md``): a slave that replicated a deposed master
    (F-SLAVE-FOLLOWS-DEPOSED-MASTER) dispatches that master's divergent tail once the connection, served past the
    deposed master's own truncation, brings the new master's confirmOffset. The finding's fix removes it, and the
    campaign's triage says so (it exited 1 with the violation "unexplained" before the finding listed the
    invariant). The committed shrink of the same mechanism, with every other finding's fix on, replays byte for
    byte and fails the same way."""
    mutant = json.loads((DATA / "SYNC-DISPATCH-CONFIRMED-199291327.json").read_text())
    v = _rerun(mutant)
    assert v is not None and (v["invariant"], v["step"]) == ("SYNC-DISPATCH-CONFIRMED", 4233)
    assert explain(mutant, v) == "F-SLAVE-FOLLOWS-DEPOSED-MASTER"
    path = Path(__file__).resolve().parent.parent / "docs" / "findings" / "traces" / \
        "F-SLAVE-FOLLOWS-DEPOSED-MASTER-dispatch.jsonl.gz"
    text = read_trace_text(str(path))
    header, _lines, _footer = parse(text)
    again = run_header(header)
    assert again.text == text and again.violation is not None
    assert again.violation.invariant == "SYNC-DISPATCH-CONFIRMED"
    assert "fix-slave-follows-current-master" not in header["bugs"]
    assert _rerun(dict(header, bugs=sorted([*header["bugs"], "fix-slave-follows-current-master"]))) is None


def _two_finding_cases():
    """(header, invariant, explanation): the README's main job's run the issue names (a guided mutant, its header
    committed), and a fresh seed of the default swarm (built from the seed alone)."""
    mutant = json.loads((DATA / "SYNC-SSS-HOLDS-ACKED-663998284.json").read_text())
    # the set-wide checks (issue 21) see this run's first face earlier: SYNC-CONFIRM-HELD at step 628, which
    # F-CONFIRM-LOCAL-SHORTCUT's fix alone removes; with them off, the run keeps the face the campaign recorded
    mutant = dict(mutant, disabledInvariants=sorted({*mutant.get("disabledInvariants", []), *SETWIDE}))
    fresh = header_for(mix_config(SAFE, draw_mix(396, SAFE, FuzzSettings())), 396, 20_000, [], None, None, "safe", [])
    return [pytest.param(mutant, "SYNC-SSS-HOLDS-ACKED", "F-GAP-UNION+F-STALE-SSS-PROPOSAL", id="main-job-663998284"),
            pytest.param(fresh, "HA-EPOCH-BOUNDARY", "F-TRANSFER-EPOCH-STALE+F-TRANSFER-NEGATIVE-BATCH",
                         id="fresh-seed-396")]


@pytest.mark.parametrize(("header", "invariant", "expect"), _two_finding_cases())
def test_a_violation_two_findings_clear_only_together_is_explained_by_both(header, invariant, expect):
    v = violation_of(header)
    assert v is not None and v["invariant"] == invariant
    cut = dict(header, maxSteps=v["step"])
    assert classify(cut, v, _rerun) is None  # no single finding: the one-at-a-time triage left it unexplained
    for fid in expect.split("+"):  # each fix alone leaves it (at or before the same step)
        again = _rerun(dict(cut, bugs=sorted([*header["bugs"], FINDINGS[fid].fix])))
        assert again is not None and again["invariant"] == invariant and again["step"] <= v["step"]
    t = triage(header, v, _rerun)
    assert t.explained_by == expect and is_documented(t.explained_by)
    singles = len([f for f in candidates(invariant) if in_play_fix(f, header["bugs"])])
    # one re-run per candidate in play, then the set of all of them (and of those a set's fixes bring into play:
    # F-TRANSFER-NEGATIVE-BATCH with #9690's fix) and the ddmin steps, within the budget
    assert singles + 1 <= t.reruns <= singles + SET_RERUNS
    assert explain(header, v) == expect
    assert bucket(invariant, expect) == f"{invariant}|{expect}"


def test_a_single_finding_explanation_is_unchanged():
    """The single-fix path first, in catalogue order: F-STALE-SSS-PROPOSAL is tried before F-GAP-UNION, which
    explains this one alone (two re-runs, no set search). (The set-wide checks see the run first, as
    SYNC-DISPATCH-CONFIRMED at step 486, also F-GAP-UNION's; they are off here to keep the single-fix order in view.)"""
    s = settings_from_dict({"families": {f: (1.0 if f == "concurrent-sss" else 0.0) for f in FAMILIES},
                            "brokers": {"4": 1}})
    h = header_for(mix_config(SAFE, draw_mix(28, SAFE, s)), 28, 20_000, [], None, None, "safe", [])
    first = violation_of(h)
    assert first is not None and first["invariant"] == "SYNC-DISPATCH-CONFIRMED"
    assert explain(h, first) == "F-GAP-UNION"
    h = dict(h, disabledInvariants=sorted(SETWIDE))
    v = violation_of(h)
    assert v is not None and v["invariant"] == "SYNC-SSS-HOLDS-ACKED"
    assert [f.id for f in candidates(v["invariant"])][:2] == ["F-STALE-SSS-PROPOSAL", "F-GAP-UNION"]
    assert triage(h, v, _rerun) == Triage("F-GAP-UNION", 2)
    assert explain(h, v) == "F-GAP-UNION"


def test_a_planted_bug_no_set_of_fixes_clears_stays_unexplained():
    """``transfer-crosses-epoch`` (a bug switch no finding's fix covers): each candidate's fix alone and both together
    leave the violation, so it stays unexplained (exit 1) after the set search has run."""
    name = "transfer-crosses-epoch"
    h = header_for(mix_config(SAFE, draw_mix(5, SAFE, FuzzSettings())), 5, 6000, [name], None, None, "safe", [])
    v = violation_of(h)
    assert v is not None and v["invariant"] == B.BUGS[name].invariant
    in_play = [f for f in candidates(v["invariant"]) if in_play_fix(f, h["bugs"])]
    assert [f.id for f in in_play] == ["F-TRANSFER-EPOCH-STALE"]  # F-TRANSFER-NEGATIVE-BATCH needs #9690's rule
    pool = set_pool(candidates(v["invariant"]), h["bugs"])
    assert [f.id for f in pool] == ["F-TRANSFER-EPOCH-STALE", "F-TRANSFER-NEGATIVE-BATCH"]  # ... which a set brings
    assert triage(h, v, _rerun) == Triage(None, len(in_play) + 1)  # the set of both was tried
    assert explain(h, v) is None


def _fake(required, invariant="SYNC-NO-ACK-LOSS"):
    """A re-run that fails at step 10 unless every fix of ``required`` is on, and counts its calls."""
    calls = []

    def rerun(header):
        calls.append(sorted(header["bugs"]))
        return None if set(required) <= set(header["bugs"]) else {"invariant": invariant, "step": 10}

    return rerun, calls


def test_ddmin_over_fix_switches_finds_a_one_minimal_set_within_its_budget():
    v = {"invariant": "SYNC-NO-ACK-LOSS", "step": 10}
    header = {"bugs": [], "maxSteps": 10}
    ids = sorted(f.id for f in FINDINGS.values() if not f.needs)
    for want in (ids[1:3], [ids[0], ids[5], ids[-1]], ids[4:5]):
        rerun, calls = _fake([FINDINGS[i].fix for i in want])
        found = fix_set(header, v, rerun, pool=FINDINGS.values(), budget=64, singles_tried=False)
        assert found.ids == tuple(sorted(want)) and found.minimal and found.reruns == len(calls) <= 64
        assert len({tuple(c) for c in calls}) == len(calls)  # memoised: no set is run twice
    rerun, calls = _fake([FINDINGS[i].fix for i in ids[1:3]])
    found = fix_set(header, v, rerun, pool=FINDINGS.values(), budget=3, singles_tried=False)
    assert found.reruns == len(calls) == 3 and not found.minimal and set(ids[1:3]) <= set(found.ids)
    rerun, calls = _fake(["no-such-fix"])  # nothing clears it: one re-run (all fixes together), no set
    assert fix_set(header, v, rerun, pool=FINDINGS.values()) == FixSet((), False, 1)


def test_explanations_of_sets_read_back():
    assert explanation(["F-STALE-SSS-PROPOSAL", "F-GAP-UNION"]) == "F-GAP-UNION+F-STALE-SSS-PROPOSAL"
    assert explanation_ids("F-GAP-UNION+F-STALE-SSS-PROPOSAL") == ["F-GAP-UNION", "F-STALE-SSS-PROPOSAL"]
    assert is_documented("F-GAP-UNION") and is_documented("F-GAP-UNION+F-STALE-SSS-PROPOSAL")
    assert not is_documented(None) and not is_documented("expected:allack-off")
    assert not is_documented("F-GAP-UNION+F-NOPE")
    assert all(SEP not in f for f in FINDINGS)  # the separator never occurs in an id


def test_a_set_explanation_is_explained_in_buckets_tables_and_the_summary(tmp_path):
    """A run explained by a set (``F-A+F-B``): its bucket, the ``runs`` table's columns, the summary (not counted as
    unexplained: exit 0) and the summary table (the explanation whole, no "unexplained")."""
    expl = "F-GAP-UNION+F-STALE-SSS-PROPOSAL"
    header = json.loads((DATA / "SYNC-SSS-HOLDS-ACKED-663998284.json").read_text())
    row = {"id": "g0.0", "arm": "guided", "seed": header["seed"], "family": "uniform", "brokers": 4, "steps": 1255,
           "simMs": 29430, "wall": 0.1, "nStates": 1, "newStates": ["s1"], "witnesses": {"election": 1},
           "header": header, "explainedBy": expl,
           "violation": {"invariant": "SYNC-SSS-HOLDS-ACKED", "step": 1255, "t": 29430, "message": "m"}}
    c = Campaign(None, options_from(str(tmp_path), SAFE.to_dict(), None, shrink=False))
    c._apply_merge({"type": "merged", "batch": 0, "elapsed": 1.0, "rows": [row]})
    s = c.summary()
    assert s["violations"] == 1 and s["unexplained"] == 0 and not c.unexplained()
    assert [(b["bucket"], b["explainedBy"]) for b in s["buckets"]] == [(f"SYNC-SSS-HOLDS-ACKED|{expl}", expl)]
    cols = dict(zip([n for n, _ in RUNS], run_rows(c)[0]))
    assert cols["explained_by"] == expl and cols["bucket"] == f"SYNC-SSS-HOLDS-ACKED|{expl}"
    buf = io.StringIO()
    _print_summary(Console(file=buf, width=200), s | {"tables": {"runs": "x"}, "report": "r.html"})
    text = buf.getvalue()
    assert expl in text and "0 unexplained" in text and text.count("unexplained") == 1, text
