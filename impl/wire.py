"""Wire forms: the headers and bodies of the controller protocol, and the records the controller's state and
events travel as (in replies, in the trace's observations, in a TLC counterexample's replay).

Rules:

* Field names are RocketMQ's (``masterEpoch``, ``syncStateSetEpoch``, ``masterBrokerId``...): a header here is the
  JSON of the Java ``CommandCustomHeader`` of the same name (``remoting/.../protocol/header/controller``), a
  body the JSON of the body class (``SyncStateSet``, ``BrokerMemberGroup``).
* A ``RemotingCommand`` (``impl/runtime.Command``) carries any header; the code decides which one, as
  ``RemotingCommand.decodeCommandCustomHeader(XxxHeader.class)`` does in Java. ``decode_header`` is that call: it
  gives the header its type (no copy) and refuses a field of the wrong type.
* An epoch or an id that the controller does not have is ``None`` (Java's null), never absent: the Java header
  always has the field.

The controller's events (``impl/controller/replicas_info.py``) are dataclasses; ``EventRecord`` is their dict form
(``to_dict``), ``SetSnapshot`` the form ``ReplicasInfoManager.snapshot`` gives a broker set.

Decoding what a peer sent (a real runtime's edge; sans-IO: bytes in, a value or :class:`WireError` out, the driver
logs it and closes the connection):

* :func:`decode_json`: UTF-8 JSON, nested at most ``MAX_DEPTH`` deep, every integer a Java ``long``, no ``NaN`` or
  ``Infinity`` (and never Python's ``ValueError`` for an integer of more than 4300 digits: a ``WireError``).
* :func:`decode_command`: a command's JSON form (``Command.to_dict`` plus ``remark``): a known request code (or a
  known response code for a response), an ``int`` opaque, a header whose fields have the types their names have
  in every header of the protocol (``FIELD_TYPES``) and, for a request, the fields its code needs.
"""

from __future__ import annotations

import json
import types
from collections.abc import Iterator, Mapping
from typing import Any, Literal, TypedDict, TypeGuard, TypeVar, Union, cast, get_args, get_origin, get_type_hints

from .codes import LONG_MAX, RequestCode, ResponseCode

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


# ------------------------------------------------------------------------------------------------ decoding


class WireError(ValueError):
    """What a peer sent cannot be valid; the message is one line that says what is wrong."""


MAX_DEPTH = 32
"""The deepest JSON nesting a frame may have (the protocol's deepest is a raft append's entries, about 6)."""
LONG_MIN = -LONG_MAX - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


def _show(value: Any, limit: int = 40) -> str:
    """A short, safe rendering of a decoded value for an error message (no 4300-digit limit, no megabyte string)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    if isinstance(value, dict | list):
        return f"a JSON {'object' if isinstance(value, dict) else 'array'} of {len(value)} items"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _constant(name: str) -> Any:
    raise WireError(f"{name} is not a JSON number")


def _children(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        yield from value.values()
    elif isinstance(value, list):
        yield from value


def _check_tree(value: Any) -> None:
    """Depth at most ``MAX_DEPTH``; every integer a Java long. Iterative: each value is visited once."""
    stack = [(value, 1)]
    while stack:  # bounded: the values of a finite document
        v, depth = stack.pop()
        if isinstance(v, int) and not isinstance(v, bool) and not LONG_MIN <= v <= LONG_MAX:
            raise WireError(f"{_show(v)} does not fit a Java long")
        if isinstance(v, dict | list):
            if depth > MAX_DEPTH:
                raise WireError(f"JSON nested deeper than {MAX_DEPTH} levels")
            stack.extend((c, depth + 1) for c in _children(v))


def decode_json(data: bytes) -> Any:
    """The JSON value of ``data``, within the limits above, or :class:`WireError`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WireError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_constant)
    except RecursionError:
        raise WireError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except WireError:
        raise
    except ValueError as exc:  # JSONDecodeError, and an integer of more than 4300 digits
        first = str(exc).split(";")[0].splitlines()[0] if str(exc) else type(exc).__name__
        raise WireError(f"not JSON ({first[:120]})") from None
    _check_tree(value)
    return value


# A field's Python types, by its name, in every header of the protocol: the TypedDicts above, and the broker's,
# the nameserver's and the controller group's own headers (their fields' types as the core reads them).
_HEADER_TYPES: tuple[type, ...] = (
    GetNextBrokerIdRequestHeader, GetNextBrokerIdResponseHeader, ApplyBrokerIdRequestHeader,
    RegisterBrokerToControllerRequestHeader, RegisterBrokerToControllerResponseHeader, ElectMasterRequestHeader,
    ElectMasterResponseHeader, GetReplicaInfoRequestHeader, GetReplicaInfoResponseHeader,
    AlterSyncStateSetRequestHeader, AlterSyncStateSetResponseHeader, NotifyBrokerRoleChangedRequestHeader,
    BrokerHeartbeatRequestHeader, CleanBrokerDataRequestHeader, GetMetaDataResponseHeader,
)  # fmt: skip
_MORE_FIELDS: dict[str, tuple[type, ...]] = {
    "key": (str,), "bodySize": (int,), "queueId": (int,), "queueOffset": (int,), "group": (str,),
    "commitOffset": (int,), "readQueueNums": (int,), "writeQueueNums": (int,), "stateVersion": (int,),
    "haServerAddr": (str,), "topicConfig": (dict, type(None)), "from": (str,), "term": (int,),
}  # fmt: skip


def _python_types(annotation: Any) -> tuple[type, ...]:
    if get_origin(annotation) in (types.UnionType, Union):
        return tuple(t for arm in get_args(annotation) for t in _python_types(arm))
    if annotation is None or annotation is type(None):
        return (type(None),)
    origin = get_origin(annotation)
    return (origin if isinstance(origin, type) else annotation,)


def _field_types() -> dict[str, tuple[type, ...]]:
    out: dict[str, tuple[type, ...]] = {}
    for kind in _HEADER_TYPES:
        for name, annotation in get_type_hints(kind).items():
            out[name] = tuple(dict.fromkeys((*out.get(name, ()), *_python_types(annotation))))
    for name, allowed in _MORE_FIELDS.items():
        out[name] = tuple(dict.fromkeys((*out.get(name, ()), *allowed)))
    return out


FIELD_TYPES: dict[str, tuple[type, ...]] = _field_types()
"""Header field name -> the Python types its value may have (``int`` never admits a ``bool``)."""

REQUEST_HEADERS: dict[int, type] = {
    RequestCode.CONTROLLER_GET_NEXT_BROKER_ID: GetNextBrokerIdRequestHeader,
    RequestCode.CONTROLLER_APPLY_BROKER_ID: ApplyBrokerIdRequestHeader,
    RequestCode.CONTROLLER_REGISTER_BROKER: RegisterBrokerToControllerRequestHeader,
    RequestCode.CONTROLLER_ELECT_MASTER: ElectMasterRequestHeader,
    RequestCode.CONTROLLER_GET_REPLICA_INFO: GetReplicaInfoRequestHeader,
    RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET: AlterSyncStateSetRequestHeader,
    RequestCode.NOTIFY_BROKER_ROLE_CHANGED: NotifyBrokerRoleChangedRequestHeader,
    RequestCode.BROKER_HEARTBEAT: BrokerHeartbeatRequestHeader,
    RequestCode.CLEAN_BROKER_DATA: CleanBrokerDataRequestHeader,
}
"""The controller protocol's requests and their header class (every required field must be there)."""

REQUEST_FIELDS: dict[int, tuple[str, ...]] = {
    **{code: tuple(sorted(getattr(kind, "__required_keys__", ()))) for code, kind in REQUEST_HEADERS.items()},
    RequestCode.SEND_MESSAGE: ("bodySize", "key"),
    RequestCode.PULL_MESSAGE: (),
    RequestCode.QUERY_CONSUMER_OFFSET: ("group", "queueId"),
    RequestCode.UPDATE_CONSUMER_OFFSET: ("commitOffset", "group", "queueId"),
    RequestCode.GET_MAX_OFFSET: ("queueId",),
    RequestCode.UPDATE_AND_CREATE_TOPIC: ("readQueueNums", "writeQueueNums"),
    RequestCode.REGISTER_BROKER: ("brokerAddr", "brokerId", "brokerName"),
    RequestCode.GET_ROUTEINFO_BY_TOPIC: ("brokerName",),
    RequestCode.GET_ALL_CONSUMER_OFFSET: (), RequestCode.GET_ALL_TOPIC_CONFIG: (),
    RequestCode.CONTROLLER_GET_METADATA_INFO: (), RequestCode.CONTROLLER_GET_SYNC_STATE_DATA: (),
    RequestCode.CHECK_REACHABLE: (),
    **{code: ("from", "term") for code in (RequestCode.RAFT_VOTE, RequestCode.RAFT_VOTE_REPLY, RequestCode.RAFT_APPEND,
                                           RequestCode.RAFT_APPEND_REPLY, RequestCode.RAFT_INSTALL_SNAPSHOT)},
}  # fmt: skip
"""Every request code a node takes, and the header fields it needs."""

OBJECT_BODIES = frozenset({
    RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, RequestCode.NOTIFY_BROKER_ROLE_CHANGED, RequestCode.RAFT_VOTE,
    RequestCode.RAFT_VOTE_REPLY, RequestCode.RAFT_APPEND, RequestCode.RAFT_APPEND_REPLY,
    RequestCode.RAFT_INSTALL_SNAPSHOT,
})  # fmt: skip
"""The requests whose body, when there is one, is a JSON object."""

_REQUEST_CODES = frozenset(int(c) for c in RequestCode)
_RESPONSE_CODES = frozenset(int(c) for c in ResponseCode)
_COMMAND_KEYS = frozenset({"code", "opaque", "header", "body", "response", "oneway", "remark"})


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_field(name: str, value: Any, allowed: tuple[type, ...]) -> None:
    ok = any(_is_int(value) if t is int else isinstance(value, t) for t in allowed)
    if not ok:
        want = " or ".join("null" if t is type(None) else t.__name__ for t in allowed)
        raise WireError(f"header field {name!r} is {_show(value)}, expected {want}")


def check_header(header: Any, code: int | None = None) -> Mapping[str, Any]:
    """``header`` if it is a JSON object whose known fields (``FIELD_TYPES``) have their types and, for request
    ``code``, holds the fields it needs (``REQUEST_FIELDS``); else :class:`WireError`."""
    if not isinstance(header, dict):
        raise WireError(f"the header is {_show(header)}, not a JSON object")
    for name, value in header.items():
        allowed = FIELD_TYPES.get(name)
        if allowed is not None:
            _check_field(name, value, allowed)
    missing = [f for f in REQUEST_FIELDS.get(code, ()) if f not in header] if code is not None else []
    if missing:
        raise WireError(f"request {code} lacks header field{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    return header


class CommandForm(TypedDict):
    """A command's fields, checked (``decode_command``): ``impl.runtime.Command``'s arguments."""

    code: int
    opaque: int
    header: Mapping[str, Any]
    body: Any
    response: bool
    oneway: bool
    remark: str | None


def _flag(obj: Mapping[str, Any], name: str) -> bool:
    value = obj.get(name, False)
    if not isinstance(value, bool):
        raise WireError(f"command field {name!r} is {_show(value)}, expected true or false")
    return value


def decode_command(obj: Any) -> CommandForm:
    """A command's JSON form (``Command.to_dict`` plus ``remark``), checked; else :class:`WireError`."""
    if not isinstance(obj, dict):
        raise WireError(f"a command is a JSON object, not {_show(obj)}")
    unknown = sorted(k for k in obj if k not in _COMMAND_KEYS)
    if unknown:
        raise WireError(f"unknown command field {_show(unknown[0])}")
    code, opaque = obj.get("code"), obj.get("opaque")
    if not _is_int(code):
        raise WireError(f"command code is {_show(code)}, expected an integer")
    response, oneway = _flag(obj, "response"), _flag(obj, "oneway")
    if response and code not in _RESPONSE_CODES:
        raise WireError(f"unknown response code {code}")
    if not response and code not in REQUEST_FIELDS:
        raise WireError(f"unknown request code {code}" if code not in _REQUEST_CODES
                        else f"request code {code} ({RequestCode(code).name}) is not one a node takes")
    if not _is_int(opaque) or not INT_MIN <= opaque <= INT_MAX:
        raise WireError(f"command opaque is {_show(opaque)}, expected a Java int")
    header = check_header(obj.get("header", {}), None if response else code)
    body, remark = obj.get("body"), obj.get("remark")
    if not response and code in OBJECT_BODIES and body is not None and not isinstance(body, dict):
        raise WireError(f"the body of request {code} is {_show(body)}, expected a JSON object")
    if remark is not None and not isinstance(remark, str):
        raise WireError(f"command remark is {_show(remark)}, expected a string")
    return {"code": code, "opaque": opaque, "header": header, "body": body, "response": response, "oneway": oneway,
            "remark": remark}


H = TypeVar("H", bound=Mapping[str, Any])
_KIND_TYPES: dict[type, dict[str, tuple[type, ...]]] = {}


def decode_header(header: Mapping[str, Any], kind: type[H]) -> H:
    """``RemotingCommand.decodeCommandCustomHeader(kind)``: the command's header as the header class its code
    implies (the same object, no copy). A field of ``kind`` with a value of the wrong type is a :class:`WireError`
    (a missing one is not: the caller reads what it needs, as Java reads a null)."""
    fields = _KIND_TYPES.get(kind)
    if fields is None:
        fields = _KIND_TYPES[kind] = {n: _python_types(a) for n, a in get_type_hints(kind).items()}
    for name, value in header.items():
        allowed = fields.get(name)
        if allowed is not None:
            _check_field(name, value, allowed)
    return cast(H, header)
