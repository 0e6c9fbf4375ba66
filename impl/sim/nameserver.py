"""A minimal nameserver: ``RouteInfoManager.registerBroker`` and the route lookup producers use.

Rules (``namesrv/.../routeinfo/RouteInfoManager.java``):

* ``brokerAddrs`` maps a brokerId (0 = master, else the controller id) to an address; registering drops
  other ids held by the same address (a slave turning master moves from <id> to <0>).
* A registration that would replace a *different* address at the same id is ignored when the address
  already there registered a higher ``stateVersion`` (the masterEpoch): the higher master epoch wins.
* A slave's registration answers with the master's HA address and address, when the master is live.
* A closed channel (the broker process died) removes that broker's entries.
* ``[workload] topic_config``: an accepted registration as master (id 0) whose topic config's data version differs
  from what that address last registered, or that is its first, sets the set's queue data
  (``isBrokerTopicConfigChanged`` / ``createAndUpdateQueueData``); the route carries its read and write counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import bugs as B
from ..codes import MASTER_ID, RequestCode, ResponseCode
from ..rng import DetRng
from ..runtime import Actor, Command, response_to


class NameServerNode(Actor):
    def __init__(self, name: str, rng: DetRng, bugs: frozenset[str] = frozenset()) -> None:
        super().__init__(name, rng)
        self.bugs = bugs
        self.broker_addrs: dict[str, dict[int, str]] = {}  # brokerName -> id -> addr
        self.live: dict[str, tuple[int, str, str]] = {}  # addr -> (stateVersion, haServerAddr, node)
        # brokerName -> addr -> stateVersion of its latest registration as master (id 0), accepted or not: what
        # NS-ROUTE-HIGHEST-EPOCH compares the served route with
        self.master_claims: dict[str, dict[str, int]] = {}
        self.queue_data: dict[str, tuple[int, int]] = {}  # brokerName -> (readQueueNums, writeQueueNums)
        self.topic_versions: dict[str, list[int]] = {}  # addr -> the topic config data version it registered

    def start(self) -> None:
        pass

    def on_request(self, src: str, cmd: Command) -> None:
        if cmd.code == RequestCode.REGISTER_BROKER:
            self.send(src, response_to(cmd, ResponseCode.SUCCESS, self._register(src, cmd.header)))
        elif cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            name = cmd.header["brokerName"]
            addrs = self.broker_addrs.get(name, {})
            header = {"brokerName": name, "masterAddr": addrs.get(MASTER_ID),
                      "brokerAddrs": {str(k): v for k, v in sorted(addrs.items())}}
            if name in self.queue_data:
                header["readQueueNums"], header["writeQueueNums"] = self.queue_data[name]
            self.send(src, response_to(cmd, ResponseCode.SUCCESS, header))
        elif not cmd.oneway:
            self.send(src, response_to(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED))

    def _register(self, src: str, h: Mapping[str, Any]) -> dict[str, Any]:
        name, addr, bid, version = h["brokerName"], h["brokerAddr"], h["brokerId"], h.get("stateVersion", 0)
        claims = self.master_claims.setdefault(name, {})
        if bid == MASTER_ID:
            claims[addr] = version
        else:
            claims.pop(addr, None)
        addrs = self.broker_addrs.setdefault(name, {})
        for k in [k for k, v in addrs.items() if v == addr and k != bid]:
            del addrs[k]
        old = addrs.get(bid)
        if old is not None and old != addr and old in self.live and self.live[old][0] > version \
                and B.NS_IGNORES_STATE_VERSION not in self.bugs:
            self.live.pop(addr, None)
            self.emit({"k": "ns.reject", "brokerName": name, "brokerId": bid, "addr": addr, "version": version,
                       "holder": old, "holderVersion": self.live[old][0]})
            return {}
        addrs[bid] = addr
        first = addr not in self.live
        self.live[addr] = (version, h.get("haServerAddr", ""), src)
        tc = h.get("topicConfig")
        if tc is not None and bid == MASTER_ID and (first or self.topic_versions.get(addr) != tc["version"]) \
                and tc.get("topic"):
            self.queue_data[name] = (int(tc["topic"]["read"]), int(tc["topic"]["write"]))
        if tc is not None:
            self.topic_versions[addr] = tc["version"]
        self.emit({"k": "ns.register", "brokerName": name, "brokerId": bid, "addr": addr, "version": version})
        result: dict[str, Any] = {}
        if bid != MASTER_ID:
            master = addrs.get(MASTER_ID)
            if master is not None and master in self.live:
                result = {"haServerAddr": self.live[master][1], "masterAddr": master}
        return result

    def on_channel_closed(self, peer: str, channel: str | None = None) -> None:
        """``onChannelDestroy``: forget every address the dead process registered (by process, not connection)."""
        gone = [a for a, (_, _, node) in self.live.items() if node == peer]
        for claims in self.master_claims.values():
            for addr in [a for a in claims if a.split(":")[0] == peer]:
                del claims[addr]
        for addr in gone:
            del self.live[addr]
            self.topic_versions.pop(addr, None)
            for addrs in self.broker_addrs.values():
                for k in [k for k, v in addrs.items() if v == addr]:
                    del addrs[k]
