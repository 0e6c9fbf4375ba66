"""The TLA+ spec and the executable model: every CI config of spec/manifest.json gives its expected outcome under
TLC (each ``*_bug`` / ``*_finding`` config fails with the invariant it names, and its counterexample replays state
for state on the model to the same violation); the model's BFS counts exactly TLC's distinct states, with and
without symmetry; each failing config fails in the model too."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from rmqha.models.controller_mode import ModelConfig
from rmqha.models.explore import bfs

from rmqha import speccheck
from rmqha.javacheck import java_status
from rmqha.tlc import run_tlc

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
            [__import__("json").loads(x) for x in Path(r["trace"]).read_text().splitlines()])
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


@needs_java
@pytest.mark.slow
@pytest.mark.parametrize("name,symmetry", [("tiny", False), ("small", True), ("small", False)])
def test_model_counts_equal_tlc_slow(name: str, symmetry: bool, tmp_path: Path) -> None:
    _compare(name, tmp_path, symmetry)
