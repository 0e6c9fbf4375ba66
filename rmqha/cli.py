"""``rmqha``: the kit's one command.

    rmqha simulate --seed N [--steps K] [--profile P] [--config FILE] [--bug B]... [--fix F|all]... [--trace FILE]
    rmqha simulate --seeds A-B [--jobs J] [--out DIR] ...      (a batch: progress, triage, traces of failures)
    rmqha replay FILE                                          (exit 0 only if the run reproduces byte for byte)
    rmqha show FILE [--around STEP]                            (a readable timeline of a trace)
    rmqha invariants [--json]      rmqha bugs [--json]      rmqha findings [--json]      rmqha doctor
    rmqha check [CONFIG ...] [--ci] [--workers N] [--record] [--json]   (TLA+ configs with TLC, vs spec/manifest.json)
    rmqha model-check --config NAME [--no-symmetry] [--json]            (the executable model's BFS)
    rmqha prove [--brokers N] [--bug B]... [--json]      (z3: the controller's invariants are inductive; CTIs replayed)

Exit status: 0 success / no violation; 1 a violation (for a batch: one no documented finding explains) or a
replay that does not reproduce; 2 a usage or input error (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rmqha import __version__, cluster_cli, fuzz_cli, real_cli
from rmqha.files import UserError, load_config, read_trace_text, write_text
from rmqha.impl import bugs as B
from rmqha.impl.catalogue import catalogue_rows
from rmqha.impl.config import PROFILES, ConfigError, config_from_dict, default_config
from rmqha.impl.findings import FINDINGS, classify
from rmqha.impl.sim.runner import RunResult, header_for, run, run_header
from rmqha.impl.trace import TraceFormatError, parse
from rmqha.models.controller_log import validate_log
from rmqha.real.check import REAL_CHECKS
from rmqha.real.spec import load as load_real

DEFAULT_STEPS = 20_000


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        sub = self.prog.split(" ", 1)[1] + ": " if " " in self.prog else ""
        raise UserError(f"{sub}{message} (see --help)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="rmqha", description="Verification kit for RocketMQ 5 controller-mode HA.")
    p.add_argument("--version", action="version", version=f"rmqha {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    s = sub.add_parser("simulate", help="run seeded simulations with random faults, checking every invariant")
    which = s.add_mutually_exclusive_group()
    which.add_argument("--seed", type=int, help="one seed (default 1)")
    which.add_argument("--seeds", help="a range of seeds, e.g. 1-200")
    s.add_argument("--steps", type=int, default=DEFAULT_STEPS,
                   help=f"simulator steps per run (default {DEFAULT_STEPS})")
    s.add_argument("--max-time", type=float, help="stop a run at this simulated time (seconds)")
    s.add_argument("--profile", help=f"safe (default), {', '.join(p for p in PROFILES if p != 'safe')}")
    s.add_argument("--config", help="TOML file of settings (sections as in docs/configuration.md)")
    s.add_argument("--bug", action="append", default=[], help="switch on an injectable bug (see `rmqha bugs`)")
    s.add_argument("--fix", action="append", default=[], help="apply a finding's fix switch, or 'all'")
    s.add_argument("--trace", help="write the trace of a single run here (.jsonl, or .jsonl.gz)")
    s.add_argument("--out", help="batch: write traces of failing seeds and a summary.json here")
    s.add_argument("--jobs", type=int, default=0, help="batch: worker processes (default: CPU count)")
    s.add_argument("--no-triage", action="store_true", help="batch: do not attribute violations to findings")
    s.add_argument("--json", action="store_true", help="print the result as JSON")

    r = sub.add_parser("replay", help="re-run a trace and check it reproduces byte for byte (a model trace: "
                                      "state for state on the model)")
    r.add_argument("file")
    r.add_argument("--impl", metavar="OUT",
                   help="model trace: also play its environment steps on the simulator and write that trace here")
    r.add_argument("--json", action="store_true")

    sh = sub.add_parser("show", help="print a readable timeline of a trace")
    sh.add_argument("file")
    sh.add_argument("--around", type=int, help="only steps near this step")
    sh.add_argument("--window", type=int, default=400, help="with --around: this many steps either side")

    for name, text in (("invariants", "print the invariant catalogue"), ("bugs", "list bug and fix switches"),
                       ("findings", "list documented findings")):
        q = sub.add_parser(name, help=text)
        q.add_argument("--json", action="store_true")
    sub.add_parser("doctor", help="check Java 17 and the toolchain")

    c = sub.add_parser("check", help="run the TLA+ configs (spec/) with TLC against spec/manifest.json")
    c.add_argument("configs", nargs="*", help="config names or .cfg paths (default: every config of the manifest)")
    c.add_argument("--ci", action="store_true", help="only the configs the manifest marks for CI")
    c.add_argument("--workers", type=int, default=0, help="TLC workers (default: CPU count)")
    c.add_argument("--out", default="runs/spec", help="where counterexample traces go (default runs/spec)")
    c.add_argument("--record", action="store_true", help="write the measured counts into spec/manifest.json")
    c.add_argument("--json", action="store_true")

    m = sub.add_parser("model-check", help="breadth-first search of the executable model on a spec config")
    m.add_argument("--config", required=True, help="a config name of spec/manifest.json, e.g. small")
    m.add_argument("--no-symmetry", action="store_true", help="count states, not orbits")
    m.add_argument("--json", action="store_true")

    cf = sub.add_parser("conform", help="validate implementation traces against the model, step by step")
    cf.add_argument("traces", nargs="*", help="implementation trace files (rmqha simulate / Hypothesis / fuzz)")
    cf.add_argument("--seeds", help="also validate fresh random runs of these seeds, e.g. 1-500")
    cf.add_argument("--steps", type=int, default=5000, help="--seeds: simulator steps per run (default 5000)")
    cf.add_argument("--profile", help="--seeds: safe (default), defaults, unclean, power-loss")
    cf.add_argument("--bug", action="append", default=[], help="--seeds: switch on an injectable bug")
    cf.add_argument("--fix", action="append", default=[], help="--seeds: a finding's fix switch, or 'all'")
    cf.add_argument("--jobs", type=int, default=0, help="worker processes (default: CPU count)")
    cf.add_argument("--json", action="store_true", help="print one JSON report per trace")

    pv = sub.add_parser("prove", help="z3 inductive checks of the controller invariants; CTIs replayed on the model "
                                      "and the implementation")
    pv.add_argument("--brokers", type=int, default=3, help="broker ids 1..N (default 3)")
    pv.add_argument("--bug", action="append", default=[],
                    help="a controller switch: alter-skip-sss-epoch-check, elect-ignores-liveness, unclean-election")
    pv.add_argument("--json", action="store_true")
    fuzz_cli.add_parser(sub)
    cluster_cli.add_parser(sub)
    real_cli.add_parser(sub)
    return p


# ------------------------------------------------------------------------------------------- helpers


def _bug_list(bugs: list[str], fixes: list[str]) -> list[str]:
    try:
        return B.names_from(bugs, fixes)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _apply_configs(cfg: Any, names: list[str]) -> None:
    """Expected-loss configurations (bugs of kind "config") are settings, and so is turning on the part a fidelity
    switch lives in."""
    overlay = B.config_overlay(names)
    if overlay:
        fresh = config_from_dict(overlay, cfg)
        for sec in overlay:
            setattr(cfg, sec, getattr(fresh, sec))


def _seed_range(text: str) -> list[int]:
    try:
        if "-" in text:
            a, b = text.split("-", 1)
            lo, hi = int(a), int(b)
        else:
            lo = hi = int(text)
    except ValueError:
        raise UserError(f"--seeds must look like 1-200, got {text!r}") from None
    if lo < 0 or hi < lo or hi - lo > 1_000_000:
        raise UserError(f"--seeds range {text!r} is empty or too large")
    return list(range(lo, hi + 1))


def _violation_line(v: dict[str, Any] | None) -> str:
    if v is None:
        return "no violation"
    return f"{v['invariant']} at step {v['step']} (t={v['t'] / 1000:.1f}s): {v['message']}"


# ------------------------------------------------------------------------------------------ simulate


def _cmd_simulate(args: argparse.Namespace, out: Console) -> int:
    if args.steps <= 0:
        raise UserError("--steps must be positive")
    cfg, profile = load_config(args.config, args.profile)
    names = _bug_list(args.bug, args.fix)
    _apply_configs(cfg, names)
    max_time = int(args.max_time * 1000) if args.max_time is not None else None
    if args.seeds:
        if args.trace:
            raise UserError("--trace is for one seed; use --out DIR with --seeds")
        return _batch(args, out, cfg, profile, names, _seed_range(args.seeds), max_time)
    seed = 1 if args.seed is None else args.seed
    t0 = time.perf_counter()
    result = run(cfg, seed, args.steps, bugs=names, max_time=max_time, profile=profile)
    wall = time.perf_counter() - t0
    if args.trace:
        write_text(args.trace, result.text or "")
    v = result.violation.to_dict() if result.violation else None
    summary = {"seed": seed, "profile": profile, "bugs": names, "steps": result.steps,
               "simSeconds": result.sim_time / 1000,
               "wallSeconds": round(wall, 3), "violation": v, "hash": result.digest, "trace": args.trace,
               "coverage": result.coverage}
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        label = f"seed {seed} [{profile}{' ' + ','.join(names) if names else ''}]: "
        ratio = result.sim_time / 1000 / max(wall, 1e-9)
        out.print(escape(label) + f"{result.steps} steps, "
                  f"{result.sim_time / 1000:.1f} simulated s in {wall:.2f} s ({ratio:.0f}x)")
        out.print(("[red]VIOLATION[/] " if v else "[green]ok[/] ") + _violation_line(v), highlight=False)
        if args.trace:
            out.print(f"trace: {args.trace}  ({result.digest})")
    return 1 if v else 0


def _seed_job(payload: dict[str, Any]) -> dict[str, Any]:
    """One seed of a batch (runs in a worker process)."""
    cfg = config_from_dict(payload["config"])
    t0 = time.perf_counter()
    r: RunResult = run(cfg, payload["seed"], payload["steps"], bugs=payload["bugs"], max_time=payload["max_time"],
                       profile=payload["profile"], record=False)
    out: dict[str, Any] = {"seed": payload["seed"], "steps": r.steps, "simMs": r.sim_time,
                           "wall": time.perf_counter() - t0, "violation": None, "finding": None, "trace": None}
    if r.violation is not None:
        v = r.violation.to_dict()
        out["violation"] = {k: v[k] for k in ("invariant", "step", "t", "message")}
        header = header_for(cfg, payload["seed"], payload["steps"], payload["bugs"], None, payload["max_time"],
                            payload["profile"])
        if payload["triage"]:
            def rerun(h: dict[str, Any]) -> dict[str, Any] | None:
                again = run_header(h, keep=False)
                return again.violation.to_dict() if again.violation else None

            out["finding"] = classify(header, v, rerun)
        if payload["write_traces"]:
            out["trace"] = run_header(header).text
    return out


def _batch(args: argparse.Namespace, out: Console, cfg: Any, profile: str, names: list[str], seeds: list[int],
           max_time: int | None) -> int:
    jobs = args.jobs or os.cpu_count() or 1
    payloads = [{"config": cfg.to_dict(), "seed": s, "steps": args.steps, "bugs": names, "max_time": max_time,
                 "profile": profile, "triage": not args.no_triage, "write_traces": bool(args.out)} for s in seeds]
    results: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    progress = Progress(TextColumn("[bold]simulate[/]"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[stat]}"),
                        TimeElapsedColumn(), console=Console(stderr=True), disable=args.json or not sys.stderr.isatty())
    with progress:
        task = progress.add_task("seeds", total=len(seeds), stat="")
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for fut in as_completed([pool.submit(_seed_job, p) for p in payloads]):
                res = fut.result()
                results.append(res)
                if res["trace"] and args.out:
                    write_text(os.path.join(args.out, f"seed-{res['seed']}.jsonl.gz"), res.pop("trace"))
                    res["trace"] = f"seed-{res['seed']}.jsonl.gz"
                bad = sum(1 for x in results if x["violation"])
                progress.update(task, advance=1, stat=f"{bad} violation(s)")
    wall = time.perf_counter() - t0
    results.sort(key=lambda x: x["seed"])
    sim_s = sum(x["simMs"] for x in results) / 1000
    unexplained = [x for x in results if x["violation"] and not x["finding"]]
    summary = {"profile": profile, "bugs": names, "seeds": [seeds[0], seeds[-1]], "runs": len(results),
               "violations": sum(1 for x in results if x["violation"]), "unexplained": len(unexplained),
               "simSeconds": round(sim_s, 1), "wallSeconds": round(wall, 2), "results": results}
    if args.out:
        write_text(os.path.join(args.out, "summary.json"), json.dumps(summary, indent=1, sort_keys=True))
    if args.json:
        print(json.dumps(summary, sort_keys=True))
        return 1 if unexplained else 0
    by: dict[tuple[str, str], list[int]] = {}
    for x in results:
        if x["violation"]:
            by.setdefault((x["violation"]["invariant"], x["finding"] or "unexplained"), []).append(x["seed"])
    table = Table(title=escape(f"{len(results)} seeds [{profile}{' ' + ','.join(names) if names else ''}]: "
                               f"{sim_s:.0f} simulated s in {wall:.1f} s ({sim_s / max(wall, 1e-9):.0f}x)"))
    table.add_column("invariant")
    table.add_column("explained by")
    table.add_column("seeds", justify="right")
    table.add_column("examples")
    for (inv, fid), ss in sorted(by.items()):
        table.add_row(inv, fid, str(len(ss)), " ".join(map(str, ss[:8])) + (" ..." if len(ss) > 8 else ""))
    table.add_row("(none)", "", str(sum(1 for x in results if not x["violation"])), "")
    out.print(table)
    if args.out:
        out.print(f"traces and summary.json in {args.out}")
    return 1 if unexplained else 0


# -------------------------------------------------------------------------------------------- replay


def _read_trace(path: str, text: str | None = None) -> tuple[str, dict[str, Any], list[dict[str, Any]],
                                                            dict[str, Any]]:
    """A trace file's text (read unless given) and its parsed header, step lines and footer; a bad file is a
    one-line UserError."""
    text = read_trace_text(path) if text is None else text
    try:
        header, lines, footer = parse(text)
    except TraceFormatError as exc:
        raise UserError(f"{path}: {exc}") from None
    return text, header, lines, footer


def _model_trace_objs(path: str, text: str) -> list[dict[str, Any]] | None:
    """The objects of a model trace (header layer "model"), None for an implementation trace."""
    try:
        first = json.loads(text.split("\n", 1)[0])
    except json.JSONDecodeError:
        return None
    if not isinstance(first, dict) or first.get("layer") != "model":
        return None
    try:
        return [json.loads(x) for x in text.splitlines() if x.strip()]
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not a model trace ({exc})") from None


def _replay_model(args: argparse.Namespace, objs: list[dict[str, Any]], out: Console) -> int:
    from rmqha import crosslayer, speccheck

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
                      + f"on the implementation (brokers {i['mapping']}): {_violation_line(i['violation'])}; "
                      f"trace {args.impl} (rmqha replay / rmqha show)")
    return 0 if ok else 1


def _cmd_replay(args: argparse.Namespace, out: Console) -> int:
    text = read_trace_text(args.file)
    objs = _model_trace_objs(args.file, text)
    if objs is not None:
        return _replay_model(args, objs, out)
    if args.impl:
        raise UserError("--impl applies to model traces (rmqha check / model-check write them)")
    text, header, _lines, footer = _read_trace(args.file, text)
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
                  f"{_violation_line(now)}", highlight=False)
        if not ok:
            out.print(f"recorded {footer.get('hash')} / {_violation_line(recorded)}; replay {result.digest}"
                      + (f"; first different line {first_diff}" if first_diff else ""), highlight=False)
    return 0 if ok else 1


def _cmd_show(args: argparse.Namespace, out: Console) -> int:
    from rmqha.timeline import render

    _text, header, lines, footer = _read_trace(args.file)
    print(render(header, lines, footer, args.around, args.window))
    return 0


# ---------------------------------------------------------------------------------------- listings


def _cmd_invariants(args: argparse.Namespace, out: Console) -> int:
    rows = [{**r, "realRun": REAL_CHECKS.get(r["id"], "")} for r in catalogue_rows()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    table = Table(title=f"{len(rows)} invariants (docs/invariants.md); a real run (rmqha real test, docs/real.md) "
                        f"checks {sum(1 for r in rows if r['realRun'])} of them", show_lines=True)
    for col in ("id", "statement", "RocketMQ source", "a real run checks it on"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["id"], r["statement"], r["source"], r["realRun"] or "-")
    out.print(table)
    return 0


def _cmd_bugs(args: argparse.Namespace, out: Console) -> int:
    rows = [{"name": b.name, "kind": b.kind, "invariant": b.invariant, "where": b.where, "reference": b.reference,
             "description": b.description} for b in B.BUGS.values()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    table = Table(title="bug, fidelity and upstream switches (--bug), expected-loss configurations (--bug), "
                        "fixes (--fix)", show_lines=True)
    for col in ("name", "kind", "caught by", "reference"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["name"], r["kind"], r["invariant"], r["reference"])
    out.print(table)
    return 0


def _cmd_findings(args: argparse.Namespace, out: Console) -> int:
    rows = [{"id": f.id, "title": f.title, "invariants": list(f.invariants), "fix": f.fix, "where": f.where,
             "reference": f.reference, "needs": list(f.needs), "doc": f"docs/findings/{f.id}.md"}
            for f in FINDINGS.values()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    table = Table(title="documented findings (real RocketMQ 5.3.3 behaviour; a later release's where it needs an "
                        "upstream switch)", show_lines=True)
    for col in ("id", "title", "invariants", "fix"):
        table.add_column(col, overflow="fold")
    for r in rows:
        needs = f" (runs with {', '.join(r['needs'])})" if r["needs"] else ""
        table.add_row(r["id"], r["title"], ", ".join(r["invariants"]), r["fix"] + needs)
    out.print(table)
    return 0


def _cmd_doctor(args: argparse.Namespace, out: Console) -> int:
    from rmqha.javacheck import java_status
    from rmqha.real import maven, netns

    ok, line = java_status()
    out.print(("[green]ok[/] " if ok else "[yellow]missing[/] ") + line, highlight=False)
    out.print(f"python {sys.version.split()[0]} at {sys.executable}", highlight=False)
    # rmqha real: Maven, network namespaces, the fetched RocketMQ versions (optional: the rest works without)
    mvn_ok, mvn_line = maven.maven_status()
    out.print(("[green]ok[/] " if mvn_ok else "[yellow]missing[/] ") + mvn_line, highlight=False)
    ns_ok, ns_line = netns.available()
    out.print(("[green]ok[/] " if ns_ok else "[yellow]missing[/] ") + ns_line + " (rmqha real)", highlight=False)
    fetched = maven.cached_versions()
    out.print(f"RocketMQ fetched: {', '.join(fetched) if fetched else 'none'} "
              f"(rmqha real fetch --version {maven.PINNED})", highlight=False)
    return 0 if ok else 1


def _cmd_check(args: argparse.Namespace, out: Console) -> int:
    from pathlib import Path

    from rmqha import speccheck
    from rmqha.javacheck import java_status

    ok_java, line = java_status()
    if not ok_java:
        raise UserError(line)
    manifest = speccheck.load_manifest()
    names = speccheck.resolve(args.configs, manifest, ci_only=args.ci)
    workers = args.workers or os.cpu_count() or 1
    results = []
    with Progress(TextColumn("{task.description}"), TimeElapsedColumn(), console=Console(stderr=True),
                  disable=args.json, transient=True) as prog:
        for name in names:
            task = prog.add_task(f"{name}: starting TLC")

            def progress(d: dict[str, Any], task: Any = task, name: str = name) -> None:
                prog.update(task, description=f"{name}: {d.get('distinct', 0):,} distinct, "
                                              f"{d.get('queue', 0):,} queued")

            r = speccheck.run_one_tlc(name, manifest, workers=workers, on_progress=progress,
                                      trace_dir=Path(args.out))
            prog.remove_task(task)
            results.append(r)
            if not args.json:
                mark = "[green]ok[/]" if r["ok"] else "[red]FAIL[/]"
                got = r["violated"] or r["status"]
                extra = f" model replay: {'ok' if r.get('modelReplay', {}).get('ok') else r.get('modelReplay')}" \
                    if "modelReplay" in r else ""
                out.print(f"{mark} {name}: {got} (expected {r['expect']}), {r['distinct'] or 0:,} distinct, "
                          f"{r['generated'] or 0:,} generated, depth {r['depth']}, {r['seconds']} s{extra}"
                          + (f" — {escape(r['message'])}" if r["message"] and not r["ok"] else ""))
    if args.record:
        for r in results:
            if r["status"] != "error":
                manifest["configs"][r["config"]]["measured"] = {
                    k: r[k] for k in ("distinct", "generated", "depth", "seconds")} | {"workers": workers}
        (speccheck.SPEC_DIR / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    if args.json:
        print(json.dumps(results, indent=2))
    return 0 if all(r["ok"] for r in results) else 1


def _cmd_model_check(args: argparse.Namespace, out: Console) -> int:
    from rmqha import speccheck

    manifest = speccheck.load_manifest()
    name = speccheck.resolve([args.config], manifest)[0]
    err = Console(stderr=True)
    with err.status(f"{name}: exploring") as status:
        r = speccheck.model_check(name, symmetry=False if args.no_symmetry else None,
                                  on_progress=lambda d: status.update(
                                      f"{name}: {d['distinct']:,} distinct, {d['queue']:,} queued, depth {d['depth']}"))
    expect = manifest["configs"][name]["expect"]
    r["expect"] = expect
    r["ok"] = (r["violated"] or "pass") == expect
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        mark = "[green]ok[/]" if r["ok"] else "[red]FAIL[/]"
        size = (f"{r['generated']:,} generated, depth {r['depth']}" if "generated" in r
                else f"{r['edges']:,} edges, fair-lasso search")
        out.print(f"{mark} {name}: {r['violated'] or r['status']} (expected {expect}), {r['distinct']:,} distinct "
                  f"({'orbits' if r['symmetry'] else 'states'}), {size}, {r['seconds']} s")
        if r.get("trace"):
            loop = r.get("loop")
            out.print("  trace: " + " → ".join(" ".join(map(str, x)) for x in r["trace"][1:])
                      + ("" if loop is None else " (then stutters for ever)" if loop == "stutter"
                         else f" (then back to step {loop}, for ever)"))
    return 0 if r["ok"] else 1


def _conform_job(item: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    from rmqha.conform import validate

    name, header = item
    try:
        return {"trace": name, **validate(header).to_dict()}
    except (ValueError, KeyError, TypeError) as exc:
        return {"trace": name, "error": str(exc)}


def _conform_results(items: list[tuple[str, dict[str, Any]]], jobs: int) -> Any:
    """Each item's report as it finishes: in this process, or on ``jobs`` workers."""
    if jobs == 1 or len(items) == 1:
        yield from map(_conform_job, items)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for f in as_completed([pool.submit(_conform_job, it) for it in items]):
            yield f.result()


def _real_run_dir(path: str) -> Path | None:
    """The folder of a real run (rmqha real test) that ``path`` names: the folder, its controller log or its
    trace; None for anything else."""
    p = Path(path)
    d = p if p.is_dir() else p.parent
    if (d / "real.json").is_file() and (p.is_dir() or p.name in ("controller-log.jsonl", "trace.jsonl")):
        return d
    return None


def _conform_real(d: Path, out: Console, as_json: bool) -> bool:
    """The controller's committed event log of a real run, against the model (models/controller_log.py)."""
    try:
        spec = load_real(d)
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    log = d / "controller-log.jsonl"
    if not log.is_file():
        raise UserError(f"{d}: no controller-log.jsonl (the run has not been checked, or its controller is JRaft)")
    events = []
    for i, line in enumerate(log.read_text(encoding="utf-8").splitlines(), 1):
        try:
            ob = json.loads(line)
            events.append((int(ob["index"]), dict(ob["event"])))
        except (ValueError, KeyError, TypeError):
            raise UserError(f"{log}:{i}: not a controller-log line") from None
    cfg = spec.cfg
    rep = validate_log(events, len(spec.brokers), cfg.controller.enable_elect_unclean_master,
                       cfg.broker.broker_name)
    if as_json:
        print(json.dumps({"trace": str(log), "conforms": rep.ok, **rep.to_json()}, sort_keys=True))
    elif rep.ok:
        out.print(f"{escape(str(log))}: the controller's {rep.events} committed events conform to the model "
                  f"(actions: {', '.join(f'{k} {v}' for k, v in sorted(rep.actions.items())) or 'none'}; "
                  f"extensions: {', '.join(f'{k} {v}' for k, v in sorted(rep.extensions.items())) or 'none'})")
    else:
        dv = rep.divergence
        assert dv is not None
        out.print(f"[red]diverges[/] {escape(str(log))} at log index {dv.index}: "
                  f"{escape(json.dumps(dv.event, sort_keys=True))}")
        out.print(f"  {escape(dv.why)}")
    return rep.ok


def _cmd_conform(args: argparse.Namespace, out: Console) -> int:
    items: list[tuple[str, dict[str, Any]]] = []
    real_ok = True
    real_dirs = [d for d in (_real_run_dir(p) for p in args.traces) if d is not None]
    for d in dict.fromkeys(real_dirs):
        real_ok = _conform_real(d, out, args.json) and real_ok
    for path in args.traces:
        if _real_run_dir(path) is not None:
            continue
        text = read_trace_text(path)
        if _model_trace_objs(path, text) is not None:
            raise UserError(f"{path}: a model trace; conform validates implementation traces (rmqha replay "
                            "--impl OUT turns a model trace into one)")
        items.append((path, _read_trace(path, text)[1]))
    if args.seeds:
        profile = args.profile or "safe"
        try:
            cfg = default_config(profile)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        if cfg.cluster.mode != "controller":
            raise UserError(f"profile {profile!r} is a 4.x legacy run: conformance needs controller mode")
        names = _bug_list(args.bug, args.fix)
        _apply_configs(cfg, names)
        if args.steps <= 0:
            raise UserError("--steps must be positive")
        items += [(f"seed {n}", header_for(cfg, n, args.steps, names, None, None, profile))
                  for n in _seed_range(args.seeds)]
    if not items:
        if real_dirs:
            return 0 if real_ok else 1
        raise UserError("nothing to validate: give trace files and/or --seeds A-B")
    jobs = args.jobs or os.cpu_count() or 1
    reports: list[dict[str, Any]] = []
    with Progress(TextColumn("conform"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[bad]} diverge"),
                  TimeElapsedColumn(), console=Console(stderr=True), disable=args.json or len(items) < 2) as bar:
        task = bar.add_task("conform", total=len(items), bad=0)
        bad = 0
        for r in _conform_results(items, jobs):
            reports.append(r)
            bad += not r.get("conforms")
            bar.update(task, advance=1, bad=bad)
    order = {name: i for i, (name, _) in enumerate(items)}
    reports.sort(key=lambda r: order[r["trace"]])
    if args.json:
        for r in reports:
            print(json.dumps(r, sort_keys=True))
    else:
        ext: dict[str, int] = {}
        for r in reports:
            for k, v in (r.get("extensions") or {}).items():
                ext[k] = ext.get(k, 0) + v
            if "error" in r:
                out.print(f"[red]error[/] {escape(r['trace'])}: {escape(r['error'])}")
            elif not r["conforms"]:
                d = r["divergence"]
                out.print(f"[red]diverges[/] {escape(r['trace'])} at step {d['step']} (t={d['t'] / 1000:.1f}s, "
                          f"event {escape(json.dumps(d['event'], sort_keys=True))})")
                out.print(f"  model action {d['action']}: guard failed: {escape(d['guard'])}")
                out.print(f"  {escape(d['detail'])}")
                out.print(f"  enabled before the step: {escape(', '.join(d['enabled']) or 'none')}")
        good = sum(1 for r in reports if r.get("conforms"))
        steps = sum(r.get("steps", 0) for r in reports)
        out.print(f"{good} of {len(reports)} traces conform ({steps} steps validated)"
                  + (f"; extensions used: {', '.join(f'{k} {v}' for k, v in sorted(ext.items()))}" if ext else ""))
    return 0 if all(r.get("conforms") for r in reports) and real_ok else 1


def _cmd_prove(args: argparse.Namespace, out: Console) -> int:
    from rmqha.symbolic import prover, report
    from rmqha.symbolic.transitions import PROVER_SWITCHES, Switches

    names = _bug_list(args.bug, [])
    other = [n for n in names if n not in PROVER_SWITCHES]
    if other:
        raise UserError(f"--bug {other[0]!r} does not act on the controller (prove knows: "
                        f"{', '.join(PROVER_SWITCHES)})")
    if not 1 <= args.brokers <= prover.MAX_BROKERS:
        raise UserError(f"--brokers must be within 1..{prover.MAX_BROKERS}, got {args.brokers}")
    run = prover.prove(args.brokers, Switches.from_names(names))
    if args.json:
        print(json.dumps(report.to_json(run), sort_keys=True))
    else:
        report.render(run, out)
    return 0 if run.ok else 1


COMMANDS = {"check": _cmd_check, "model-check": _cmd_model_check, "simulate": _cmd_simulate, "replay": _cmd_replay,
            "show": _cmd_show, "invariants": _cmd_invariants, "bugs": _cmd_bugs, "findings": _cmd_findings,
            "doctor": _cmd_doctor, "prove": _cmd_prove, "conform": _cmd_conform, "fuzz": fuzz_cli.cmd_fuzz,
            "cluster": cluster_cli.cmd_cluster, "real": real_cli.cmd_real}


def main(argv: list[str] | None = None) -> int:
    out = Console(highlight=False)
    try:
        args = _parser().parse_args(argv)
        return COMMANDS[args.cmd](args, out)
    except UserError as exc:
        print(f"rmqha: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rmqha: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
