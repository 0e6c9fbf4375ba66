"""The JRaft flavour of the controller (``[controller] controllerType = jRaft``, RocketMQ 5.2+).

Everything that decides what a JRaft entry does when it applies lives here; ``node.py`` logs requests and routes
results. Rules (``JRaftController``, ``JRaftControllerStateMachine``,
``RaftReplicasInfoManager``, ``RaftBrokerHeartBeatManager``):

* **The request is the entry**, every kind: writes, reads, heartbeats, channel closes and the inactive scan
  (``JRaftController.applyToJRaft``). A node that is not the Raft leader answers ``CONTROLLER_NOT_LEADER`` at once;
  the leader serves as soon as Raft elects it (``isLeaderState`` is ``node.isLeader()``; no empty entry first, no
  event scheduler, no inactive-master scan: ``startScheduling`` is empty).
* **Validation happens at apply**, on every node (``processEvent``): the ``ReplicasInfoManager`` operation runs on
  the applied state and its events apply at once; the leader's closure completes the request with the result.
* **Liveness is replicated and stamped.** The live table (``RaftReplicasInfoManager.brokerLiveTable``) is part of
  the applied state. A request's liveness is ``lastUpdate + timeout >= invokeTime``, the time the request carries
  (``isBrokerActive(..., invokeTime)``, ``BrokerValidPredicateWithInvokeTime``), so every node computes the same
  result whenever it applies the entry. Switch ``jraft-apply-local-time`` reads the applying node's clock instead.
* **Heartbeats** (``onBrokerHeartBeat``): the live info is stamped with the receiving leader's clock; a new entry
  keeps everything it carries (``DefaultBrokerHeartbeatManager`` drops confirmOffset, this does not); an existing
  one refreshes timestamp, timeout and priority, and (epoch, maxOffset, confirmOffset) move only forward.
* **The scan** (``RaftBrokerHeartBeatManager.scanNotActiveBroker``, every ``scanNotActiveBrokerInterval`` on the
  leader, first after 2 s, skipped until ``jRaftScanWaitTimeoutMs`` after the first heartbeat the node received)
  is an entry stamped with ``checkTimeMillis``: at apply, expired entries leave the table, and the sets that
  ``scanNeedReelectBrokerSets`` picks with the *negated* predicate (QUIRK: sets whose master is alive and which
  have an inactive member) are added as ``(null, name, null)`` unless a member of that set already expired.

Simplifications (docs/fidelity.md, part 1): ``invokeTime`` is the request's arrival at the controller (RocketMQ
stamps it where the header is built, the broker's clock for broker requests, earlier by the one-way delay); the
leader's liveness reads for ``notifyBrokerRoleChanged`` read its applied table instead of a
``GET_BROKER_LIVE_INFO_REQUEST`` round; snapshots are not taken (a restarted node re-applies its log).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..codes import INT_MAX
from .elect_policy import BrokerLiveInfo, ElectionFailed, ElectPolicy
from .heartbeat import DEFAULT_BROKER_CHANNEL_EXPIRED_TIME, Identity
from .replicas_info import ControllerResult, ReplicasInfoManager, RequestEntry

LIVENESS_OPS = frozenset({"heartbeat", "closeChannel"})  # entries that only feed the live table


class RaftLiveTable:
    """``RaftReplicasInfoManager.brokerLiveTable``: replicated, changed only by applied entries."""

    def __init__(self) -> None:
        self.table: dict[Identity, BrokerLiveInfo] = {}

    def is_active(self, cluster: str, name: str, broker_id: int, at: int) -> bool:
        info = self.table.get((cluster, name, broker_id))
        return info is not None and info.last_update_timestamp + info.heartbeat_timeout_millis >= at

    def live_info(self, cluster: str, name: str, broker_id: int) -> BrokerLiveInfo | None:
        return self.table.get((cluster, name, broker_id))

    def on_heartbeat(self, a: dict[str, Any], stamp: int) -> None:
        key = (a["clusterName"], a["brokerName"], -1 if a.get("brokerId") is None else a["brokerId"])
        new = BrokerLiveInfo(a["brokerName"], a.get("brokerAddr", ""), key[2], stamp,
                             a.get("heartbeatTimeoutMills") or DEFAULT_BROKER_CHANNEL_EXPIRED_TIME,
                             -1 if a.get("epoch") is None else a["epoch"],
                             -1 if a.get("maxOffset") is None else a["maxOffset"],
                             -1 if a.get("confirmOffset") is None else a["confirmOffset"],
                             INT_MAX if a.get("electionPriority") is None else a["electionPriority"])
        prev = self.table.get(key)
        if prev is None:
            self.table[key] = new
            return
        info = replace(prev, last_update_timestamp=new.last_update_timestamp,
                       heartbeat_timeout_millis=new.heartbeat_timeout_millis, election_priority=new.election_priority)
        if new.epoch > info.epoch or (new.epoch == info.epoch and new.max_offset > info.max_offset):
            info = replace(info, epoch=new.epoch, max_offset=new.max_offset, confirm_offset=new.confirm_offset)
        self.table[key] = info

    def check_not_active(self, check_time: int, rim: ReplicasInfoManager) -> list[list[Any]]:
        """``checkNotActiveBroker``: remove the expired entries; report them and the QUIRK's sets."""
        expired = [k for k, info in self.table.items()
                   if check_time - info.last_update_timestamp > info.heartbeat_timeout_millis]
        for k in expired:
            del self.table[k]
        reported = {k[1] for k in expired}
        sets = rim.scan_need_reelect_broker_sets(lambda c, n, i: not self.is_active(c, n, i, check_time))
        return [list(k) for k in expired] + [[None, name, None] for name in sets if name not in reported]


def request(op: str, stamp: int, **args: Any) -> RequestEntry:
    return RequestEntry(op, tuple(sorted(args.items())), stamp)


def execute(rim: ReplicasInfoManager, live: RaftLiveTable, entry: RequestEntry, now: int,
            local_time: bool = False) -> ControllerResult | None:
    """``JRaftControllerStateMachine.processEvent`` for one entry: the operation on the applied state, its events
    applied. ``None``: the operation failed (the closure runs with an error status)."""
    a = dict(entry.args)
    at = now if local_time else entry.stamp  # the switch: liveness by the applying node's clock

    def alive(cluster: str, name: str, broker_id: int) -> bool:
        return live.is_active(cluster, name, broker_id, at)

    op = entry.op
    try:
        if op == "heartbeat":
            live.on_heartbeat(a, entry.stamp)
            return ControllerResult()
        if op == "closeChannel":
            live.table.pop((a["clusterName"], a["brokerName"], a["brokerId"]), None)
            return ControllerResult()
        if op == "checkNotActive":
            return ControllerResult(body={"inactive": live.check_not_active(at, rim)})
        if op == "alterSyncStateSet":
            result = rim.alter_sync_state_set(a["brokerName"], a.get("masterBrokerId"), a.get("masterEpoch"),
                                              a.get("syncStateSet") or [], a.get("syncStateSetEpoch"), alive)
        elif op == "electMaster":
            result = rim.elect_master(a["brokerName"], a.get("brokerId"), bool(a.get("designateElect")),
                                      ElectPolicy(alive, live.live_info), a.get("clusterName", ""))
        elif op == "registerSuccess":
            result = rim.register_broker(a.get("clusterName", ""), a["brokerName"], a["brokerId"],
                                         a["brokerAddress"], alive)
        elif op == "getReplicaInfo":
            result = rim.get_replica_info(a["brokerName"])
        elif op == "getSyncStateData":
            result = rim.get_sync_state_data(list(a.get("brokerNames") or []), alive)
        elif op == "cleanBrokerData":
            result = rim.clean_broker_data(a.get("clusterName"), a["brokerName"], a.get("brokerControllerIdsToClean"),
                                           bool(a.get("isCleanLivingBroker")), alive)
        elif op == "getNextBrokerId":
            result = rim.get_next_broker_id(a.get("clusterName", ""), a["brokerName"])
        elif op == "applyBrokerId":
            result = rim.apply_broker_id(a.get("clusterName", ""), a["brokerName"], a["appliedBrokerId"],
                                         a["registerCheckCode"])
        else:
            raise ValueError(f"unknown JRaft request {op!r}")
    except ElectionFailed:
        return None
    for ev in result.events:
        rim.apply_event(ev)
    return result
