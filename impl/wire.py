"""Wire forms: the headers and bodies of the controller protocol, and the records the controller's state and
events travel as (in replies, in the trace's observations, in a TLC counterexample's replay).

Rules:

* Field names are RocketMQ's (``masterEpoch``, ``syncStateSetEpoch``, ``masterBrokerId``...): a header here is the
  JSON of the Java ``CommandCustomHeader`` of the same name (``remoting/.../protocol/header/controller``), a
  body the JSON of the body class (``SyncStateSet``, ``BrokerMemberGroup``).
* A ``RemotingCommand`` (``impl/runtime.Command``) carries any header; the code decides which one, as
  ``RemotingCommand.decodeCommandCustomHeader(XxxHeader.class)`` does in Java. ``decode_header`` is that call: it
  gives the header its type (no copy, no check at run time).
* An epoch or an id that the controller does not have is ``None`` (Java's null), never absent: the Java header
  always has the field.

The controller's events (``impl/controller/replicas_info.py``) are dataclasses; ``EventRecord`` is their dict form
(``to_dict``), ``SetSnapshot`` the form ``ReplicasInfoManager.snapshot`` gives a broker set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict, TypeVar, cast

# ---------------------------------------------------------------------------------------- state and events


class SetSnapshot(TypedDict):
    """One broker set as ``ReplicasInfoManager.snapshot`` gives it (null when the table lacks the set)."""

    replicas: dict[str, list[str]] | None  # broker id -> [address, registerCheckCode]
    nextId: int | None
    masterEpoch: int | None
    syncStateSetEpoch: int | None
    syncStateSet: list[int] | None
    master: int | None


class AlterSyncStateSetRecord(TypedDict):
    type: Literal["AlterSyncStateSet"]
    brokerName: str
    newSyncStateSet: list[int]


class ApplyBrokerIdRecord(TypedDict):
    type: Literal["ApplyBrokerId"]
    clusterName: str
    brokerName: str
    brokerAddress: str
    newBrokerId: int
    registerCheckCode: str


class ElectMasterRecord(TypedDict):
    type: Literal["ElectMaster"]
    newMasterElected: bool
    brokerName: str
    newMasterBrokerId: int | None


class CleanBrokerDataRecord(TypedDict):
    type: Literal["CleanBrokerData"]
    brokerName: str
    brokerIdSetToClean: list[int] | None


class UpdateBrokerAddressRecord(TypedDict):
    type: Literal["UpdateBrokerAddress"]
    clusterName: str
    brokerName: str
    brokerAddress: str
    brokerId: int


class RequestRecord(TypedDict):
    """A JRaft log entry: the request itself (``RequestEntry``)."""

    type: Literal["Request"]
    op: str
    args: dict[str, Any]
    stamp: int


EventRecord = (
    AlterSyncStateSetRecord | ApplyBrokerIdRecord | ElectMasterRecord | CleanBrokerDataRecord
    | UpdateBrokerAddressRecord
)
"""An applied controller event (``EventMessage.to_dict``)."""


# ------------------------------------------------------------------------------------ controller protocol


class SyncStateSetBody(TypedDict):
    """``SyncStateSet``: the body of alterSyncStateSet (both ways), registerBroker, getReplicaInfo and the
    role-change notification."""

    syncStateSet: list[int]
    syncStateSetEpoch: int


class GetNextBrokerIdRequestHeader(TypedDict):
    clusterName: str
    brokerName: str


class GetNextBrokerIdResponseHeader(TypedDict):
    clusterName: str
    brokerName: str
    nextBrokerId: int


class ApplyBrokerIdRequestHeader(TypedDict):
    clusterName: str
    brokerName: str
    appliedBrokerId: int
    registerCheckCode: str


class RegisterBrokerToControllerRequestHeader(TypedDict):
    clusterName: str
    brokerName: str
    brokerId: int | None
    brokerAddress: str


class RegisterBrokerToControllerResponseHeader(TypedDict):
    """The set's master, only when it is alive (every field null otherwise)."""

    clusterName: str
    brokerName: str
    masterBrokerId: int | None
    masterAddress: str | None
    masterEpoch: int | None
    syncStateSetEpoch: int | None


class ElectMasterRequestHeader(TypedDict):
    clusterName: str
    brokerName: str
    brokerId: int | None
    designateElect: bool


class ElectMasterResponseHeader(TypedDict):
    masterBrokerId: int | None
    masterAddress: str | None
    masterEpoch: int | None
    syncStateSetEpoch: int | None


class GetReplicaInfoRequestHeader(TypedDict):
    brokerName: str


class GetReplicaInfoResponseHeader(TypedDict):
    """No syncStateSetEpoch: the body has it."""

    masterBrokerId: int | None
    masterAddress: str | None
    masterEpoch: int


class AlterSyncStateSetRequestHeader(TypedDict):
    brokerName: str
    masterBrokerId: int | None
    masterEpoch: int


class AlterSyncStateSetResponseHeader(TypedDict):
    newSyncStateSetEpoch: int


class NotifyBrokerRoleChangedRequestHeader(TypedDict):
    masterAddress: str | None
    masterBrokerId: int
    masterEpoch: int | None
    syncStateSetEpoch: int | None


class BrokerHeartbeatRequestHeader(TypedDict):
    clusterName: str
    brokerAddr: str
    brokerName: str
    brokerId: int | None
    epoch: int
    maxOffset: int
    confirmOffset: int
    heartbeatTimeoutMills: int
    electionPriority: int


class CleanBrokerDataRequestHeader(TypedDict):
    clusterName: str
    brokerName: str
    brokerControllerIdsToClean: str | None
    isCleanLivingBroker: bool


class GetMetaDataResponseHeader(TypedDict):
    group: str
    controllerLeaderId: str | None
    controllerLeaderAddress: str | None
    isLeader: bool


H = TypeVar("H", bound=Mapping[str, Any])


def decode_header(header: Mapping[str, Any], kind: type[H]) -> H:
    """``RemotingCommand.decodeCommandCustomHeader(kind)``: the command's header as the header class its code
    implies (the same object: no copy, no check at run time)."""
    return cast(H, header)
