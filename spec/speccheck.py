"""The spec's configs under TLC and under the model (``rmqha check``, ``rmqha model-check``): run them with TLC or
the model's BFS against ``spec/manifest.json`` (expected outcome and measured counts per config), and write
counterexamples as model traces in the kit's format."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rmqha.impl.trace import canonical
from rmqha.models.controller_mode import Label, ModelConfig
from rmqha.models.explore import bfs, random_walks
from rmqha.models.properties import ACTION_PROPERTIES, INVARIANTS
from rmqha.models.trace_io import (
    broker_names,
    first_violation,
    model_trace_lines,
    replay_states,
    state_from_tla,
    state_to_json,
)

from . import SPEC_DIR
from .tlc import TLAValueError, read_cfg, run_tlc, simulate_tlc


class SpecError(ValueError):
    """A missing manifest, an unknown config or an unreadable ``.cfg``: the message is one line."""


PROP_PREFIX = "Prop_"
SIM_DEPTH, SIM_WALKS = 60, 2000  # simulate configs: behaviours of at most SIM_DEPTH steps, SIM_WALKS of them


def load_manifest(spec_dir: Path = SPEC_DIR) -> dict[str, Any]:
    path = spec_dir / "manifest.json"
    if not path.exists():
        raise SpecError(f"no spec manifest at {path}")
    manifest: dict[str, Any] = json.loads(path.read_text())
    return manifest


def resolve(targets: list[str], manifest: dict[str, Any], ci_only: bool = False) -> list[str]:
    """Config names from names, ``.cfg`` paths or (empty) every config of the manifest."""
    configs = manifest["configs"]
    if not targets:
        return [n for n, c in configs.items() if c["ci"] or not ci_only]
    out = []
    for t in targets:
        name = Path(t).name.removesuffix(".cfg")
        if name not in configs:
            raise SpecError(f"unknown spec config {t!r} (known: {', '.join(configs)})")
        out.append(name)
    return out


def model_config(name: str, spec_dir: Path = SPEC_DIR) -> tuple[ModelConfig, dict[str, Any]]:
    try:
        cfgd = read_cfg(spec_dir / f"{name}.cfg")
    except (OSError, TLAValueError) as exc:
        raise SpecError(f"cannot read {name}.cfg: {exc}") from None
    return ModelConfig.from_constants(cfgd["constants"]), cfgd


def checked_names(cfgd: dict[str, Any]) -> list[str]:
    return [n for n in cfgd["invariants"] if n != "TypeOK"] + [p.removeprefix(PROP_PREFIX)
                                                                for p in cfgd["properties"]]


def run_one_tlc(name: str, manifest: dict[str, Any], *, workers: int = 1, seed: int = 1,
                on_progress: Callable[[dict[str, Any]], None] | None = None, trace_dir: Path | None = None,
                spec_dir: Path = SPEC_DIR) -> dict[str, Any]:
    """Run one config with TLC; compare with the manifest; convert a counterexample into a model trace."""
    entry = manifest["configs"][name]
    spec, cfg_path = spec_dir / entry["spec"], spec_dir / entry["config"]
    if entry["mode"] == "simulate":
        res = simulate_tlc(spec, cfg_path, depth=SIM_DEPTH, num=SIM_WALKS, seed=seed, workers=workers)
    else:
        res = run_tlc(spec, cfg_path, workers=workers, on_progress=on_progress)
    violated = res.violated.removeprefix(PROP_PREFIX) if res.violated else None
    live = entry["mode"] == "liveness"
    if res.trace:
        cfg, cfgd = model_config(name, spec_dir)
        names = broker_names(cfg.Brokers)
        states = [state_from_tla(t.vars, names) for t in res.trace if t.kind == "state"]
        back = next((t.back_to for t in res.trace if t.kind == "back-to"), None)
        loop = None if back is None else back - 1
        if live and res.status == "property" and violated is None:
            violated = _temporal_violated(cfg, checked_names(cfgd), states, loop)
    out: dict[str, Any] = {"config": name, "status": res.status, "violated": violated, "distinct": res.distinct,
                           "generated": res.generated, "depth": res.depth, "seconds": round(res.seconds, 2),
                           "expect": entry["expect"], "message": res.message}
    if res.status == "error":
        out["ok"] = False
        return out
    got = violated or "pass"
    out["ok"] = got == entry["expect"]
    measured = entry.get("measured") or {}
    # counts are exact for a complete search; where a violation stops it they depend on the workers' timing
    complete = entry["mode"] in ("bfs", "liveness") and got == "pass"
    if out["ok"] and complete and measured.get("distinct") not in (None, res.distinct):
        out["ok"] = False
        out["message"] = f"distinct states {res.distinct} != manifest {measured['distinct']}"
    if res.trace and live:
        out.update(_replay_lasso(name, entry, cfg, cfgd, states, loop, violated, trace_dir))
        out["ok"] = out["ok"] and out["modelReplay"]["ok"]
    elif res.trace:
        try:
            steps = replay_states(cfg, states)
            v = first_violation(cfg, steps, checked_names(cfgd))
            out["modelReplay"] = {"ok": v is not None and v[1] == violated, "violated": None if v is None else v[1],
                                  "step": None if v is None else v[0]}
        except ValueError as exc:
            steps, v = [], None
            out["modelReplay"] = {"ok": False, "error": str(exc)}
            out["ok"] = False
        if trace_dir is not None and steps:
            path = trace_dir / f"{name}.trace.jsonl"
            write_model_trace(path, model_trace_lines(_trace_header(name, entry, cfgd), cfg, steps, v))
            out["trace"] = str(path)
    return out


def _trace_header(name: str, entry: dict[str, Any], cfgd: dict[str, Any]) -> dict[str, Any]:
    """The header of a model trace converted from TLC's counterexample for config ``name``."""
    return {"format": "rmqha-trace", "version": 1, "source": "tlc", "spec": entry["spec"], "configName": name,
            "constants": cfg_constants_json(cfgd), "checked": checked_names(cfgd)}


def _temporal_violated(cfg: ModelConfig, checked: list[str], states: list[Any], loop: int | None) -> str | None:
    """TLC says only "temporal properties were violated": name the first checked one the lasso violates."""
    from rmqha.models.liveness import LIVENESS, check_lasso  # lazy: networkx takes about a second to import

    return next((p for p in checked if p in LIVENESS and check_lasso(cfg, p, states, loop)[0]), None)


def _replay_lasso(name: str, entry: dict[str, Any], cfg: ModelConfig, cfgd: dict[str, Any], states: list[Any],
                  loop: int | None, violated: str | None, trace_dir: Path | None) -> dict[str, Any]:
    """Check TLC's lasso on the model (every step a model step, the loop fair, the property violated) and write
    it as a model trace whose footer names the loop."""
    from rmqha.models.liveness import check_lasso  # lazy: networkx, as above

    if violated is None:
        return {"modelReplay": {"ok": False, "error": "the lasso violates none of the checked properties"}}
    ok, line = check_lasso(cfg, violated, states, loop)
    out: dict[str, Any] = {"modelReplay": {"ok": ok, "violated": violated if ok else None, "message": line}}
    if trace_dir is not None and ok:
        try:
            steps = replay_states(cfg, states)
        except ValueError as exc:
            return {"modelReplay": {"ok": False, "error": str(exc)}}
        path = trace_dir / f"{name}.trace.jsonl"
        lines = model_trace_lines(_trace_header(name, entry, cfgd), cfg, steps, None)
        lines[-1]["violation"] = {"tla": violated, "id": violated, "loop": "stutter" if loop is None else loop}
        write_model_trace(path, lines)
        out["trace"] = str(path)
    return out


def cfg_constants_json(cfgd: dict[str, Any]) -> dict[str, Any]:
    return {k: (sorted(str(x) for x in v) if isinstance(v, frozenset) else v if isinstance(v, bool | int) else str(v))
            for k, v in cfgd["constants"].items()}


def write_model_trace(path: Path, objs: list[dict[str, Any]]) -> None:
    """Write a model trace with the footer's hash over every line before it (as ``TraceRecorder`` does)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    lines = []
    for obj in objs[:-1]:
        line = canonical(obj)
        h.update(line.encode() + b"\n")
        lines.append(line)
    lines.append(canonical(dict(objs[-1], hash="sha256:" + h.hexdigest())))
    path.write_text("".join(x + "\n" for x in lines))


def replay_model_trace(objs: list[dict[str, Any]]) -> tuple[bool, str]:
    """Re-run a model trace on the model: (reproduced, one line)."""
    header, steps, footer = objs[0], objs[1:-1], objs[-1]
    cfg = ModelConfig.from_constants({k: (frozenset(v) if isinstance(v, list) else v)
                                      for k, v in header["constants"].items()})
    names = broker_names(cfg.Brokers)
    try:
        path = replay_states(cfg, [line["state"] for line in steps], key=lambda s: state_to_json(s, names))
    except ValueError as exc:
        return False, str(exc)
    want = footer.get("violation")
    if want is not None and "loop" in want:  # a liveness lasso
        from rmqha.models.liveness import check_lasso  # lazy: networkx, as above

        loop = None if want["loop"] == "stutter" else int(want["loop"])
        ok, line = check_lasso(cfg, want["tla"], [s for _, s in path], loop)
        return ok, (f"reproduced: {line}" if ok else f"recorded {want['tla']}, replay: {line}")
    v = first_violation(cfg, path, header.get("checked"))
    got = None if v is None else {"step": v[0], "tla": v[1]}
    if want is None and got is None:
        return True, f"reproduced: {len(path)} states, no violation"
    if want is not None and got is not None and (want["step"], want["tla"]) == (got["step"], got["tla"]):
        return True, f"reproduced: {want['id']} ({want['tla']}) at step {want['step']}"
    return False, f"recorded violation {want}, replay gives {got}"


def model_check(name: str, *, symmetry: bool | None = None, on_progress: Callable[[dict[str, Any]], None] | None = None,
                spec_dir: Path = SPEC_DIR) -> dict[str, Any]:
    """The model's BFS on a config's constants and checked names (symmetry as the cfg says unless given)."""
    cfg, cfgd = model_config(name, spec_dir)
    names = checked_names(cfgd)
    mode = load_manifest(spec_dir)["configs"].get(name, {}).get("mode")
    if mode == "liveness":
        return _model_check_liveness(name, cfg, names)
    invs, props = [n for n in names if n in INVARIANTS], [n for n in names if n in ACTION_PROPERTIES]
    if mode == "simulate":  # the model's random walks, as TLC -simulate: same depth, seeded
        res: Any = random_walks(cfg, seed=1, walks=SIM_WALKS, depth=SIM_DEPTH, invariants=invs, properties=props,
                                on_progress=on_progress)
        sym = True
    else:
        sym = bool(cfgd.get("symmetry")) if symmetry is None else symmetry
        res = bfs(cfg, symmetry=sym, invariants=invs, properties=props, on_progress=on_progress)
    out = {"config": name, "symmetry": sym, **res.to_json()}
    if res.violation is not None:
        out["trace"] = _labels(res.violation.trace)
    return out


def _labels(steps: list[tuple[Label | None, Any]]) -> list[list[Any] | None]:
    """The action labels of (label, state) steps, as JSON."""
    return [list(lab) if lab else None for lab, _ in steps]


def _model_check_liveness(name: str, cfg: ModelConfig, names: list[str]) -> dict[str, Any]:
    """The model's state graph (no symmetry) and its fair-lasso search for the config's liveness properties."""
    from rmqha.models import liveness  # lazy: networkx, as above

    t0 = time.monotonic()
    res = liveness.check(cfg, names)
    v = res.violation
    out: dict[str, Any] = {"config": name, "symmetry": False, "status": "pass" if v is None else "property",
                           "distinct": res.distinct, "edges": res.edges, "violated": None if v is None else v.prop,
                           "seconds": round(time.monotonic() - t0, 2)}
    if v is not None:
        out["trace"] = _labels(v.steps)
        out["loop"] = "stutter" if v.loop_start is None else v.loop_start
    return out
