"""Carry a model trace (a TLC counterexample or the model's own) to the implementation: the same perturbations,
played as a fault schedule on the deterministic simulator, so that a spec-level scenario becomes a replayable
implementation trace.

Rules of the translation. The model's protocol steps (elections, syncs, handshakes, transfers, acks) are not
scheduled: the implementation takes them by itself. Only what the model leaves to the environment is: Produce
(one send), Crash (with powerLoss when the step says so), Restart, Partition/Heal (the broker and the controller
cut both ways) and AdminElect. What the model gets by scheduling (a slave that has not connected yet) is made
true with a fault: every broker but the first master is cut from the other brokers (HA only) until the step at
which it first handshakes in the model trace. Each environment step gets its own slot of ``slot_ms`` so that the
implementation's timers (heartbeat timeout 10 s, RPC timeout 3 s) run out between two of them.

Model brokers are named b1..bN like the simulator's nodes, but who wins the first election in the simulator
depends on its timing; a probe run (the same config and holds, no other fault) finds the first master, and model
broker names are mapped onto simulator nodes so that the model's first master is the simulator's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rmqha.impl.invariants import BY_ID
from rmqha.impl.sim.actions import Action
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.runner import RunResult, run

from .trace_io import TLA_TO_ID

ENV_ACTIONS = ("Produce", "Crash", "Restart", "Partition", "Heal", "AdminElect")


@dataclass
class Translation:
    config: dict[str, Any]
    schedule: list[Action]
    enabled: list[str]  # catalogue ids checked (those the model trace checked)
    expect: str | None  # catalogue id the model trace violates
    mapping: dict[str, str]  # model broker -> simulator node
    max_time: int


def _settings(constants: dict[str, Any]) -> dict[str, Any]:
    return {"cluster": {"brokers": len(constants["Brokers"])},
            "store": {"allAckInSyncStateSet": bool(constants.get("AllAck", True))},
            "controller": {"enableElectUncleanMaster": bool(constants.get("Unclean", False))},
            "workload": {"produce_interval": 0, "consume_interval": 0}}


def _first_master(steps: list[dict[str, Any]]) -> str | None:
    for st in steps:
        act = st.get("act")
        if act and act[0] in ("BrokerElect", "ControllerElect", "AdminElect") and act[-1] != "NONE":
            return str(act[-1])
    return None


def _holds(nodes: list[str], first: str) -> list[Action]:
    return [{"t": 0, "do": "partition", "id": f"ha-{n}",
             "links": [[a, b] for o in nodes if o != n for a, b in ((n, o), (o, n))]}
            for n in nodes if n != first]


def _probe_first_master(settings: dict[str, Any], holds: list[Action], seed: int, until: int) -> str | None:
    cfg = config_from_dict(settings, default_config("safe"))
    res = run(cfg, seed, 100_000, schedule=holds, max_time=until)
    for line in (res.text or "").splitlines()[1:-1]:
        for ob in json.loads(line).get("obs", []):
            if ob.get("k") == "brk.role" and ob.get("role") == "MASTER":
                return str(ob["n"])
    return None


def translate(objs: list[dict[str, Any]], *, seed: int = 1, start_ms: int = 6000,
              slot_ms: int = 12000) -> Translation:
    """The implementation run that plays a model trace's environment steps (see the module's rules)."""
    header, steps, footer = objs[0], objs[1:-1], objs[-1]
    constants = header["constants"]
    names = sorted(constants["Brokers"]) if isinstance(constants["Brokers"], list) else \
        [f"b{i + 1}" for i in range(int(constants["Brokers"]))]
    nodes = [f"b{i + 1}" for i in range(len(names))]
    settings = _settings({**constants, "Brokers": names})
    model_first = _first_master(steps) or names[0]
    # probe: who does the simulator elect first, with every other broker held?
    impl_first = None
    for cand in nodes:
        got = _probe_first_master(settings, _holds(nodes, cand), seed, start_ms)
        if got == cand:
            impl_first = cand
            break
    if impl_first is None:
        raise ValueError("the simulator elects no master before the first scheduled step")
    rest_model = [n for n in names if n != model_first]
    rest_impl = [n for n in nodes if n != impl_first]
    mapping = {model_first: impl_first, **dict(zip(rest_model, rest_impl, strict=True))}
    schedule = _holds(nodes, impl_first)
    handshaken = {impl_first}
    t = start_ms
    for st in steps:
        act = st.get("act")
        if not act:
            continue
        kind, args = act[0], act[1:]
        named = mapping.get(str(args[0])) if args else None
        if kind in ("Handshake", "Crash", "Restart", "Partition", "Heal") and named is None:
            raise ValueError(f"step {st.get('i')}: {kind} names no broker of the trace")
        node = str(named)
        if kind == "Handshake" and node not in handshaken:
            handshaken.add(node)
            schedule.append({"t": t, "do": "heal", "id": f"ha-{node}"})
            t += slot_ms
        elif kind in ENV_ACTIONS:
            if kind == "Produce":
                schedule.append({"t": t, "do": "produce", "count": 1})
            elif kind == "Crash":
                schedule.append({"t": t, "do": "crash", "node": node, "powerLoss": bool(args[1])})
            elif kind == "Restart":
                schedule.append({"t": t, "do": "restart", "node": node})
            elif kind == "Partition":
                schedule.append({"t": t, "do": "partition", "id": f"ctl-{node}",
                                 "links": [[node, "ctl"], ["ctl", node]]})
            elif kind == "Heal":
                schedule.append({"t": t, "do": "heal", "id": f"ctl-{node}"})
            elif kind == "AdminElect":
                schedule.append({"t": t, "do": "admin-elect"})
            t += slot_ms
    checked = header.get("checked") or []
    enabled = sorted({TLA_TO_ID[n] for n in checked if n in TLA_TO_ID and TLA_TO_ID[n] in BY_ID})
    v = footer.get("violation")
    expect = None if v is None else TLA_TO_ID.get(v.get("tla", ""), v.get("id"))
    return Translation(settings, schedule, enabled, expect, mapping, t + slot_ms)


def run_on_impl(tr: Translation, *, seed: int = 1, steps: int = 200_000) -> RunResult:
    """Run the translated schedule on the simulator, checking only the invariants the model trace checked."""
    cfg = config_from_dict(tr.config, default_config("safe"))
    disabled = sorted(set(BY_ID) - set(tr.enabled)) if tr.enabled else []
    return run(cfg, seed, steps, schedule=tr.schedule, max_time=tr.max_time, disabled=disabled)
