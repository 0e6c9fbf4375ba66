"""Issue 6 part 2 (its nameserver half): broker registration with its state version and the route producers get,
against ``RouteInfoManager.registerBroker`` / ``onChannelDestroy`` and the client's route refresh.

The part's fidelity switch, ``ns-ignores-state-version`` (caught by NS-ROUTE-HIGHEST-EPOCH), has its scenario in
``impl/sim/scenarios.py`` and is run by ``tests/test_bugs.py``.
"""

from __future__ import annotations

from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.codes import RequestCode, ResponseCode
from rmqha.impl.rng import DetRng
from rmqha.impl.runtime import Command
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.nameserver import NameServerNode
from rmqha.impl.sim.world import Simulation

from tests.harness import ActorDriver, ObsRecorder


def _register(d: ActorDriver, node: str, bid: int, version: int) -> dict[str, Any]:
    d.deliver(node, Command(RequestCode.REGISTER_BROKER, 0, {
        "clusterName": "c", "brokerName": "broker-a", "brokerAddr": f"{node}:10911", "brokerId": bid,
        "haServerAddr": f"{node}:10912", "stateVersion": version}))
    (_, reply), = d.take_sent()
    assert reply.code == ResponseCode.SUCCESS
    return reply.header


def _route(d: ActorDriver) -> dict[str, Any]:
    d.deliver("p1", Command(RequestCode.GET_ROUTEINFO_BY_TOPIC, 0, {"brokerName": "broker-a"}))
    (_, reply), = d.take_sent()
    return reply.header


def test_a_lower_state_version_cannot_take_a_live_masters_id():
    """registerBroker: a registration for an id held by another live address with a higher stateVersion is
    ignored; a higher one takes the id; the same address moving to another id leaves the old one."""
    d = ActorDriver(NameServerNode("ns", DetRng(1)))
    _register(d, "b1", 0, 1)
    assert _register(d, "b2", 2, 1) == {"haServerAddr": "b1:10912", "masterAddr": "b1:10911"}
    _register(d, "b2", 0, 2)  # b2 elected at mE 2
    assert _route(d)["masterAddr"] == "b2:10911"
    _register(d, "b1", 0, 1)  # the deposed master's periodic registration
    assert _route(d)["masterAddr"] == "b2:10911" and d.observed("ns.reject")
    _register(d, "b1", 1, 2)  # b1 learns it is a slave: it leaves id 0
    assert _route(d)["brokerAddrs"] == {"0": "b2:10911", "1": "b1:10911"}


def test_a_closed_channel_frees_the_id():
    """onChannelDestroy removes every address the dead process registered; a lower version may then register."""
    d = ActorDriver(NameServerNode("ns", DetRng(1)))
    _register(d, "b2", 0, 2)
    d.actor.on_channel_closed("b2")
    assert _route(d)["masterAddr"] is None
    _register(d, "b1", 0, 1)
    assert _route(d)["masterAddr"] == "b1:10911"


def test_the_switch_lets_the_last_registration_win():
    """ns-ignores-state-version: the pre-controller nameserver rule; the deposed master takes the route back."""
    d = ActorDriver(NameServerNode("ns", DetRng(1), frozenset({B.NS_IGNORES_STATE_VERSION})))
    _register(d, "b2", 0, 2)
    _register(d, "b1", 0, 1)
    assert _route(d)["masterAddr"] == "b1:10911"



def test_a_stale_producer_route_recovers_after_a_failover():
    """The producer keeps its cached route (MQClientInstance.updateTopicRouteInfoFromNameServer runs every
    pollNameServerInterval); a send to the deposed master fails, the producer refreshes its route and the
    next sends go to the new master, whose registration carries the higher state version."""
    lines = ObsRecorder()
    cfg = config_from_dict({"workload": {"produce_interval": 0, "consume_interval": 0}}, default_config("safe"))
    cut = {"do": "partition", "id": "p", "links": [["b2", "ctl"], ["ctl", "b2"]]}
    schedule = [{"t": 8000, "do": "produce", "count": 1}, {"t": 8500, **cut},
                {"t": 25_000, "do": "produce", "count": 1}, {"t": 40_000, "do": "produce", "count": 2}]
    sim = Simulation(cfg, 1, schedule=schedule, max_time=50_000, recorder=lines)
    assert sim.run() is None
    sends = [o for _, o in lines.obs if o["k"] == "client.send-result"]
    assert sends[0]["status"] == "PUT_OK"
    assert any(o["status"] != "PUT_OK" for o in sends), "the send on the stale route should fail"
    assert sends[-1]["status"] == "PUT_OK" and sim.nodes["p1"].master != "b2"  # type: ignore[union-attr]
    regs = [o for _, o in lines.obs if o["k"] == "ns.register" and o["brokerId"] == 0]
    assert [o["version"] for o in regs] == sorted(o["version"] for o in regs)
