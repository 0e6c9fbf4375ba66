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
  one refreshes timestamp, timeout and priority, and (epoch, maxOffset, confirmOffset) move only forward. The key
  keeps a null brokerId as null (the live info says -1; a later lookup with it throws, as in
  ``DefaultBrokerHeartbeatManager``). The receiving node maps *every* channel a heartbeat came
  on to the identity (``brokerChannelIdentityInfoMap.put``), so after a broker reconnects on a new connection,
  closing either the old or the new one logs a ``BROKER_CLOSE_CHANNEL_REQUEST`` that removes the live entry
  (unlike ``DefaultBrokerHeartbeatManager``, whose entry keeps its first channel only).
* **The scan** (``RaftBrokerHeartBeatManager.scanNotActiveBroker``, every ``scanNotActiveBrokerInterval`` on the
  leader, first after 2 s, skipped until ``jRaftScanWaitTimeoutMs`` after the first heartbeat the node received, 5.3.4+)
  is an entry stamped with ``checkTimeMillis``: at apply, expired entries leave the table, and the sets that
  ``scanNeedReelectBrokerSets`` picks with the *negated* predicate (QUIRK: sets whose master is alive and which
  have an inactive member) are added as ``(null, name, null)`` unless a member of that set already expired. From
  5.5.1 (PR #10885, upstream switch jraft-reelect-checks-active) the predicate itself: sets whose master is dead.
  The scan's gate is 5.3.4's (PR #9718, upstream switch jraft-scan-after-wait); 5.3.3's test is inverted.

Simplifications (docs/fidelity.md, part 1): ``invokeTime`` is the request's arrival at the controller (RocketMQ
stamps it where the header is built, the broker's clock for broker requests, earlier by the one-way delay); the
leader's liveness reads for ``notifyBrokerRoleChanged`` read its applied table instead of a
``GET_BROKER_LIVE_INFO_REQUEST`` round.

Snapshots (``[controller] jRaftSnapshotIntervalSecs``, off by default): ``serialize_state`` is
``RaftReplicasInfoManager.serialize`` (the ``ReplicasInfoManager`` tables, then the live table), what
``JRaftControllerStateMachine.onSnapshotSave`` writes and ``onSnapshotLoad`` reads back (``load_state``); when a node
saves one and drops its log, and when a follower installs the leader's, is ``raft.py``'s (sofa-jraft's
``SnapshotExecutorImpl``, ``LogManagerImpl.setSnapshot``, ``Replicator.installSnapshot``).
"""

from __future__ import annotations

import json
import struct
from dataclasses import asdict, replace
from typing import Any

from ..codes import INT_MAX
from .elect_policy import BrokerLiveInfo, ElectionFailed, ElectPolicy
from .heartbeat import DEFAULT_BROKER_CHANNEL_EXPIRED_TIME, Identity, lookup
from .replicas_info import ControllerResult, ReplicasInfoManager, RequestEntry, get_int, get_sized, put_sized

LIVENESS_OPS = frozenset({"heartbeat", "closeChannel"})  # entries that only feed the live table


class RaftLiveTable:
    """``RaftReplicasInfoManager.brokerLiveTable``: replicated, changed only by applied entries."""

    def __init__(self, null_safe: bool = False, reelect_checks_active: bool = False) -> None:
        self.table: dict[Identity, BrokerLiveInfo] = {}
        self.null_safe = null_safe  # BrokerIdentityInfo.equals of 5.5.1+ (``lookup``)
        # checkNotActiveBroker of 5.5.1+ (PR #10885): scanNeedReelectBrokerSets gets the predicate, not its negation
        self.reelect_checks_active = reelect_checks_active

    def is_active(self, cluster: str, name: str, broker_id: int | None, at: int) -> bool:
        info = lookup(self.table, (cluster, name, broker_id), self.null_safe)
        return info is not None and info.last_update_timestamp + info.heartbeat_timeout_millis >= at

    def live_info(self, cluster: str, name: str, broker_id: int | None) -> BrokerLiveInfo | None:
        return lookup(self.table, (cluster, name, broker_id), self.null_safe)

    def on_heartbeat(self, a: dict[str, Any], stamp: int) -> None:
        # the key keeps the id as the request names it, null included; the live info holds realBrokerId (-1 for null)
        key = (a["clusterName"], a["brokerName"], a.get("brokerId"))
        new = BrokerLiveInfo(a["brokerName"], a.get("brokerAddr", ""), -1 if key[2] is None else key[2], stamp,
                             a.get("heartbeatTimeoutMills") or DEFAULT_BROKER_CHANNEL_EXPIRED_TIME,
                             -1 if a.get("epoch") is None else a["epoch"],
                             -1 if a.get("maxOffset") is None else a["maxOffset"],
                             -1 if a.get("confirmOffset") is None else a["confirmOffset"],
                             INT_MAX if a.get("electionPriority") is None else a["electionPriority"])
        prev = lookup(self.table, key, self.null_safe)  # computeIfAbsent compares keys as get does
        if prev is None:
            self.table[key] = new
            return
        info = replace(prev, last_update_timestamp=new.last_update_timestamp,
                       heartbeat_timeout_millis=new.heartbeat_timeout_millis, election_priority=new.election_priority)
        if new.epoch > info.epoch or (new.epoch == info.epoch and new.max_offset > info.max_offset):
            info = replace(info, epoch=new.epoch, max_offset=new.max_offset, confirm_offset=new.confirm_offset)
        self.table[key] = info

    def serialize(self) -> bytes:
        """The live table's part of ``RaftReplicasInfoManager.serialize``: a 4-byte count, then per entry the
        identity and the live info, each behind a 4-byte length (canonical JSON where RocketMQ has Hessian; entries
        in identity order)."""
        out = bytearray(struct.pack(">i", len(self.table)))
        for key in sorted(self.table, key=lambda k: (k[0], k[1], -2 if k[2] is None else k[2])):
            put_sized(out, json.dumps(list(key), separators=(",", ":")).encode())
            put_sized(out, json.dumps(asdict(self.table[key]), sort_keys=True, separators=(",", ":")).encode())
        return bytes(out)

    def deserialize_from(self, data: bytes, pos: int = 0) -> int:
        """Clear the table and load it from ``serialize``'s bytes at ``pos``; the position after them."""
        self.table.clear()
        count, pos = get_int(data, pos)
        for _ in range(count):
            key_b, pos = get_sized(data, pos)
            info_b, pos = get_sized(data, pos)
            cluster, name, broker_id = json.loads(key_b)
            self.table[(cluster, name, broker_id)] = BrokerLiveInfo(**json.loads(info_b))
        return pos

    def check_not_active(self, check_time: int, rim: ReplicasInfoManager) -> list[list[Any]]:
        """``checkNotActiveBroker``: remove the expired entries; report them and the QUIRK's sets."""
        expired = [k for k, info in self.table.items()
                   if check_time - info.last_update_timestamp > info.heartbeat_timeout_millis]
        for k in expired:
            del self.table[k]
        reported = {k[1] for k in expired}
        if self.reelect_checks_active:  # 5.5.1+: the sets whose master is dead and which have a live member
            sets = rim.scan_need_reelect_broker_sets(lambda c, n, i: self.is_active(c, n, i, check_time))
        else:
            sets = rim.scan_need_reelect_broker_sets(lambda c, n, i: not self.is_active(c, n, i, check_time))
        return [list(k) for k in expired] + [[None, name, None] for name in sets if name not in reported]


def serialize_state(rim: ReplicasInfoManager, live: RaftLiveTable) -> bytes:
    """``RaftReplicasInfoManager.serialize``: the tables' bytes behind a 4-byte length, then the live table."""
    out = bytearray()
    put_sized(out, rim.serialize())
    return bytes(out + live.serialize())


def load_state(rim: ReplicasInfoManager, live: RaftLiveTable, data: bytes) -> None:
    """``RaftReplicasInfoManager.deserializeFrom``: the whole applied state from ``serialize_state``'s bytes."""
    try:
        tables, pos = get_sized(data, 0)
        rim.deserialize_from(tables)
        pos = live.deserialize_from(data, pos)
    except (struct.error, KeyError, TypeError) as exc:
        raise ValueError(f"deserialize the JRaft controller state: {exc}") from exc
    if pos != len(data):
        raise ValueError(f"deserialize: {len(data) - pos} bytes left over")


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
