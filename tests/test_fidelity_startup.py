"""Issue 6 part 6, the broker's start-up in controller mode, against ``ReplicasManager.startBasicService`` and
``BrokerController.start``.

The part's fidelity switch, ``unfence-before-register`` (caught by BRK-FENCED-UNTIL-RUNNING), has its scenario in
``impl/sim/scenarios.py`` and is run by ``tests/test_bugs.py``.
"""

from __future__ import annotations

from typing import Any

from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.world import Simulation

QUIET = {"workload": {"produce_interval": 0, "consume_interval": 0}}
CONTROLLER_CALLS = {"CONTROLLER_GET_METADATA_INFO", "CONTROLLER_GET_NEXT_BROKER_ID", "CONTROLLER_APPLY_BROKER_ID",
                    "CONTROLLER_REGISTER_BROKER", "BROKER_HEARTBEAT", "CONTROLLER_ELECT_MASTER"}


class _Log:
    def __init__(self) -> None:
        self.events: list[tuple[int, dict[str, Any]]] = []
        self.obs: list[tuple[int, dict[str, Any]]] = []

    def step(self, step: int, now: int, event: Any, obs: list[dict[str, Any]]) -> None:
        self.events.append((now, event or {}))
        self.obs.extend((now, o) for o in obs)

    def finish(self, sim: Simulation) -> None:
        pass

    def calls(self, src: str) -> list[str]:
        """The controller requests ``src`` sent, in order of delivery, consecutive repeats folded."""
        out: list[str] = []
        for _, e in self.events:
            if e.get("ev") == "msg" and e["src"] == src and e["dst"] == "ctl":
                op = e["cmd"].get("op")
                if op in CONTROLLER_CALLS and (not out or out[-1] != op):
                    out.append(op)
        return out

    def fenced(self, node: str) -> list[tuple[int, bool]]:
        return [(t, o["fenced"]) for t, o in self.obs if o["k"] == "brk.fenced" and o["n"] == node]


def _sim(schedule: list[dict[str, Any]], max_time: int, brokers: int = 1) -> tuple[Simulation, _Log]:
    log = _Log()
    cfg = config_from_dict({**QUIET, "cluster": {"brokers": brokers}}, default_config("safe"))
    sim = Simulation(cfg, 1, schedule=schedule, max_time=max_time, recorder=log)
    assert sim.run() is None
    return sim, log


def test_a_fresh_broker_starts_in_order_and_unfences_last():
    """startBasicService: sync the controller metadata (find the leader), getNextBrokerId, applyBrokerId (the id
    persisted), registerBrokerToController, one heartbeat, then brokerElect when no master is known; only then
    RUNNING and setFenced(false). BrokerController.start fences first."""
    sim, log = _sim([], 3000)
    calls = log.calls("b1")
    assert calls[:6] == ["CONTROLLER_GET_METADATA_INFO", "CONTROLLER_GET_NEXT_BROKER_ID", "CONTROLLER_APPLY_BROKER_ID",
                         "CONTROLLER_REGISTER_BROKER", "BROKER_HEARTBEAT", "CONTROLLER_ELECT_MASTER"], calls
    fenced = log.fenced("b1")
    assert fenced[0][1] is True and fenced[-1][1] is False and [f for _, f in fenced].count(False) == 1
    node = sim.broker("b1")
    assert node is not None and node.replicas.state.value == "RUNNING"
    assert sim.disks["b1"].broker_identity is not None and sim.disks["b1"].temp_identity is None


def test_a_restart_with_a_persisted_id_registers_directly():
    """confirmNowRegisteringState: a brokerIdentity file skips getNextBrokerId and applyBrokerId; the broker
    registers with the id it has, and (a master known from registration) needs no election."""
    _, log = _sim([{"t": 4000, "do": "crash", "node": "b2"}, {"t": 6000, "do": "restart", "node": "b2"}],
                    9000, brokers=2)
    before = [op for t, e in log.events if t < 6000 and e.get("ev") == "msg" and e["src"] == "b2"
              for op in [e["cmd"].get("op")] if op in CONTROLLER_CALLS]
    assert "CONTROLLER_APPLY_BROKER_ID" in before
    after = [op for t, e in log.events if t >= 6000 and e.get("ev") == "msg" and e["src"] == "b2"
             for op in [e["cmd"].get("op")] if op in CONTROLLER_CALLS]
    assert after[:2] == ["CONTROLLER_GET_METADATA_INFO", "CONTROLLER_REGISTER_BROKER"], after
    assert "CONTROLLER_GET_NEXT_BROKER_ID" not in after and "CONTROLLER_APPLY_BROKER_ID" not in after


def test_fenced_while_the_controller_is_unreachable_then_retried():
    """startBasicService fails while no controller answers; BrokerController retries it every 5 s, and until it
    succeeds the broker is fenced: its store refuses writes (HookUtils.checkBeforePutMessage) and it sends no
    periodic heartbeat or nameserver registration."""
    cut = {"do": "partition", "id": "p", "links": [["b1", "ctl"], ["ctl", "b1"]]}
    sim, log = _sim([{"t": 0, **cut}, {"t": 12_000, "do": "heal", "id": "p"}], 11_000)
    node = sim.broker("b1")
    assert node is not None and node.store.fenced and node.replicas.state.value == "INITIAL"
    tries = [t for t, o in log.obs if o["k"] == "net.drop" and o.get("src") == "b1" and o.get("dst") == "ctl"]
    assert tries and max(tries) >= 5000, "the start-up was not retried"
    assert not [e for _, e in log.events if e.get("ev") == "msg" and e["src"] == "b1" and e["dst"] == "ns"]
    sim.max_time = 20_000
    assert sim.run() is None
    assert node.replicas.state.value == "RUNNING" and not node.store.fenced


def test_the_controller_address_scan_keeps_the_reachable_ones():
    """ReplicasManager.start scans the controller addresses once and then every 3 s
    (scanAvailableControllerAddresses: checkAddressReachable adds an address, an unreachable one is removed), and
    updateControllerMetadata asks only the available ones for the leader. With one controller down, the brokers
    start against the other two; once it is back, the next scans add it again."""
    cfg = config_from_dict({**QUIET, "cluster": {"controllers": 3}}, default_config("safe"))
    down = {"do": "partition", "id": "p", "links": [[b, "ctl3"] for b in ("b1", "b2", "b3")]
            + [["ctl3", b] for b in ("b1", "b2", "b3")]}
    sim = Simulation(cfg, 1, schedule=[{"t": 0, **down}, {"t": 10_000, "do": "heal", "id": "p"}], max_time=9_000)
    assert sim.run() is None
    for b in sim.brokers:
        node = sim.broker(b)
        assert node is not None and node.replicas.state.value == "RUNNING"
        assert node.replicas.available_controller_addresses == ["ctl1:9878", "ctl2:9878"]
    sim.max_time = 14_500
    assert sim.run() is None
    for b in sim.brokers:
        node = sim.broker(b)
        assert node is not None
        assert node.replicas.available_controller_addresses == ["ctl1:9878", "ctl2:9878", "ctl3:9878"]
