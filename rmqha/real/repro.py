"""Reproductions of the kit's findings on a real RocketMQ build: ``rmqha real repro ID [--version V]``.

A reproduction drives a real cluster (``lab.Lab``) through one finding's mechanism with the harness's faults,
then looks for the finding's effect on what the real system did, and says one of:

* **reproduced**: the finding's invariant broke on the real build, with the evidence (client history lines,
  controller events, epoch-file and commit-log bytes, RocketMQ's own log lines);
* **not reproduced**: the mechanism ran (every precondition the scenario sets up was reached) and the real build
  did not break the invariant;
* **inconclusive**: a precondition was not reached (a window the harness could not hit, a step that timed out),
  so the run says nothing about the finding; ``--repeat N`` gives the rate over N runs.

With ``fixes`` (``rmqha real repro ID --fix F-ID``, ``--fix all``) the run's JVMs carry the kit's agent with
those fix rules (``agent.py``); a reproduction that arms a point (``agent=True``) has the agent too. The outcome
lists the fixes active, the agent's version, the fixes the version has no method for, and the agent's lines that
matter (points fired, fix rules applied) in its evidence.

Each reproduction is a function registered with ``@repro(...)`` in a module of ``rmqha/real/repros/``, with the
finding's id, the invariant it shows, the configuration it needs, what it does (``how``: the exact means, said
plainly, e.g. "the controller's answer to ALTER_SYNC_STATE_SET dropped at the proxy") and what each known version
is expected to show. The function gets a live ``Lab`` and returns a ``Verdict``. Outputs per run in
``DIR/ID/vVERSION-N/``: the run's folder (nodes, logs, events) and ``repro.json``.
"""

from __future__ import annotations

import json
import shutil
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import agent as A
from . import control as C
from .lab import Lab, LabError
from .spec import real_config

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"


@dataclass
class Verdict:
    """What a reproduction function returns."""

    verdict: str  # REPRODUCED | NOT_REPRODUCED | INCONCLUSIVE
    evidence: list[str] = field(default_factory=list)  # the lines that show it, each self-contained
    why: str = ""  # one line: what was seen (or which precondition was not reached)
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Repro:
    id: str
    title: str
    invariant: str
    how: str  # what the scenario does to the real cluster, plainly
    fn: Callable[[Lab], Verdict]
    profile: str = "safe"
    config: dict[str, dict[str, Any]] = field(default_factory=dict)
    expect: dict[str, str] = field(default_factory=dict)  # version -> "present" | "fixed" | an explanation
    minutes: float = 3.0  # a run's typical length on 2 cores
    agent: bool = False  # it arms the agent's points: the run has the agent even without a fix


REPROS: dict[str, Repro] = {}


def repro(id: str, *, title: str, invariant: str, how: str, profile: str = "safe",
          config: dict[str, dict[str, Any]] | None = None, expect: dict[str, str] | None = None,
          minutes: float = 3.0, agent: bool = False) -> Callable[[Callable[[Lab], Verdict]], Callable[[Lab], Verdict]]:
    def deco(fn: Callable[[Lab], Verdict]) -> Callable[[Lab], Verdict]:
        if id in REPROS:
            raise ValueError(f"two reproductions of {id}")
        REPROS[id] = Repro(id, title, invariant, how, fn, profile, config or {}, expect or {}, minutes, agent)
        return fn
    return deco


@dataclass
class Outcome:
    finding: str
    version: str
    run: int
    verdict: str
    invariant: str
    why: str
    evidence: list[str]
    timeline: list[dict[str, Any]]
    seconds: float
    folder: str
    data: dict[str, Any] = field(default_factory=dict)
    fixes: list[str] = field(default_factory=list)  # the fix rules active in the run's JVMs
    agent: dict[str, Any] | None = None  # the agent's version, fixesAbsent, events by kind; None: no agent
    rocketmq: dict[str, Any] = field(default_factory=dict)  # which release each jar came from (C.rocketmq_of)


def agent_evidence(events: list[dict[str, Any]]) -> list[str]:
    """The agent's lines a reproduction's evidence carries: points fired, fix rules applied, what went wrong."""
    out = []
    for e in events:
        ev = e.get("ev")
        if ev == "hit" and e.get("fired"):
            out.append(f"agent {e.get('node')}: {e.get('point')} reached ({e.get('action')}, arm {e.get('id')}, hit "
                       f"{e.get('n')}): {e.get('args')}")
        elif ev == "fix":
            out.append(f"agent {e.get('node')}: fix {e.get('fix')} at {e.get('at')}({e.get('offset')}): cleared "
                       f"{e.get('clearedBytes')} bytes from {e.get('clearedFrom')} of {e.get('file')}, "
                       f"{e.get('nonZeroBytes')} of them not zero (the cut bytes, to {e.get('residueEnd')})")
        elif ev in ("missing", "fix.absent", "error", "fix.error"):
            what = e.get("point") or e.get("fix") or ""
            out.append(f"agent {e.get('node')}: {ev} {what} {e.get('why') or e.get('error') or ''}".rstrip())
    return out


def run_repro(r: Repro, version: str, folder: Path, run: int = 1,
              say: Callable[[str], None] = lambda s: None, fixes: tuple[str, ...] = ()) -> Outcome:
    """One run of ``r`` on ``version`` in ``folder`` (wiped first); the cluster is down when it returns. ``fixes``:
    the agent's fix rules to run with (finding ids)."""
    if folder.exists():
        C.down(folder, quiet=True)
        shutil.rmtree(folder)
    cfg = real_config(r.profile, r.config)
    t0 = time.monotonic()
    agent = A.AgentOptions(fixes=tuple(fixes)) if fixes or r.agent else None
    lab = Lab(folder, cfg, version, profile=r.profile, say=say, agent=agent)
    try:
        with lab:
            v = r.fn(lab)
    except LabError as exc:
        v = Verdict(INCONCLUSIVE, why=f"a step did not happen: {exc}")
    except C.RealError as exc:
        v = Verdict(INCONCLUSIVE, why=f"the cluster failed: {exc}")
    except Exception as exc:  # a bug in a reproduction must not hide the run's files: say it, keep going
        v = Verdict(INCONCLUSIVE, why=f"the reproduction raised {type(exc).__name__}: {exc}",
                    data={"traceback": traceback.format_exc()})
    agent_info: dict[str, Any] | None = None
    evidence = list(v.evidence)
    spec = lab._spec
    if spec is not None and spec.agent is not None:
        events = A.read_events(spec.agent_events)
        evidence += agent_evidence(events)
        by_ev: dict[str, int] = {}
        for e in events:
            by_ev[str(e.get("ev"))] = by_ev.get(str(e.get("ev")), 0) + 1
        agent_info = {"version": spec.agent["agentVersion"], "fixesAbsent": spec.agent.get("fixesAbsent", {}),
                      "events": by_ev}
    out = Outcome(r.id, version, run, v.verdict, r.invariant, v.why, evidence, lab.notes,
                  round(time.monotonic() - t0, 1), str(folder), v.data, list(fixes), agent_info, C.rocketmq_of(folder))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "repro.json").write_text(json.dumps(asdict(out), indent=1, sort_keys=True, default=str),
                                       encoding="utf-8")
    return out

