"""``rmqha cluster``: a local controller-mode cluster of real processes on 127.0.0.1 (the runtime is ``rmqha.cluster``).

    rmqha cluster up [--dir D] [--config FILE] [--profile P] [--bug NAME]... [--fix NAME|all]... [--seed N]
    rmqha cluster status [--dir D] [--watch SECONDS] [--json]
    rmqha cluster kill NODE [--signal KILL|STOP|CONT|TERM]     rmqha cluster restart NODE
    rmqha cluster partition NODE[,NODE] [--from NODE[,NODE]] [--one-way] [--id ID]
    rmqha cluster heal [--id ID]                                 rmqha cluster down
    rmqha cluster test [--duration S] [--faults F[,F]] [--profile P] ... [--dir D] [--json]

Exit status: 0 (a test: the run is valid), 1 (a test found a violation), 2 for a usage or input error.
"""

from __future__ import annotations

import argparse
import json
import signal
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from rmqha.cluster import control as C
from rmqha.cluster.run import RunOptions, run_test
from rmqha.cluster.spec import ClusterSpec, load, local_config
from rmqha.impl import bugs as B
from rmqha.impl.sim.config import PROFILES, Config, ConfigError

from .common import Handler
from .files import UserError, read_toml

DEFAULT_DIR = "runs/cluster"
DEFAULT_TEST_DIR = "runs/cluster-test"
SIGNALS = {"KILL": signal.SIGKILL, "STOP": signal.SIGSTOP, "CONT": signal.SIGCONT, "TERM": signal.SIGTERM}


def register(sub: Any) -> dict[str, Handler]:
    c = sub.add_parser("cluster", help="a local cluster of real processes on 127.0.0.1: up, status, faults, and a "
                                       "checked test run (docs/cluster.md)")
    cs = c.add_subparsers(dest="cluster_cmd", required=True, parser_class=type(c))  # one-line errors, as `rmqha`

    def with_dir(p: argparse.ArgumentParser, default: str = DEFAULT_DIR) -> argparse.ArgumentParser:
        p.add_argument("--dir", default=default, help=f"the cluster's folder (default {default})")
        return p

    def with_config(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", help="TOML file of kit settings (docs/configuration.md); they win over the local "
                                        "timings (docs/cluster.md)")
        p.add_argument("--profile", help=f"safe (default), {', '.join(n for n in PROFILES if 'legacy' not in n)}")
        p.add_argument("--bug", action="append", default=[], help="switch on an injectable bug (see `rmqha bugs`)")
        p.add_argument("--fix", action="append", default=[], help="apply a finding's fix switch, or 'all'")
        p.add_argument("--seed", type=int, default=1, help="seed of the nodes' random choices (default 1)")

    up = with_dir(cs.add_parser("up", help="start the nameserver, controller(s), brokers, a producer and a consumer"))
    with_config(up)
    up.add_argument("--lifetime", type=int, default=3600, help="seconds after which every process exits by itself")
    st = with_dir(cs.add_parser("status", help="roles, epochs, SyncStateSet and offsets of every node"))
    st.add_argument("--watch", type=float, help="refresh for this many seconds")
    st.add_argument("--json", action="store_true")
    k = with_dir(cs.add_parser("kill", help="signal a node: SIGKILL (default), SIGSTOP / SIGCONT (pause)"))
    k.add_argument("node")
    k.add_argument("--signal", default="KILL", choices=sorted(SIGNALS))
    r = with_dir(cs.add_parser("restart", help="start a node that is down again, from its files"))
    r.add_argument("node")
    pa = with_dir(cs.add_parser("partition", help="cut nodes from the others (or from --from) at the proxy"))
    pa.add_argument("nodes", help="comma-separated nodes")
    pa.add_argument("--from", dest="others", help="comma-separated nodes (default: every other node)")
    pa.add_argument("--one-way", action="store_true", help="cut only the bytes from NODES to the others")
    pa.add_argument("--id", help="a name for the partition (default p1, p2, ...)")
    h = with_dir(cs.add_parser("heal", help="heal one partition (--id) or all"))
    h.add_argument("--id")
    with_dir(cs.add_parser("down", help="stop every process of the cluster (files, traces and logs stay)"))
    t = with_dir(cs.add_parser("test", help="run a workload under a fault schedule, then check the history"),
                 DEFAULT_TEST_DIR)
    with_config(t)
    t.add_argument("--duration", type=float, default=20.0, help="seconds of workload after warm-up (default 20)")
    t.add_argument("--faults", default="kill-master", help="comma-separated recipes, played in order: kill-master, "
                                                           "pause-master, partition-master, isolate-master, "
                                                           "kill-controller, stale-request")
    t.add_argument("--down", type=float, default=4.0, help="seconds a killed / paused / cut master stays so")
    t.add_argument("--settle", type=float, default=20.0, help="at most this long to settle after the faults")
    t.add_argument("--json", action="store_true", help="print the result as JSON")
    return {"cluster": cmd_cluster}


def cluster_config(path: str | None, profile: str | None, bugs: list[str], fixes: list[str]) -> tuple[Config, str,
                                                                                                       frozenset[str]]:
    data: dict[str, Any] = read_toml(path) if path else {}
    profile = profile or data.pop("profile", None) or "safe"
    data.pop("profile", None)
    if profile not in PROFILES:
        raise UserError(f"unknown profile {profile!r} (known: {', '.join(sorted(PROFILES))})")
    merged: dict[str, dict[str, Any]] = {s: dict(v) for s, v in PROFILES[profile].items()}
    for sec, vals in data.items():
        if not isinstance(vals, dict):
            raise UserError(f"{path}: [{sec}] must be a table")
        merged.setdefault(sec, {}).update(vals)
    try:
        names = B.names_from(bugs, fixes)
        overlay = B.config_overlay(names)
        for sec, vals in overlay.items():
            merged.setdefault(sec, {}).update(vals)
        return local_config(merged), profile, frozenset(names)
    except (ConfigError, ValueError) as exc:
        raise UserError(str(exc)) from None


def cmd_cluster(args: argparse.Namespace, out: Console) -> int:
    try:
        folder = Path(args.dir)
        if args.cluster_cmd == "up":
            cfg, profile, names = cluster_config(args.config, args.profile, args.bug, args.fix)
            spec = C.up(folder, cfg, seed=args.seed, bugs=names, max_lifetime=args.lifetime)
            out.print(f"cluster up in {spec.dir}: {', '.join(spec.nodes)} (profile {profile}); `rmqha cluster "
                      f"status --dir {args.dir}` shows it, `rmqha cluster down --dir {args.dir}` stops it")
            return 0
        if args.cluster_cmd == "test":
            return _cmd_test(args, out)
        spec = load(folder)
        if args.cluster_cmd == "status":
            return _cmd_status(spec, args, out)
        if args.cluster_cmd == "kill":
            pid = C.signal_node(spec, args.node, SIGNALS[args.signal])
            out.print(f"SIG{args.signal} sent to {args.node} (pid {pid})")
        elif args.cluster_cmd == "restart":
            out.print(f"{args.node} started (pid {C.start_node(spec, args.node)})")
        elif args.cluster_cmd == "partition":
            a = args.nodes.split(",")
            b = args.others.split(",") if args.others else [n for n in spec.nodes if n not in a]
            part = args.id or f"p{len(C.proxy_call(spec, {'op': 'status'})['partitions']) + 1}"
            links = C.links(spec, a, b, args.one_way)
            C.proxy_call(spec, {"op": "partition", "id": part, "links": links})
            out.print(f"partition {part}: {len(links)} links cut ({'one way' if args.one_way else 'both ways'})")
        elif args.cluster_cmd == "heal":
            left = C.proxy_call(spec, {"op": "heal", "id": args.id})["partitions"]
            out.print(f"healed; partitions left: {', '.join(left) or 'none'}")
        elif args.cluster_cmd == "down":
            ran = C.down(spec)
            out.print(f"stopped {len(ran)} processes; files, traces and logs stay in {spec.dir}")
        return 0
    except (C.ClusterError, ConfigError) as exc:
        raise UserError(str(exc)) from None


def status_table(spec: ClusterSpec) -> Table:
    pids = C.read_pids(spec)
    try:
        parts = C.proxy_call(spec, {"op": "status"})["partitions"]
    except C.ClusterError:
        parts = None
    cuts = "proxy down" if parts is None else ", ".join(f"{k} ({len(v)} links)" for k, v in parts.items()) or "none"
    title = f"mE: masterEpoch; SSS: SyncStateSet (a broker: its own view); partitions: {cuts}"
    t = Table(title=title, title_justify="left")
    for col in ("node", "pid", "state", "role", "id", "mE", "SSS", "log end", "confirm"):
        t.add_column(col)
    for n in spec.nodes:
        pid = pids.get(n)
        state = "down" if pid is None or not C.alive(pid) else "paused" if C.paused(pid) else "up"
        st = C.query(spec, n, 0.5) if state == "up" else None
        if state == "up" and st is None:
            state = "no answer"
        st = st or {}
        role, sss, epoch, ident = st.get("role", ""), st.get("sss", ""), st.get("masterEpoch", ""), st.get("id", "")
        if "sets" in st:
            info: dict[str, Any] = next(iter(st["sets"].values()), {})
            role = "leader" if st.get("leader") else "follower"
            ident, epoch, sss = f"master {info.get('master')}", info.get("masterEpoch", ""), info.get("sss", "")
        style = {"MASTER": "bold green", "SLAVE": "cyan"}.get(role, "")
        t.add_row(n, str(pid or "-"), state, f"[{style}]{role}[/]" if style else str(role), str(ident), str(epoch),
                  str(sss), str(st.get("max", "")), str(st.get("confirm", "")))
    return t


def _cmd_status(spec: ClusterSpec, args: argparse.Namespace, out: Console) -> int:
    if args.json:
        pids = C.read_pids(spec)
        print(json.dumps({n: {"pid": pids.get(n), "status": C.query(spec, n, 0.5)} for n in spec.nodes}, indent=1))
        return 0
    if not args.watch:
        out.print(status_table(spec))
        return 0
    deadline = time.monotonic() + args.watch
    with Live(status_table(spec), console=out, refresh_per_second=2) as live:
        while time.monotonic() < deadline:
            time.sleep(0.5)
            live.update(status_table(spec))
    return 0


def _cmd_test(args: argparse.Namespace, out: Console) -> int:
    cfg, profile, names = cluster_config(args.config, args.profile, args.bug, args.fix)
    if args.duration <= 0 or args.down <= 0 or args.settle <= 0:
        raise UserError("--duration, --down and --settle must be positive")
    opts = RunOptions(Path(args.dir), cfg, profile, args.duration, tuple(f for f in args.faults.split(",") if f),
                       args.seed, names, args.down, args.settle)
    err = Console(stderr=True, highlight=False)
    result = run_test(opts, lambda s: err.print(s))
    if args.json:
        print(json.dumps(result, sort_keys=True, default=str))
    else:
        verdict = "[bold green]valid[/]" if result["valid"] else "[bold red]INVALID[/]"
        c = result["counts"]
        out.print(f"{verdict}: {c.get('acked')} acked, {c.get('seen')} seen, final master {result['finalMaster']}")
        for f in result["failovers"]:
            out.print(f"  {f['recipe']}: {f['oldMaster']} -> {f['newMaster']} after "
                      f"{f['electedAfterMs']} ms; old master back as {f.get('backRole')}, truncated "
                      f"{f.get('truncatedFrom')} -> {f.get('truncatedTo')}")
        for v in result["violations"]:
            out.print(f"  [red]{v['invariant']}[/]: {v['message']}")
        for n in result["notes"]:
            out.print(f"  note: {n}")
        out.print(f"report: {result['report']}")
    return 0 if result["valid"] else 1


