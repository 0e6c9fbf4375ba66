"""``rmqha replay``, ``rmqha recheck`` and ``rmqha show``: reproduce a trace byte for byte, ask whether the violation
it holds still happens on today's kit, or read it as a timeline.

    rmqha replay FILE [--impl OUT] [--json]    (exit 0 only if the run reproduces byte for byte; 3: it does not, and
                                                the trace was recorded by another core: rmqha recheck)
    rmqha recheck TRACE|FOLDER... [--json]     (exit 0 when every trace's violation, or its absence, is as recorded)
    rmqha show FILE [--around STEP] [--window N]

Provenance (``impl/sim/provenance.py``): a trace's header names the kit and the core that recorded it. ``replay``
of a trace whose run is byte-identical exits 0, with one more line when another core (or a kit before provenance)
recorded it; a run that differs exits 1 when this core recorded it (a broken determinism, or a damaged file), and
``DIFFERENT_CORE`` when another did: the run changed with the code, and ``recheck`` says whether the bug it holds is
still there.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from rich.console import Console

from rmqha.impl import bugs as B
from rmqha.impl.sim.provenance import fingerprint, recorded_by, same_core
from rmqha.impl.sim.report import render
from rmqha.models import crosslayer
from rmqha.models.campaign import run_header
from rmqha.models.recheck import Recheck, recheck, runnable
from rmqha.spec import speccheck

from .common import (
    MAX_STEPS,
    Handler,
    claim_file,
    input_file,
    input_path,
    int_in,
    model_trace_objs,
    output_file,
    read_trace,
    refuse_unless,
    violation_line,
)
from .files import UserError, read_trace_text, write_text

WINDOW = 400  # rmqha show --around: steps either side
DIFFERENT_CORE = 3
"""``rmqha replay``'s exit status for a run that differs from a trace another core recorded (or one recorded before
traces named their core)."""


def register(sub: Any) -> dict[str, Handler]:
    r = sub.add_parser("replay", help="re-run a trace and check it reproduces byte for byte (a model trace: "
                                      "state for state on the model)")
    r.add_argument("file", type=input_file)
    r.add_argument("--impl", metavar="OUT", type=output_file,
                   help="model trace: also play its environment steps on the simulator and write that trace here")
    r.add_argument("--json", action="store_true")

    rc = sub.add_parser("recheck", help="re-run traces on today's kit: does each one's violation still happen?")
    rc.add_argument("traces", nargs="+", type=input_path, metavar="TRACE",
                    help="trace files, or folders: every *.jsonl / *.jsonl.gz in them")
    rc.add_argument("--json", action="store_true")

    sh = sub.add_parser("show", help="print a readable timeline of a trace")
    sh.add_argument("file", type=input_file)
    sh.add_argument("--around", type=int_in(0, MAX_STEPS), metavar="STEP", help="only steps near this step")
    sh.add_argument("--window", type=int_in(1, MAX_STEPS), metavar="N",
                    help=f"with --around: this many steps either side (default {WINDOW})")
    return {"replay": cmd_replay, "recheck": cmd_recheck, "show": cmd_show}


def _replay_model(args: argparse.Namespace, objs: list[dict[str, Any]], out: Console) -> int:
    try:
        ok, line = speccheck.replay_model_trace(objs)
    except KeyError as exc:
        raise UserError(f"{args.file}: cannot replay this model trace (no field {exc})") from None
    except (ValueError, TypeError, IndexError) as exc:
        raise UserError(f"{args.file}: cannot replay this model trace ({exc})") from None
    report: dict[str, Any] = {"file": args.file, "layer": "model", "reproduced": ok, "message": line}
    if args.impl:
        claim_file(args.impl, "--impl")
        try:
            tr = crosslayer.translate(objs)
        except (KeyError, ValueError) as exc:
            raise UserError(f"{args.file}: cannot translate to the implementation ({exc})") from None
        res = crosslayer.run_on_impl(tr)
        got = res.violation.to_dict() if res.violation else None
        write_text(args.impl, res.text or "")
        report["impl"] = {"trace": args.impl, "mapping": tr.mapping, "expect": tr.expect, "violation": got,
                          "reproduced": (got["invariant"] if got else None) == tr.expect}
        ok = ok and report["impl"]["reproduced"]
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        out.print(("[green]reproduced[/] " if report["reproduced"] else "[red]NOT reproduced[/] ")
                  + f"on the model: {line}")
        if args.impl:
            i = report["impl"]
            out.print(("[green]reproduced[/] " if i["reproduced"] else "[red]NOT reproduced[/] ")
                      + f"on the implementation (brokers {i['mapping']}): {violation_line(i['violation'])}; "
                      f"trace {args.impl} (rmqha replay / rmqha show)")
    return 0 if ok else 1


def cmd_replay(args: argparse.Namespace, out: Console) -> int:
    text = read_trace_text(args.file)
    objs = model_trace_objs(args.file, text)
    if objs is not None:
        return _replay_model(args, objs, out)
    if args.impl:
        raise UserError("--impl applies to model traces (rmqha check / model-check write them)")
    text, header, _lines, footer = read_trace(args.file, text)
    try:
        names = list(header.get("bugs") or [])
        B.check_names(names)
        t0 = time.perf_counter()
        result = run_header(header)
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{args.file}: cannot replay this header ({exc})") from None
    wall = time.perf_counter() - t0
    same_hash = result.digest == footer.get("hash")
    recorded = footer.get("violation")
    now = result.violation.to_dict() if result.violation else None
    same_violation = (recorded is None and now is None) or (
        recorded is not None and now is not None and recorded["invariant"] == now["invariant"]
        and recorded["step"] == now["step"])
    ok = same_hash and same_violation and result.text == text
    first_diff = None
    if result.text is not None and result.text != text:
        a, b = result.text.splitlines(), text.splitlines()
        first_diff = next((i + 1 for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)) + 1)
    core = same_core(header)
    status = 0 if ok else 1 if core else DIFFERENT_CORE
    report = {"file": args.file, "reproduced": ok, "hash": result.digest, "recordedHash": footer.get("hash"),
              "violation": now, "recordedViolation": recorded, "firstDifferentLine": first_diff,
              "wallSeconds": round(wall, 3), "recordedBy": {"kit": header.get("kit"), "core": header.get("core")},
              "core": fingerprint(), "sameCore": core, "exit": status}
    if args.json:
        print(json.dumps(report, sort_keys=True))
        return status
    verdict = "[green]reproduced[/] " if ok else "[red]NOT reproduced[/] "
    out.print(verdict + f"{args.file}: {result.steps} steps, {violation_line(now)}", highlight=False)
    if not ok:
        out.print(f"recorded {footer.get('hash')} / {violation_line(recorded)}; replay {result.digest}"
                  + (f"; first different line {first_diff}" if first_diff else ""), highlight=False)
    if not core:
        who = recorded_by(header)
        if ok:
            out.print(f"recorded by {who}; today's core {fingerprint()} runs it the same", highlight=False,
                      soft_wrap=True)
        else:
            out.print(f"recorded by {who}, not by today's core {fingerprint()}: the run changed with the code "
                      f"(exit {DIFFERENT_CORE}); rmqha recheck {args.file} says whether its violation still fails",
                      highlight=False, soft_wrap=True)
    return status


def _trace_files(paths: list[str]) -> list[str]:
    """The trace files named, a folder's ``*.jsonl`` and ``*.jsonl.gz`` in name order; a folder without one is a
    ``UserError``."""
    out: list[str] = []
    for p in paths:
        if not os.path.isdir(p):
            out.append(p)
            continue
        found = sorted(f for f in os.listdir(p) if f.endswith((".jsonl", ".jsonl.gz"))
                       and os.path.isfile(os.path.join(p, f)))
        if not found:
            raise UserError(f"{p}: no trace in this folder (*.jsonl, *.jsonl.gz)")
        out += [os.path.join(p, f) for f in found]
    return out


def recheck_line(path: str, r: Recheck) -> str:
    """One trace's recheck as a line."""
    rec, now = r.recorded, r.now
    where = (f"{now['invariant']} at step {now['step']} (t={now['t'] / 1000:.1f}s)" if now else "")
    said = {"still-fails": f"still fails: {where}", "fails-differently":
            f"fails differently: {where} (recorded {rec['invariant'] if rec else '-'})",
            "no-longer-fails": f"no longer fails (recorded {rec['invariant'] if rec else '-'})",
            "still-clean": "still clean", "now-fails": f"now fails: {where}"}[r.verdict]
    how = f"by its {r.by}" + ("" if r.by == "recorded faults" else ", byte for byte" if r.identical else "")
    return f"{path}: {said} ({how}; recorded by {'today' + chr(39) + 's core' if r.same_core else r.recorded_by})"


def cmd_recheck(args: argparse.Namespace, out: Console) -> int:
    files = _trace_files(args.traces)
    parsed = []
    for path in files:  # every file checked before any run
        text = read_trace_text(path)
        if model_trace_objs(path, text) is not None:
            raise UserError(f"{path}: a model trace (rmqha replay re-runs it on the model)")
        text, header, lines, footer = read_trace(path, text)
        try:
            runnable(header)
            B.check_names(list(header.get("bugs") or []))
        except ValueError as exc:
            raise UserError(f"{path}: cannot recheck it: {exc}") from None
        parsed.append((path, text, header, lines, footer))
    results = []
    for path, text, header, lines, footer in parsed:
        try:
            r = recheck(header, lines, footer, text)
        except (ValueError, KeyError, TypeError) as exc:
            raise UserError(f"{path}: cannot re-run this header ({exc})") from None
        results.append((path, r))
        if not args.json:
            out.print(recheck_line(path, r), highlight=False, soft_wrap=True)
    ok = all(r.as_recorded for _, r in results)
    if args.json:
        print(json.dumps({"asRecorded": ok, "core": fingerprint(),
                          "traces": [{"file": p, **r.to_dict()} for p, r in results]}, sort_keys=True))
    else:
        n = sum(1 for _, r in results if r.as_recorded)
        out.print(f"{n} of {len(results)} as recorded", highlight=False)
    return 0 if ok else 1


def cmd_show(args: argparse.Namespace, out: Console) -> int:
    if args.around is None:
        refuse_unless(args, "--around STEP", {"window": "--window"})
    _text, header, lines, footer = read_trace(args.file)
    last = lines[-1]["i"] if lines else 0
    if args.around is not None and args.around > last:
        raise UserError(f"--around {args.around}: past the trace's last step ({last:,}; {args.file})")
    print(render(header, lines, footer, args.around, WINDOW if args.window is None else args.window))
    return 0
