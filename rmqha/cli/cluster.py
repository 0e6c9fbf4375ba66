"""``rmqha cluster``: a local controller-mode cluster of real processes on 127.0.0.1 (the runtime is ``rmqha.cluster``).

    rmqha cluster up [--dir D] [--config FILE] [--profile P] [--bug NAME]... [--fix NAME|all]... [--seed N] [--fresh]
    rmqha cluster status [--dir D] [--watch SECONDS] [--json]
    rmqha cluster kill NODE [--signal KILL|STOP|CONT|TERM]     rmqha cluster restart NODE
    rmqha cluster partition NODE[,NODE] [--from NODE[,NODE]] [--one-way] [--id ID]
    rmqha cluster heal [--id ID]                                 rmqha cluster down
    rmqha cluster test [--duration S] [--faults F[,F]|none] [--profile P] ... [--dir D] [--fresh] [--json]

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

from rmqha.cluster import control as C
from rmqha.cluster import rundir
from rmqha.cluster.nemesis import RECIPES
from rmqha.cluster.run import RunOptions, run_test
from rmqha.cluster.spec import SPEC_FILE, ClusterSpec, load, local_config
from rmqha.impl import bugs as B
from rmqha.impl.sim.config import PROFILES, Config, ConfigError

from .common import (
    MAX_LIFETIME,
    MAX_SEED,
    Handler,
    choice,
    claim_dir,
    folder_path,
    input_file,
    int_in,
    not_empty,
    output_dir,
    recipe_list,
    seconds,
)
from .files import UserError, file_profile, read_toml
from .signals import ends_on_signals
from .terminal import FitTable, cluster_failover_line, cluster_status_rows, cluster_status_table

DEFAULT_DIR = "runs/cluster"
DEFAULT_TEST_DIR = "runs/cluster-test"
SIGNALS = {"KILL": signal.SIGKILL, "STOP": signal.SIGSTOP, "CONT": signal.SIGCONT, "TERM": signal.SIGTERM}


def _takes(profile: str) -> bool:
    try:
        local_config({s: dict(v) for s, v in PROFILES[profile].items()})
    except ConfigError:
        return False
    return True


CLUSTER_PROFILES = tuple(p for p in PROFILES if _takes(p))
"""The profiles a local cluster runs: controller mode, no simulator-only setting (``spec.local_config``)."""


def register(sub: Any) -> dict[str, Handler]:
    c = sub.add_parser("cluster", help="a local cluster of real processes on 127.0.0.1: up, status, faults, and a "
                                       "checked test run (docs/cluster.md)")
    cs = c.add_subparsers(dest="cluster_cmd", required=True, parser_class=type(c))  # one-line errors, as `rmqha`

    def with_dir(p: argparse.ArgumentParser, default: str = DEFAULT_DIR, new: bool = False) -> argparse.ArgumentParser:
        p.add_argument("--dir", default=default, type=output_dir if new else folder_path,
                       help=f"the cluster's folder (default {default})")
        return p

    def with_config(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", type=input_file, help="TOML file of kit settings (docs/configuration.md); they "
                                                         "win over the local timings (docs/cluster.md)")
        p.add_argument("--profile", type=choice(CLUSTER_PROFILES, "profile of a local cluster"),
                       help=f"{', '.join(CLUSTER_PROFILES)} (default safe; a local cluster takes these)")
        p.add_argument("--bug", action="append", default=[], help="switch on an injectable bug (see `rmqha bugs`)")
        p.add_argument("--fix", action="append", default=[], help="apply a finding's fix switch, or 'all'")
        p.add_argument("--seed", type=int_in(0, MAX_SEED), default=1,
                       help="seed of the nodes' random choices (default 1)")
        p.add_argument("--fresh", action="store_true", help="wipe an earlier run in --dir first (only a cluster "
                                                            "run's own files; a running cluster is never touched)")

    up = with_dir(cs.add_parser("up", help="start the nameserver, controller(s), brokers, a producer and a consumer"),
                  new=True)
    with_config(up)
    up.add_argument("--lifetime", type=int_in(1, MAX_LIFETIME), default=3600,
                    help="seconds after which every process exits by itself (default 3600)")
    st = with_dir(cs.add_parser("status", help="roles, epochs, SyncStateSet and offsets of every node"))
    st.add_argument("--watch", type=seconds(), metavar="SECONDS", help="refresh for this many seconds")
    st.add_argument("--json", action="store_true")
    k = with_dir(cs.add_parser("kill", help="signal a node: SIGKILL (default), SIGSTOP / SIGCONT (pause)"))
    k.add_argument("node", type=not_empty("a node"))
    k.add_argument("--signal", default="KILL", choices=sorted(SIGNALS))
    r = with_dir(cs.add_parser("restart", help="start a node that is down again, from its files"))
    r.add_argument("node", type=not_empty("a node"))
    pa = with_dir(cs.add_parser("partition", help="cut nodes from the others (or from --from) at the proxy"))
    pa.add_argument("nodes", type=not_empty("nodes"), help="comma-separated nodes")
    pa.add_argument("--from", dest="others", type=not_empty("nodes"),
                    help="comma-separated nodes (default: every other node)")
    pa.add_argument("--one-way", action="store_true", help="cut only the bytes from NODES to the others")
    pa.add_argument("--id", type=not_empty("a partition"), help="a name for the partition (default p1, p2, ...)")
    h = with_dir(cs.add_parser("heal", help="heal one partition (--id) or all"))
    h.add_argument("--id", type=not_empty("a partition"))
    with_dir(cs.add_parser("down", help="stop every process of the cluster (files, traces and logs stay)"))
    t = with_dir(cs.add_parser("test", help="run a workload under a fault schedule, then check the history"),
                 DEFAULT_TEST_DIR, new=True)
    with_config(t)
    t.add_argument("--duration", type=seconds(), default=20.0,
                   help="seconds of workload after warm-up (default 20)")
    t.add_argument("--faults", type=_recipes, default=("kill-master",),
                   help=f"comma-separated recipes, played in order: {', '.join(RECIPES)}; or none "
                        "(default kill-master)")
    t.add_argument("--down", type=seconds(), default=4.0, help="seconds a killed / paused / cut master stays so")
    t.add_argument("--settle", type=seconds(), default=20.0, help="at most this long to settle after the faults")
    t.add_argument("--json", action="store_true", help="print the result as JSON")
    return {"cluster": ends_on_signals(cmd_cluster)}


_recipes = recipe_list(RECIPES)  # ``type=`` of --faults


def cluster_config(path: str | None, profile: str | None, bugs: list[str], fixes: list[str]) -> tuple[Config, str,
                                                                                                       frozenset[str]]:
    data: dict[str, Any] = read_toml(path) if path else {}
    named = file_profile(path, data)
    profile = profile or named or "safe"
    if profile not in CLUSTER_PROFILES:
        raise UserError(f"{path}: profile {profile!r}: a local cluster takes {', '.join(CLUSTER_PROFILES)}")
    merged: dict[str, dict[str, Any]] = {s: dict(v) for s, v in PROFILES[profile].items()}
    for sec, vals in data.items():
        if not isinstance(vals, dict):
            raise UserError(f"{path}: [{sec}] must be a table")
        merged.setdefault(sec, {}).update(vals)
    try:
        names = B.names_from(bugs, fixes)
        for sec, vals in B.config_overlay(names).items():
            merged.setdefault(sec, {}).update(vals)
    except ValueError as exc:  # an unknown switch
        raise UserError(str(exc)) from None
    try:
        return local_config(merged), profile, frozenset(names)
    except ConfigError as exc:
        raise UserError(f"{path}: {exc}" if path else str(exc)) from None


def claim_run_dir(folder: Path, fresh: bool) -> None:
    """The run folder: an earlier run's refused (without ``--fresh``) or a folder that holds no run's files, as
    ``control.up`` would (``rundir.earlier_run``: looks only), then claimed (``common.claim_dir``), before any
    process starts."""
    try:
        rundir.earlier_run(folder, SPEC_FILE, C.RUN_ENTRIES, fresh=fresh, what="cluster")
    except rundir.RunDirError as exc:
        raise UserError(str(exc)) from None
    claim_dir(str(folder), "--dir")


def cmd_cluster(args: argparse.Namespace, out: Console) -> int:
    try:
        folder = Path(args.dir)
        if args.cluster_cmd == "up":
            cfg, profile, names = cluster_config(args.config, args.profile, args.bug, args.fix)
            claim_run_dir(folder, args.fresh)
            spec = C.up(folder, cfg, seed=args.seed, bugs=names, max_lifetime=args.lifetime, fresh=args.fresh)
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
            a = [n.strip() for n in args.nodes.split(",") if n.strip()]
            if not a:
                raise UserError(f"partition {args.nodes!r}: name the nodes to cut, e.g. b1 or b1,b2")
            b = ([n.strip() for n in args.others.split(",") if n.strip()] if args.others
                 else [n for n in spec.nodes if n not in a])
            both = [n for n in a if n in b]
            if both:
                raise UserError(f"partition {args.nodes} from {args.others}: a node cannot be cut from itself "
                                f"({', '.join(both)} on both sides)")
            links = C.links(spec, a, b, args.one_way)
            if not links:
                raise UserError(f"partition {args.nodes} from {args.others or 'the others'}: no link to cut (the "
                                "same nodes on both sides)")
            part = args.id or f"p{len(C.proxy_call(spec, {'op': 'status'})['partitions']) + 1}"
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


def status_table(spec: ClusterSpec) -> FitTable:
    """Each node's process and state, fitted to the terminal's width (``cli/terminal.py``)."""
    return cluster_status_table(*cluster_status_rows(spec))


def _cmd_status(spec: ClusterSpec, args: argparse.Namespace, out: Console) -> int:
    if args.json and args.watch is not None:
        raise UserError("--watch refreshes a table: give --watch or --json, not both")
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
    claim_run_dir(Path(args.dir), args.fresh)
    opts = RunOptions(Path(args.dir), cfg, profile, args.duration, args.faults, args.seed, names, args.down,
                      args.settle, fresh=args.fresh)
    err = Console(stderr=True, highlight=False)
    result = run_test(opts, lambda s: err.print(s))
    if args.json:
        print(json.dumps(result, sort_keys=True, default=str))
    else:
        verdict = "[bold green]valid[/]" if result["valid"] else "[bold red]INVALID[/]"
        c = result["counts"]
        out.print(f"{verdict}: {c.get('acked')} acked, {c.get('seen')} seen, final master {result['finalMaster']}")
        for f in result["failovers"]:
            out.print(cluster_failover_line(f), markup=False)
        for v in result["violations"]:
            out.print(f"  [red]{v['invariant']}[/]: {v['message']}")
        for n in result["notes"]:
            out.print(f"  note: {n}")
        out.print(f"report: {result['report']}")
    return 0 if result["valid"] else 1


