"""One invariant's entry (``rmqha invariants ID``): everything the kit knows about it, gathered from the code.

Rules:

* The statement, the RocketMQ source places (``source``), the exceptions and the kind are the ``@invariant``
  declaration's (``impl/invariants/registry.py``).
* The guard is read off the check's own source: the top-level ``if ...: return None`` statements of its body and the
  assignments before the last of them (the registry's rule: "its guard is its first lines"); a check without one
  applies to every observation or state it is handed.
* The TLA+ operator and the model predicate are named as the invariant with ``_`` for ``-`` (``Invariant.tla``) when
  the spec states it (``models/properties.py``: ``INVARIANTS``, ``ACTION_PROPERTIES``; a progress invariant: the
  liveness properties of ``MODEL_LIVENESS``), with the spec configs that check it (``spec/manifest.json``) and the
  actions of ``Next`` that can break it (``rmqha.spec.frames``); otherwise the reason the spec cannot say it
  (``NOT_EXPRESSED``).
* Switches: the bug, fidelity, upstream, guard switches and expected-loss configurations whose invariant it is
  (``impl/bugs.py``), each with the test ids that run it: its scenario with the switch on and off
  (``tests/test_bugs.py``, one per ``impl/sim/scenarios.SCENARIOS`` entry) and, for a progress invariant, the
  generated run that must fail it (``tests/test_progress.py``).
* Findings: the documented findings that list it (``impl/findings.py``), with their write-up and fix switch.
* The layers that check it: ``listings.layers``; what a real run checks it on: ``rmqha/real/check.REAL_CHECKS``.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import textwrap
from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.findings import FINDINGS
from rmqha.impl.invariants import BY_ID, Invariant
from rmqha.impl.invariants.progress import MODEL_LIVENESS
from rmqha.impl.invariants.settle import total
from rmqha.impl.sim.config import default_config
from rmqha.impl.sim.scenarios import SCENARIOS
from rmqha.impl.sim.settle import timeouts
from rmqha.models.properties import ACTION_PROPERTIES, INVARIANTS, NOT_EXPRESSED
from rmqha.real.check import REAL_CHECKS
from rmqha.spec import SPEC_DIR
from rmqha.spec.frames import frames
from rmqha.spec.tlc import read_cfg


def _returns_none(body: list[ast.stmt]) -> bool:
    last = body[-1] if body else None
    return isinstance(last, ast.Return) and (last.value is None or
                                             (isinstance(last.value, ast.Constant) and last.value.value is None))


def guard(inv: Invariant) -> list[str]:
    """The guard of ``inv``'s check as source lines (dedented): see the module's rules; ``[]`` when it has none."""
    try:
        src = textwrap.dedent(inspect.getsource(inv.check))
    except (OSError, TypeError):
        return []
    fn = ast.parse(src).body[0]
    if not isinstance(fn, ast.FunctionDef):
        return []
    body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) and \
        isinstance(fn.body[0].value, ast.Constant) else fn.body
    last = -1
    for i, st in enumerate(body):
        if isinstance(st, ast.If) and not st.orelse and _returns_none(st.body) and len(st.body) == 1:
            last = i
        elif not isinstance(st, (ast.Assign, ast.AnnAssign, ast.If)):
            break
    picked = [st for st in body[:last + 1] if isinstance(st, (ast.Assign, ast.AnnAssign))
              or (isinstance(st, ast.If) and len(st.body) == 1 and _returns_none(st.body) and not st.orelse)]
    lines = src.splitlines()
    out: list[str] = []
    for st in picked:
        assert st.end_lineno is not None
        out += textwrap.dedent("\n".join(lines[st.lineno - 1:st.end_lineno])).splitlines()
    return out


@functools.cache
def _spec_configs() -> dict[str, list[str]]:
    """TLA+ operator -> the spec configs that check it (``name (must fail)`` for a config that expects it to)."""
    manifest = json.loads((SPEC_DIR / "manifest.json").read_text(encoding="utf-8"))
    out: dict[str, list[str]] = {}
    for name, c in manifest["configs"].items():
        cfg = read_cfg(SPEC_DIR / c["config"])
        for op in [*cfg["invariants"], *(p.removeprefix("Prop_") for p in cfg["properties"])]:
            out.setdefault(op, []).append(name + (" (must fail)" if c["expect"] == op else ""))
    return out


def spec_part(inv: Invariant) -> dict[str, Any]:
    """The TLA+ operator, its kind, configs and breaking actions, and the model predicate; or why there is none."""
    tla = inv.tla
    if tla in INVARIANTS or tla in ACTION_PROPERTIES:
        f = frames()
        kind = "invariant" if tla in INVARIANTS else f"action property (Prop_{tla} == [][{tla}]_vars)"
        return {"operator": tla, "kind": kind, "configs": _spec_configs().get(tla, []),
                "actions": f.breaking_actions(tla), "variables": sorted(f.constrained(tla)),
                "modelPredicate": f"{tla} in models/properties.py (rmqha model-check)"}
    if inv.id in MODEL_LIVENESS:
        props = list(MODEL_LIVENESS[inv.id])
        return {"operator": None, "liveness": props,
                "configs": sorted({c for p in props for c in _spec_configs().get(p, [])}),
                "modelPredicate": f"{', '.join(props)} in models/liveness.py (fair-lasso search)"}
    return {"operator": None, "why": NOT_EXPRESSED.get(inv.id, "below the spec's level of abstraction"),
            "modelPredicate": None}


def switch_tests(name: str, inv: Invariant) -> list[str]:
    """The test ids that run switch ``name`` against ``inv``."""
    out = []
    if name in SCENARIOS:
        out += [f"tests/test_bugs.py::test_switch_on_fails_the_named_invariant[{name}]",
                f"tests/test_bugs.py::test_switch_off_same_run_is_clean[{name}]"]
    if inv.kind == "progress" and B.BUGS[name].kind in ("switch", "fidelity"):
        out.append(f"tests/test_progress.py::test_each_progress_invariant_fails_with_its_switch_only[{name}]")
    return out


def entry(inv_id: str, layers: list[str]) -> dict[str, Any]:
    """Everything about one invariant (``BY_ID[inv_id]``), as plain data."""
    inv = BY_ID[inv_id]
    row: dict[str, Any] = {
        "id": inv.id, "statement": inv.statement, "kind": inv.kind, "layer": inv.layer, "source": inv.source,
        "exceptions": inv.exceptions, "guard": guard(inv), "check": f"impl/invariants/{inv.where.split('.')[0]}.py: "
                                                                     f"{inv.where.split('.')[1]}",
        "on": list(inv.on), "reads": list(inv.reads), "spec": spec_part(inv), "checkedBy": layers,
        "realRun": REAL_CHECKS.get(inv.id, ""),
        "switches": [{"name": b.name, "kind": b.kind, "where": b.where, "tests": switch_tests(b.name, inv)}
                     for b in B.BUGS.values() if b.invariant == inv.id and b.kind != "fix"],
        "findings": [{"id": f.id, "title": f.title, "fix": f.fix, "doc": f"docs/findings/{f.id}.md"}
                     for f in FINDINGS.values() if inv.id in f.invariants]}
    if inv.settle is not None:
        terms = inv.settle(timeouts(default_config("safe")))
        row["settle"] = {"ms": total(terms), "stages": [{"what": t.what, "ms": t.ms} for t in terms]}
    return row


def entry_lines(e: dict[str, Any]) -> list[tuple[str, str | list[str]]]:
    """The entry as labelled parts, in reading order (a list value: lines kept as they are, e.g. code, ids)."""
    sp = e["spec"]
    parts: list[tuple[str, str | list[str]]] = [("statement", e["statement"]),
                                                ("kind", f"{e['kind']}, layer {e['layer']}")]
    parts.append(("guard", e["guard"] or "none: it applies to every observation or state it is handed"))
    if e["exceptions"]:
        parts.append(("does not apply", e["exceptions"]))
    parts.append(("Java source", e["source"]))
    parts.append(("check", e["check"] + (f", on {', '.join(e['on'])}" if e["on"] else "")
                  + (f", when {' or '.join(e['reads'])} changed" if e["reads"] else "")))
    if "settle" in e:
        parts.append(("settle bound", f"{e['settle']['ms']:,} ms after the heal point (safe profile): "
                      + "; ".join(f"{s['what']} {s['ms']:,} ms" for s in e["settle"]["stages"])))
    if sp.get("operator"):
        parts.append(("TLA+ operator", f"{sp['operator']} in spec/RocketMQControllerMode.tla, {sp['kind']}; configs: "
                      + (", ".join(sp["configs"]) or "none")))
        parts.append(("TLA+ actions", "the actions of Next that can break it: " + (", ".join(sp["actions"]) or "none")
                      + f" (they may change {', '.join(sp['variables'])})"))
    elif sp.get("liveness"):
        parts.append(("TLA+ operator", f"the liveness properties {', '.join(sp['liveness'])} (weak fairness); "
                      f"configs: {', '.join(sp['configs']) or 'none'}"))
    else:
        parts.append(("TLA+ operator", f"none: {sp['why']}"))
    parts.append(("model predicate", sp["modelPredicate"] or "none"))
    parts.append(("checked by", "; ".join(e["checkedBy"])))
    if e["realRun"]:
        parts.append(("a real run checks it on", e["realRun"]))
    if e["switches"]:
        sw: list[str] = []
        for s in e["switches"]:
            sw.append(f"--bug {s['name']} ({s['kind']}, {s['where']})")
            sw += [f"  {t}" for t in s["tests"]]
        parts.append(("switches", sw))
    else:
        parts.append(("switches", "none breaks it"))
    if e["findings"]:
        parts.append(("findings", [f"{f['id']}: {f['title']} (--fix {f['fix']}; {f['doc']})" for f in e["findings"]]))
    else:
        parts.append(("findings", "none"))
    return parts
