"""The run configuration: RocketMQ's settings (``impl/config.py``) plus the harness's own knobs, the profiles, the
config file's format and its validation.

A config file is TOML with the sections ``[cluster] [controller] [broker] [store] [network] [workload] [faults]
[sim]`` (``docs/configuration.md``, generated from these classes). ``[controller] [broker] [store]`` are RocketMQ's
settings under their Java names; the others are the harness's: the shape of the simulated deployment, the
network, the producers and consumers, the fault generator and run-level knobs (snake_case). ``config_from_dict``
validates every key and value and raises ``ConfigError`` with one line. A profile (``PROFILES``) is a named
overlay on RocketMQ's defaults.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field, fields
from typing import Any

from ..config import BrokerConfig, ControllerConfig, MessageStoreConfig
from .actions import FAULT_KINDS, LATE_GUARD_WEIGHTS


class ConfigError(ValueError):
    """A bad configuration value; the message is one line, fit for a user."""


def _sim(default: Any, doc: str = "", *, quiet: bool = False) -> Any:
    """A harness knob. ``quiet``: left out of ``to_dict`` while at its default."""
    if default in (list, dict):
        return field(default_factory=default, metadata={"doc": doc, "quiet": quiet})
    return field(default=default, metadata={"doc": doc, "quiet": quiet})


@dataclass
class ClusterConfig:
    """The shape of the simulated deployment."""

    brokers: int = _sim(3, "replicas in the broker set")
    mode: str = _sim("controller", "'controller' (5.x AutoSwitchHA) or 'legacy' (4.x master/slave)")
    election_priorities: list[int] = _sim(list, "per broker brokerElectionPriority (empty: default)")  # noqa: RUF009
    controllers: int = _sim(1, "controller nodes: 1 (one node stands for the group) or 3 (a replicated DLedger "
                                "group: leader election, per-node commit and apply)", quiet=True)


@dataclass
class NetworkConfig:
    """Simulated network for controller RPCs, nameserver calls and HA streams (all in ms)."""

    delay_min: int = _sim(1, "one-way delay lower bound")
    delay_max: int = _sim(5, "one-way delay upper bound")
    drop: float = _sim(0.0, "base probability that an RPC message is lost")
    duplicate: float = _sim(0.0, "base probability that an RPC message is delivered twice")
    slow: float = _sim(0.0, "probability that an RPC message takes slow_delay extra (reorders)")
    slow_delay: int = _sim(400, "extra delay of a slow RPC message")
    connect_delay: int = _sim(2, "time to open an HA connection")
    ha_fragment: float = _sim(0.0, "probability that an HA stream write reaches the peer in 2-4 pieces cut anywhere "
                              "(TCP segments), even inside a frame header", quiet=True)


@dataclass
class WorkloadConfig:
    """Producers and consumers."""

    produce_interval: int = _sim(400, "mean time between two sends")
    produce_start: int = _sim(0, "the producer's background sending begins this long after boot (a topic that stays "
                              "quiet at first: a failover before its first message finds every log empty)",
                              quiet=True)
    message_size_min: int = _sim(48, "smallest message body (bytes)")
    message_size_max: int = _sim(600, "largest message body (bytes)")
    send_timeout: int = _sim(3000, "producer sendMsgTimeout")
    route_refresh: int = _sim(30_000, "producer pollNameServerInterval")
    consume_interval: int = _sim(1000, "consumer pull period (0: no consumer)")
    queues: int = _sim(0, "queues of the topic: messages carry a queue id and a queue offset the master assigns, "
                       "consumers pull per queue (0: one implicit queue, the consume queue is the dispatch order)",
                       quiet=True)
    topic_config: bool = _sim(False, "brokers keep the topic's config (read/write queue counts and data version: "
                              "TopicConfigManager), register it with the nameserver, slaves sync it every 10 s "
                              "(SlaveSynchronize.syncTopicConfig); producers and consumers take the queue counts from "
                              "the route; the fault expand-queues grows the topic on the master (needs queues)",
                              quiet=True)
    other_topics: int = _sim(0, "topics in each broker's table besides the workload's (with topic_config): they carry "
                             "no messages but make every persist of topics.json longer, so a slave's sync loop "
                             "(deleteTopicConfig per entry, each persisting the table) takes simulated time",
                             quiet=True)
    topic_persist_us: int = _sim(3, "cost of one topic's entry in one persist of topics.json (fastjson + write), in "
                                 "microseconds (with other_topics)", quiet=True)


@dataclass
class FaultConfig:
    """The fault generator: mean spacing, concurrency and relative weights of each fault kind."""

    mean_interval: int = _sim(15_000, "mean time between two injected faults")
    heal_after_min: int = _sim(2000, "shortest partition / pause before it heals")
    heal_after_max: int = _sim(25_000, "longest partition / pause before it heals")
    restart_after_min: int = _sim(1000, "shortest downtime of a crashed process")
    restart_after_max: int = _sim(20_000, "longest downtime of a crashed process")
    max_down: int = _sim(1, "brokers that may be down at the same time")
    lose_unflushed_tail: float = _sim(0.0, "probability that a broker crash is a power loss")
    weights: dict[str, float] = _sim(dict, "relative weight of each fault kind (impl/sim/actions.py: FAULT_KINDS)")  # noqa: RUF009
    guards: bool = _sim(False, "also draw the TCP-faithful faults at the guards (issue 21: stale HA tails, controller "
                        "requests held across a restart, crashes aimed at chosen points) at their default weights; "
                        "off: only the ones [faults] weights names", quiet=True)
    adversarial: bool = _sim(False, "also draw the adversarial faults at the guards, beyond what TCP does (issue 21: "
                             "HA writes duplicated, reordered, replayed across connections; controller requests "
                             "replayed; ADVERSARIAL_KINDS in impl/sim/actions.py) at their default weights",
                             quiet=True)


@dataclass
class SimConfig:
    """Run-level knobs."""

    quiet_tail: int = _sim(0, "extra fault-free time at the end of a run")
    progress: bool = _sim(False, "end the run with a settle tail: no new fault, the last ones heal, and each progress "
                          "invariant (LIVE-*) is checked at the heal point plus its settle bound (docs/invariants.md); "
                          "new runs of rmqha simulate and rmqha fuzz turn it on", quiet=True)
    file_residue: bool = _sim(False, "truncation leaves the cut bytes in the mapped file until overwritten, and "
                              "recovery scans them (MappedFileQueue.truncateDirtyFiles moves positions only)",
                              quiet=True)
    file_boundaries: bool = _sim(False, "the commit log is mapped files of [store] mappedFileSizeCommitLog: a message "
                                 "that does not fit (with 8 bytes to spare) goes to the next file after a filler",
                                 quiet=True)
    base_offset: int = _sim(0, "physical offset at which every broker's commit log starts (a long history, older "
                            "files deleted): offsets past 2^31 and 2^32 with a small log", quiet=True)
    join_at: int = _sim(0, "the set's last broker starts this long after boot (0: at boot), on a new, empty store "
                        "at offset 0 whatever base_offset says: a replica added to a running set. Its first HA "
                        "transfer starts at its master's min offset (AutoSwitchHAConnection: a slave request of 0), "
                        "and its first append creates its first mapped file there. Generated runs schedule the "
                        "start as a restart action", quiet=True)
    interleave: bool = _sim(False, "a broker's long steps run in sub-steps that other events interleave with, as "
                            "RocketMQ's threads do: a role change (ReplicasManager.changeToMaster / changeToSlave: "
                            "the SyncStateSet, the HA service's switch with its epoch append, the wait for dispatch, "
                            "the store's role, the registration) and the reput (ReputMessageService.doReput, a few "
                            "messages at a time); the gaps are drawn from the broker's seeded stream", quiet=True)


@dataclass
class Config:
    """Everything one simulation needs, besides its seed and fault schedule."""

    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    controller: ControllerConfig = field(default_factory=ControllerConfig)
    broker: BrokerConfig = field(default_factory=BrokerConfig)
    store: MessageStoreConfig = field(default_factory=MessageStoreConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    faults: FaultConfig = field(default_factory=FaultConfig)
    sim: SimConfig = field(default_factory=SimConfig)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Canonical, file-style form (Java names for RocketMQ settings).

        Settings added after traces were first committed are *quiet*: left out while at their default (and a
        section with nothing left is left out), so that a trace header written before them still replays
        byte for byte and a run that does not use a part says nothing about it."""
        out: dict[str, dict[str, Any]] = {}
        for sec in fields(self):
            values = section_dict(getattr(self, sec.name))
            if values is not None:
                out[sec.name] = values
        return out


def section_dict(obj: Any) -> dict[str, Any] | None:
    """One section in file-style form, quiet settings at their default left out; ``None`` when nothing is left
    and every setting of the section is quiet (the section is then left out)."""
    values = {_key(f): _copy(getattr(obj, f.name)) for f in fields(obj)
              if not (f.metadata.get("quiet") and getattr(obj, f.name) == _default(f))}
    if values or not all(f.metadata.get("quiet") for f in fields(obj)):
        return values
    return None


def _key(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("java", f.name))


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    assert f.default_factory is not dataclasses.MISSING  # every setting has a default or a factory (_java, _sim)
    return f.default_factory()


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: v[k] for k in sorted(v)}
    if isinstance(v, list):
        return list(v)
    return v


SAFE = "safe"
FIDELITY = "fidelity"
FIDELITY_SETTINGS: dict[str, dict[str, Any]] = {
    "cluster": {"controllers": 3}, "broker": {"slaveReadEnable": True},
    "store": {"allAckInSyncStateSet": True, "accessMessageInMemoryMaxRatio": 0},
    "network": {"ha_fragment": 0.3},
    "workload": {"queues": 4, "topic_config": True, "other_topics": 2000},
    "sim": {"base_offset": 2**31 - 65536, "file_residue": True, "file_boundaries": True},
    "faults": {"weights": {"stop-broker": 1.0, "lose-checkpoint": 0.5, "restart-consumer": 0.7,
                           "crash-controller-leader": 0.7, "isolate-controller-leader": 0.7,
                           "slow-apply": 0.5, "expand-queues": 0.5, "crash-torn-write": 0.7}}}
"""The fidelity profile's settings (``PROFILES[FIDELITY]``; the topic-failover profile builds on them)."""

PROFILES: dict[str, dict[str, dict[str, Any]]] = {
    # allAck on, unclean off: the configuration RocketMQ's deploy guide says "ensures that the message is
    # not lost" (docs/en/controller/deploy.md). Crashes keep the page cache (kill -9, not power loss).
    SAFE: {"store": {"allAckInSyncStateSet": True}},
    # RocketMQ's shipped defaults: allAckInSyncStateSet=false acks after the master's own write.
    "defaults": {},
    "unclean": {"store": {"allAckInSyncStateSet": True}, "controller": {"enableElectUncleanMaster": True}},
    "power-loss": {"store": {"allAckInSyncStateSet": True}, "faults": {"lose_unflushed_tail": 0.5}},
    # safe, with every finished fidelity part turned on (docs/fidelity.md), each with its settings and fault
    # weights: a 3-node controller group (part 1: leader crashes and cuts, slow applies); topics and queues
    # (part 3: 4 queues); disk and recovery (part 4: clean stops, lost checkpoints,
    # truncated bytes left in the file); HA writes in pieces (part 5); logs that start 64 KiB below 2^31 and cross
    # it (part 7); consumer restarts and topic growth (part 2: consumer offsets and topic config need the
    # queues). Part 6 has no settings. Part 8: consumers read from the slaves (slaveReadEnable; every pull that
    # finds messages is suggested to a slave: accessMessageInMemoryMaxRatio 0).
    FIDELITY: FIDELITY_SETTINGS,
    # the fidelity profile with topic growth racing a failover: the admin widens the topic and the master dies once the
    # slaves have synced it, before the producers use the new queues (what a promotion's cover must keep)
    "topic-failover": {**FIDELITY_SETTINGS, "faults": {"weights": {
        **FIDELITY_SETTINGS["faults"]["weights"], "expand-then-crash-master": 2.0}}},
    # safe, with a 3-node controller group of the JRaft flavour (part 1: requests validated at apply, liveness
    # replicated) under the controller faults
    "jraft": {"cluster": {"controllers": 3}, "controller": {"controllerType": "jRaft"},
              "store": {"allAckInSyncStateSet": True},
              "faults": {"weights": {"crash-controller-leader": 0.7, "isolate-controller-leader": 0.7,
                                     "slow-apply": 0.5}}},
    # jraft, with snapshots every 5 s and the operator's paths: a controller follower down for 20-40 s (the leader
    # has snapshotted twice and compacted what it needs: installSnapshot), cleanBrokerData of a running broker's id
    # (refused) and of a dead slave's (then redeployed without its identity), a broker restarted on another port
    "jraft-ops": {"cluster": {"controllers": 3},
                  "controller": {"controllerType": "jRaft", "jRaftSnapshotIntervalSecs": 5},
                  "store": {"allAckInSyncStateSet": True},
                  "faults": {"weights": {"crash-controller-leader": 0.7, "isolate-controller-leader": 0.7,
                                         "slow-apply": 0.5, "crash-controller-follower": 1.5,
                                         "clean-living-broker": 2.0, "decommission-broker": 1.5,
                                         "move-broker": 2.0}}},
    # safe, with a 3-node DLedger controller group under the controller faults at higher weights (its leader crashed
    # or cut, any node crashed, slow applies, lossy and slow RPCs, the group's own messages replayed, a node hit
    # between an entry's commit and its apply: killed, or a new leader cut off), reads logged too (isProcessReadEvent:
    # the brokers' periodic reads keep the log moving), a light workload and faults every 10 s on average (more of
    # the group's history in a run's steps): the settle tail's LIVE-CTL-* checks see how it elects, keeps its leader
    # and applies
    "ctl": {"cluster": {"controllers": 3}, "controller": {"isProcessReadEvent": True},
            "store": {"allAckInSyncStateSet": True},
            "workload": {"produce_interval": 2000, "consume_interval": 5000},
            "faults": {"mean_interval": 10_000,
                       "weights": {"crash-controller-leader": 2.0, "isolate-controller-leader": 2.0,
                                   "crash-controller": 1.0, "slow-apply": 2.0, "ctl-replay": 1.5,
                                   "lossy-network": 1.5, "crash-ctl-unapplied": 1.0, "cut-ctl-unapplied": 1.0}}},
    # safe, with the TCP-faithful faults at the guards (issue 21) at their default weights and the broker's long
    # steps interleaved (role changes and the reput in sub-steps)
    "guards": {"store": {"allAckInSyncStateSet": True}, "faults": {"guards": True}, "sim": {"interleave": True}},
    # the guards profile with the adversarial faults too (beyond TCP: duplicated, reordered, replayed and corrupted HA
    # writes, replayed controller requests)
    "adversarial": {"store": {"allAckInSyncStateSet": True},
                    "faults": {"guards": True, "adversarial": True, "weights": dict(LATE_GUARD_WEIGHTS)},
                    "sim": {"interleave": True}},
    # safe, with the store's edges in reach: small mapped files (48 KiB) and messages up to 16 KiB, so files end in
    # long fillers and a slave's 32 KiB catch-up batches (haTransferBatchSize) end inside messages and fillers (a
    # confirmOffset inside a filler); kill -9 in the middle of commit-log writes (a torn record over the zeros of
    # its mapped file, for recovery to scan)
    "storage": {"store": {"allAckInSyncStateSet": True, "mappedFileSizeCommitLog": 48 * 1024},
                "workload": {"message_size_max": 16 * 1024}, "sim": {"file_boundaries": True},
                "faults": {"weights": {"crash-torn-write": 2.0}}},
    # safe, on a new cluster whose topic stays quiet for its first 30 s: a failover in that time finds every log
    # empty, so a new master's epoch starts where the last one does (QUIRK-EPOCH-EQ; F-EPOCH-EQ-SPLICE's shape), and a
    # slave that recorded the first epoch from a heartbeat holds an entry the new master replaced
    "fresh": {"store": {"allAckInSyncStateSet": True}, "workload": {"produce_start": 30_000}},
    # large-logs, with a replica added 20 s in: its empty store starts at 0, its master's log past 2^32
    "new-replica": {"store": {"allAckInSyncStateSet": True}, "sim": {"base_offset": 2**32 - 65536, "join_at": 20_000}},
    # safe, with a replica added 20 s in on a new store that asks for its master's last commit-log file only
    # (syncFromLastFile: AutoSwitchHAConnection starts an empty slave at max - max % mappedFileSizeCommitLog), in
    # 8 KiB mapped files whose ends take fillers (a file start is a message start, as in RocketMQ), so the master's
    # log has left its first file by then: the new replica's log starts past its master's, without the older files
    "last-file": {"store": {"allAckInSyncStateSet": True, "syncFromLastFile": True,
                            "mappedFileSizeCommitLog": 8 * 1024},
                  "sim": {"file_boundaries": True, "join_at": 20_000}},
    # safe, with logs that start 64 KiB below 2^32: every offset past 2^31, and 2^32 crossed (part 7)
    "large-logs": {"store": {"allAckInSyncStateSet": True}, "sim": {"base_offset": 2**32 - 65536}},
    "legacy-sync": {"cluster": {"mode": "legacy", "brokers": 2}, "store": {"brokerRole": "SYNC_MASTER"}},
    "legacy-async": {"cluster": {"mode": "legacy", "brokers": 2}, "store": {"brokerRole": "ASYNC_MASTER"}},
}


def default_config(profile: str = SAFE) -> Config:
    """The named profile applied to RocketMQ's defaults."""
    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r} (known: {', '.join(sorted(PROFILES))})")
    return config_from_dict(PROFILES[profile])


def config_from_dict(data: dict[str, Any], base: Config | None = None) -> Config:
    """Overlay ``data`` (file-style keys) on ``base`` (or the defaults), validating as it goes."""
    cfg = dataclasses.replace(base) if base is not None else Config()
    if base is not None:  # deep copy the sections so that base stays untouched
        for sec in fields(cfg):
            setattr(cfg, sec.name, dataclasses.replace(getattr(base, sec.name)))
            obj = getattr(cfg, sec.name)
            for f in fields(obj):
                setattr(obj, f.name, _copy(getattr(obj, f.name)))
    if not isinstance(data, dict):
        raise ConfigError("config must be a table of sections")
    sections = {f.name: f for f in fields(cfg)}
    for sec_name, values in data.items():
        if sec_name == "profile":
            continue
        if sec_name not in sections:
            raise ConfigError(f"unknown config section [{sec_name}] (known: {', '.join(sections)})")
        if not isinstance(values, dict):
            raise ConfigError(f"[{sec_name}] must be a table")
        obj = getattr(cfg, sec_name)
        by_key = {}
        for f in fields(obj):
            by_key[_key(f)] = f
            by_key[f.name] = f
        for key, value in values.items():
            if key not in by_key:
                raise ConfigError(f"unknown setting {key!r} in [{sec_name}]")
            f = by_key[key]
            setattr(obj, f.name, _coerce(sec_name, key, f, value))
    validate(cfg)
    return cfg


def _coerce(sec: str, key: str, f: dataclasses.Field[Any], value: Any) -> Any:
    default = _default(f)
    where = f"[{sec}] {key}"
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} must be an integer, got {value!r}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{where} must be a finite number, got {value!r}")
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string, got {value!r}")
        return value
    if isinstance(default, list):
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise ConfigError(f"{where} must be a list of integers")
        return list(value)
    if isinstance(default, dict):
        if not isinstance(value, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value.values()
        ):
            raise ConfigError(f"{where} must be a table of finite numbers")
        return {str(k): float(v) for k, v in value.items()}
    raise ConfigError(f"{where}: unsupported setting type")  # pragma: no cover


def validate(cfg: Config) -> None:
    """Cross-field checks; each failure is a one-line ``ConfigError``."""
    checks: list[tuple[bool, str]] = [
        (1 <= cfg.cluster.brokers <= 9, "[cluster] brokers must be between 1 and 9"),
        (cfg.cluster.mode in ("controller", "legacy"), "[cluster] mode must be 'controller' or 'legacy'"),
        (cfg.cluster.mode != "legacy" or cfg.cluster.brokers >= 2, "[cluster] legacy mode needs 2+ brokers"),
        (
            not cfg.cluster.election_priorities or len(cfg.cluster.election_priorities) == cfg.cluster.brokers,
            "[cluster] election_priorities needs one value per broker",
        ),
        (0 <= cfg.network.delay_min <= cfg.network.delay_max, "[network] need 0 <= delay_min <= delay_max"),
        (all(0.0 <= p <= 1.0 for p in (cfg.network.drop, cfg.network.duplicate, cfg.network.slow,
                                        cfg.network.ha_fragment)),
         "[network] probabilities must be in [0, 1]"),
        (0 <= cfg.sim.base_offset <= 1 << 62, "[sim] base_offset must be between 0 and 2^62"),
        (cfg.sim.join_at >= 0, "[sim] join_at must be >= 0"),
        (cfg.workload.produce_interval >= 0, "[workload] produce_interval must be >= 0 (0: no producer)"),
        (cfg.workload.produce_start >= 0, "[workload] produce_start must be >= 0"),
        (8 <= cfg.workload.message_size_min <= cfg.workload.message_size_max <= 1 << 20,
         "[workload] need 8 <= message_size_min <= message_size_max <= 1 MiB"),
        (cfg.workload.consume_interval >= 0, "[workload] consume_interval must be >= 0"),
        (0 <= cfg.workload.queues <= 64, "[workload] queues must be between 0 and 64"),
        (not cfg.workload.topic_config or cfg.workload.queues > 0, "[workload] topic_config needs [workload] queues"),
        (0 <= cfg.workload.other_topics <= 1_000_000, "[workload] other_topics must be between 0 and 1000000"),
        (not cfg.workload.other_topics or cfg.workload.topic_config, "[workload] other_topics needs topic_config"),
        (0 <= cfg.workload.topic_persist_us <= 1_000_000, "[workload] topic_persist_us must be between 0 and 1000000"),
        (cfg.cluster.controllers in (1, 3, 5), "[cluster] controllers must be 1, 3 or 5"),
        (not cfg.sim.file_boundaries or cfg.store.mapped_file_size_commit_log >= 2 * cfg.workload.message_size_max
         + 4096, "[sim] file_boundaries needs mappedFileSizeCommitLog >= 2 x message_size_max + 4 KiB"),
        (cfg.controller.controller_type in ("DLedger", "jRaft"),
         "[controller] controllerType must be DLedger or jRaft"),
        (cfg.controller.jraft_snapshot_interval_secs >= 0, "[controller] jRaftSnapshotIntervalSecs must be >= 0"),
        (cfg.controller.server_channel_max_idle_time_seconds >= 0,
         "[controller] serverChannelMaxIdleTimeSeconds must be >= 0"),
        (cfg.faults.mean_interval > 0, "[faults] mean_interval must be positive"),
        (0 < cfg.faults.heal_after_min <= cfg.faults.heal_after_max, "[faults] need 0 < heal_after_min <= max"),
        (0 < cfg.faults.restart_after_min <= cfg.faults.restart_after_max,
         "[faults] need 0 < restart_after_min <= max"),
        (0.0 <= cfg.faults.lose_unflushed_tail <= 1.0, "[faults] lose_unflushed_tail must be in [0, 1]"),
        (cfg.store.flush_disk_type in ("ASYNC_FLUSH", "SYNC_FLUSH"),
         "[store] flushDiskType must be ASYNC_FLUSH or SYNC_FLUSH"),
        (cfg.store.broker_role in ("SYNC_MASTER", "ASYNC_MASTER"),
         "[store] brokerRole must be SYNC_MASTER or ASYNC_MASTER"),
        (cfg.store.ha_transfer_batch_size > 0, "[store] haTransferBatchSize must be positive"),
        (cfg.store.min_in_sync_replicas >= 1, "[store] minInSyncReplicas must be >= 1"),
        (cfg.controller.elect_master_max_retry_count >= 1, "[controller] electMasterMaxRetryCount must be >= 1"),
        (re.fullmatch(r"[A-Za-z0-9_-]{1,64}", cfg.broker.broker_name) is not None,
         "[broker] brokerName must be 1-64 of [A-Za-z0-9_-]"),
        (re.fullmatch(r"[A-Za-z0-9_-]{1,64}", cfg.broker.cluster_name) is not None,
         "[broker] brokerClusterName must be 1-64 of [A-Za-z0-9_-]"),
    ]
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)
    for kind, weight in cfg.faults.weights.items():
        if kind not in FAULT_KINDS:
            raise ConfigError(f"[faults] unknown fault kind {kind!r} (known: {', '.join(sorted(FAULT_KINDS))})")
        if weight < 0:
            raise ConfigError(f"[faults] weight of {kind} must be >= 0")
