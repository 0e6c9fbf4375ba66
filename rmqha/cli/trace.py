"""``rmqha replay`` and ``rmqha show``: reproduce a trace byte for byte, or read it as a timeline.

    rmqha replay FILE [--impl OUT] [--json]    (exit 0 only if the run reproduces byte for byte)
    rmqha show FILE [--around STEP] [--window N]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from rich.console import Console

from rmqha.impl import bugs as B
from rmqha.impl.sim.report import render
from rmqha.models import crosslayer
from rmqha.models.campaign import run_header
from rmqha.spec import speccheck

from .common import (
    MAX_STEPS,
    Handler,
    input_file,
    int_in,
    model_trace_objs,
    output_file,
    read_trace,
    refuse_unless,
    violation_line,
)
from .files import UserError, read_trace_text, write_text

WINDOW = 400  # rmqha show --around: steps either side


def register(sub: Any) -> dict[str, Handler]:
    r = sub.add_parser("replay", help="re-run a trace and check it reproduces byte for byte (a model trace: "
                                      "state for state on the model)")
    r.add_argument("file", type=input_file)
    r.add_argument("--impl", metavar="OUT", type=output_file,
                   help="model trace: also play its environment steps on the simulator and write that trace here")
    r.add_argument("--json", action="store_true")

    sh = sub.add_parser("show", help="print a readable timeline of a trace")
    sh.add_argument("file", type=input_file)
    sh.add_argument("--around", type=int_in(0, MAX_STEPS), metavar="STEP", help="only steps near this step")
    sh.add_argument("--window", type=int_in(1, MAX_STEPS), metavar="N",
                    help=f"with --around: this many steps either side (default {WINDOW})")
    return {"replay": cmd_replay, "show": cmd_show}


def _replay_model(args: argparse.Namespace, objs: list[dict[str, Any]], out: Console) -> int:
    try:
        ok, line = speccheck.replay_model_trace(objs)
    except KeyError as exc:
        raise UserError(f"{args.file}: cannot replay this model trace (no field {exc})") from None
    except (ValueError, TypeError, IndexError) as exc:
        raise UserError(f"{args.file}: cannot replay this model trace ({exc})") from None
    report: dict[str, Any] = {"file": args.file, "layer": "model", "reproduced": ok, "message": line}
    if args.impl:
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
    report = {"file": args.file, "reproduced": ok, "hash": result.digest, "recordedHash": footer.get("hash"),
              "violation": now, "recordedViolation": recorded, "firstDifferentLine": first_diff,
              "wallSeconds": round(wall, 3)}
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        verdict = "[green]reproduced[/] " if ok else "[red]NOT reproduced[/] "
        out.print(verdict + f"{args.file}: {result.steps} steps, "
                  f"{violation_line(now)}", highlight=False)
        if not ok:
            out.print(f"recorded {footer.get('hash')} / {violation_line(recorded)}; replay {result.digest}"
                      + (f"; first different line {first_diff}" if first_diff else ""), highlight=False)
    return 0 if ok else 1


def cmd_show(args: argparse.Namespace, out: Console) -> int:
    if args.around is None:
        refuse_unless(args, "--around STEP", {"window": "--window"})
    _text, header, lines, footer = read_trace(args.file)
    print(render(header, lines, footer, args.around, WINDOW if args.window is None else args.window))
    return 0
