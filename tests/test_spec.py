"""The TLA+ spec and the executable model: every CI config of spec/manifest.json gives its expected outcome under
TLC (each ``*_bug`` / ``*_finding`` config fails with the invariant it names, and its counterexample replays state
for state on the model to the same violation); the model's BFS counts exactly TLC's distinct states, with and
without symmetry; each failing config fails in the model too."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from rmqha.models.controller_mode import ModelConfig
from rmqha.models.explore import bfs
from rmqha.spec import speccheck
from rmqha.spec.tlc import run_tlc

from rmqha.cli.doctor import java_status

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = speccheck.load_manifest()
CI = [n for n, c in MANIFEST["configs"].items() if c["ci"]]
FAILING = [n for n, c in MANIFEST["configs"].items() if c["expect"] != "pass"]
needs_java = pytest.mark.skipif(not java_status()[0], reason="Java 17 is needed for TLC")


def test_configs_are_generated_from_the_table() -> None:
    spec = importlib.util.spec_from_file_location("gen", ROOT / "scripts" / "gen_spec_configs.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert set(gen.CONFIGS) == set(MANIFEST["configs"])
    for name in gen.CONFIGS:
        assert (ROOT / "spec" / f"{name}.cfg").read_text() == gen.render(name), f"re-run gen_spec_configs.py ({name})"


@needs_java
@pytest.mark.parametrize("name", CI)
def test_tlc_config_matches_manifest(name: str, tmp_path: Path) -> None:
    r = speccheck.run_one_tlc(name, MANIFEST, workers=2, trace_dir=tmp_path)
    assert r["ok"], r
    if MANIFEST["configs"][name]["expect"] != "pass":
        assert r["modelReplay"]["ok"], r["modelReplay"]
        ok, line = speccheck.replay_model_trace(
            [json.loads(x) for x in Path(r["trace"]).read_text().splitlines()])
        assert ok, line


@pytest.mark.parametrize("name", FAILING)
def test_failing_config_fails_in_the_model(name: str) -> None:
    r = speccheck.model_check(name)
    assert r["violated"] == MANIFEST["configs"][name]["expect"], r


def _cfg_variant(name: str, tmp_path: Path, drop_symmetry: bool, consts: dict[str, str] | None = None) -> Path:
    text = (ROOT / "spec" / f"{name}.cfg").read_text()
    lines = []
    for line in text.splitlines():
        key = line.strip().split(" = ")[0]
        if drop_symmetry and line.startswith("SYMMETRY"):
            continue
        if consts and key in consts:
            line = f"    {key} = {consts[key]}"
        if line.strip() in ("INVARIANTS", "PROPERTIES") or (line.startswith("    ") and " = " not in line):
            continue  # counting only: no checks
        lines.append(line)
    out = tmp_path / f"{name}_count.cfg"
    out.write_text("\n".join(lines) + "\n")
    return out


def _compare(name: str, tmp_path: Path, symmetry: bool, consts: dict[str, str] | None = None) -> None:
    cfg_path = _cfg_variant(name, tmp_path, not symmetry, consts)
    tlc = run_tlc(ROOT / "spec" / "RocketMQControllerMode.tla", cfg_path, workers=2)
    assert tlc.status == "pass", tlc.message
    cfg, _ = speccheck.model_config(name)
    if consts:
        cfg = ModelConfig.from_constants({**{k: getattr(cfg, k) for k in ModelConfig.__dataclass_fields__
                                             if k != "extra"},
                                          **{k: ({"TRUE": True, "FALSE": False}.get(v, v) if not v.isdigit()
                                                 else int(v)) for k, v in consts.items() if k != "Brokers"},
                                          "Brokers": consts["Brokers"].count("b") if "Brokers" in consts
                                          else cfg.Brokers})
    model = bfs(cfg, symmetry=symmetry, invariants=[], properties=[])
    assert model.distinct == tlc.distinct, (model.distinct, tlc.distinct)


@needs_java
@pytest.mark.parametrize("symmetry", [True, False])
def test_model_counts_equal_tlc_two_brokers(symmetry: bool, tmp_path: Path) -> None:
    _compare("tiny", tmp_path, symmetry, {"Brokers": "{b1, b2}"})


@needs_java
def test_model_counts_equal_tlc_tiny_orbits(tmp_path: Path) -> None:
    _compare("tiny", tmp_path, True)


def test_model_orbits_equal_tlc_on_the_small_scope() -> None:
    """The model's BFS with symmetry on ``small`` counts TLC's distinct states exactly: the manifest's count,
    which ``test_tlc_config_matches_manifest[small]`` checks against a fresh TLC run in the same session."""
    cfg, _ = speccheck.model_config("small")
    model = bfs(cfg, symmetry=True, invariants=[], properties=[])
    assert model.distinct == MANIFEST["configs"]["small"]["measured"]["distinct"]


@needs_java
@pytest.mark.slow
@pytest.mark.parametrize("name,symmetry", [("tiny", False), ("small", True), ("small", False)])
def test_model_counts_equal_tlc_slow(name: str, symmetry: bool, tmp_path: Path) -> None:
    _compare(name, tmp_path, symmetry)


LIVE_PASS = [n for n, c in MANIFEST["configs"].items() if c["mode"] == "liveness" and c["expect"] == "pass"]


@pytest.mark.parametrize("name", LIVE_PASS)
def test_liveness_configs_hold_in_the_model(name: str) -> None:
    r = speccheck.model_check(name)
    assert r["status"] == "pass" and r["violated"] is None, r


def test_liveness_lasso_check_rejects_unfair_and_holding_lassos() -> None:
    from rmqha.models.liveness import check, check_lasso, state_graph

    cfg, _ = speccheck.model_config("epoch_rebase_finding")
    v = check(cfg, ["L_ALL_IN_SSS"]).violation
    assert v is not None and v.loop_start is None
    states = [s for _, s in v.steps]
    assert check_lasso(cfg, "L_ALL_IN_SSS", states, None)[0]
    # stopping one step early stutters where SlaveAck is still enabled: not a fair behaviour
    ok, line = check_lasso(cfg, "L_ALL_IN_SSS", states[:-1], None)
    assert not ok and "not fair" in line
    # with the fix the same prefix goes on to a state where every broker is in the SSS
    fixed, _ = speccheck.model_config("liveness")
    sg = state_graph(fixed)
    assert check(fixed, ["L_ALL_IN_SSS"], sg).violation is None
    assert any(s.ctlSSS == 0b11 for s in sg.states)


def test_random_walks_are_seeded_and_find_a_bug() -> None:
    from rmqha.models.explore import random_walks

    cfg, _ = speccheck.model_config("deep_sim")
    a = random_walks(cfg, seed=7, walks=40, depth=40)
    b = random_walks(cfg, seed=7, walks=40, depth=40)
    assert a.to_json() | {"seconds": 0} == b.to_json() | {"seconds": 0} and a.violation is None
    bug, _ = speccheck.model_config("unclean_bug")
    r = random_walks(bug, seed=1, walks=5000, depth=30, invariants=["SYNC_NO_ACK_LOSS"], properties=[])
    assert r.violation is not None and r.violation.name == "SYNC_NO_ACK_LOSS"


@pytest.mark.parametrize("path", sorted((ROOT / "docs" / "findings" / "model-traces").glob("*.trace.jsonl")),
                         ids=lambda p: p.name.split(".")[0])
def test_model_finding_traces_replay(path: Path) -> None:
    """The TLC counterexamples kept in docs/model-findings.md replay state for state on the model; each config
    still expects that violation."""
    objs = [json.loads(x) for x in path.read_text().splitlines()]
    ok, line = speccheck.replay_model_trace(objs)
    assert ok, line
    assert MANIFEST["configs"][objs[0]["configName"]]["expect"] == objs[-1]["violation"]["tla"]


LIVE_FAIL = [n for n, c in MANIFEST["configs"].items() if c["mode"] == "liveness" and c["expect"] != "pass"]


@pytest.mark.parametrize("name", LIVE_FAIL)
def test_model_liveness_counterexample_is_a_fair_violating_lasso(name: str) -> None:
    from rmqha.models.liveness import check, check_lasso

    cfg, cfgd = speccheck.model_config(name)
    v = check(cfg, speccheck.checked_names(cfgd)).violation
    assert v is not None and v.prop == MANIFEST["configs"][name]["expect"]
    ok, line = check_lasso(cfg, v.prop, [s for _, s in v.steps], v.loop_start)
    assert ok, line


@needs_java
def test_model_counts_equal_tlc_with_the_epoch_eq_fix(tmp_path: Path) -> None:
    """``FixEpochEqReplacesEmpty`` (F-EPOCH-EQ-SPLICE) is FALSE in every config; switched on, the spec and the model
    still reach the same states (it changes them: 1278 orbits instead of 1371 on two brokers)."""
    _compare("tiny", tmp_path, True, {"Brokers": "{b1, b2}", "FixEpochEqReplacesEmpty": "TRUE"})
