"""``rmqha real``: real RocketMQ from Maven Central under the kit (``rmqha.real``; docs/real.md).

    rmqha real versions [--json]                 rmqha real fetch [--version V | --build DIR]
    rmqha real up [--version V | --build DIR] [--controllers 1|3] [--controller-type dledger|jraft] [--brokers N]
                  [--config FILE] [--profile P] [--dir D] [--lifetime S] [--fresh]
    rmqha real status [--dir D] [--json] [--watch S]
    rmqha real kill NODE [--signal KILL|STOP|CONT|TERM]   rmqha real pause NODE   rmqha real resume NODE
    rmqha real restart NODE                       rmqha real down [--dir D]
    rmqha real partition NODE[,NODE] [--from NODE[,NODE]] [--one-way] [--id ID]   rmqha real heal [--id ID]
    rmqha real fault drop-response|delay-response|drop-request --code CODE [--from N] [--to N] [--count K] ...
    rmqha real fault cut-stream NODE [--after-bytes N]    rmqha real fault netem NODE [--to N,..] -- ARGS
    rmqha real fault clear
    rmqha real points [--version V] [--json]      the kit's agent's failpoints, per version
    rmqha real fault point NODE POINT --action crash|delay|pause|throw [--ms N] [--nth N] [--count N | --every]
                  [--when ARG=VALUE ...] [--exception NAME] [--id ID]
    rmqha real fault release ID    rmqha real fault disarm ID    rmqha real fault arms
    up / test take --agent (the kit's Java agent in every JVM) and --fix F-ID|all (its fix rules; implies --agent);
    repro takes --fix

NODE is a node name (``ns``, ``c0``.., ``b1``..) or ``master`` (the broker the leading controller names) or
``leader`` (the leading controller). Exit status: 0, 1 (a test found a violation), 2 for a usage or input error.
"""

from __future__ import annotations

import argparse
import json
import textwrap
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from rmqha.cluster import rundir
from rmqha.impl.sim.config import ConfigError
from rmqha.real import agent as A
from rmqha.real import control as C
from rmqha.real import maven, netns, remoting
from rmqha.real import observe as O
from rmqha.real import points as P
from rmqha.real.nemesis import RECIPES
from rmqha.real.repro import NOT_REPRODUCED, REPRODUCED, run_repro
from rmqha.real.repros import REPROS
from rmqha.real.run import RealTestOptions, run_test
from rmqha.real.spec import REAL_PROFILES, SPEC_FILE, RealSpec, load, real_config

from . import junit
from .common import (
    MAX_LIFETIME,
    Handler,
    choice,
    claim_dir,
    claim_file,
    folder_path,
    input_file,
    int_in,
    not_empty,
    output_dir,
    output_file,
    recipe_list,
    seconds,
)
from .files import UserError, file_profile, read_toml
from .signals import ends_on_signals
from .terminal import FitTable, real_failover_line, real_status_table

DEFAULT_DIR = "runs/real"
DEFAULT_TEST_DIR = "runs/real-test"
SIGNALS = ("KILL", "STOP", "CONT", "TERM")


def _version(text: str) -> str:
    """``type=``: a RocketMQ 5.x release number, or a registered build's name (``maven.check_version``)."""
    try:
        if text != text.strip():
            raise maven.FetchError(text)
        return maven.check_version(text)
    except maven.FetchError:
        raise argparse.ArgumentTypeError(f"must be a RocketMQ 5.x release number like {maven.PINNED} (known: "
                                         f"{', '.join(v.version for v in maven.KNOWN)}) or a build registered with "
                                         f"--build, got {text!r}") from None


def _build(args: argparse.Namespace) -> str | None:
    """``--build DIR``: register the user's build (one line if the folder is not one) and return its name."""
    folder = getattr(args, "build", None)
    if not folder:
        return None
    return maven.register_build(Path(folder), quiet=True).version


_recipes = recipe_list(RECIPES)  # ``type=`` of --faults


# real fault KIND: the options each kind takes (dest -> how the user wrote it); any other one given is refused
FAULT_FLAGS = {"node": "NODE", "code": "--code", "src": "--from", "to": "--to", "count": "--count",
               "duration": "--for", "ms": "--ms", "after_bytes": "--after-bytes", "id": "--id",
               "netem": "netem arguments", "action": "--action", "nth": "--nth", "every": "--every",
               "when": "--when", "exception": "--exception"}
FAULT_TAKES = {"drop-response": {"code", "src", "to", "count", "duration", "id"},
               "delay-response": {"code", "src", "to", "count", "duration", "id", "ms"},
               "drop-request": {"code", "src", "to", "count", "duration", "id"},
               "cut-stream": {"node", "after_bytes", "id"},
               "netem": {"node", "to", "netem"},
               # the agent's failpoints: NODE POINT (the point arrives in the trailing positional)
               "point": {"node", "netem", "action", "ms", "nth", "count", "every", "when", "exception", "id"},
               "release": {"node", "id"}, "disarm": {"node", "id"}, "arms": set(),
               "clear": set(), "status": set()}


def takes_trailing(argv: list[str]) -> bool:
    """``rmqha real fault``: its node and its tc netem arguments may come before or after its options."""
    return argv[:2] == ["real", "fault"]


def split_trailing(argv: list[str]) -> tuple[list[str], list[str]]:
    """``rmqha real fault ... -- ARGS``: the command line before the first ``--``, and the words after it (the tc
    netem arguments, as docs/real.md writes them: after the node and the options)."""
    if "--" not in argv:
        return argv, []
    i = argv.index("--")
    return argv[:i], argv[i + 1:]


def place_words(args: argparse.Namespace, extra: list[str], trailing: list[str]) -> None:
    """Words argparse left over because an option came between ``real fault KIND`` and them (``netem --to c0 b2``):
    the node first, then netem arguments; the words after ``--`` are netem arguments. An unknown option is the
    usage error ``parse_args`` would give."""
    unknown = [w for w in extra if w.startswith("-")]
    if unknown:
        raise UserError(f"real fault: unrecognized arguments: {' '.join(unknown)} (see --help)")
    words = list(extra)
    if words and args.node is None:
        args.node = words.pop(0)
        if not args.node.strip():
            raise UserError("real fault: argument node: must name a node (see --help)")
    args.netem = [*args.netem, *words, *trailing]


def register(sub: Any) -> dict[str, Handler]:
    r = sub.add_parser("real", help="real RocketMQ from Maven Central: fetch, up, status, faults, down (docs/real.md)")
    rs = r.add_subparsers(dest="real_cmd", required=True, parser_class=type(r))  # one-line errors, as `rmqha`

    def with_dir(p: argparse.ArgumentParser, default: str = DEFAULT_DIR, new: bool = False) -> argparse.ArgumentParser:
        p.add_argument("--dir", default=default, type=output_dir if new else folder_path,
                       help=f"the run's folder (default {default})")
        return p

    def with_cluster(p: argparse.ArgumentParser) -> None:
        p.add_argument("--fresh", action="store_true", help="wipe an earlier run in --dir first (only a real run's "
                                                            "own files; a cluster that is up is never touched)")
        p.add_argument("--version", type=_version, default=maven.PINNED,
                       help=f"RocketMQ version (default {maven.PINNED})")
        p.add_argument("--build", type=folder_path, metavar="DIR",
                       help="a RocketMQ build of your own instead of a release: a distribution's lib/ or a folder of "
                            "jars (what it lacks, e.g. third-party jars, comes from the nearest release)")
        p.add_argument("--controllers", type=int, choices=(1, 3), help="controller nodes (default: the profile's, 1)")
        p.add_argument("--controller-type", choices=("dledger", "jraft"), help="DLedger (default) or JRaft")
        p.add_argument("--brokers", type=int_in(1, 5), help="brokers in the set (default 3; a real set takes 1 to 5)")
        p.add_argument("--config", type=input_file, help="TOML file of kit settings (docs/configuration.md)")
        p.add_argument("--profile", type=choice(REAL_PROFILES, "profile of a real cluster"),
                       help=f"{', '.join(REAL_PROFILES)} (default safe)")
        p.add_argument("--agent", action="store_true",
                       help="start every JVM with the kit's Java agent (failpoints: rmqha real points)")
        with_fix(p)

    def with_fix(p: argparse.ArgumentParser) -> None:
        p.add_argument("--fix", action="append", default=[], metavar="F-ID",
                       help=f"apply a finding's fix rule inside the JVMs (the agent's: {', '.join(P.FIX_IDS)}; "
                            "or all; repeatable; implies --agent)")

    v = rs.add_parser("versions", help="the RocketMQ versions the kit knows, oldest first, and which are fetched")
    v.add_argument("--json", action="store_true")
    pts = rs.add_parser("points", help="the kit's agent's failpoints, the Java method each sits in, per version")
    pts.add_argument("--version", type=_version, action="append", default=[],
                     help="check against this version's jars (repeatable; default: every fetched version)")
    pts.add_argument("--json", action="store_true")
    f = rs.add_parser("fetch", help="resolve a RocketMQ version with Maven and print its classpath")
    f.add_argument("--version", type=_version, default=maven.PINNED, help=f"a 5.x release (default {maven.PINNED})")
    f.add_argument("--build", type=folder_path, metavar="DIR",
                   help="register a RocketMQ build of your own (a distribution's lib/ or a folder of jars); prints "
                        "its name, which --version then takes")

    up = with_dir(rs.add_parser("up", help="start a nameserver, controller(s) and a broker set in controller mode"),
                  new=True)
    with_cluster(up)
    up.add_argument("--lifetime", type=int_in(1, MAX_LIFETIME), default=3600,
                    help="seconds after which the cluster ends by itself (default 3600)")

    st = with_dir(rs.add_parser("status", help="roles, epochs, SyncStateSet and offsets, as the admin API sees them"))
    st.add_argument("--json", action="store_true")
    st.add_argument("--watch", type=seconds(), metavar="SECONDS", help="refresh for this many seconds")
    k = with_dir(rs.add_parser("kill", help="signal a node (SIGKILL by default)"))
    k.add_argument("node", type=not_empty("a node"))
    k.add_argument("--signal", default="KILL", choices=SIGNALS)
    for name, what in (("pause", "SIGSTOP a node"), ("resume", "SIGCONT a paused node"),
                       ("restart", "kill a node if it runs and start it again from its files")):
        p = with_dir(rs.add_parser(name, help=what))
        p.add_argument("node", type=not_empty("a node"))
    pa = with_dir(rs.add_parser("partition", help="cut nodes from the others (or from --from) at the proxy"))
    pa.add_argument("nodes", type=not_empty("nodes"), help="comma-separated nodes")
    pa.add_argument("--from", dest="others", type=not_empty("nodes"),
                    help="comma-separated nodes (default: every other node and the clients)")
    pa.add_argument("--one-way", action="store_true", help="cut only the bytes from NODES to the others")
    pa.add_argument("--id", type=not_empty("a partition"), help="a name for the partition (default p1, p2, ...)")
    h = with_dir(rs.add_parser("heal", help="heal one partition (--id) or all"))
    h.add_argument("--id", type=not_empty("a partition"))
    fl = with_dir(rs.add_parser("fault", help="protocol-aware and link faults (see --help)"))
    fl.add_argument("kind", choices=tuple(FAULT_TAKES))
    fl.add_argument("node", nargs="?", type=not_empty("a node"),
                    help="cut-stream / netem / point: the node; release / disarm: the arm's id")
    fl.add_argument("--code", type=not_empty("a request code"),
                    help="a remoting request code, by name or number (e.g. CONTROLLER_ALTER_SYNC_STATE_SET)")
    fl.add_argument("--from", dest="src", type=not_empty("a node"), help="the node the frame comes from (drop/delay-"
                                                                         "response: the serving node)")
    fl.add_argument("--to", type=not_empty("nodes"), help="the requesting node; netem: comma-separated destinations")
    fl.add_argument("--count", type=int_in(1, 1_000_000), help="at most this many; point: fire this many times "
                                                                 "(default 1)")
    fl.add_argument("--for", dest="duration", type=seconds(), metavar="SECONDS",
                    help="seconds the fault stays (default: until cleared)")
    fl.add_argument("--ms", type=int_in(1, 3_600_000), help="delay-response, point delay / pause: milliseconds")
    fl.add_argument("--action", type=not_empty("an action"), help=f"point: {', '.join(P.ACTIONS)}")
    fl.add_argument("--nth", type=int_in(1, 1_000_000), help="point: fire from the Nth matching hit (default 1)")
    fl.add_argument("--every", action="store_true", help="point: fire at every matching hit from the Nth on")
    fl.add_argument("--when", action="append", type=not_empty("a condition"), metavar="ARG=VALUE",
                    help="point: only hits whose argument matches (=, !=, <, <=, >, >=, ~ contains; repeatable)")
    fl.add_argument("--exception", type=not_empty("an exception class"),
                    help=f"point throw: the class ({', '.join(P.EXCEPTIONS)} or a full name; default "
                         "RuntimeException)")
    fl.add_argument("--after-bytes", type=int_in(0, 2**40), help="cut-stream: bytes to let through first (default 0)")
    fl.add_argument("--id", type=not_empty("a fault"), help="a name for the fault")
    fl.add_argument("netem", nargs="*", help="netem: tc netem arguments, after -- (e.g. -- loss 30%%); point: the "
                                             "point's name")
    with_dir(rs.add_parser("down", help="end every process of the run and delete its namespaces (files stay)"))

    rp = rs.add_parser("repro", help="reproduce a finding on a real build (docs/findings/README.md): reproduced, "
                                     "not reproduced or inconclusive, with the evidence")
    rp.add_argument("ids", nargs="*", help="finding ids (default with --list: all)")
    rp.add_argument("--list", action="store_true", help="list the reproductions and what each does")
    rp.add_argument("--version", type=_version, action="append", default=[],
                    help=f"RocketMQ version(s) (default {maven.PINNED}; repeatable)")
    rp.add_argument("--build", type=folder_path, metavar="DIR",
                    help="also run on a RocketMQ build of your own (a distribution's lib/ or a folder of jars)")
    rp.add_argument("--repeat", type=int_in(1, 1000), default=1,
                    help="runs per version (a rate for timing-dependent ones)")
    rp.add_argument("--dir", type=output_dir, default="runs/real-repro",
                    help="where each run's folder goes (default runs/real-repro)")
    rp.add_argument("--json", action="store_true", help="print one JSON object per run")
    with_fix(rp)
    rp.add_argument("--junit", type=output_file, metavar="FILE",
                    help="also write the outcomes as JUnit XML: one test case per finding, version and run")

    t = with_dir(rs.add_parser("test", help="a workload under a fault schedule on a real cluster, then the "
                                            "catalogue's verdict on what was observed"), DEFAULT_TEST_DIR, new=True)
    with_cluster(t)
    t.add_argument("--duration", type=seconds(), default=60.0, help="seconds of workload after warm-up (default 60)")
    t.add_argument("--faults", type=_recipes, default=("kill-master",),
                   help=f"comma-separated recipes, played in order: {', '.join(RECIPES)}; or none "
                        "(default kill-master)")
    t.add_argument("--down", type=seconds(), default=5.0,
                   help="seconds a killed / paused / cut node stays so (default 5)")
    t.add_argument("--settle", type=seconds(), default=60.0, help="at most this long to settle after the faults")
    t.add_argument("--json", action="store_true", help="print the result as JSON")
    t.add_argument("--junit", type=output_file, metavar="FILE",
                   help="also write the verdict as JUnit XML: one test case per invariant a real run checks")
    return {"real": ends_on_signals(cmd_real)}


# ----------------------------------------------------------------------------------------------- helpers


def _spec(args: argparse.Namespace) -> RealSpec:
    try:
        return load(Path(args.dir))
    except ConfigError as exc:
        raise UserError(str(exc)) from None


def resolve_node(spec: RealSpec, name: str, snap: O.Snapshot | None = None) -> str:
    if name in spec.nodes:
        return name
    if name in ("master", "leader"):
        snap = snap or O.snapshot(spec)
        if name == "master":
            if snap.master is None:
                raise UserError("the broker set has no master now (rmqha real status)")
            return snap.master
        lead = snap.leader
        if lead is None:
            raise UserError("no controller leads now (rmqha real status)")
        return lead.node
    raise UserError(f"no node {name!r} (nodes: {', '.join(spec.nodes)}; or master, leader)")


def _nodes(spec: RealSpec, text: str) -> list[str]:
    snap = O.snapshot(spec) if any(n in ("master", "leader") for n in text.split(",")) else None
    out = [resolve_node(spec, n.strip(), snap) for n in text.split(",") if n.strip()]
    if not out:
        raise UserError("no nodes given")
    return out


def _proxy(spec: RealSpec, req: dict[str, Any]) -> dict[str, Any]:
    ans = C.request(spec.proxy_sock, req, timeout=10)
    if not ans.get("ok", True) or "error" in ans:
        raise UserError(f"proxy: {ans.get('error', 'failed')}")
    return ans


def real_cfg(args: argparse.Namespace) -> tuple[Any, str]:
    data: dict[str, Any] = read_toml(args.config) if args.config else {}
    named = file_profile(args.config, data)
    profile = args.profile or named or "safe"
    for sec, vals in data.items():
        if not isinstance(vals, dict):
            raise UserError(f"{args.config}: [{sec}] must be a table")
    if args.controllers:
        data.setdefault("cluster", {})["controllers"] = args.controllers
    if args.brokers is not None:
        data.setdefault("cluster", {})["brokers"] = args.brokers
    if args.controller_type:
        data.setdefault("controller", {})["controllerType"] = "jRaft" if args.controller_type == "jraft" else "DLedger"
    if profile not in REAL_PROFILES:
        raise UserError(f"{args.config}: profile {profile!r}: a real cluster takes {', '.join(REAL_PROFILES)}")
    try:
        return real_config(profile, data), profile
    except ConfigError as exc:
        raise UserError(f"{args.config}: {exc}" if args.config else str(exc)) from None


# ----------------------------------------------------------------------------------------------- commands


def cmd_real(args: argparse.Namespace, out: Console) -> int:
    try:
        return _dispatch(args, out)
    except (C.RealError, O.ToolError, maven.FetchError, netns.NetnsError, ConfigError, A.AgentError,
            P.ArmError) as exc:
        raise UserError(str(exc)) from None


def agent_options(args: argparse.Namespace) -> A.AgentOptions | None:
    """``--agent`` / ``--fix``: the run's agent, or None (every JVM as without it)."""
    fixes = P.fix_ids(args.fix)
    if fixes or getattr(args, "agent", False):
        return A.AgentOptions(fixes=tuple(fixes))
    return None


def agent_line(spec: RealSpec) -> str | None:
    if spec.agent is None:
        return None
    a = spec.agent
    line = f"the kit's agent {a['agentVersion']} in every JVM; fixes: {', '.join(a['fixes']) or 'none'}"
    if a.get("fixesAbsent"):
        line += "; not needed by this version (the method is absent): " + "; ".join(
            f"{f}: {why}" for f, why in a["fixesAbsent"].items())
    if a.get("missingPoints"):
        line += f"; points this version lacks: {', '.join(a['missingPoints'])}"
    return line


def _dispatch(args: argparse.Namespace, out: Console) -> int:
    cmd = args.real_cmd
    if cmd == "versions":
        return _versions(args, out)
    built = _build(args)
    if built and cmd in ("up", "test", "fetch"):
        args.version = built
    elif built and cmd == "repro":
        args.version = [*args.version, built]
    if cmd == "fetch":
        inst = maven.fetch(args.version)
        if built:
            out.print(f"{inst.version}: {inst.describe()}; run it with --version {inst.version} or --build",
                      highlight=False)
        print(inst.classpath)
        return 0
    if cmd == "points":
        return _points(args, out)
    if cmd == "up":
        cfg, profile = real_cfg(args)
        agent = agent_options(args)
        claim_run_dir(Path(args.dir), args.fresh)
        spec = C.up(Path(args.dir), cfg, version=args.version, profile=profile, lifetime_s=args.lifetime,
                    fresh=args.fresh, say=lambda m: out.print(m), agent=agent)
        out.print(f"real cluster up in {spec.dir}: {', '.join(spec.nodes)} (RocketMQ {spec.version}, "
                  f"{spec.controller_type}, profile {profile}); `rmqha real status --dir {args.dir}` shows it, "
                  f"`rmqha real down --dir {args.dir}` ends it")
        if spec.kit_only:
            out.print(f"not RocketMQ settings, left out: {', '.join(spec.kit_only)}")
        if (line := agent_line(spec)) is not None:
            out.print(line, markup=False)
        return 0
    if cmd == "test":
        return _test(args, out)
    if cmd == "repro":
        return _repro(args, out)
    if cmd == "fault":
        _fault_options(args)
    if cmd == "partition" and args.others:
        named = {n.strip() for n in args.nodes.split(",")} & {n.strip() for n in args.others.split(",")}
        if named - {""}:
            raise UserError(f"partition {args.nodes} from {args.others}: a node cannot be cut from itself "
                            f"({', '.join(sorted(named - {''}))} on both sides)")
    spec = _spec(args)
    if cmd == "down":
        ended = C.down(spec.dir)
        out.print(f"ended {len(ended)} processes and the run's namespaces; files and logs stay in {spec.dir}")
        return 0
    if cmd == "fault" and args.kind in ("point", "release", "disarm", "arms") and spec.agent is None:
        raise UserError(f"the cluster in {spec.dir} runs without the agent (rmqha real up --agent)")
    if not C.is_up(spec):
        raise UserError(f"the cluster in {spec.dir} is not up (rmqha real up --dir {args.dir})")
    if cmd == "status":
        return _status(spec, args, out)
    if cmd in ("kill", "pause", "resume"):
        node = resolve_node(spec, args.node)
        sig = {"kill": getattr(args, "signal", "KILL"), "pause": "STOP", "resume": "CONT"}[cmd]
        C.supervise(spec, {"op": "signal", "node": node, "signal": sig})
        out.print(f"SIG{sig} sent to {node}")
    elif cmd == "restart":
        node = resolve_node(spec, args.node)
        C.supervise(spec, {"op": "restart", "node": node}, timeout=C.UP_TIMEOUT_S)
        out.print(f"{node} restarted and listening")
    elif cmd == "partition":
        a = _nodes(spec, args.nodes)
        b = _nodes(spec, args.others) if args.others else [n for n in [*spec.nodes, "client"] if n not in a]
        both = [n for n in a if n in b]
        if both:
            raise UserError(f"partition {args.nodes} from {args.others}: a node cannot be cut from itself "
                            f"({', '.join(both)} on both sides)")
        links = [[x, y] for x in a for y in b] + ([] if args.one_way else [[y, x] for x in a for y in b])
        pid = args.id or f"p{int(time.time() * 1000) % 100000}"
        _proxy(spec, {"op": "partition", "id": pid, "links": links})
        out.print(f"partition {pid}: {len(links)} links cut ({'one way' if args.one_way else 'both ways'})")
    elif cmd == "heal":
        _proxy(spec, {"op": "heal", "id": args.id})
        out.print("healed" + (f" {args.id}" if args.id else " every partition"))
    elif cmd == "fault":
        return _fault(spec, args, out)
    return 0


def _fault_options(args: argparse.Namespace) -> None:
    """What ``real fault KIND`` needs and takes, checked before the cluster is asked anything."""
    kind = args.kind
    for dest, flag in FAULT_FLAGS.items():
        if dest not in FAULT_TAKES[kind] and getattr(args, dest) not in (None, [], False):
            raise UserError(f"fault {kind} takes no {flag}")
    if kind == "point":
        names = [a for a in args.netem if a != "--"]
        if not args.node or len(names) != 1:
            raise UserError("fault point NODE POINT: name the node and one point (rmqha real points lists them)")
        if not args.action:
            raise UserError(f"fault point: --action is required ({', '.join(P.ACTIONS)})")
        if args.every and args.count is not None:
            raise UserError("fault point: --count or --every, not both")
        try:
            args.arm = P.arm_request(names[0], args.action, ms=args.ms, nth=args.nth or 1,
                                     count=0 if args.every else (args.count or 1), when=tuple(args.when or ()),
                                     exception=args.exception, arm_id=args.id)
        except P.ArmError as exc:
            raise UserError(str(exc)) from None
    if kind in ("release", "disarm") and not (args.node or args.id):
        raise UserError(f"fault {kind} ID: name the arm (rmqha real fault arms lists them)")
    if kind in ("release", "disarm") and args.node and args.id and args.node != args.id:
        raise UserError(f"fault {kind}: one id, as ID or --id")
    if kind in ("cut-stream", "netem") and not args.node:
        raise UserError(f"fault {kind}: name the node (e.g. master)")
    if kind == "netem" and not [a for a in args.netem if a != "--"]:
        raise UserError("fault netem: give tc netem arguments after --, e.g. -- loss 30%")
    if kind in ("drop-response", "delay-response", "drop-request") and not args.code:
        raise UserError(f"fault {kind}: --code is required (a request code by name or number)")
    if kind == "delay-response" and args.ms is None:
        raise UserError("fault delay-response: --ms is required (milliseconds)")
    if args.code is not None:
        try:
            number = remoting.request_code(args.code)
        except ValueError:
            number = None
        if number not in remoting.REQUEST_NAMES:
            raise UserError(f"fault {kind}: --code {args.code}: not a request code the proxy knows (a name or number "
                            f"of rmqha/real/remoting.py's REQUEST_CODES, e.g. CONTROLLER_ALTER_SYNC_STATE_SET or "
                            f"{remoting.REQUEST_CODES['CONTROLLER_ALTER_SYNC_STATE_SET']})")
    if kind == "netem":
        require_netem(f"fault netem on {args.node}")


def _agents(spec: RealSpec) -> dict[str, A.AgentClient]:
    if spec.agent is None:
        raise UserError(f"the cluster in {spec.dir} runs without the agent (rmqha real up --agent)")
    return {n: A.AgentClient(spec.agent_sock(n)) for n in spec.nodes}


def _agent_fault(spec: RealSpec, args: argparse.Namespace, out: Console) -> int:
    agents = _agents(spec)
    kind = args.kind
    if kind == "point":
        node = resolve_node(spec, args.node)
        req = dict(args.arm)
        req["id"] = req["id"] or f"a{int(time.time() * 1000) % 100000}"
        point = P.BY_NAME[req["point"]]
        if point.kind != spec.kind(node):
            raise UserError(f"point {point.name} sits in a {point.kind} JVM; {node} is a {spec.kind(node)}")
        arm = agents[node].arm(req)
        trig = f"hit {arm['nth']}" + (" on" if arm["count"] == 0 else f" ({arm['count']} time(s))")
        when = f" when {' and '.join(arm['when'])}" if arm["when"] else ""
        out.print(f"{arm['id']}: {point.name} on {node} ({point.java}) armed: {arm['action']}"
                  + (f" {arm['ms']} ms" if arm["ms"] else "") + f" at {trig}{when}"
                  + ("" if arm.get("installed") else " (its class has not loaded yet)"), markup=False)
        return 0
    if kind == "arms":
        rows = []
        for n, c in agents.items():
            try:
                rows += [{"node": n, **a} for a in c.arms()]
            except A.AgentError:
                continue
        print(json.dumps(rows, indent=1))
        return 0
    aid = args.node or args.id
    for n, c in agents.items():
        try:
            held = [a for a in c.arms() if a["id"] == aid]
        except A.AgentError:
            continue
        if held:
            if kind == "release":
                out.print(f"{aid} on {n}: released ({c.release(aid)} thread(s) were paused)")
            else:
                c.disarm(aid)
                out.print(f"{aid} on {n}: disarmed")
            return 0
    raise UserError(f"no arm {aid!r} on any running node (rmqha real fault arms lists them)")


def _fault(spec: RealSpec, args: argparse.Namespace, out: Console) -> int:
    kind = args.kind
    if kind in ("point", "release", "disarm", "arms"):
        return _agent_fault(spec, args, out)
    if kind == "status":
        print(json.dumps(_proxy(spec, {"op": "status"}), indent=1))
        return 0
    if kind == "clear":
        _proxy(spec, {"op": "clear"})
        for n in spec.nodes:
            netns.clear_link_fault(spec.run, n)
        out.print("every proxy fault and link fault lifted")
        return 0
    fid = args.id or f"f{int(time.time() * 1000) % 100000}"
    until = None if args.duration is None else int((time.time() + args.duration) * 1000)
    if kind == "netem":
        node = resolve_node(spec, args.node)
        rest = [a for a in args.netem if a != "--"]
        dst = [spec.host(n).front for n in _nodes(spec, args.to)] if args.to else []
        dst += [spec.host(n).addr for n in _nodes(spec, args.to)] if args.to else []
        netns.set_link_fault(spec.run, node, rest, dst)
        out.print(f"netem {' '.join(rest)} on what {node} sends" + (f" to {args.to}" if args.to else ""))
        return 0
    if kind == "cut-stream":
        node = resolve_node(spec, args.node)
        after = args.after_bytes or 0
        req = {"op": "cut-stream", "id": fid, "route": f"{node}.ha", "after_bytes": after}
        _proxy(spec, req)
        out.print(f"{fid}: the next HA connection to {node} is cut after {after} bytes")
        return 0
    code: Any = int(args.code) if args.code.isdigit() else args.code
    req = {"op": kind, "id": fid, "code": code, "count": args.count, "until_ms": until,
           "from": resolve_node(spec, args.src) if args.src else None,
           "to": resolve_node(spec, args.to) if args.to else None}
    if kind == "delay-response":
        req["ms"] = args.ms
    _proxy(spec, req)
    out.print(f"{fid}: {kind} {args.code}" + (f" from {req['from']}" if req["from"] else "") +
              (f" to {req['to']}" if req["to"] else ""))
    return 0


def _versions(args: argparse.Namespace, out: Console) -> int:
    have = set(maven.cached_versions())
    rows: list[dict[str, Any]] = [
        {"version": v.version, "fetched": v.version in have, "why": v.why,
         "parts": v.parts() if v.borrowed else {}, "base": v.base} for v in maven.KNOWN]
    rows += [{"version": b.version, "fetched": True, "why": b.describe(), "parts": b.parts, "base": None,
              "build": b.build} for b in maven.cached_builds()]
    if args.json:
        print(json.dumps(rows))
        return 0
    width = max(40, out.width)
    for r in rows:
        out.print(f"{r['version']} ({'fetched' if r['fetched'] else 'not fetched'})", highlight=False)
        lines = [r["why"]]
        if r["parts"]:
            by: dict[str, list[str]] = {}
            for art, ver in sorted(r["parts"].items()):
                by.setdefault(ver, []).append(art)
            lines += [f"{ver}'s {', '.join(arts)}" for ver, arts in sorted(by.items())]
        for text in lines:
            for ln in textwrap.wrap(text, width - 4, break_on_hyphens=False):
                out.print(f"    {ln}", highlight=False, soft_wrap=True)
    return 0


def status_table(spec: RealSpec, snap: O.Snapshot, procs: dict[str, Any]) -> FitTable:
    """Each process, and what the admin API says, fitted to the terminal's width (``cli/terminal.py``)."""
    return real_status_table(spec, snap, procs)


def _status(spec: RealSpec, args: argparse.Namespace, out: Console) -> int:
    end = time.monotonic() + (args.watch or 0)
    while True:
        procs = C.supervise(spec, {"op": "status"})["nodes"]
        snap = O.snapshot(spec)
        if args.json:
            print(json.dumps({"processes": procs, "controllers": {k: vars(v) for k, v in snap.controllers.items()},
                              "brokers": {k: vars(v) for k, v in snap.brokers.items()}}, default=str))
        else:
            out.print(status_table(spec, snap, procs))
        if time.monotonic() >= end:
            return 0
        time.sleep(1.0)


def _points(args: argparse.Namespace, out: Console) -> int:
    versions = list(dict.fromkeys(args.version)) or maven.cached_versions()
    checked: dict[str, A.Checked] = {}
    for v in versions:
        checked[v] = A.check(A.build(maven.fetch(v)))
    rows: list[dict[str, Any]] = []
    for p in P.POINTS:
        per = {v: {k: d for k, d in c.points.get(p.name, {}).items() if k in ("found", "why")}
               for v, c in checked.items()}
        rows.append({"point": p.name, "kind": p.kind, "java": p.java, "cls": p.cls, "method": p.method, "at": p.at,
                     "inside": p.inside, "sim": p.sim, "what": p.what, "args": p.args, "versions": per})
    fixes: list[dict[str, Any]] = [
        {"fix": f.finding, "switch": f.switch, "java": f.java, "where": f.where, "what": f.what,
         "versions": {v: {k: d for k, d in c.fixes.get(f.finding, {}).items() if k in ("found", "why")}
                      for v, c in checked.items()}} for f in P.FIXES]
    if args.json:
        print(json.dumps({"points": rows, "fixes": fixes, "versions": versions}))
        return 0
    # plain lines (not the console's wrapping): one per point, then one per fix
    for r in rows:
        where = r["java"] + (" (exit)" if r["at"] == "exit" else "")
        if r["inside"]:
            cls, meth = r["inside"].split("#")
            where += f" inside {cls.rsplit('.', 1)[-1]}.{meth}"
        vs = "  ".join(f"{v}: {'yes' if d.get('found') else 'NO (' + str(d.get('why')) + ')'}"
                       for v, d in r["versions"].items())
        print(f"{r['point']:24} {r['kind']:10} {where}")
        print(f"{'':24} sim: {r['sim']}" + (f"; args: {', '.join(r['args'])}" if r["args"] else "")
              + (f"; {vs}" if vs else ""))
    for f in fixes:
        vs = "  ".join(f"{v}: {'yes' if d.get('found') else 'not needed (' + str(d.get('why')) + ')'}"
                       for v, d in f["versions"].items())
        print(f"fix {f['fix']} ({f['switch']}, {f['java']}): {f['where']}: {f['what']}" + (f"; {vs}" if vs else ""))
    if not versions:
        out.print("no version fetched: rmqha real points --version V checks a version's jars", markup=False)
    return 0
def claim_run_dir(folder: Path, fresh: bool) -> None:
    """The run folder: refused as ``control.up`` would refuse it (``rundir.earlier_run``: looks only), then claimed
    (``common.claim_dir``), before anything starts."""
    try:
        rundir.earlier_run(folder, SPEC_FILE, C.RUN_ENTRIES, fresh=fresh, what="real cluster")
    except rundir.RunDirError as exc:
        raise UserError(str(exc)) from None
    claim_dir(str(folder), "--dir")


def require_netem(what: str) -> None:
    """A netem fault on a kernel without ``sch_netem`` is refused at once (``netns.netem_status``)."""
    ok, line = netns.netem_status()
    if not ok:
        raise UserError(f"{what} needs tc netem, which this machine lacks: {line}")


def _test(args: argparse.Namespace, out: Console) -> int:
    cfg, profile = real_cfg(args)
    if "net-loss-master" in args.faults:
        require_netem("--faults net-loss-master")
    if args.junit:
        claim_file(args.junit, "--junit")
    claim_run_dir(Path(args.dir), args.fresh)
    opts = RealTestOptions(Path(args.dir), cfg, profile, args.version, duration=args.duration, faults=args.faults,
                           down=args.down, settle=args.settle, fresh=args.fresh, agent=agent_options(args))
    say = (lambda m: None) if args.json else (lambda m: out.print(m))
    r = run_test(opts, say)
    if args.junit:
        junit.write(args.junit, junit.real_test_suite(r, args.version))
    if args.json:
        print(json.dumps(r, sort_keys=True, default=str))
    else:
        c = r["counts"]
        out.print(f"{'valid' if r['valid'] else 'INVALID'}: {c['sent']} sent, {c['acked']} acknowledged, "
                  f"{c['seen']} read, final master {r['finalMaster']}; {len(r['checked'])} invariants checked")
        for v in r["violations"]:
            out.print(f"  {v['invariant']}: {v['message']}")
        for f in r["failovers"]:
            out.print(real_failover_line(f), markup=False)
        for n in r["notes"]:
            out.print(f"  note: {n}")
        if r.get("agent"):
            a = r["agent"]
            out.print(f"  agent {a['version']}: fixes {', '.join(r['fixes']) or 'none'}"
                      + (f" (applied {a['fixesApplied']})" if a.get("fixesApplied") else "")
                      + (f"; not needed by {r['version']}: {a['fixesAbsent']}" if a.get("fixesAbsent") else "")
                      + (f"; crashed at a point: {', '.join(a['crashed'])}" if a.get("crashed") else ""), markup=False)
        out.print(f"report: {r['report']}")
    return 0 if r["valid"] else 1


def _repro(args: argparse.Namespace, out: Console) -> int:
    unknown = [i for i in args.ids if i not in REPROS]
    if unknown:
        raise UserError(f"no reproduction of {unknown[0]!r} (known: {', '.join(sorted(REPROS))})")
    if args.list:
        for r in sorted((REPROS[i] for i in dict.fromkeys(args.ids)) if args.ids else REPROS.values(),
                        key=lambda r: r.id):
            exp = "; ".join(f"{v}: {e}" for v, e in sorted(r.expect.items())) or "no expectation recorded"
            out.print(f"{r.id} ({r.invariant}, ~{r.minutes:g} min, profile {r.profile}): {r.title}")
            out.print(f"  how: {r.how}")
            out.print(f"  expected: {exp}")
        return 0
    if not args.ids:
        raise UserError(f"name a finding (known: {', '.join(sorted(REPROS)) or 'none'}), or --list")
    versions = list(args.version) or [maven.PINNED]
    fixes = tuple(P.fix_ids(args.fix))
    if args.junit:
        claim_file(args.junit, "--junit")
    claim_dir(args.dir, "--dir")
    C.preflight()
    ok = True
    outcomes = []
    for fid in args.ids:
        r = REPROS[fid]
        for v in versions:
            rates: list[str] = []
            for n in range(1, args.repeat + 1):
                folder = Path(args.dir) / fid / f"v{v}-{n}"
                say = (lambda m: None) if args.json else (lambda m: out.print(f"  {m}"))
                if not args.json:
                    out.print(f"{fid} on RocketMQ {v}, run {n}"
                              + (f" with the fix rules {', '.join(fixes)}" if fixes else "") + f": {r.how}")
                o = run_repro(r, v, folder, n, say, fixes=fixes)
                outcomes.append(o)
                if args.junit:  # after each run: a long campaign's file holds what is done so far
                    junit.write(args.junit, junit.real_repro_suite(outcomes))
                rates.append(o.verdict)
                ok = ok and o.verdict == (NOT_REPRODUCED if fixes else REPRODUCED)
                if args.json:
                    print(json.dumps({k: getattr(o, k) for k in ("finding", "version", "run", "verdict", "invariant",
                                                                    "why", "evidence", "seconds", "folder", "fixes",
                                                                    "agent")}))
                    continue
                style = {"reproduced": "red", "not reproduced": "green"}.get(o.verdict, "yellow")
                out.print(f"[{style}]{o.verdict}[/]: {fid} ({o.invariant}) on RocketMQ {v} in {o.seconds:.0f} s: "
                          f"{o.why}")
                for e in o.evidence:
                    out.print(f"    {e}")
                out.print(f"  files: {o.folder}")
            if args.repeat > 1 and not args.json:
                out.print(f"{fid} on {v}: reproduced in {rates.count(REPRODUCED)} of {len(rates)} runs "
                          f"({rates.count('inconclusive')} inconclusive)")
    return 0 if ok else 1
