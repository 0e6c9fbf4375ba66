"""Progress invariants (LIVE-*): with no fault left, the broker set gets back to serving, within a bound.

Each is checked once per run with progress checks (``[sim] progress``; the Hypothesis machines after their settle;
``rmqha cluster test`` and ``rmqha real test`` on what they observe at the end), at the heal point plus its settle
bound (``settle.py``: a sum of RocketMQ's own timeouts and periods, stage by stage). The heal point is when the last
fault's effect ended; a broker the schedule leaves down is *dead* (LIVE-SSS-NO-DEAD is about it, the others about the
live ones). Why each holds in RocketMQ is its ``source``: the periodic tasks that retry until it does.
"""

from __future__ import annotations

from bisect import bisect_right

from ..broker.broker import BrokerNode
from ..broker.legacy import LegacyBrokerNode
from ..broker.replicas_manager import State
from ..codes import BrokerRole, HAConnectionState
from ..controller.node import ControllerNode
from ..controller.raft import FOLLOWER, LEADER
from ..controller.replicas_info import SyncStateInfo
from .context import Context
from .registry import Violated, invariant, violated
from .settle import (
    IDLE_WAKEUPS,
    Settle,
    address_terms,
    catchup_terms,
    consume_terms,
    consume_window,
    ctl_apply_lag,
    ctl_quiet,
    ctl_terms,
    ha_terms,
    ha_window,
    master_terms,
    no_dead_terms,
    periodic_allowance,
    puts_terms,
    replication_rtt,
    tasks_terms,
)

MODEL_LIVENESS = {"LIVE-MASTER": ("L_MASTER_ELECTED",), "LIVE-SSS-CATCHUP": ("L_REJOIN", "L_ALL_IN_SSS")}
"""The spec's liveness properties (``models/liveness.py``) a progress invariant is the implementation's form of."""


def _set_info(ctx: Context) -> SyncStateInfo | None:
    ctl = ctx.world.controller_node()
    return None if ctl is None else ctl.rim.sync_state_set_info_table.get(ctx.world.broker_name)


def _electable(ctx: Context) -> bool:
    """Some broker that runs may be master: a member of the controller's SyncStateSet (any registered broker with
    enableElectUncleanMaster, or before the set's first election)."""
    live = [b for b in ctx.world.brokers if ctx.world.broker(b) is not None]
    if not live:
        return False
    info = _set_info(ctx)
    if info is None or info.is_first_time_for_elect():
        return True
    ctl = ctx.world.controller_node()
    if ctl is not None and ctl.rim.enable_elect_unclean_master:
        return True
    return any(ctx.broker_by_id(i) in live for i in info.sync_state_set)


def _agreed_master(ctx: Context) -> tuple[SyncStateInfo, str, BrokerNode] | None:
    """The master the controller names, when it runs and holds the role at the controller's masterEpoch."""
    info = _set_info(ctx)
    if info is None or info.master_broker_id is None:
        return None
    name = ctx.broker_by_id(info.master_broker_id)
    node = ctx.world.broker(name) if name else None
    if name is None or not isinstance(node, BrokerNode):
        return None
    st = node.store
    if node.replicas.master_epoch != info.master_epoch or st.role != BrokerRole.SYNC_MASTER or st.fenced:
        return None
    return info, name, node


@invariant("LIVE-MASTER", layer="controller", settle=master_terms,
           source="ControllerManager.onBrokerInactive / triggerElectMaster (a dead master's heartbeat expires, "
                  "scanNotActiveBroker); DLedgerController.scanInactiveMasterAndTriggerReelect (every 5 s); "
                  "ReplicasManager.schedulingSyncBrokerMetadata (every 5 s: changeToMaster, changeToSlave, brokerElect "
                  "when the controller names no master); ReplicasManager.startBasicService (retried every 5 s)",
           exceptions="no broker that runs may be elected: every member of the SyncStateSet is dead and unclean "
                      "election is off (RocketMQ then waits for one to come back, by design); 4.x runs")
def master_live(ctx: Context, at: Settle) -> Violated | None:
    """After the heal point and its settle bound, while some broker that runs may be elected, the controller names
    a master for the set, and that broker runs, holds the role at the controller's masterEpoch, has finished
    startBasicService (RUNNING) and takes puts (not fenced); no other broker that runs acts as master."""
    world = ctx.world
    if world.legacy or not _electable(ctx):
        return None
    ctl = world.controller_node()
    if ctl is None:
        return violated(f"{_since(ctx, at)}: no controller serves the group")
    info = ctl.rim.sync_state_set_info_table.get(world.broker_name)
    if info is None or info.master_broker_id is None:
        return violated(f"{_since(ctx, at)}: the controller names no master for {world.broker_name} "
                        f"(SyncStateSet {sorted(info.sync_state_set) if info else None})",
                        controller=None if info is None else _info(info), brokers=_statuses(ctx))
    name = ctx.broker_by_id(info.master_broker_id)
    node = world.broker(name) if name else None
    if not isinstance(node, BrokerNode):
        return violated(f"{_since(ctx, at)}: the controller's master {info.master_broker_id} ({name}) is down",
                        controller=_info(info), brokers=_statuses(ctx))
    rm, st = node.replicas, node.store
    if rm.master_epoch != info.master_epoch or st.role != BrokerRole.SYNC_MASTER or st.fenced \
            or rm.state != State.RUNNING:
        return violated(f"{_since(ctx, at)}: the controller names {name} master at masterEpoch {info.master_epoch}; "
                        f"{name} is {st.role.value} at masterEpoch {rm.master_epoch}, {rm.state.value}"
                        + (", fenced" if st.fenced else ""), controller=_info(info), broker=node.status())
    for b in world.brokers:
        other = world.broker(b)
        if b != name and isinstance(other, BrokerNode) and other.store.role == BrokerRole.SYNC_MASTER \
                and not other.store.fenced:
            return violated(f"{_since(ctx, at)}: {b} still acts as master (masterEpoch {other.replicas.master_epoch}) "
                            f"beside {name} (masterEpoch {info.master_epoch})", controller=_info(info),
                            broker=other.status())
    return None


@invariant("LIVE-SSS-NO-DEAD", layer="sync", settle=no_dead_terms,
           source="AutoSwitchHAService.removeConnection (a closed connection's member proposed out at once); "
                  "ReplicasManager.checkSyncStateSetAndDoReport -> AutoSwitchHAService.maybeShrinkSyncStateSet "
                  "(every checkSyncStateSetPeriod: members not caught up for haMaxTimeSlaveNotCatchup, or never "
                  "connected); ReplicasManager.schedulingSyncBrokerMetadata (changeSyncStateSet)",
           exceptions="the set has no master that runs (LIVE-MASTER's business, or nothing can be elected)")
def sss_no_dead(ctx: Context, at: Settle) -> Violated | None:
    """After the heal point and its settle bound, while the controller names a master that runs, neither the
    controller's SyncStateSet nor the master's confirmed one holds a broker that is down."""
    world = ctx.world
    if world.legacy:
        return None
    info = _set_info(ctx)
    if info is None or info.master_broker_id is None:
        return None
    name = ctx.broker_by_id(info.master_broker_id)
    node = world.broker(name) if name else None
    if not isinstance(node, BrokerNode):
        return None
    for where, members in (("controller's", info.sync_state_set), (f"master {name}'s", node.ha.sync_state_set)):
        dead = sorted(f"{m} ({ctx.broker_by_id(m)})" for m in members
                      if ctx.broker_by_id(m) is not None and world.broker(ctx.broker_by_id(m) or "") is None)
        if dead:
            return violated(f"{_since(ctx, at)}: the {where} SyncStateSet {sorted(members)} still holds "
                            f"{', '.join(dead)}, down" + (f" (dead since the heal point: {list(at.dead)})"
                                                          if at.dead else ""),
                            controller=_info(info), master=node.status())
    return None


@invariant("LIVE-SSS-CATCHUP", layer="sync", settle=catchup_terms,
           source="AutoSwitchHAConnection.HAServerReader -> AutoSwitchHAService.maybeExpandInSyncStateSet (each ack "
                  ">= confirmOffset and the epoch's start proposes the slave) -> ReplicasManager."
                  "doReportSyncStateSetChanged (alterSyncStateSet); AutoSwitchHAClient's loop (reconnects every 5 s); "
                  "4.x: HAConnection.WriteSocketService (woken by every put: CommitLog.handleHA) and "
                  "HAClient.dispatchReadRequest",
           exceptions="asyncLearner slaves never join the SyncStateSet; no agreed master (LIVE-MASTER); 4.x: the "
                      "master is down (no failover)")
def sss_catchup(ctx: Context, at: Settle) -> Violated | None:
    """After the heal point and its settle bound, every broker that runs besides the agreed master follows it (a
    slave at its masterEpoch), holds its log at least to the master's confirmOffset, and is a member of the
    controller's SyncStateSet and of the master's confirmed one. 4.x (no SyncStateSet): every slave that runs holds
    every message its master stored a replication round trip ago (``settle.replication_rtt``)."""
    world = ctx.world
    if world.legacy:
        return _legacy_catchup(ctx, at)
    agreed = _agreed_master(ctx)
    if agreed is None:
        return None
    info, name, master = agreed
    confirm = master.store.confirm_offset
    for b in world.brokers:
        node = world.broker(b)
        if b == name or not isinstance(node, BrokerNode):
            continue
        rm, st = node.replicas, node.store
        bid = rm.broker_controller_id
        where = f"{_since(ctx, at)}: {b} (id {bid})"
        if rm.master_broker_id != info.master_broker_id or rm.master_epoch != info.master_epoch \
                or st.role != BrokerRole.SLAVE:
            return violated(f"{where} does not follow master {name} at masterEpoch {info.master_epoch}: it is "
                            f"{st.role.value} of {rm.master_broker_id} at masterEpoch {rm.master_epoch}",
                            broker=node.status(), master=master.status())
        if st.max_phy_offset < confirm:
            return violated(f"{where} holds its log to {st.max_phy_offset}, short of master {name}'s confirmOffset "
                            f"{confirm}", broker=node.status(), master=master.status())
        if world.store_config.async_learner:
            continue
        for what, members in (("controller's", info.sync_state_set), (f"master {name}'s", master.ha.sync_state_set)):
            if bid not in members:
                return violated(f"{where} has caught up but is not in the {what} SyncStateSet {sorted(members)}",
                                controller=_info(info), broker=node.status(), master=master.status())
    return None


def _legacy_master(ctx: Context) -> LegacyBrokerNode | None:
    """The 4.x master (the first broker, fixed role) while it runs."""
    node = ctx.world.broker(ctx.world.brokers[0])
    return node if isinstance(node, LegacyBrokerNode) and node.store.role != BrokerRole.SLAVE else None


def _legacy_slaves(ctx: Context) -> list[tuple[str, LegacyBrokerNode]]:
    out = []
    for b in ctx.world.brokers[1:]:
        node = ctx.world.broker(b)
        if isinstance(node, LegacyBrokerNode):
            out.append((b, node))
    return out


def _legacy_catchup(ctx: Context, at: Settle) -> Violated | None:
    master = _legacy_master(ctx)
    if master is None:
        return None
    rtt = replication_rtt(at.timeouts)
    before = ctx.world.now - rtt
    ends = ctx.legacy_appends
    i = bisect_right(ends, (before, 1 << 62))
    want = min(ends[i - 1][1], master.store.max_phy_offset) if i else 0
    for b, node in _legacy_slaves(ctx):
        have = node.store.max_phy_offset
        if have < want:
            stored = ends[i - 1][0]
            return violated(f"{_since(ctx, at)}: slave {b} holds its log to {have}, short of {want}, where master "
                            f"{master.name}'s log ended at {stored} ms ({ctx.world.now - stored} ms ago; a replication "
                            f"round trip is {rtt} ms)", broker=node.status(), master=master.status(),
                            client=node.client.status() if node.client else None)
    return None


@invariant("LIVE-HA-TRANSFER", layer="ha", settle=ha_terms,
           source="AutoSwitchHAClient (READY -> HANDSHAKE -> TRANSFER; after a close it waits 5 s and reconnects to "
                  "the HA address its nameserver registration last gave it); AutoSwitchHAConnection (the master "
                  "follows the slave's state; haHousekeepingInterval closes an idle connection)",
           exceptions="no agreed master (LIVE-MASTER); 4.x: the master is down")
def ha_transfer(ctx: Context, at: Settle) -> Violated | None:
    """After the heal point and its settle bound, every broker that runs besides the agreed master holds an HA
    connection to it that is in TRANSFER on both ends and has stayed up for haHousekeepingInterval + 5 s (no
    close-and-reconnect loop). 4.x: every slave that runs holds a connection its master holds too (HAClient /
    HAConnection, no handshake), up as long."""
    world = ctx.world
    if world.legacy:
        return _legacy_ha(ctx, at)
    agreed = _agreed_master(ctx)
    if agreed is None:
        return None
    _, name, master = agreed
    window = ha_window(at.timeouts)
    for b in world.brokers:
        node = world.broker(b)
        if b == name or not isinstance(node, BrokerNode):
            continue
        client = node.ha.client
        where = f"{_since(ctx, at)}: slave {b}"
        if client is None or client.conn is None or client.state != HAConnectionState.TRANSFER:
            return violated(f"{where} has no HA connection in TRANSFER (client "
                            f"{client.state.name if client else 'none'}, HA address "
                            f"{client.master_ha_address if client else None})", broker=node.status())
        peer = world.ha_peer(client.conn)
        if peer != name:
            return violated(f"{where}'s HA connection {client.conn} goes to {peer}, not to master {name}",
                            broker=node.status())
        side = master.ha.connections.get(client.conn)
        if side is None or side.state != HAConnectionState.TRANSFER:
            return violated(f"{where}: master {name}'s end of HA connection {client.conn} is "
                            f"{side.state.name if side else 'closed'}", broker=node.status(), master=master.status())
        opened = ctx.ha_opened.get(client.conn)
        if opened is not None and opened > world.now - window:
            return violated(f"{where}'s HA connection {client.conn} was opened at {opened} ms, less than {window} ms "
                            "ago: it closes and reconnects", broker=node.status())
    return None


def _legacy_ha(ctx: Context, at: Settle) -> Violated | None:
    master = _legacy_master(ctx)
    if master is None:
        return None
    window = ha_window(at.timeouts)
    for b, node in _legacy_slaves(ctx):
        client = node.client
        conn = client.conn if client is not None else None
        side = master.connections.get(conn) if conn is not None else None
        if side is None:
            return violated(f"{_since(ctx, at)}: slave {b} holds no HA connection to master {master.name} (its own "
                            f"end: {conn}; the master's: {sorted(master.connections)})", broker=node.status(),
                            master=master.status())
        if side.opened > ctx.world.now - window:
            return violated(f"{_since(ctx, at)}: slave {b}'s HA connection {conn} was opened at {side.opened} ms, "
                            f"less than {window} ms ago: it closes and reconnects", broker=node.status())
    return None


@invariant("LIVE-PUTS", layer="client", settle=puts_terms,
           source="CommitLog.asyncPutMessage + GroupTransferService.doWaitTransfer (PUT_OK once every member of the "
                  "ack set has acked); DefaultMQProducerImpl (a failed send refreshes the route)",
           exceptions="nothing may be elected (as LIVE-MASTER); a run whose producer is down at the heal point; 4.x: "
                      "the master is down (no failover), or a SYNC_MASTER has no slave that runs (isSlaveOK: "
                      "SLAVE_NOT_AVAILABLE by design)")
def puts_succeed(ctx: Context, at: Settle) -> Violated | None:
    """After the heal point and its settle bound, a put succeeds: of two probe sends after the ack set has settled,
    the second (its route refreshed by the first, if that one failed) is acknowledged PUT_OK. 4.x: the same, while
    the master runs and, for a SYNC_MASTER, a slave runs (it has caught up by then: LIVE-SSS-CATCHUP's bound)."""
    if not at.probes:
        return None
    if ctx.world.legacy:
        master = _legacy_master(ctx)
        if master is None or (master.store.role == BrokerRole.SYNC_MASTER and not _legacy_slaves(ctx)):
            return None
    elif not _electable(ctx):
        return None
    last = at.probes[-1]
    if last in ctx.acked:
        return None
    got = {k: ctx.send_status.get(k, "no answer") for k in at.probes}
    return violated(f"{_since(ctx, at)}: the probe sends {', '.join(f'{k}: {s}' for k, s in got.items())} were not "
                    "acknowledged", probes=got, brokers=_statuses(ctx))


@invariant("LIVE-TASKS", layer="broker", settle=tasks_terms,
           source="scheduleAtFixedRate (ScheduledThreadPoolExecutor: a run that throws suppresses every later one) of "
                  "ReplicasManager (syncBrokerMetadata, updateControllerMetadata, checkSyncStateSet, "
                  "scanAvailableControllerAddresses), BrokerController (registerBrokerAll, sendHeartbeat), "
                  "SlaveSynchronize, ControllerManager / DefaultBrokerHeartbeatManager (scanNotActiveBroker), "
                  "DLedgerController (scanInactiveMaster), the clients' route refresh and pulls",
           exceptions="a task its process cancelled (checkSyncStateSet on a slave, scanInactiveMaster on a follower)")
def tasks_run(ctx: Context, at: Settle) -> Violated | None:
    """After the heal point and its settle bound, every periodic task of every process that runs, unless the
    process cancelled it, has started a run within its period plus the longest legitimate run (so each has run
    since the heal point): none has died or hangs.

    The periodic tasks are the kit's ``Periodic`` (``scheduleAtFixedRate``). The other timers (``SetTimer``) are
    loops that re-arm themselves or one-shot waits: the HA client's loop and the connections' housekeeping (what
    LIVE-HA-TRANSFER watches), a controller group's election and heartbeat timers (LIVE-MASTER), the store's flush
    and dispatch, RPC timeouts and sleeps."""
    world = ctx.world
    now = world.now
    allowance = periodic_allowance(at.timeouts)
    for name, actor in sorted(world.processes().items()):
        for task in actor.periodics:
            if task.cancelled:
                continue
            due = task_overdue(task.created, task.initial, task.period, task.last_start, now, allowance)
            if due is not None:
                last = "never" if task.last_start is None else f"last at {task.last_start} ms"
                why = "suppressed by an exception" if task.suppressed else \
                    "its run still in progress" if task.strand.busy else "not rescheduled"
                return violated(f"{_since(ctx, at)}: {name}'s periodic task {task.name} (every {task.period} ms) "
                                f"has not run since {due} ms ({last}; {why})", node=name, task=task.name)
    return None


@invariant("LIVE-CTL-ADDRESS", layer="controller", settle=address_terms,
           source="ReplicasInfoManager.registerSuccess (an UpdateBrokerAddressEvent when the broker's address is not "
                  "the one it holds) and handleUpdateBrokerAddress; ReplicasManager.startBasicService -> "
                  "registerBrokerToController (retried every 5 s until it succeeds)",
           exceptions="4.x runs; a broker whose id the controller does not hold (cleaned, or not yet applied)")
def ctl_address(ctx: Context, at: Settle) -> Violated | None:
    """After the heal point and its settle bound, every broker that runs and whose controller id the controller
    holds is known there by its current address (a broker restarted on another port has re-registered it), so
    getReplicaInfo and registerBroker answer the master's current address."""
    world = ctx.world
    if world.legacy:
        return None
    ctl = world.controller_node()
    if ctl is None or world.broker_name not in ctl.rim.sync_state_set_info_table:
        return None
    replicas = ctl.rim.replica_info_table.get(world.broker_name)
    if replicas is None:
        return None
    for b in world.brokers:
        node = world.broker(b)
        bid = world.disks[b].broker_identity
        if not isinstance(node, BrokerNode) or bid is None or not replicas.is_broker_exist(bid[2]):
            continue
        held = replicas.broker_address(bid[2])
        if held != node.address:
            return violated(f"{_since(ctx, at)}: the controller knows broker {bid[2]} ({b}) at {held}; it runs at "
                            f"{node.address}", broker=node.status(), controller=ctl.rim.snapshot())
    return None


def _group(ctx: Context) -> list[ControllerNode] | None:
    """The nodes of a replicated controller group, when every one of them runs (None otherwise: one node, or a node
    down or paused at the check)."""
    world = ctx.world
    if len(world.controllers) <= 1:
        return None
    procs = world.processes()
    nodes = [procs.get(c) for c in world.controllers]
    out = [n for n in nodes if isinstance(n, ControllerNode) and n.repl is not None]
    return out if len(out) == len(nodes) else None


@invariant("LIVE-CTL-LEADER", layer="controller", settle=ctl_terms,
           source="DLedgerLeaderElector.maintainAsLeader (a heartbeat every heartBeatTimeIntervalMs), "
                  "DLedgerController.RoleChangeHandler (a new leader serves once its empty entry applied; a follower "
                  "or candidate stops scheduling), "
                  "maintainAsFollower (a follower that hears no heartbeat for maxHeartBeatLeak beats campaigns), "
                  "handleHeartBeat (a heartbeat of the current term names the leader); JRaft NodeImpl "
                  "(electionTimeout, the leader's heartbeats)",
           exceptions="one controller node (it leads by itself); a node down at the check")
def ctl_leader(ctx: Context, at: Settle) -> Violated | None:
    """After the heal point and its settle bound, a replicated controller group has a leader at the highest term of
    its nodes, elected before the quiet window (ELECTION_MAX + a heartbeat) began, so that no election happened in it,
    and serving; every other node is a follower of that term that names it as its leader, and does not serve."""
    nodes = _group(ctx)
    if nodes is None:
        return None
    now = ctx.world.now
    top = max(n.repl.state.term for n in nodes if n.repl is not None)
    roles = {n.name: (n.repl.role, n.repl.state.term, n.repl.leader_id) for n in nodes if n.repl is not None}
    leaders = [n for n in nodes if n.repl is not None and n.repl.role == LEADER and n.repl.state.term == top]
    if not leaders:
        return violated(f"{_since(ctx, at)}: no controller node leads term {top}", roles=roles)
    leader = leaders[0]
    assert leader.repl is not None
    quiet = ctl_quiet(at.timeouts)
    if leader.repl.leader_since > now - quiet:
        return violated(f"{_since(ctx, at)}: {leader.name} was elected leader of term {top} at "
                        f"{leader.repl.leader_since} ms, within the last {quiet} ms: the group is still electing",
                        roles=roles)
    if not leader.leader:
        return violated(f"{_since(ctx, at)}: {leader.name} leads term {top} since {leader.repl.leader_since} ms and "
                        "does not serve (its empty entry has not applied)", roles=roles)
    for n in nodes:
        r = n.repl
        if n is leader or r is None:
            continue
        if r.role != FOLLOWER or r.state.term != top or r.leader_id != leader.name:
            return violated(f"{_since(ctx, at)}: {n.name} is a {r.role} of term {r.state.term} with leader "
                            f"{r.leader_id}, not a follower of {leader.name} (leader of term {top})", roles=roles)
        if n.leader:
            return violated(f"{_since(ctx, at)}: {n.name}, a follower of {leader.name} in term {top}, serves as "
                            "controller leader", roles=roles)
    return None


@invariant("LIVE-CTL-APPLIED", layer="controller", settle=ctl_terms,
           source="DLedgerEntryPusher (every push carries the leader's committed index; a follower behind is caught "
                  "up push by push), StateMachineCaller.onCommitted (each node applies what it knows committed, in "
                  "order); JRaft Replicator / FSMCallerImpl.onCommitted",
           exceptions="one controller node; a node down at the check; no leader (LIVE-CTL-LEADER)")
def ctl_applied(ctx: Context, at: Settle) -> Violated | None:
    """After the heal point and its settle bound, every node of a replicated controller group has applied every entry
    its leader committed more than two heartbeats ago (the push that carries the commit position, and its delivery),
    and applied every entry it learnt committed after the heal point within two heartbeats of learning it."""
    nodes = _group(ctx)
    if nodes is None:
        return None
    now = ctx.world.now
    top = max(n.repl.state.term for n in nodes if n.repl is not None)
    leader = next((n for n in nodes if n.repl is not None and n.repl.role == LEADER and n.repl.state.term == top),
                  None)
    if leader is None or leader.repl is None:
        return None
    lag = ctl_apply_lag(at.timeouts)
    entries, commit = leader.disk.entries, leader.repl.commit
    for n in nodes:
        if n.applied < commit and entries[n.applied].committed_at < now - lag:
            when = entries[n.applied].committed_at
            return violated(f"{_since(ctx, at)}: {n.name} has applied {n.applied} entries; the leader "
                            f"{leader.name} committed entry {n.applied} "
                            + (f"at {when} ms, more than {lag} ms ago" if when >= 0 else "before its snapshot"),
                            node=n.name, applied=n.applied, commit=None if n.repl is None else n.repl.commit,
                            leaderCommit=commit)
    for n in nodes:
        for e in n.disk.entries[n.disk.first_index:]:
            if e.committed_at < at.heal:
                continue
            done = e.applied_at if e.index < n.applied else now
            if e.applied_at != -1 or e.index >= n.applied:  # -1 below the apply position: through a snapshot
                if done - e.committed_at > lag:
                    return violated(f"{_since(ctx, at)}: {n.name} learnt entry {e.index} committed at "
                                    f"{e.committed_at} ms and " + (f"applied it at {done} ms" if e.index < n.applied
                                                                    else "has not applied it")
                                    + f", more than {lag} ms later", node=n.name, index=e.index)
    return None


@invariant("LIVE-CONSUME", layer="client", settle=consume_terms,
           source="DefaultMQPushConsumerImpl.pullMessage -> PullAPIWrapper.processPullResult (the next pull starts "
                  "at the answer's nextBeginOffset, at once); PullMessageProcessor / DefaultMessageStore.getMessage "
                  "(up to pullBatchSize messages from the requested queue offset; nextBeginOffset past the last)",
           exceptions="the master is down, or the consumer is; runs with [workload] queues (CLI-NO-SKIP follows each "
                      "queue's offsets) or with no consumer; 5.x runs (a failover moves the single queue's reads to "
                      "another broker's consume queue)")
def consume_progress(ctx: Context, at: Settle) -> Violated | None:
    """After the heal point and its settle bound, the consumer has read every message the master's consume queue
    holds that was acknowledged at least a pull window ago (``settle.consume_window``): it is not stuck on a batch
    and skips none (4.x, one queue)."""
    world = ctx.world
    if not world.legacy or at.timeouts.consume_interval <= 0 or "c1" not in world.processes():
        return None
    master = _legacy_master(ctx)
    if master is None:
        return None
    before = world.now - consume_window(at.timeouts)
    unread = [d.key for d in master.store.dispatched
              if d.key not in ctx.seen and ctx.acked.get(d.key, before + 1) <= before]
    if unread:
        return violated(f"{_since(ctx, at)}: the consumer has not read {len(unread)} message(s) master "
                        f"{master.name} dispatched and acknowledged more than {world.now - before} ms ago (first: "
                        f"{unread[0]})", unread=unread[:10], seen=len(ctx.seen), master=master.status())
    return None


def task_overdue(created: int, initial: int, period: int, last_start: int | None, now: int,
                 allowance: int) -> int | None:
    """LIVE-TASKS for one task (not cancelled) at ``now``: the time since which it should have started a run and
    has not, or None. A task whose first run is not due yet is fine; one whose first run fell in the last period
    plus ``allowance`` must have started it; any other must have started a run within that window."""
    first = created + initial
    if first > now:
        return None
    due = max(first, now - period - allowance)
    return due if last_start is None or last_start < due else None


def _since(ctx: Context, at: Settle) -> str:
    return f"{ctx.world.now - at.heal} ms after the heal point ({at.heal} ms)"


def _info(info: SyncStateInfo) -> dict[str, object]:
    return {"master": info.master_broker_id, "masterEpoch": info.master_epoch,
            "syncStateSet": sorted(info.sync_state_set), "syncStateSetEpoch": info.sync_state_set_epoch}


def _statuses(ctx: Context) -> dict[str, object]:
    out: dict[str, object] = {}
    for b in ctx.world.brokers:
        node = ctx.world.broker(b)
        out[b] = node.status() if node is not None else None
    return out


@invariant("LIVE-TIME-ADVANCES", layer="broker", at_run_end=True,
           source="every periodic service of the cluster waits between its rounds (ServiceThread.waitForRunning: "
                  "AutoSwitchHAClient 1 s, the HA connections' selects, ReputMessageService 1 ms with nothing to "
                  "dispatch, the scheduled executors' periods), so with no fault left a quiet cluster takes a "
                  "bounded number of steps per simulated second",
           exceptions="runs without a settle tail; a tail that ended unhealed")
def time_advances(ctx: Context) -> Violated | None:
    """Simulated time reaches the settle tail's last progress check within the tail's step budget (the simulator's
    ``TAIL_STEPS``, eight times the busiest healthy tail measured): no process fires timer after timer while time
    stands still or crawls (a busy loop, a timer re-armed for the same instant, timers that multiply), which would
    otherwise end a run unchecked."""
    stalled = ctx.world.tail_stalled()
    if stalled is None:
        return None
    steps, start, end = stalled
    return violated(f"the settle tail took {steps} steps while simulated time went from t={start} to t={end} ms, "
                    "short of its progress checks: a busy loop (timers firing while time stands still or crawls)",
                    steps=steps, start=start, reached=end)


@invariant("LIVE-IDLE-WAKEUPS", layer="broker", at_run_end=True,
           source="a RocketMQ service thread wakes when it is notified (ServiceThread.wakeup, a socket's data) or "
                  "when its wait runs out (waitForRunning, a sleep, a select timeout), and with nothing to do it "
                  "waits 10 ms at the shortest (GroupTransferService.run; DefaultHAConnection.WriteSocketService.run "
                  "before the first report; AutoSwitchHAConnection.WriteSocketService in HANDSHAKE), 100 ms for the "
                  "HA write services with nothing to transfer, 1 s for the HA clients' (DefaultHAClient, "
                  "AutoSwitchHAClient) and read services' selects, 500 ms for DLedger's heartbeat, 1 s and more "
                  "for the scheduled executors: at most 1000 / 10 = 100 idle wake-ups a second "
                  "(settle.IDLE_WAKEUPS), plus one per notification",
           exceptions="ReputMessageService (Thread.sleep(1) between its passes: settle.POLLING); the fault phase and "
                      "the tail before its heal point (faults, and the recovery they cause, are not quiet); runs "
                      "without a settle tail, or whose tail ended unhealed")
def idle_wakeups(ctx: Context) -> Violated | None:
    """After the heal point no service of a process wakes up with nothing to do (a timer that fires and leaves only
    timers behind: no message, no HA write, no observation) more often in one simulated second than ``IDLE_WAKEUPS``
    (100) plus one for each event the process was handed in that second and the deadlines before it: a process that
    keeps waking for nothing (a deadline not advanced, timers that multiply) is caught in the quiet tail even when it
    costs too few steps to exhaust the tail's budget (LIVE-TIME-ADVANCES).

    The kit arms a deadline where RocketMQ's thread waits, and a deadline a notification armed (a put's
    syncFlushTimeout, an idle write service's next heartbeat, an RPC's timeout) may fire idle once it is no longer
    needed: so each event the process was handed (a message, HA bytes, a connection's result or close, a timer that
    did something) in the second or in the longest such deadline before it (the larger of haSendHeartbeatInterval,
    syncFlushTimeout and the send timeout, in whole seconds) allows one more idle wake-up. Counted per service (the
    object a timer callback belongs to, and the callback: one RocketMQ thread) and per second from the heal point,
    by the simulator (``Tail.idle_wakeup``), which ends the tail at the first service over it. A per-process bound
    would have to allow ReputMessageService's 1 ms poll and could not see a 1 ms loop beside it.

    Measured: the most idle wake-ups of a bounded service in one quiet second, every fix on, are 24 (a 4.x master's
    HA connection: the deadlines of its idle rounds after the slave's reports) in the tails of the simulate stages of
    the mutation campaign (bench/mutation_campaign.py DEFAULT_STAGES but topic-sync), of seeds 1-40 of the fidelity,
    legacy-sync and legacy-async profiles and of topic-failover 1-4, large-logs 1-3 and power-loss 1-3; 4 for any
    5.x service (the reput: 681). The base of 100 alone is four times the highest; a 4.x producer sending every
    20 ms takes a legacy master's connection past 100, within the allowance of its events
    (tests/test_progress.py)."""
    breach = ctx.world.tail_idle()
    if breach is None:
        return None
    node, service, wakes, allowed, start = breach
    return violated(f"{node}'s {service} woke up with nothing to do {wakes} times in the quiet second from t={start} "
                    f"ms (at most {allowed}: {IDLE_WAKEUPS}, RocketMQ's services waiting 10 ms or more when idle, "
                    "plus one per event the node was handed in the second and the deadlines before it)",
                    node=node, service=service, wakeups=wakes, allowed=allowed, second=start)
