"""``rmqha real test``: a real cluster, a workload, a fault schedule, then the verdict on what was observed.

Phases, each bounded: **up** (every JVM listens), **warm-up** (the admin API shows a master whose SyncStateSet
holds every broker), **topic** (created on the master and on each slave with the admin API, so that a failover
finds it: ``autoCreateTopicEnable`` is off), **workload** (the Java tool's producer and consumer from the start;
the nemesis plays its recipes spread over ``duration``), **settle** (every fault undone, the producer stopped,
then until what the admin API shows converges: the SyncStateSet whole, every commit log at the same end, the
progress invariants holding; within a bound that follows the run's measured pace: ``converge.py``), **drain**
(the consumer reads until it has nothing new for 3 s), **down** (the supervisor SIGKILLs every JVM: the files
stay as a crash leaves them) and **check** (``check.py``, on the client history, the observer's snapshots and
the files each node left).

Outputs in the run folder: ``result.json``, ``history.jsonl`` (the client history in the kit's vocabulary),
``trace.jsonl`` (the run in the kit's trace shape, ``"faults": {"mode": "real"}``), ``controller-log.jsonl``
(the controller's committed event log, read from its store), ``report.html``; the nodes' files and logs stay.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..impl.sim.children import ending_on_signals
from ..impl.sim.config import Config
from . import agent as A
from . import control as C
from .check import EpochRefusals, evaluate
from .clients import Client, Observer, Tail
from .converge import CAP_FACTOR, Bounds, Convergence, Wait, settled, whole
from .nemesis import AGENT_RECIPES, RECIPES, Nemesis, NemesisError
from .observe import Snapshot, observe_args, run_tool
from .report import write_outputs
from .spec import RealSpec

TOPIC = "RmqhaTopic"
WARM_TIMEOUT_S = 120.0
"""The warm-up's bound on an idle machine; it grows with the run's pace (``converge.Wait``)."""


@dataclass
class RealTestOptions:
    folder: Path
    cfg: Config
    profile: str
    version: str
    duration: float = 60.0
    faults: tuple[str, ...] = ("kill-master",)
    down: float = 5.0
    settle: float = 60.0
    fresh: bool = False
    agent: A.AgentOptions | None = None  # the kit's agent (implied by a recipe that arms a point)

    def agent_options(self) -> A.AgentOptions | None:
        if self.agent is None and any(r in AGENT_RECIPES for r in self.faults):
            return A.AgentOptions()
        return self.agent


def _whole(spec: RealSpec, s: Snapshot) -> bool:
    return whole(spec.brokers, s)


def follow(obs: Observer, w: Wait) -> Wait:
    """Feed the observer's snapshots to ``w`` until it has an outcome."""
    seen = len(obs.snaps)
    while w.outcome(time.monotonic()) is None:
        obs.poll()
        for s in obs.snaps[seen:]:
            w.feed(s, time.monotonic())
        seen = len(obs.snaps)
        time.sleep(0.25)
    return w


def settle(spec: RealSpec, obs: Observer, bounds: Bounds, say: Callable[[str], None]) -> Convergence:
    """Wait until the run converges, is stuck, or is still moving at the cap (``converge.py``)."""
    conv = Convergence(list(spec.brokers), bounds, time.monotonic())
    refusals = EpochRefusals(spec)
    seen = len(obs.snaps)
    while True:
        obs.poll()
        refused = refusals.read()
        for s in obs.snaps[seen:]:
            conv.feed(s, time.monotonic(), refused)
        seen = len(obs.snaps)
        out = conv.outcome(time.monotonic())
        if out is not None:
            r = conv.result(time.monotonic())
            say(f"settle: {out} after {r['waitedS']:g} s (pace {bounds.pace_s:g} s, bound {bounds.bound_s:g} s)")
            return conv
        time.sleep(0.25)


def run_test(opts: RealTestOptions, say: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """The checked run. SIGTERM / SIGINT / SIGHUP end it through the ``finally`` that ends the cluster
    (``ending_on_signals``: :class:`~rmqha.impl.sim.children.Ended`, exit ``128 + signal`` from the CLI)."""
    for r in opts.faults:
        if r not in RECIPES:
            raise C.RealError(f"unknown fault {r!r} (known: {', '.join(RECIPES)})")
    with ending_on_signals():
        return _run_test(opts, say)


def _run_test(opts: RealTestOptions, say: Callable[[str], None]) -> dict[str, Any]:
    t_begin = time.monotonic()
    lifetime = int(opts.duration + opts.settle + 300 + 60 * len(opts.faults))
    spec = C.up(opts.folder, opts.cfg, version=opts.version, profile=opts.profile, lifetime_s=lifetime,
                fresh=opts.fresh, owner=os.getpid(), say=say, agent=opts.agent_options())
    say(f"up in {time.monotonic() - t_begin:.0f} s: {', '.join(spec.nodes)}")
    notes: list[str] = []
    timing: dict[str, float] = {"upS": round(time.monotonic() - t_begin, 1)}
    convergence: dict[str, Any] | None = None
    live: Snapshot | None = None
    clients: list[Client] = []
    nem: Nemesis | None = None
    try:
        observer = Client(spec, "observe", observe_args(spec, once=False, interval_ms=500))
        clients.append(observer)
        obs = Observer(spec, observer)
        warm_bounds = Bounds.from_pace(timing["upS"], WARM_TIMEOUT_S)
        warming = follow(obs, Wait(lambda s: _whole(spec, s), warm_bounds, time.monotonic()))
        warm = warming.met
        if warm is None:
            raise C.RealError(f"no master with a whole SyncStateSet after {time.monotonic() - t_begin:.0f} s "
                              f"({warming.outcome(time.monotonic())}: the admin API's view last changed "
                              f"{time.monotonic() - warming.changed_at:.0f} s before); see {spec.dir / 'logs'}")
        timing["warmS"] = round(time.monotonic() - t_begin, 1)
        say(f"warm: master {warm.master} at masterEpoch {warm.leader.master_epoch if warm.leader else '?'}")
        _create_topic(spec, warm, say, notes)
        wl = spec.cfg.workload
        common = ["--namesrv", spec.namesrv_addr, "--topic", TOPIC]
        clients.append(Client(spec, "consumer", ["consume", *common, "--group", "rmqha_consumer",
                                                 "--interval-ms", str(max(50, wl.consume_interval))]))
        clients.append(Client(spec, "producer", ["produce", *common, "--group", "rmqha_producer",
                                                 "--interval-ms", str(wl.produce_interval), "--size",
                                                 str(wl.message_size_max), "--key-prefix", "p1-",
                                                 "--timeout-ms", str(wl.send_timeout),
                                                 "--route-refresh-ms", str(wl.route_refresh)]))
        producer = clients[-1]
        nem = Nemesis(spec, obs, opts.down, say)
        start = time.monotonic()
        gap = opts.duration / (len(opts.faults) + 1)
        for i, recipe in enumerate(opts.faults):
            _sleep_until(start + gap * (i + 1) - opts.down / 2, obs)
            try:
                nem.play(recipe)
            except NemesisError as exc:
                notes.append(f"{recipe}: {exc}")
                say(f"{recipe}: {exc}")
        _sleep_until(start + opts.duration, obs)
        nem.undo_all()
        producer.stop()
        nem.act("stop-producer", node="p1")
        t_settle = time.monotonic()
        bounds = Bounds.from_pace(timing["warmS"] - timing["upS"], opts.settle)
        conv = settle(spec, obs, bounds, say)
        convergence = conv.result(time.monotonic())
        live = conv.snapshot()
        if live is None or not settled(spec.brokers, live):
            notes.append(f"not settled within {convergence['waitedS']:g} s (a master with the whole SyncStateSet "
                         f"and every commit log at the same end; {convergence['outcome']})")
        if convergence["outcome"] == "moving":
            notes.append(f"still converging at the cap ({bounds.cap_s:g} s, {CAP_FACTOR:g} × the bound): slow, not "
                         "stuck; the progress invariants (LIVE-*) were not judged")
            live = None
        timing["settleS"] = round(time.monotonic() - t_settle, 1)
        _drain(spec.dir / "clients" / "consumer.jsonl", 3.0, 30.0)
        for c in clients:
            c.stop()
        obs.poll()
    finally:
        for c in clients:
            if c.running():
                c.stop(2.0)
        if nem is not None:
            nem.close()
        C.down(spec.dir)
    say("down; checking")
    where = "the last snapshot"
    if convergence is not None:
        where = (f"the snapshot the settle converged on ({convergence['afterS']:g} s into it)"
                 if convergence["outcome"] == "converged" else
                 f"the settle's last snapshot (nothing moved for {convergence['quietS']:g} s past its "
                 f"{convergence['boundS']:g} s bound)")
    result = evaluate(spec, nem.events if nem else [], nem.context if nem else [], notes, live=live,
                      judge_live=convergence is not None and convergence["outcome"] != "moving", live_where=where)
    result.update(profile=opts.profile, version=opts.version, rocketmq=C.rocketmq_of(spec.dir),
                  duration=opts.duration, recipes=list(opts.faults),
                  timing=timing, wallSeconds=round(time.monotonic() - t_begin, 1), convergence=convergence,
                  context=nem.context if nem else [], **agent_result(spec))
    result["report"] = write_outputs(spec, result)
    return result


def agent_result(spec: RealSpec) -> dict[str, Any]:
    """What a run's result says of the agent: ``fixes`` (active), ``agent`` (its version, the fixes the version
    has no method for, the points it lacks, its events by kind, each fix's applications); without the agent,
    ``fixes`` [] and ``agent`` null."""
    if spec.agent is None:
        return {"fixes": [], "agent": None}
    events = A.read_events(spec.agent_events)
    by_ev: dict[str, int] = {}
    applied: dict[str, int] = {}
    for e in events:
        by_ev[str(e.get("ev"))] = by_ev.get(str(e.get("ev")), 0) + 1
        if e.get("ev") == "fix":
            applied[str(e.get("fix"))] = applied.get(str(e.get("fix")), 0) + 1
    return {"fixes": list(spec.agent["fixes"]),
            "agent": {"version": spec.agent["agentVersion"], "fixesAbsent": spec.agent.get("fixesAbsent", {}),
                      "missingPoints": spec.agent.get("missingPoints", {}), "events": by_ev, "fixesApplied": applied,
                      "crashed": [f"{e['node']} at {e.get('point')}" for e in events
                                  if e.get("ev") == "hit" and e.get("fired") and e.get("action") == "crash"]}}


def _create_topic(spec: RealSpec, warm: Snapshot, say: Callable[[str], None], notes: list[str]) -> None:
    """``updateTopic`` on the master, then on each slave (one JVM for all; one per broker if that fails)."""
    queues = spec.cfg.workload.queues or 2
    order = [b for b in [warm.master, *spec.brokers] if b is not None]
    order = list(dict.fromkeys(order))

    def update(brokers: list[str]) -> str | None:
        lines = run_tool(spec, "admin", "update-topic", "--addr", ",".join(spec.front_addr(b) for b in brokers),
                         "--topic", TOPIC, "--queues", str(queues), timeout=90)
        if any(d.get("k") == "admin" and d.get("ok") for d in lines):
            return None
        return str(next((d.get("error") for d in lines if d.get("error")), "no answer"))

    if update(order) is not None:
        for b in order:
            err = update([b])
            if err is not None:
                notes.append(f"topic {TOPIC} on {b}: {err}")
                say(f"topic {TOPIC} on {b}: {err}")
    say(f"topic {TOPIC}: {queues} queues on {', '.join(order)}")


def _drain(path: Path, quiet_s: float, timeout: float) -> None:
    """Wait until the consumer has printed nothing new for ``quiet_s`` seconds (at most ``timeout``)."""
    tail = Tail(path)
    end = time.monotonic() + timeout
    last = time.monotonic()
    while time.monotonic() < end:
        if any(d.get("k") == "seen" for d in tail.read()):
            last = time.monotonic()
        elif time.monotonic() - last >= quiet_s:
            return
        time.sleep(0.3)


def _sleep_until(t: float, obs: Observer) -> None:
    while True:
        left = t - time.monotonic()
        if left <= 0:
            return
        obs.poll()
        time.sleep(min(left, 0.5))

