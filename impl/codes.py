"""Wire-level constants of RocketMQ 5.1.1+ controller mode.

Numbers are RocketMQ's own, so traces and frames read like the real thing:
request codes from ``RequestCode``, response codes from ``ResponseCode``, put results from
``PutMessageStatus``, HA states from ``HAConnectionState`` (ordinals are on the wire), roles from
``BrokerRole``.
"""

from __future__ import annotations

from enum import Enum, IntEnum


class RequestCode(IntEnum):
    """``remoting/.../protocol/RequestCode.java`` (controller-mode subset)."""

    SEND_MESSAGE = 10
    BROKER_HEARTBEAT = 904
    CONTROLLER_ALTER_SYNC_STATE_SET = 1001
    CONTROLLER_ELECT_MASTER = 1002
    CONTROLLER_REGISTER_BROKER = 1003
    CONTROLLER_GET_REPLICA_INFO = 1004
    CONTROLLER_GET_METADATA_INFO = 1005
    CONTROLLER_GET_SYNC_STATE_DATA = 1006
    NOTIFY_BROKER_ROLE_CHANGED = 1008
    CLEAN_BROKER_DATA = 1011
    CONTROLLER_GET_NEXT_BROKER_ID = 1012
    CONTROLLER_APPLY_BROKER_ID = 1013
    # nameserver (RequestCode.REGISTER_BROKER / GET_ROUTEINFO_BY_TOPIC)
    REGISTER_BROKER = 103
    GET_ROUTEINFO_BY_TOPIC = 105
    # consumer pull (RequestCode.PULL_MESSAGE)
    PULL_MESSAGE = 11
    # RemotingClient.isAddressReachable opens a connection; the kit probes with a request any controller answers
    CHECK_REACHABLE = 60000
    # the controller group's own protocol (DLedgerRpcService: vote and push), oneway both ways here
    RAFT_VOTE = 60001
    RAFT_VOTE_REPLY = 60002
    RAFT_APPEND = 60003
    RAFT_APPEND_REPLY = 60004
    RAFT_INSTALL_SNAPSHOT = 60005  # JRaft: the leader's snapshot for a follower behind its first log index
    # consumer offsets (ConsumerManageProcessor) and the slave's sync of them (SlaveSynchronize)
    QUERY_CONSUMER_OFFSET = 14
    GET_MAX_OFFSET = 30
    UPDATE_CONSUMER_OFFSET = 15
    GET_ALL_CONSUMER_OFFSET = 43
    # topic config (AdminBrokerProcessor.updateAndCreateTopic; SlaveSynchronize.syncTopicConfig)
    UPDATE_AND_CREATE_TOPIC = 17
    GET_ALL_TOPIC_CONFIG = 21


class ResponseCode(IntEnum):
    """``remoting/.../protocol/ResponseCode.java``, 5.1.1+ numbering (the controller codes 2000-2015)."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2  # RemotingSysResponseCode.SYSTEM_BUSY: a processor's rejectRequest
    REQUEST_CODE_NOT_SUPPORTED = 3
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    SERVICE_NOT_AVAILABLE = 14
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    PULL_RETRY_IMMEDIATELY = 20
    QUERY_NOT_FOUND = 22
    CONTROLLER_FENCED_MASTER_EPOCH = 2000
    CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH = 2001
    CONTROLLER_INVALID_MASTER = 2002
    CONTROLLER_INVALID_REPLICAS = 2003
    CONTROLLER_MASTER_NOT_AVAILABLE = 2004
    CONTROLLER_INVALID_REQUEST = 2005
    CONTROLLER_BROKER_NOT_ALIVE = 2006
    CONTROLLER_NOT_LEADER = 2007
    CONTROLLER_BROKER_METADATA_NOT_EXIST = 2008
    CONTROLLER_INVALID_CLEAN_BROKER_METADATA = 2009
    CONTROLLER_BROKER_NEED_TO_BE_REGISTERED = 2010
    CONTROLLER_MASTER_STILL_EXIST = 2011
    CONTROLLER_ELECT_MASTER_FAILED = 2012
    CONTROLLER_ALTER_SYNC_STATE_SET_FAILED = 2013
    CONTROLLER_BROKER_ID_INVALID = 2014
    CONTROLLER_JRAFT_INTERNAL_ERROR = 2015


class PutMessageStatus(str, Enum):
    """``store/.../PutMessageStatus.java`` (the values the controller-mode put path yields)."""

    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    IN_SYNC_REPLICAS_NOT_ENOUGH = "IN_SYNC_REPLICAS_NOT_ENOUGH"


class HAConnectionState(IntEnum):
    """``store/.../ha/HAConnectionState.java``; the ordinal is the first int of every HA frame."""

    READY = 0
    HANDSHAKE = 1
    TRANSFER = 2
    SUSPEND = 3
    SHUTDOWN = 4


class BrokerRole(str, Enum):
    """``store/.../config/BrokerRole.java``. Controller mode uses SYNC_MASTER for every master."""

    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


MASTER_ID = 0
"""``MixAll.MASTER_ID``: the nameserver-facing brokerId of a master."""

FIRST_BROKER_CONTROLLER_ID = 1
"""``MixAll.FIRST_BROKER_CONTROLLER_ID``."""

ALL_ACK_IN_SYNC_STATE_SET = -1
"""``MixAll.ALL_ACK_IN_SYNC_STATE_SET``: ackNums meaning "every SSS member"."""

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


def to_int32(value: int) -> int:
    """Java ``(int)`` narrowing of a long: keep the low 32 bits, two's complement."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value
