"""ReplicasInfoManager: the controller's replicated state machine (``C/impl/manager/ReplicasInfoManager``).

Everything that decides a controller answer or changes controller state lives here.

Rules (``ReplicasInfoManager``'s operations and ``applyEvent``; check order is RocketMQ's and decides the response
code):

* State per broker set: ``BrokerReplicaInfo`` (ids, addresses, check codes, ``nextAssignBrokerId``) and
  ``SyncStateInfo`` (masterEpoch mE, syncStateSetEpoch sE, SyncStateSet SSS, master). A set *exists* only
  when both tables hold it (``isContainsBroker``).
* Operations *validate* against the current state and return a ``ControllerResult``: a response code, a
  header, a body and at most one event. They never change state.
* Events *apply* without re-validation (``applyEvent``). In DLedger mode the leader validates once, then
  proposes; whatever happens between validation and apply is not re-checked (see ``node.py``).
* ``electMaster``: first time (mE == 0) takes the requester's id unchecked; otherwise the policy elects
  from the SSS (then, with unclean election, from every replica); an unchanged master answers
  MASTER_STILL_EXIST; nothing electable gives MASTER_NOT_AVAILABLE plus a not-elected event for a
  controller trigger, ELECT_MASTER_FAILED with no event otherwise.
* ``alterSyncStateSet`` checks, in order: set exists; new SSS differs; master matches; mE matches;
  sE matches; every member registered then alive; master kept.

Theory of operation: the controller node (``node.py``) owns one ``ReplicasInfoManager`` per replica of the
event log. It calls an operation, appends the returned events to its log, and calls ``apply_event`` for
each entry in log order. Invariants over this state (CTL-*) are in ``impl/invariants/controller.py``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .. import bugs as B
from ..codes import FIRST_BROKER_CONTROLLER_ID, ResponseCode
from ..wire import (
    AlterSyncStateSetRecord,
    ApplyBrokerIdRecord,
    CleanBrokerDataRecord,
    ElectMasterRecord,
    RequestRecord,
    UpdateBrokerAddressRecord,
)
from .elect_policy import ElectPolicy

AlivePredicate = Callable[[str, str, int], bool]
"""``BrokerValidPredicate.check(clusterName, brokerName, brokerId)``."""

T = TypeVar("T")


# --------------------------------------------------------------------------------------------- state


@dataclass
class BrokerReplicaInfo:
    """``BrokerReplicaInfo``: the replicas of one set. ``addBroker`` always bumps the counter."""

    cluster_name: str
    broker_name: str
    next_assign_broker_id: int = FIRST_BROKER_CONTROLLER_ID
    broker_id_info: dict[int, tuple[str, str]] = field(default_factory=dict)  # id -> (address, checkCode)

    def add_broker(self, broker_id: int, address: str, register_check_code: str) -> None:
        self.broker_id_info[broker_id] = (address, register_check_code)
        self.next_assign_broker_id += 1  # QUIRK: +1 per call, not max(id)+1

    def remove_broker_id(self, broker_id: int) -> None:
        self.broker_id_info.pop(broker_id, None)

    def is_broker_exist(self, broker_id: int | None) -> bool:
        return broker_id in self.broker_id_info

    def all_brokers(self) -> set[int]:
        return set(self.broker_id_info)

    def broker_address(self, broker_id: int | None) -> str | None:
        entry = self.broker_id_info.get(broker_id) if broker_id is not None else None
        return entry[0] if entry else None

    def register_check_code(self, broker_id: int) -> str | None:
        entry = self.broker_id_info.get(broker_id)
        return entry[1] if entry else None

    def update_broker_address(self, broker_id: int, address: str) -> None:
        if broker_id in self.broker_id_info:
            self.broker_id_info[broker_id] = (address, self.broker_id_info[broker_id][1])

    def broker_id_table(self) -> dict[int, str]:
        return {i: a for i, (a, _) in sorted(self.broker_id_info.items())}


@dataclass
class SyncStateInfo:
    """``SyncStateInfo``: mE, sE, SSS and master of one set."""

    cluster_name: str
    broker_name: str
    master_epoch: int = 0
    sync_state_set_epoch: int = 0
    sync_state_set: set[int] = field(default_factory=set)
    master_broker_id: int | None = None

    def update_master_info(self, master: int | None) -> None:
        self.master_broker_id = master
        self.master_epoch += 1

    def update_sync_state_set_info(self, new_sss: Iterable[int]) -> None:
        self.sync_state_set = set(new_sss)
        self.sync_state_set_epoch += 1

    def is_first_time_for_elect(self) -> bool:
        return self.master_epoch == 0

    def is_master_exist(self) -> bool:
        return self.master_broker_id is not None

    def remove_from_sync_state(self, broker_id: int) -> None:
        self.sync_state_set.discard(broker_id)  # no sE change


# -------------------------------------------------------------------------------------------- events


@dataclass(frozen=True)
class AlterSyncStateSetEvent:
    broker_name: str
    new_sync_state_set: frozenset[int]
    type_id = 1

    def to_dict(self) -> AlterSyncStateSetRecord:
        return {"type": "AlterSyncStateSet", "brokerName": self.broker_name,
                "newSyncStateSet": sorted(self.new_sync_state_set)}


@dataclass(frozen=True)
class ApplyBrokerIdEvent:
    cluster_name: str
    broker_name: str
    broker_address: str
    new_broker_id: int
    register_check_code: str
    type_id = 2

    def to_dict(self) -> ApplyBrokerIdRecord:
        return {"type": "ApplyBrokerId", "clusterName": self.cluster_name, "brokerName": self.broker_name,
                "brokerAddress": self.broker_address, "newBrokerId": self.new_broker_id,
                "registerCheckCode": self.register_check_code}


@dataclass(frozen=True)
class ElectMasterEvent:
    new_master_elected: bool
    broker_name: str
    new_master_broker_id: int | None = None
    type_id = 3

    def to_dict(self) -> ElectMasterRecord:
        return {"type": "ElectMaster", "newMasterElected": self.new_master_elected,
                "brokerName": self.broker_name, "newMasterBrokerId": self.new_master_broker_id}


@dataclass(frozen=True)
class CleanBrokerDataEvent:
    broker_name: str
    broker_id_set_to_clean: frozenset[int] | None
    type_id = 5

    def to_dict(self) -> CleanBrokerDataRecord:
        ids = None if self.broker_id_set_to_clean is None else sorted(self.broker_id_set_to_clean)
        return {"type": "CleanBrokerData", "brokerName": self.broker_name, "brokerIdSetToClean": ids}


@dataclass(frozen=True)
class UpdateBrokerAddressEvent:
    cluster_name: str
    broker_name: str
    broker_address: str
    broker_id: int
    type_id = 6

    def to_dict(self) -> UpdateBrokerAddressRecord:
        return {"type": "UpdateBrokerAddress", "clusterName": self.cluster_name, "brokerName": self.broker_name,
                "brokerAddress": self.broker_address, "brokerId": self.broker_id}


EventMessage = (
    AlterSyncStateSetEvent | ApplyBrokerIdEvent | ElectMasterEvent | CleanBrokerDataEvent | UpdateBrokerAddressEvent
)


@dataclass(frozen=True)
class RequestEntry:
    """A JRaft log entry: the request itself (``JRaftController.applyToJRaft`` logs the encoded
    ``RemotingCommand``); ``JRaftControllerStateMachine.processEvent`` runs it at apply (``impl/controller/jraft.py``).
    ``stamp``: ``invokeTime`` / ``checkTimeMillis`` / the live info's timestamp, per kind."""

    op: str
    args: tuple[tuple[str, Any], ...]
    stamp: int

    @property
    def broker_name(self) -> str:
        return str(dict(self.args).get("brokerName", ""))

    def to_dict(self) -> RequestRecord:
        return {"type": "Request", "op": self.op, "args": dict(self.args), "stamp": self.stamp}


def event_from_dict(d: dict[str, Any]) -> EventMessage:
    """Inverse of ``to_dict`` (used when a trace or a TLC counterexample is replayed, or a real controller's log)."""
    t = d["type"]
    if t == "AlterSyncStateSet":
        return AlterSyncStateSetEvent(d["brokerName"], frozenset(d["newSyncStateSet"]))
    if t == "ApplyBrokerId":
        return ApplyBrokerIdEvent(d["clusterName"], d["brokerName"], d["brokerAddress"], d["newBrokerId"],
                                  d["registerCheckCode"])
    if t == "ElectMaster":
        return ElectMasterEvent(d["newMasterElected"], d["brokerName"], d["newMasterBrokerId"])
    if t == "CleanBrokerData":
        ids = d["brokerIdSetToClean"]
        return CleanBrokerDataEvent(d["brokerName"], None if ids is None else frozenset(ids))
    if t == "UpdateBrokerAddress":
        return UpdateBrokerAddressEvent(d["clusterName"], d["brokerName"], d["brokerAddress"], d["brokerId"])
    raise ValueError(f"unknown controller event type {t!r}")


def entry_from_dict(d: dict[str, Any]) -> EventMessage | RequestEntry:
    """A replicated log entry's payload from its ``to_dict``: an event (DLedger), or a request (JRaft)."""
    if d["type"] == "Request":
        return RequestEntry(d["op"], tuple(sorted(d["args"].items())), d["stamp"])
    return event_from_dict(d)


@dataclass
class ControllerResult:
    """``ControllerResult``: the answer of one operation plus the events to replicate."""

    code: int = ResponseCode.SUCCESS
    remark: str | None = None
    header: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    events: list[EventMessage] = field(default_factory=list)

    def fail(self, code: ResponseCode, remark: str) -> ControllerResult:
        self.code = int(code)
        self.remark = remark
        return self


def sss_body(sss: Iterable[int], epoch: int) -> dict[str, Any]:
    """``SyncStateSet`` JSON body."""
    return {"syncStateSet": sorted(sss), "syncStateSetEpoch": epoch}


# ------------------------------------------------------------------------------------------- manager


class ReplicasInfoManager:
    """Validation (operations) and apply (``apply_event``) for every broker set."""

    def __init__(self, enable_elect_unclean_master: bool = False, bugs: frozenset[str] = frozenset()) -> None:
        self.enable_elect_unclean_master = enable_elect_unclean_master
        self.bugs = bugs
        self.replica_info_table: dict[str, BrokerReplicaInfo] = {}
        self.sync_state_set_info_table: dict[str, SyncStateInfo] = {}

    # ----------------------------------------------------------------------------------- queries

    def is_contains_broker(self, broker_name: str) -> bool:
        return broker_name in self.replica_info_table and broker_name in self.sync_state_set_info_table

    def broker_names(self) -> list[str]:
        return sorted(set(self.replica_info_table) | set(self.sync_state_set_info_table))

    # -------------------------------------------------------------------------------- operations

    def alter_sync_state_set(self, broker_name: str, master_broker_id: int | None, master_epoch: int | None,
                             new_sync_state_set: Iterable[int], sync_state_set_epoch: int | None,
                             alive: AlivePredicate) -> ControllerResult:
        """``alterSyncStateSet``: its checks 1-7, in RocketMQ's order (the module's rules)."""
        result = ControllerResult()
        if not self.is_contains_broker(broker_name):
            return result.fail(ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, "Broker metadata is not existed")
        new_sss = set(new_sync_state_set)
        info = self.sync_state_set_info_table[broker_name]
        replicas = self.replica_info_table[broker_name]
        if new_sss == info.sync_state_set:
            return result.fail(ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                               "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet")
        if info.master_broker_id is None or info.master_broker_id != master_broker_id:
            return result.fail(ResponseCode.CONTROLLER_INVALID_MASTER,
                               f"Rejecting alter syncStateSet request because the current leader is:"
                               f"{{{info.master_broker_id}}}, not {{{master_broker_id}}}")
        if master_epoch != info.master_epoch:
            return result.fail(ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH,
                               f"Rejecting alter syncStateSet request because the current master epoch is:"
                               f"{{{info.master_epoch}}}, not {{{master_epoch}}}")
        if sync_state_set_epoch != info.sync_state_set_epoch and B.ALTER_SKIP_SSS_EPOCH_CHECK not in self.bugs:
            return result.fail(ResponseCode.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
                               f"Rejecting alter syncStateSet request because the current syncStateSet epoch is:"
                               f"{{{info.sync_state_set_epoch}}}, not {{{sync_state_set_epoch}}}")
        checked = info.sync_state_set if B.ALTER_CHECKS_OLD_SET_ALIVE in self.bugs else new_sss  # the deviation
        for replica in sorted(checked) if B.ALTER_SKIPS_MEMBER_CHECKS not in self.bugs else []:  # HashSet order
            if not replicas.is_broker_exist(replica):
                return result.fail(ResponseCode.CONTROLLER_INVALID_REPLICAS,
                                   "Rejecting alter syncStateSet request because the replicas "
                                   f"{{{replica}}} don't exist")
            if not alive(replicas.cluster_name, replicas.broker_name, replica):
                return result.fail(ResponseCode.CONTROLLER_BROKER_NOT_ALIVE,
                                   "Rejecting alter syncStateSet request because the replicas "
                                   f"{{{replica}}} don't alive")
        if info.master_broker_id not in new_sss:
            return result.fail(ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                               f"Rejecting alter syncStateSet request because the newSyncStateSet don't contains "
                               f"origin leader {{{info.master_broker_id}}}")
        epoch = info.sync_state_set_epoch + 1
        result.header = {"newSyncStateSetEpoch": epoch}
        result.body = sss_body(new_sss, epoch)
        result.events.append(AlterSyncStateSetEvent(broker_name, frozenset(new_sss)))
        return result

    def elect_master(self, broker_name: str, broker_id: int | None, designate_elect: bool,
                     policy: ElectPolicy, cluster_name: str = "") -> ControllerResult:
        """``electMaster``: RocketMQ's steps in order (first election, policy, unchanged master, event)."""
        result = ControllerResult()
        if not self.is_contains_broker(broker_name):
            return result.fail(ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, "Broker hasn't been registered")
        info = self.sync_state_set_info_table[broker_name]
        replicas = self.replica_info_table[broker_name]
        sss = set(info.sync_state_set)
        old_master = info.master_broker_id
        all_replicas = replicas.all_brokers() if self.enable_elect_unclean_master else None
        new_master: int | None = None
        if info.is_first_time_for_elect():
            new_master = broker_id  # QUIRK: first time takes the requester unchecked
        if new_master is None or new_master == -1:
            assigned = broker_id if designate_elect else None
            policy.long_offsets = B.ELECT_COMPARES_LONG_OFFSETS in self.bugs  # DefaultElectPolicy of 5.5.1+ (#10579)
            new_master = policy.elect(replicas.cluster_name, replicas.broker_name, sss, all_replicas, old_master,
                                      assigned)
        if new_master is not None and new_master == old_master:
            result.header = {"masterEpoch": info.master_epoch, "syncStateSetEpoch": info.sync_state_set_epoch,
                             "masterBrokerId": old_master, "masterAddress": replicas.broker_address(old_master)}
            result.body = {"syncStateSet": sorted(sss), "brokerMemberGroup": None}
            return result.fail(ResponseCode.CONTROLLER_MASTER_STILL_EXIST,
                               f"The old master {old_master} is still alive, not need to elect new master for "
                               f"broker {replicas.broker_name}")
        if new_master is not None:
            result.header = {"masterBrokerId": new_master, "masterAddress": replicas.broker_address(new_master),
                             "masterEpoch": info.master_epoch + 1, "syncStateSetEpoch": info.sync_state_set_epoch + 1}
            result.body = {"syncStateSet": [new_master],
                           "brokerMemberGroup": {"cluster": replicas.cluster_name, "brokerName": replicas.broker_name,
                                                 "brokerAddrs": replicas.broker_id_table()}}
            result.events.append(ElectMasterEvent(True, broker_name, new_master))
            return result
        result.header = {"masterBrokerId": None, "masterAddress": None, "masterEpoch": None,
                         "syncStateSetEpoch": None}
        if broker_id is None or broker_id == -1:
            result.events.append(ElectMasterEvent(False, broker_name))
            return result.fail(ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE,
                               "Old master has down and failed to elect a new broker master")
        return result.fail(ResponseCode.CONTROLLER_ELECT_MASTER_FAILED, "Failed to elect a new master")

    def get_next_broker_id(self, cluster_name: str, broker_name: str) -> ControllerResult:
        """``getNextBrokerId``: a read; never reserves anything."""
        info = self.replica_info_table.get(broker_name)
        nxt = FIRST_BROKER_CONTROLLER_ID if info is None else info.next_assign_broker_id
        return ControllerResult(header={"clusterName": cluster_name, "brokerName": broker_name, "nextBrokerId": nxt})

    def apply_broker_id(self, cluster_name: str, broker_name: str, applied_broker_id: int,
                        register_check_code: str) -> ControllerResult:
        """``applyBrokerId``: CAS on the check code, done by the leader before proposing."""
        result = ControllerResult(header={"clusterName": cluster_name, "brokerName": broker_name})
        address = register_check_code.split(";")[0]
        event = ApplyBrokerIdEvent(cluster_name, broker_name, address, applied_broker_id, register_check_code)
        info = self.replica_info_table.get(broker_name)
        if info is None:  # looks at the replica table only
            if applied_broker_id == FIRST_BROKER_CONTROLLER_ID:
                result.events.append(event)
                return result
            return result.fail(ResponseCode.CONTROLLER_BROKER_ID_INVALID,
                               f"Broker-set: {broker_name} hasn't been registered in controller, but broker try to "
                               f"apply brokerId: {applied_broker_id}")
        if not info.is_broker_exist(applied_broker_id) or register_check_code == info.register_check_code(
                applied_broker_id):
            result.events.append(event)
            return result
        return result.fail(ResponseCode.CONTROLLER_BROKER_ID_INVALID,
                           f"Fail to apply brokerId: {applied_broker_id} in broker-set: {broker_name}")

    def register_broker(self, cluster_name: str, broker_name: str, broker_id: int, broker_address: str,
                        alive: AlivePredicate) -> ControllerResult:
        """``registerBroker``: never elects; reports the master only when it is alive."""
        result = ControllerResult(header={"clusterName": cluster_name, "brokerName": broker_name})
        if not self.is_contains_broker(broker_name):
            return result.fail(ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                               f"Broker-set: {broker_name} hasn't been registered in controller")
        replicas = self.replica_info_table[broker_name]
        info = self.sync_state_set_info_table[broker_name]
        if not replicas.is_broker_exist(broker_id):
            return result.fail(ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                               f"BrokerId: {broker_id} hasn't been registered in broker-set: {broker_name}")
        result.header.update({"masterBrokerId": None, "masterAddress": None, "masterEpoch": None,
                              "syncStateSetEpoch": None})
        # is_master_exist(): master_broker_id is not None
        if info.is_master_exist() and alive(cluster_name, broker_name, info.master_broker_id):  # type: ignore[arg-type]  # see above
            result.header.update({"masterBrokerId": info.master_broker_id,
                                  "masterAddress": replicas.broker_address(info.master_broker_id),
                                  "masterEpoch": info.master_epoch, "syncStateSetEpoch": info.sync_state_set_epoch})
        result.body = sss_body(info.sync_state_set, info.sync_state_set_epoch)
        if broker_address != replicas.broker_address(broker_id):
            result.events.append(UpdateBrokerAddressEvent(cluster_name, broker_name, broker_address, broker_id))
        return result

    def get_replica_info(self, broker_name: str) -> ControllerResult:
        """``getReplicaInfo``: the header carries master and mE but no sE (the body has it)."""
        result = ControllerResult()
        if self.is_contains_broker(broker_name):
            info = self.sync_state_set_info_table[broker_name]
            replicas = self.replica_info_table[broker_name]
            result.header = {"masterBrokerId": info.master_broker_id,
                             "masterAddress": replicas.broker_address(info.master_broker_id),
                             "masterEpoch": info.master_epoch}
            result.body = sss_body(info.sync_state_set, info.sync_state_set_epoch)
            return result
        return result.fail(ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST, "Broker metadata is not existed")

    def get_sync_state_data(self, broker_names: list[str], alive: AlivePredicate) -> ControllerResult:
        """``getSyncStateData``: admin view; unknown sets are skipped."""
        body: dict[str, Any] = {}
        for name in broker_names:
            if not self.is_contains_broker(name):
                continue
            info = self.sync_state_set_info_table[name]
            replicas = self.replica_info_table[name]
            in_sync: list[dict[str, Any]] = []
            not_in_sync: list[dict[str, Any]] = []
            for bid, addr in replicas.broker_id_table().items():
                ident = {"brokerName": name, "brokerId": bid, "brokerAddress": addr,
                         "alive": alive(replicas.cluster_name, name, bid)}
                (in_sync if bid in info.sync_state_set else not_in_sync).append(ident)
            body[name] = {"masterBrokerId": info.master_broker_id,
                          "masterAddress": replicas.broker_address(info.master_broker_id),
                          "masterEpoch": info.master_epoch, "syncStateSetEpoch": info.sync_state_set_epoch,
                          "inSyncReplicas": in_sync, "notInSyncReplicas": not_in_sync}
        return ControllerResult(body={"replicasInfoTable": body})

    def clean_broker_data(self, cluster_name: str | None, broker_name: str, ids_to_clean: str | None,
                          is_clean_living_broker: bool, alive: AlivePredicate) -> ControllerResult:
        """``cleanBrokerData``: QUIRK, cleaning a living broker always wipes the whole set."""
        result = ControllerResult()
        id_set: frozenset[int] | None = None
        blank = ids_to_clean is None or ids_to_clean.strip() == ""
        if not is_clean_living_broker:
            info = self.sync_state_set_info_table.get(broker_name)
            if blank and info is not None and info.master_broker_id is not None:
                return result.fail(ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                                   f"Broker {broker_name} is still alive, clean up failure")
            if not blank:
                try:
                    id_set = frozenset(int(s) for s in ids_to_clean.split(";"))  # type: ignore[union-attr]  # not blank
                except ValueError as exc:
                    return result.fail(ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                                       f"Please set the option <brokerControllerIdsToClean> according to the "
                                       f"format, exception: {exc}")
                for bid in sorted(id_set) if B.CLEAN_SKIPS_LIVING_CHECK not in self.bugs else []:
                    if alive(cluster_name or "", broker_name, bid):
                        return result.fail(ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                                           f"Broker [{broker_name},  {bid}] is still alive, clean up failure")
        if self.is_contains_broker(broker_name):
            result.events.append(CleanBrokerDataEvent(broker_name, id_set))
            return result
        return result.fail(ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                           f"Broker {broker_name} is not existed,clean broker data failure.")

    def scan_need_reelect_broker_sets(self, alive: AlivePredicate) -> list[str]:
        """``scanNeedReelectBrokerSets``: master set but dead, and some replica alive."""
        out = []
        for name in sorted(self.sync_state_set_info_table):
            info = self.sync_state_set_info_table[name]
            master = info.master_broker_id
            if master is not None and not alive(info.cluster_name, name, master):
                replicas = self.replica_info_table.get(name)
                ids = sorted(replicas.broker_id_info) if replicas else []
                if any(alive(info.cluster_name, name, i) for i in ids):
                    out.append(name)
        return out

    # ------------------------------------------------------------------------------------- apply

    def apply_event(self, event: EventMessage) -> None:
        """``applyEvent``: no re-validation, by design."""
        if isinstance(event, AlterSyncStateSetEvent):
            if self.is_contains_broker(event.broker_name):
                self.sync_state_set_info_table[event.broker_name].update_sync_state_set_info(event.new_sync_state_set)
        elif isinstance(event, ApplyBrokerIdEvent):
            if self.is_contains_broker(event.broker_name):
                replicas = self.replica_info_table[event.broker_name]
                if not replicas.is_broker_exist(event.new_broker_id):
                    replicas.add_broker(event.new_broker_id, event.broker_address, event.register_check_code)
            else:  # QUIRK: a half-present set is rebuilt from scratch
                replicas = BrokerReplicaInfo(event.cluster_name, event.broker_name)
                replicas.add_broker(event.new_broker_id, event.broker_address, event.register_check_code)
                self.replica_info_table[event.broker_name] = replicas
                self.sync_state_set_info_table[event.broker_name] = SyncStateInfo(event.cluster_name,
                                                                                  event.broker_name)
        elif isinstance(event, ElectMasterEvent):
            if self.is_contains_broker(event.broker_name):
                info = self.sync_state_set_info_table[event.broker_name]
                if event.new_master_elected:
                    info.update_master_info(event.new_master_broker_id)
                    info.update_sync_state_set_info({event.new_master_broker_id})  # type: ignore[arg-type]  # elected: set
                else:
                    info.update_master_info(None)
        elif isinstance(event, CleanBrokerDataEvent):
            ids = event.broker_id_set_to_clean
            if not ids:
                self.replica_info_table.pop(event.broker_name, None)
                self.sync_state_set_info_table.pop(event.broker_name, None)
                return
            if not self.is_contains_broker(event.broker_name):
                return
            replicas = self.replica_info_table[event.broker_name]
            info = self.sync_state_set_info_table[event.broker_name]
            for bid in sorted(ids):
                replicas.remove_broker_id(bid)
                info.remove_from_sync_state(bid)
            if not replicas.broker_id_info:
                del self.replica_info_table[event.broker_name]
            if not info.sync_state_set:
                del self.sync_state_set_info_table[event.broker_name]
        elif isinstance(event, UpdateBrokerAddressEvent):
            known = self.replica_info_table.get(event.broker_name)
            if known is None:  # RocketMQ throws an NPE here (handleUpdateBrokerAddress); the entry is dropped
                return
            if B.ADDRESS_UPDATE_DROPPED in self.bugs:
                return
            known.update_broker_address(event.broker_id, event.broker_address)
        else:  # pragma: no cover
            raise TypeError(f"not a controller event: {event!r}")

    # ------------------------------------------------------------------------- serialize (snapshots)

    def serialize(self) -> bytes:
        """``ReplicasInfoManager.serialize`` (5.2+, the JRaft controller's ``onSnapshotSave``): the whole state, both
        tables with every field (cluster name, ids with addresses and register check codes, the next-id counter;
        master, epochs and SyncStateSet). RocketMQ's layout: a 4-byte count per table, then per set a 4-byte length
        and the UTF-8 name, a 4-byte length and the value. The values are our own encoding (canonical JSON where
        RocketMQ has Hessian), and the sets go in name order (RocketMQ: HashMap order), so equal states give equal
        bytes."""
        out = bytearray()
        _put_table(out, self.replica_info_table, _replica_info_json)
        _put_table(out, self.sync_state_set_info_table, _sync_state_info_json)
        return bytes(out)

    def deserialize_from(self, data: bytes) -> None:
        """``ReplicasInfoManager.deserializeFrom``: clear both tables and load them from ``serialize``'s bytes.
        Malformed data raises ``ValueError`` (RocketMQ rethrows, and ``onSnapshotLoad`` answers false)."""
        self.replica_info_table.clear()
        self.sync_state_set_info_table.clear()
        pos = 0
        try:
            count, pos = get_int(data, pos)
            for _ in range(count):
                name_b, pos = get_sized(data, pos)
                value, pos = get_sized(data, pos)
                d = json.loads(value)
                replicas = BrokerReplicaInfo(d["clusterName"], d["brokerName"], d["nextAssignBrokerId"],
                                             {int(i): (a, c) for i, (a, c) in d["brokerIdInfo"].items()})
                self.replica_info_table[name_b.decode()] = replicas
            count, pos = get_int(data, pos)
            for _ in range(count):
                name_b, pos = get_sized(data, pos)
                value, pos = get_sized(data, pos)
                d = json.loads(value)
                self.sync_state_set_info_table[name_b.decode()] = SyncStateInfo(
                    d["clusterName"], d["brokerName"], d["masterEpoch"], d["syncStateSetEpoch"],
                    set(d["syncStateSet"]), d["masterBrokerId"])
        except (struct.error, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"deserialize replicaInfoTable or syncStateSetInfoTable error: {exc}") from exc
        if pos != len(data):
            raise ValueError(f"deserialize: {len(data) - pos} bytes left over")

    # ----------------------------------------------------------------------------------- snapshot

    def snapshot(self) -> dict[str, Any]:
        """A plain, canonical view of every set (for traces, invariants and the model abstraction). It leaves out
        the cluster name and the check codes (every trace's ``ctl.apply`` lines hold it); ``serialize`` has the
        whole state."""
        out: dict[str, Any] = {}
        for name in self.broker_names():
            replicas = self.replica_info_table.get(name)
            info = self.sync_state_set_info_table.get(name)
            out[name] = {
                "replicas": None if replicas is None else {
                    str(i): list(v) for i, v in sorted(replicas.broker_id_info.items())},
                "nextId": None if replicas is None else replicas.next_assign_broker_id,
                "masterEpoch": None if info is None else info.master_epoch,
                "syncStateSetEpoch": None if info is None else info.sync_state_set_epoch,
                "syncStateSet": None if info is None else sorted(info.sync_state_set),
                "master": None if info is None else info.master_broker_id,
            }
        return out


# ------------------------------------------------------------------------------------- serialization


def _replica_info_json(r: BrokerReplicaInfo) -> dict[str, Any]:
    return {"clusterName": r.cluster_name, "brokerName": r.broker_name, "nextAssignBrokerId": r.next_assign_broker_id,
            "brokerIdInfo": {str(i): list(v) for i, v in sorted(r.broker_id_info.items())}}


def _sync_state_info_json(i: SyncStateInfo) -> dict[str, Any]:
    return {"clusterName": i.cluster_name, "brokerName": i.broker_name, "masterEpoch": i.master_epoch,
            "syncStateSetEpoch": i.sync_state_set_epoch, "syncStateSet": sorted(i.sync_state_set),
            "masterBrokerId": i.master_broker_id}


def _put_table(out: bytearray, table: Mapping[str, T], encode: Callable[[T], dict[str, Any]]) -> None:
    """One table of ``serialize``: its size, then per set (in name order) the sized name and the sized value."""
    out += struct.pack(">i", len(table))
    for name in sorted(table):
        put_sized(out, name.encode())
        put_sized(out, _canonical(encode(table[name])))


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def put_sized(out: bytearray, b: bytes) -> None:
    """``putInt(length)`` then the bytes."""
    out += struct.pack(">i", len(b))
    out += b


def get_int(data: bytes, pos: int) -> tuple[int, int]:
    (value,) = struct.unpack_from(">i", data, pos)
    if value < 0:
        raise ValueError(f"negative length {value} at {pos}")
    return value, pos + 4


def get_sized(data: bytes, pos: int) -> tuple[bytes, int]:
    n, pos = get_int(data, pos)
    if pos + n > len(data):
        raise ValueError(f"length {n} at {pos - 4} runs past the end ({len(data)})")
    return data[pos:pos + n], pos + n
