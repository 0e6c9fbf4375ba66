"""RocketMQ's settings the core reads, with their real defaults and their Java names.

Three classes, one per Java config class: ``ControllerConfig``, ``BrokerConfig`` (its controller-mode subset) and
``MessageStoreConfig`` (its HA and put-acknowledgement subset). Defaults are RocketMQ 5.x's (the field initialisers
of ``common/.../ControllerConfig.java``, ``common/.../BrokerConfig.java`` and
``store/.../config/MessageStoreConfig.java``). Each setting keeps its Java name (``_java``): config files use it, so
an engineer can paste values from a ``broker.conf``; attributes are snake_case.

The harness's own settings (the cluster's shape, network, workload, faults, run knobs), the profiles, the
config file's format and its validation are ``impl/sim/config.py`` (``docs/configuration.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .codes import INT_MAX


def _java(name: str, default: Any, doc: str = "", *, quiet: bool = False) -> Any:
    """A RocketMQ setting under its Java name. ``quiet``: left out of ``to_dict`` while at its default."""
    return field(default=default, metadata={"java": name, "doc": doc, "quiet": quiet})


@dataclass
class ControllerConfig:
    """``common/.../ControllerConfig.java``."""

    enable_elect_unclean_master: bool = _java("enableElectUncleanMaster", False)
    scan_not_active_broker_interval: int = _java("scanNotActiveBrokerInterval", 5000)
    scan_inactive_master_interval: int = _java("scanInactiveMasterInterval", 5000)
    elect_master_max_retry_count: int = _java("electMasterMaxRetryCount", 3)
    notify_broker_role_changed: bool = _java("notifyBrokerRoleChanged", True)
    is_process_read_event: bool = _java("isProcessReadEvent", False)
    # DLedgerController.appendToDLedgerAndWait / ControllerRequestProcessor.WAIT_TIMEOUT_OUT
    append_wait_timeout: int = _java("dledgerAppendWaitTimeoutMs", 5000, "DLedger append wait (5 s)")
    commit_latency_ms: int = _java("dledgerCommitLatencyMs", 2, "replication latency of one log entry")
    controller_type: str = _java("controllerType", "DLedger", "DLedger (validate at the leader, then propose) or jRaft "
                                 "(5.2+: the request is the entry, validated at apply; liveness replicated)",
                                 quiet=True)
    jraft_scan_wait_timeout_ms: int = _java("jRaftScanWaitTimeoutMs", 1000, "jRaft: no inactive-broker scan until "
                                            "this long after the first heartbeat a node received", quiet=True)
    jraft_snapshot_interval_secs: int = _java(
        "jRaftSnapshotIntervalSecs", 0, "jRaft (3-node group): every node saves a snapshot of its applied state this "
        "often (the first after a random half to whole interval) and drops its log up to its previous snapshot; a "
        "follower behind the leader's first log index installs the leader's snapshot. RocketMQ's default is 3600, "
        "which no simulated run reaches; 0: no snapshots", quiet=True)
    server_channel_max_idle_time_seconds: int = _java(
        "serverChannelMaxIdleTimeSeconds", 120, "NettyServerConfig of the controller: a connection "
        "idle this long is closed and its broker's heartbeat entry removed (onChannelIdle); the simulator fires it "
        "for a crashed broker's connection whose close a partition lost (0: not modelled)", quiet=True)


@dataclass
class BrokerConfig:
    """``common/.../BrokerConfig.java`` (controller-mode subset)."""

    cluster_name: str = _java("brokerClusterName", "DefaultCluster")
    broker_name: str = _java("brokerName", "broker-a")
    controller_heartbeat_timeout_mills: int = _java("controllerHeartBeatTimeoutMills", 10_000)
    broker_heartbeat_interval: int = _java("brokerHeartbeatInterval", 1000)
    sync_broker_metadata_period: int = _java("syncBrokerMetadataPeriod", 5000)
    check_sync_state_set_period: int = _java("checkSyncStateSetPeriod", 5000)
    sync_controller_metadata_period: int = _java("syncControllerMetadataPeriod", 10_000)
    broker_election_priority: int = _java("brokerElectionPriority", INT_MAX)
    register_name_server_period: int = _java("registerNameServerPeriod", 30_000)
    rpc_timeout: int = _java("controllerRpcTimeoutMillis", 3000, "BrokerOuterAPI invokeSync timeout")
    enable_controller_mode: bool = _java("enableControllerMode", True)
    slave_read_enable: bool = _java(
        "slaveReadEnable", False, "slaves serve pulls (PullMessageProcessor.rejectRequest lets them through) and a "
        "master sends a consumer that pulls messages no longer in memory to slave 1 (suggestWhichBrokerId); the kit's "
        "consumer then picks its broker per queue as RocketMQ's client does (PullAPIWrapper: the suggested broker, or "
        "any broker of the route when that one is not in it, e.g. while the set has no master)", quiet=True)


@dataclass
class MessageStoreConfig:
    """``store/.../config/MessageStoreConfig.java`` (HA and put-acknowledgement subset)."""

    all_ack_in_sync_state_set: bool = _java("allAckInSyncStateSet", False)
    in_sync_replicas: int = _java("inSyncReplicas", 1)
    min_in_sync_replicas: int = _java("minInSyncReplicas", 1)
    ha_max_time_slave_not_catchup: int = _java("haMaxTimeSlaveNotCatchup", 15_000)
    ha_send_heartbeat_interval: int = _java("haSendHeartbeatInterval", 5000)
    ha_housekeeping_interval: int = _java("haHousekeepingInterval", 20_000)
    ha_transfer_batch_size: int = _java("haTransferBatchSize", 32 * 1024)
    slave_timeout: int = _java("slaveTimeout", 3000)
    sync_flush_timeout: int = _java("syncFlushTimeout", 5000)
    flush_disk_type: str = _java("flushDiskType", "ASYNC_FLUSH")
    flush_interval_commit_log: int = _java("flushIntervalCommitLog", 500)
    flush_commit_log_least_pages: int = _java("flushCommitLogLeastPages", 4)
    flush_commit_log_thorough_interval: int = _java("flushCommitLogThoroughInterval", 10_000)
    sync_from_last_file: bool = _java("syncFromLastFile", False)
    async_learner: bool = _java("asyncLearner", False)
    read_uncommitted: bool = _java("readUnCommitted", False)
    access_message_in_memory_max_ratio: int = _java(
        "accessMessageInMemoryMaxRatio", 40, "percent of the machine's memory (the kit: 16 GiB) a master counts as in "
        "memory: a pull whose last message starts further than that below the log end is suggested to a slave "
        "(DefaultMessageStore.getMessage: diff > memory), with slaveReadEnable; 0: every pull that finds messages",
        quiet=True)
    mapped_file_size_commit_log: int = _java("mappedFileSizeCommitLog", 1024 * 1024 * 1024)
    reput_interval_ms: int = _java("reputIntervalMs", 0,
                                   "dispatch lag: 0 dispatches within the step (the real thread polls every 1 ms)")
    broker_role: str = _java("brokerRole", "SYNC_MASTER", "4.x mode only: SYNC_MASTER / ASYNC_MASTER")
    ha_max_gap_not_in_sync: int = _java("haMaxGapNotInSync", 256 * 1024 * 1024, "4.x mode only")
