"""What the progress invariants (LIVE-*, ``progress.py``) are handed: the run's settle point, and their settle bounds.

A run with progress checks (``[sim] progress``) ends with a fault-free *settle tail*: the last fault heals (every
partition healed, every paused process resumed, every lossy or slow window over, every crashed process restarted
but the brokers the schedule leaves down, which are *dead*), and each LIVE-* invariant is checked once, at the heal
point plus its *settle bound*. A bound is a sum of stages (``Term``), each one of RocketMQ's timeouts or periods
(``impl/config.py``, under its Java name) or a constant of the Java code the kit mirrors, with the RocketMQ method
that waits it: the longest the system may take, with no fault left, to get from any state to the property. Nothing
here reads a clock; the driver (``impl/sim/settle.py``, ``rmqha/cluster``) hands in the times.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..broker.replicas_manager import RETRY_INTERVAL
from ..config import BrokerConfig, ControllerConfig, MessageStoreConfig
from ..controller.node import TRIGGER_WAIT
from ..controller.raft import ELECTION_MAX, HEARTBEAT
from ..ha.client import RETRY_WAIT

ROUTE_TIMEOUT = 3000
"""A producer's route lookup (``MQClientAPIImpl.getTopicRouteInfoFromNameServer``, 3 s)."""

PERIODIC_RUN = 4
"""A periodic task's longest legitimate run, in controller RPCs: ``schedulingSyncBrokerMetadata`` waits for
getReplicaInfo, then for the monitor a role change may hold across one RPC, then for registerBrokerToController
(and its 2 s back-off) or brokerElect; a consumer's pull for its offset query, max offset, pull and route."""


IDLE_WINDOW = 1000
"""LIVE-IDLE-WAKEUPS counts a service's idle wake-ups per quiet second (ms), from the heal point on."""

IDLE_WAKEUPS = 100
"""The most idle wake-ups one service of one process may make in a quiet second (``IDLE_WINDOW``). RocketMQ's
shortest wait of a service thread with nothing to do, ReputMessageService's 1 ms excepted (``POLLING``), is 10 ms:
``GroupTransferService.run`` (waitForRunning(10)), ``DefaultHAConnection.WriteSocketService.run`` before the slave's
first report (Thread.sleep(10)), ``AutoSwitchHAConnection.WriteSocketService`` in HANDSHAKE (waitForRunning(10)).
Every other one waits longer: the HA connections' write services with nothing to transfer 100 ms
(allWaitForRunning(100)) and their read services' 1 s select, the 4.x and 5.x HA clients' 1 s select (5 s
waitForRunning when not connected), DLedger's 500 ms heartbeat, the scheduled executors 1 s and more. So
1000 / 10 = 100. The healthy maxima of the quiet tails measured are far below it (LIVE-IDLE-WAKEUPS)."""

POLLING = frozenset({"BrokerNode._reput"})
"""Timer callbacks (``__qualname__``) of the services RocketMQ runs as a poll of 1 ms, not bounded by
``IDLE_WAKEUPS``: ``ReputMessageService.run`` sleeps 1 ms between two ``doReput`` passes (the kit wakes it when
there is something to dispatch, and with ``[sim] interleave`` runs a pass in sub-steps 0-3 ms apart, some of which
dispatch nothing: up to 689 of them in one quiet second of adversarial seed 1)."""


@dataclass(frozen=True)
class Timeouts:
    """The settings the settle bounds are made of: RocketMQ's three config classes, the size of the controller
    group, and the producer's send timeout (``DefaultMQProducer.sendMsgTimeout``)."""

    controller: ControllerConfig
    broker: BrokerConfig
    store: MessageStoreConfig
    controllers: int = 1
    send_timeout: int = 3000
    legacy: bool = False  # a 4.x master/slave run (``[cluster] mode = "legacy"``): no controller, fixed roles
    net_delay: int = 5  # the network's longest one-way delay with no fault left (the simulator's [network] delay_max)
    consume_interval: int = 1000  # the consumer's pull period (0: no consumer)


@dataclass(frozen=True)
class Term:
    """One stage of a settle bound: what waits, and how long (ms)."""

    what: str
    ms: int


@dataclass
class Settle:
    """A run's settle point, as the progress checks see it."""

    heal: int  # the heal point: the time the last fault's effect ended
    dead: tuple[str, ...]  # the brokers down at the heal point (left down by the schedule)
    timeouts: Timeouts
    probes: list[str] = field(default_factory=list)  # the keys of the probe sends, in order


def total(terms: list[Term]) -> int:
    return sum(t.ms for t in terms)


def group_terms(t: Timeouts) -> list[Term]:
    """A replicated controller group serves again and every broker finds its leader (nothing for one node)."""
    if t.controllers <= 1:
        return []
    b = t.broker
    return [Term("2 × ELECTION_MAX: the group elects a leader (DLedgerLeaderElector; a split vote repeated once)",
                 2 * ELECTION_MAX),
            Term("syncControllerMetadataPeriod: a broker's ReplicasManager.updateControllerMetadata finds the new "
                 "leader", b.sync_controller_metadata_period),
            Term("controllers × controllerRpcTimeoutMillis: it asks each controller address in turn "
                 "(getControllerMetaData)", t.controllers * b.rpc_timeout)]


def master_terms(t: Timeouts) -> list[Term]:
    """LIVE-MASTER: a dead master found, a new one elected, and the elected broker (or a restarted one) RUNNING in
    its role."""
    c, b = t.controller, t.broker
    return [*group_terms(t),
            Term("controllerHeartBeatTimeoutMills: a dead master's heartbeat entry stays alive this long "
                 "(DefaultBrokerHeartbeatManager.isBrokerActive)", b.controller_heartbeat_timeout_mills),
            Term("max(scanNotActiveBrokerInterval, scanInactiveMasterInterval): the next scan finds it "
                 "(scanNotActiveBroker -> ControllerManager.onBrokerInactive; "
                 "DLedgerController.scanInactiveMasterAndTriggerReelect)",
                 max(c.scan_not_active_broker_interval, c.scan_inactive_master_interval)),
            Term("electMasterMaxRetryCount × 3 s: ControllerManager.triggerElectMaster's attempts, each awaited 3 s",
                 c.elect_master_max_retry_count * TRIGGER_WAIT),
            Term("RETRY_INTERVAL_SECOND: a broker restarted at the heal point retries "
                 "ReplicasManager.startBasicService", RETRY_INTERVAL),
            Term("syncBrokerMetadataPeriod + controllerRpcTimeoutMillis: a broker that missed the role notification "
                 "learns its role, or asks for an election when the controller names no master "
                 "(ReplicasManager.schedulingSyncBrokerMetadata -> changeToMaster / changeToSlave / brokerElect)",
                 b.sync_broker_metadata_period + b.rpc_timeout)]


def address_terms(t: Timeouts) -> list[Term]:
    """LIVE-CTL-ADDRESS: a broker (re)started on a new address registers it. registerBrokerToController is the last
    step of ReplicasManager.startBasicService, which LIVE-MASTER's bound already waits for (a broker restarted at the
    heal point retries it every RETRY_INTERVAL_SECOND until it succeeds); the event it appends is committed and
    applied before the controller answers."""
    return master_terms(t)


def no_dead_terms(t: Timeouts) -> list[Term]:
    """LIVE-SSS-NO-DEAD: the master's view of the SyncStateSet caught up with the controller's, a dead member's
    caught-up time stale, and the shrink reported."""
    b, s = t.broker, t.store
    return [*group_terms(t),
            Term("syncBrokerMetadataPeriod + controllerRpcTimeoutMillis: the master adopts the controller's "
                 "SyncStateSet (schedulingSyncBrokerMetadata -> changeSyncStateSet)",
                 b.sync_broker_metadata_period + b.rpc_timeout),
            Term("haMaxTimeSlaveNotCatchup: a dead member's last caught-up time goes stale "
                 "(AutoSwitchHAService.maybeShrinkSyncStateSet)", s.ha_max_time_slave_not_catchup),
            Term("checkSyncStateSetPeriod + controllerRpcTimeoutMillis: the next checkSyncStateSetAndDoReport "
                 "reports the shrink (alterSyncStateSet)", b.check_sync_state_set_period + b.rpc_timeout)]


def connect_terms(t: Timeouts) -> list[Term]:
    """Every live slave holds an HA connection in TRANSFER to the master (a stage of LIVE-HA-TRANSFER)."""
    b = t.broker
    return [*master_terms(t),
            Term("registerNameServerPeriod + 3 s: a slave that registered with the nameserver before its new master "
                 "did learns the master's HA address at its next registration (BrokerController.registerBrokerAll "
                 "-> handleRegisterBrokerResult)", max(10_000, min(b.register_name_server_period, 60_000)) + 3000),
            Term("2 × 5 s: AutoSwitchHAClient waits 5 s after a failed connect or a closed connection, and 5 s for "
                 "the master's handshake before it sends its own again", 2 * RETRY_WAIT)]


def legacy_connect_terms(t: Timeouts) -> list[Term]:
    """4.x: every live slave holds a connection to its master (a stage of LIVE-HA-TRANSFER for legacy runs). No
    election: the master is the configured one, and a master restarted at the heal point serves at once."""
    return [Term("haHousekeepingInterval: a slave whose connection went stale under a partition closes it once it has "
                 "read nothing for this long (HAClient: isTimeToReportOffset / closeMaster on housekeeping)",
                 t.store.ha_housekeeping_interval),
            Term("2 × 5 s: HAClient waits 5 s after a failed connect (connectMaster to a master not yet up) before "
                 "it tries again; after a close it connects again at once (HAClient.run: closeMaster, then "
                 "connectMaster), so the second 5 s, once a wait after the close, is slack", 2 * RETRY_WAIT)]


def replication_rtt(t: Timeouts) -> int:
    """4.x replication lag with no fault left: a put wakes the master's HAConnection.WriteSocketService at once
    (``HAService.getWaitNotifyObject().wakeupAll`` in ``CommitLog.handleHA`` / ``putRequest``), its push reaches the
    slave in one one-way delay and the slave appends it on arrival (``HAClient.dispatchReadRequest``); a second
    delay and 1 ms per hop cover a push that went out just before the put's wake-up and the simulator's timers."""
    return 2 * t.net_delay + 2


def consume_window(t: Timeouts) -> int:
    """How long an acknowledged message may wait before the consumer has read it, once it has caught up: the next
    pull (``consume_interval``, the pull period), the pull's RPC timeout and the route lookup a failed pull
    triggers (``ROUTE_TIMEOUT``): DefaultMQPushConsumer pulls again at once after a result."""
    return t.consume_interval + 3000 + ROUTE_TIMEOUT


def ha_window(t: Timeouts) -> int:
    """How long a slave's HA connection must have stayed up: any close-and-reconnect cycle replaces it sooner (the
    slowest closes after haHousekeepingInterval without a read, then waits 5 s to reconnect)."""
    return t.store.ha_housekeeping_interval + RETRY_WAIT


def ha_terms(t: Timeouts) -> list[Term]:
    return [*(legacy_connect_terms(t) if t.legacy else connect_terms(t)),
            Term("haHousekeepingInterval + 5 s: the connection has stayed up this long (no close-and-reconnect "
                 "cycle: AutoSwitchHAConnection / AutoSwitchHAClient housekeeping, then the 5 s wait)", ha_window(t))]


def catchup_terms(t: Timeouts) -> list[Term]:
    """LIVE-SSS-CATCHUP: a slave with a settled connection acks and its master's expansion lands (4.x: the slave's
    first report sets where the master pushes from, and its back-to-back batches catch it up)."""
    b, s = t.broker, t.store
    if t.legacy:
        return [*ha_terms(t),
                Term("haSendHeartbeatInterval: the slave reports its max offset within a heartbeat, and the master "
                     "pushes from there batch after batch (HAConnection.WriteSocketService)",
                     s.ha_send_heartbeat_interval)]
    return [*ha_terms(t),
            Term("haSendHeartbeatInterval + controllerRpcTimeoutMillis: the slave acks within a heartbeat report, and "
                 "the master's proposal (maybeExpandInSyncStateSet -> doReportSyncStateSetChanged) lands",
                 s.ha_send_heartbeat_interval + b.rpc_timeout)]


def probe_start(t: Timeouts) -> int:
    """When the first probe send goes out, after the heal point: the ack set then holds only live, caught-up
    replicas (LIVE-SSS-CATCHUP's and LIVE-SSS-NO-DEAD's bounds; 4.x: the slave has caught up)."""
    if t.legacy:
        return total(catchup_terms(t))
    return max(total(catchup_terms(t)), total(no_dead_terms(t)))


def probe_gap(t: Timeouts) -> int:
    """Between the two probes: the first one's send timeout and the route lookup its failure triggers."""
    return t.send_timeout + ROUTE_TIMEOUT


def puts_terms(t: Timeouts) -> list[Term]:
    """LIVE-PUTS: two probe sends, the second after the first one's failure has refreshed the producer's route."""
    first = catchup_terms(t) if t.legacy or total(catchup_terms(t)) >= total(no_dead_terms(t)) else no_dead_terms(t)
    return [*first,
            Term("sendMsgTimeout + 3 s: the first probe may go to the broker the producer's cached route names, "
                 "time out and refresh the route (DefaultMQProducerImpl.sendDefaultImpl -> "
                 "updateTopicRouteInfoFromNameServer)", probe_gap(t)),
            Term("3 s + sendMsgTimeout: the second probe's route lookup and send", ROUTE_TIMEOUT + t.send_timeout)]


def consume_terms(t: Timeouts) -> list[Term]:
    """LIVE-CONSUME: the consumer has read what the master held before the heal (its backlog) and what came since.
    4.x runs only (none: a 5.x run does not check it)."""
    if not t.legacy:
        return []
    return [*catchup_terms(t),
            Term("consume_interval + pull timeout + 3 s: the consumer's next pull, or the route lookup after a failed "
                 "one (DefaultMQPushConsumerImpl.pullMessage; MQClientInstance.updateTopicRouteInfoFromNameServer)",
                 consume_window(t))]


def periodic_allowance(t: Timeouts) -> int:
    """A periodic task's longest legitimate run: ``PERIODIC_RUN`` controller RPCs and the 2 s back-off of
    schedulingSyncBrokerMetadata after METADATA_NOT_EXIST."""
    return PERIODIC_RUN * t.broker.rpc_timeout + 2000


def tasks_terms(t: Timeouts) -> list[Term]:
    """LIVE-TASKS: the longest period of a modelled task, and the longest run before it."""
    b = t.broker
    period = max(max(10_000, min(b.register_name_server_period, 60_000)), b.sync_controller_metadata_period)
    return [Term("registerNameServerPeriod: the longest period of a periodic task (BrokerController's "
                 "registerBrokerAll; the clients' route refresh runs as often)", period),
            Term(f"{PERIODIC_RUN} × controllerRpcTimeoutMillis + 2 s: a run may take this long before the next one "
                 "starts (scheduleAtFixedRate never overlaps runs)", periodic_allowance(t))]


def ctl_quiet(t: Timeouts) -> int:
    """LIVE-CTL-LEADER's quiet window: a leader that stopped heartbeating is replaced within it (a follower's election
    timeout is at most ``ELECTION_MAX`` after the last push it heard; the leader pushes every ``HEARTBEAT``)."""
    return ELECTION_MAX + HEARTBEAT


def ctl_apply_lag(t: Timeouts) -> int:
    """LIVE-CTL-APPLIED's bound on how long an entry the leader committed may wait to apply on a live node: a heartbeat
    for the next push, which carries the commit position, and one more for its delivery and a lagging follower's
    catch-up pushes (each answered push is followed by the next at once)."""
    return 2 * HEARTBEAT


def ctl_terms(t: Timeouts) -> list[Term]:
    """LIVE-CTL-LEADER, LIVE-CTL-APPLIED: a replicated group (nothing for one node) has a leader that serves by
    LIVE-MASTER's bound, and has kept it for the quiet window since."""
    if t.controllers <= 1:
        return []
    return [*master_terms(t),
            Term("ELECTION_MAX + heartBeatTimeIntervalMs: the quiet window, with no election in it (a leader whose "
                 "pushes stopped is replaced within it: DLedgerLeaderElector.maintainAsFollower's timeout, "
                 "maintainAsLeader's heartbeats)", ctl_quiet(t))]
