"""The controller node: ``ControllerManager`` + ``DLedgerController`` + ``ControllerRequestProcessor``.

Rules (``ControllerManager``, ``DLedgerController.EventScheduler`` / ``appendToDLedgerAndWait``,
``ControllerRequestProcessor``, ``DefaultBrokerHeartbeatManager``):

* Requests other than heartbeats and metadata go through one serial ``EventScheduler``: it *validates*
  on the state it has applied (``ReplicasInfoManager``), appends the resulting events to the replicated
  log, waits up to 5 s for them to commit, then completes the request's future. A failed or timed-out
  append cancels the future; the entry may still commit and apply later (the DLedger GAP).
* Committed entries apply in log order, without re-validation.
* The request processor waits up to 5 s on the future; no answer in time gives SYSTEM_ERROR (1), even if
  the request is still queued and will run. A SUCCESS elect is followed by ``notifyBrokerRoleChanged``.
* A non-leader answers CONTROLLER_NOT_LEADER. A node becomes leader after an empty entry commits; only the
  leader runs the inactive-master scan and acts on ``onBrokerInactive``.
* Heartbeats (oneway) go to the heartbeat manager at once; a closed channel reports the broker inactive. A channel
  is one connection (the driver names it: the simulator, the sender and its incarnation); the DLedger flavour's
  entry keeps the channel it was created on, the JRaft flavour maps every channel a heartbeat came on.
  ``onBrokerInactive``: unknown id -> trigger an election; else ask replica info and trigger only when the
  inactive broker is the master. ``triggerElectMaster`` makes up to ``electMasterMaxRetryCount`` controller
  -triggered attempts (each may append a not-elected event: QUIRK, mE can rise by 3).

With ``[cluster] controllers = 1`` the single node stands for the whole Raft group, and the ``slow_commit`` fault
stretches commit latency the way a lagging quorum does. With 3 (or 5) the nodes form a replicated group
(``impl/controller/raft.py``): each has its own log, commit and apply positions and heartbeat table (DLedger
flavour: the leader validates on its own applied state), a node serves once it is elected and its empty entry
has applied, and it stops serving when a higher term deposes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import bugs as B
from ..codes import RequestCode, ResponseCode
from ..config import ControllerConfig
from ..observations import CtlApply, CtlReplay
from ..rng import DetRng
from ..runtime import Actor, Await, Command, Executor, Future, Job, Periodic, Steps, response_to
from .elect_policy import ElectionFailed, ElectPolicy
from .heartbeat import BrokerHeartbeatManager, Identity
from .jraft import LIVENESS_OPS, RaftLiveTable, execute, load_state, request, serialize_state
from .log import LogEntry
from .raft import LEADER, RaftState, Replication
from .replicas_info import ControllerResult, EventMessage, ReplicasInfoManager, RequestEntry

_RAFT: dict[int, str] = {RequestCode.RAFT_VOTE: "on_vote", RequestCode.RAFT_VOTE_REPLY: "on_vote_reply",
                         RequestCode.RAFT_APPEND: "on_append", RequestCode.RAFT_APPEND_REPLY: "on_append_reply",
                         RequestCode.RAFT_INSTALL_SNAPSHOT: "on_install_snapshot"}
WAIT_TIMEOUT_OUT = 5000  # ControllerRequestProcessor.WAIT_TIMEOUT_OUT (s -> ms)
TRIGGER_WAIT = 3000  # ControllerManager.triggerElectMaster: future.get(3, SECONDS)


@dataclass
class ControllerDisk:
    """What survives a controller crash: the replicated log (DLedger keeps no snapshots), and a JRaft node's last
    snapshot (``[controller] jRaftSnapshotIntervalSecs``): its data, the entries it covers and the term of the last
    one; the log's entries below ``first_index`` are gone (their slots hold placeholders that keep only the term)."""

    entries: list[LogEntry] = field(default_factory=list)
    raft: RaftState = field(default_factory=RaftState)  # term and vote of a replicated group's node
    snapshot: bytes | None = None
    snapshot_index: int = 0
    snapshot_term: int = 0
    first_index: int = 0


class ControllerNode(Actor):
    """One controller process."""

    def __init__(self, name: str, cfg: ControllerConfig, rng: DetRng, disk: ControllerDisk,
                 bugs: frozenset[str] = frozenset(), address: str | None = None,
                 peers: list[str] | None = None) -> None:
        super().__init__(name, rng)
        self.cfg = cfg
        self.bugs = bugs
        self.address = address or f"{name}:9878"
        self.disk = disk
        self.rim = ReplicasInfoManager(cfg.enable_elect_unclean_master, bugs)
        null_safe = B.IDENTITY_EQUALS_NULL_SAFE in bugs  # BrokerIdentityInfo.equals, 5.5.1+ (PR #10886)
        self.heartbeats = BrokerHeartbeatManager(null_safe)
        self.leader = False
        self.applied = 0  # number of log entries applied
        self.extra_commit_latency = 0
        self.extra_commit_until = -1
        self.scheduler = Executor(self, "EventScheduler")
        self._scheduler_wait: Future | None = None  # the scheduler's append wait, which stopScheduling interrupts
        self.scan_inactive_master: Periodic | None = None
        self.elect_policy = self._policy()
        # a node of a replicated group ([cluster] controllers > 1); None: this node stands for the whole group
        self.repl = Replication(self, peers, self._on_raft_leader, self._on_raft_follower) \
            if peers and len(peers) > 1 else None
        if self.repl is not None:  # a group's node schedules only while it leads (startScheduling)
            self.scheduler.stop()
        # [controller] controllerType = jRaft (impl/controller/jraft.py): requests are the entries, validated at apply
        self.jraft = cfg.controller_type == "jRaft"
        # jRaft: the replicated live table (the DLedger flavour uses ``heartbeats``)
        self.live = RaftLiveTable(null_safe, B.JRAFT_REELECT_CHECKS_ACTIVE in bugs)
        self.first_heartbeat = -1  # jRaft: RaftBrokerHeartBeatManager.firstReceivedHeartbeatTime
        self.channels: dict[str, Identity] = {}  # jRaft: brokerChannelIdentityInfoMap (channel -> identity)
        self._channel: str | None = None  # the connection the message being handled came on (``on_message``)
        # fix-fence-old-incarnation (F-PROPOSAL-AFTER-RESTART): (brokerName, brokerId) -> the connection of its latest
        # registration, i.e. its process incarnation (the simulator opens one connection per process)
        self.registered_on: dict[tuple[str, int], str] = {}

    # ------------------------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Replay the log (DLedger's ``onSnapshotLoad`` returns false: state is rebuilt from entries; a JRaft node
        loads its last snapshot first, ``onSnapshotLoad``, and replays the entries after it), then lead."""
        replayed = 0
        skip = 0
        if self.disk.snapshot is not None:
            load_state(self.rim, self.live, self.disk.snapshot)
            self.applied = skip = self.disk.snapshot_index
        for entry in self.disk.entries[skip:]:
            if entry.committed:
                self._apply(entry, replay=True)
                replayed += 1
        replay: CtlReplay = {"k": "ctl.replay", "entries": replayed, "state": self.rim.snapshot()}
        if self.disk.snapshot is not None:
            replay["snapshot"] = skip
        self.emit(replay)
        Periodic(self, "scanNotActiveBroker", 2000, self.cfg.scan_not_active_broker_interval,
                 self._jraft_scan if self.jraft else self._scan_not_active_broker)
        if self.repl is not None:  # a follower until an election says otherwise; uncommitted entries wait for one
            self.repl.start()
            interval = self.cfg.jraft_snapshot_interval_secs * 1000
            if self.jraft and interval > 0:  # NodeImpl's snapshotTimer: the first in [T/2, T), then every T
                self.after(self.rng.fork("jraft-snapshot").between(interval // 2, interval - 1), self._snapshot_tick)
            return
        # uncommitted entries left by the previous incarnation commit in order on the new leader
        for entry in self.disk.entries:
            if not entry.committed:
                entry.ready_at = self.now + self.cfg.commit_latency_ms
                self.after(self.cfg.commit_latency_ms, self._advance_commit)
        if self.jraft:
            self._on_raft_leader()
            return
        self.spawn("RoleChangeHandler", self._become_leader())

    def _become_leader(self) -> Job:
        # RoleChangeHandler.handle(LEADER): an empty entry must commit before serving
        term = self.repl.state.term if self.repl is not None else None
        while True:
            if self.repl is not None and (self.repl.role != LEADER or self.repl.state.term != term):
                return  # deposed before it could serve
            entry = self._append([None], {"op": "leader-noop"})[-1]
            ok = yield Await(entry.future, self.cfg.append_wait_timeout)
            if ok:
                break
        if self.repl is not None and (self.repl.role != LEADER or self.repl.state.term != term):
            # deposed while it waited (its empty entry may even have completed with TERM_CHANGED on a later
            # leadership): RocketMQ would start scheduling here, and the FOLLOWER / CANDIDATE handlers queued behind
            # this one on the handler's single thread stop it at once; the kit skips that instant
            return
        self.leader = True
        self.scheduler.start()  # startScheduling (requests queued before a stopScheduling run now)
        if self.repl is not None:
            self.emit({"k": "ctl.leader", "node": self.name, "term": self.repl.state.term})
        else:
            self.emit({"k": "ctl.leader", "node": self.name})
        interval = self.cfg.scan_inactive_master_interval
        self.scan_inactive_master = Periodic(self, "scanInactiveMaster", interval, interval,
                                             self._scan_inactive_master_and_trigger_reelect)

    def _policy(self) -> ElectPolicy:
        if B.ELECT_IGNORES_LIVENESS in self.bugs:
            return ElectPolicy(None, self.heartbeats.get_broker_live_info)
        return ElectPolicy(self._alive, self.heartbeats.get_broker_live_info)

    def _alive(self, cluster: str, broker_name: str, broker_id: int) -> bool:
        if self.jraft:  # RaftBrokerHeartBeatManager.isBrokerActive: the replicated info against this node's clock
            return self.live.is_active(cluster, broker_name, broker_id, self.now)
        return self.heartbeats.is_broker_active(self.now, cluster, broker_name, broker_id)

    # ------------------------------------------------------------------------------------- log

    def _on_raft_leader(self) -> None:
        if self.jraft:  # JRaftController.isLeaderState is node.isLeader(): it serves at once, schedules nothing
            self.leader = True
            if self.repl is not None:
                self.emit({"k": "ctl.leader", "node": self.name, "term": self.repl.state.term})
            else:
                self.emit({"k": "ctl.leader", "node": self.name})
            return
        self.spawn("RoleChangeHandler", self._become_leader())

    def _on_raft_follower(self) -> None:
        """RoleChangeHandler.handle(FOLLOWER / CANDIDATE): stop serving and scanning. ``stopScheduling`` shuts the
        EventScheduler down with an interrupt (``ServiceThread.shutdown(true)``): the request whose append it waits
        for fails at once (``appendToDLedgerAndWait``'s ``get`` throws; the request is cancelled), and the requests
        still queued wait in the queue for the next ``startScheduling``."""
        self.leader = False
        if not self.jraft:
            self.scheduler.stop()
            if self._scheduler_wait is not None:
                self._scheduler_wait.cancel()
        if self.scan_inactive_master is not None:
            self.scan_inactive_master.cancel()
            self.scan_inactive_master = None
        self.emit({"k": "ctl.follower", "node": self.name})

    def _snapshot_tick(self) -> None:
        self.after(self.cfg.jraft_snapshot_interval_secs * 1000, self._snapshot_tick)
        if self.repl is not None:
            self.repl.save_snapshot(serialize_state(self.rim, self.live))

    def install_snapshot(self, data: bytes, index: int) -> None:
        """``onSnapshotLoad`` of a snapshot installed from the leader: the applied state becomes the snapshot's."""
        load_state(self.rim, self.live, data)
        self.applied = index

    def apply_committed(self, entry: LogEntry) -> None:
        """A committed entry of the replicated log, applied in order on this node. DLedger completes the append's
        future only if this node appended it as leader in its *current* term (``completeResponseFuture``)."""
        value = self._apply(entry)
        if self.repl is not None and not self.jraft:
            self.repl.complete_pending(entry.index, value)
            return
        entry.future.complete(value)

    def _append(self, events: list[EventMessage | RequestEntry | None], ctx: dict[str, Any]) -> list[LogEntry]:
        if self.repl is not None:
            extra = self.extra_commit_latency if self.now < self.extra_commit_until else 0
            out = []
            for ev in events:
                entry = LogEntry(len(self.disk.entries), ev, ctx, self.now + extra)
                if self.repl.role == LEADER:
                    self.repl.append(entry)
                else:  # DLedger refuses an append on a node that is no longer leader
                    entry.future.cancel()
                out.append(entry)
            return out
        latency = self.cfg.commit_latency_ms
        if self.now < self.extra_commit_until:
            latency += self.extra_commit_latency
        out = []
        for ev in events:
            entry = LogEntry(len(self.disk.entries), ev, ctx, self.now + latency)
            self.disk.entries.append(entry)
            out.append(entry)
        self.after(latency, self._advance_commit)
        return out

    def _advance_commit(self) -> None:
        for entry in self.disk.entries[self.applied:]:
            if entry.committed:
                continue
            if entry.ready_at > self.now:
                break
            entry.committed = True
            entry.future.complete(self._apply(entry))

    def _apply(self, entry: LogEntry, replay: bool = False) -> Any:
        """``DLedgerControllerStateMachine.onApply``: one committed entry, in order. Returns what completes the
        entry's future: ``True``, or a JRaft request's result."""
        self.applied = entry.index + 1
        if isinstance(entry.event, RequestEntry):
            return self._apply_request(entry, replay)
        if entry.event is None:
            return True
        if replay:  # rebuilding state after a restart: these entries were checked when first applied
            self.rim.apply_event(entry.event)
            return True
        before = self.rim.snapshot().get(getattr(entry.event, "broker_name", ""), None)
        self.rim.apply_event(entry.event)
        applied: CtlApply = {"k": "ctl.apply", "index": entry.index, "event": entry.event.to_dict(), "ctx": entry.ctx,
                             "before": before, "after": self.rim.snapshot().get(entry.event.broker_name, None)}
        if self.repl is not None:  # a replicated group: which node applied it, in which term
            applied["node"], applied["term"] = self.name, entry.term
        self.emit(applied)
        return True

    def _apply_request(self, entry: LogEntry, replay: bool) -> ControllerResult:
        """``JRaftControllerStateMachine.processEvent``: run the logged request on the applied state."""
        req = entry.event
        assert isinstance(req, RequestEntry)
        name = req.broker_name
        before = self.rim.snapshot().get(name, None)
        local = B.JRAFT_APPLY_LOCAL_TIME in self.bugs
        at = self.now if local else req.stamp
        # who was alive at invokeTime, before a clean removes ids (CTL-CLEAN-ELECTION, CTL-CLEAN-SPARES-LIVING)
        alive = self._live_at(name, at) if req.op in ("electMaster", "cleanBrokerData") else {}
        result = execute(self.rim, self.live, req, self.now, local)
        if result is None:  # the closure runs with an error status
            result = ControllerResult().fail(ResponseCode.CONTROLLER_JRAFT_INTERNAL_ERROR, "process event failed")
        if replay or req.op in LIVENESS_OPS:
            return result
        event = result.events[0].to_dict() if result.events else None
        if self.repl is not None:  # CTL-APPLY-PREFIX: what every node computed at this index
            self.emit({"k": "ctl.result", "index": entry.index, "op": req.op, "code": int(result.code), "event": event,
                       "node": self.name, "term": entry.term})
        if event is not None:
            ctx = dict(entry.ctx, op=req.op, code=int(result.code), invokeTime=req.stamp, validatedAt=self.now)
            if req.op == "electMaster":
                ctx["alive"] = self._live_at(name, at)
            elif req.op == "cleanBrokerData":
                ctx.update(alive=alive, ids=dict(req.args).get("brokerControllerIdsToClean"),
                           living=bool(dict(req.args).get("isCleanLivingBroker")))
            applied: CtlApply = {"k": "ctl.apply", "index": entry.index, "event": event, "ctx": ctx, "before": before,
                                 "after": self.rim.snapshot().get(name, None)}
            if self.repl is not None:
                applied["node"], applied["term"] = self.name, entry.term
            self.emit(applied)
        return result

    def _live_at(self, broker_name: str, at: int) -> dict[str, bool]:
        """JRaft: each registered id of the set, alive by the replicated live table at ``at``."""
        replicas = self.rim.replica_info_table.get(broker_name)
        if replicas is None:
            return {}
        return {str(i): self.live.is_active(replicas.cluster_name, broker_name, i, at)
                for i in sorted(replicas.broker_id_info)}

    def _jraft_propose(self, op: str, args: dict[str, Any], ctx: dict[str, Any] | None = None,
                       stamp: int | None = None) -> Future:
        """``JRaftController.applyToJRaft``: a non-leader answers at once; the leader logs the request, and the
        entry's future completes with the result when it applies here."""
        if not self.leader:
            fut = Future()
            fut.complete(ControllerResult().fail(ResponseCode.CONTROLLER_NOT_LEADER,
                                                 "The controller is not in leader state"))
            return fut
        entry = self._append([request(op, self.now if stamp is None else stamp, **args)],
                             dict(ctx or {}, op=op))[-1]
        return entry.future

    def inject_slow_commit(self, extra_ms: int, duration_ms: int) -> None:
        """Fault: appends made in the next ``duration_ms`` take ``extra_ms`` longer to commit."""
        self.extra_commit_latency = extra_ms
        self.extra_commit_until = self.now + duration_ms

    # ---------------------------------------------------------------------------- the scheduler

    def _submit(self, name: str, supplier: Callable[[], ControllerResult], is_write: bool,
                ctx: dict[str, Any]) -> Future:
        """``EventScheduler.appendEvent``: a future completed with the result, or cancelled (``None``); a node that
        does not lead answers CONTROLLER_NOT_LEADER at once."""
        fut = Future()
        if not self.leader:
            fut.complete(ControllerResult().fail(ResponseCode.CONTROLLER_NOT_LEADER,
                                                 "The controller is not in leader state"))
            return fut
        self.scheduler.submit(self._run_event(name, supplier, is_write, ctx, fut))
        return fut

    def _run_event(self, name: str, supplier: Callable[[], ControllerResult], is_write: bool,
                   ctx: dict[str, Any], fut: Future) -> Job:
        if B.FIX_VALIDATE_AFTER_COMMIT in self.bugs:
            while self.disk.entries and (not self.disk.entries[-1].committed
                                         or (self.repl is not None and self.applied < self.repl.commit)):
                ok = yield Await(self.disk.entries[-1].future, self.cfg.append_wait_timeout)
                if not ok and self.repl is not None and self.repl.role != LEADER:
                    # deposed while it waited: the request fails as stopScheduling's interrupt fails it, before it
                    # validates anything (a read would otherwise be answered from the stale state it waited to leave)
                    self.emit({"k": "ctl.append-timeout", "op": name})
                    fut.cancel()
                    return
        if self.repl is not None:  # what the state it validates on lacks (CTL-READ-COMMITTED)
            self.emit({"k": "ctl.validate", "op": name, "applied": self.applied, "commit": self.repl.commit,
                       "term": self.repl.state.term})
        try:
            result = supplier()
        except ElectionFailed as exc:  # handler.handleException: the future fails
            self.emit({"k": "ctl.error", "op": name, "error": str(exc)})
            fut.cancel()
            return
        ok = True
        if is_write and result.events:
            ctx = dict(ctx, op=name, code=int(result.code), validatedAt=self.now)
            entries = self._append(list(result.events), ctx)
            ok = yield from self._append_wait(entries[-1].future)
        elif self.cfg.is_process_read_event:
            entry = self._append([None], {"op": name})[-1]
            ok = yield from self._append_wait(entry.future)
        if ok:
            fut.complete(result)
        else:
            self.emit({"k": "ctl.append-timeout", "op": name})
            fut.cancel()

    def _append_wait(self, future: Future) -> Steps[bool]:
        """``appendToDLedgerAndWait``'s ``get(5 s)``: true on any normal completion (the response code is not read),
        false on a timeout or, in a group, when ``stopScheduling`` interrupts it."""
        ok: bool
        if self.repl is None:
            ok = yield Await(future, self.cfg.append_wait_timeout)
            return ok
        wait = self._scheduler_wait = Future()
        future.add_done_callback(wait.complete)
        try:
            ok = yield Await(wait, self.cfg.append_wait_timeout)
            return ok
        finally:
            if self._scheduler_wait is wait:
                self._scheduler_wait = None

    # ------------------------------------------------------------------------ request processing

    def on_request(self, src: str, cmd: Command) -> None:
        code = cmd.code
        if self.repl is not None and code in _RAFT:
            handler_name = _RAFT[code]
            getattr(self.repl, handler_name)(cmd.header["from"], cmd.header["term"], cmd.body or {})
            return
        if code == RequestCode.BROKER_HEARTBEAT:
            self._handle_heartbeat(src, cmd)
            return
        if code == RequestCode.CHECK_REACHABLE:  # a connection that opens: reachable
            self.send(src, response_to(cmd, ResponseCode.SUCCESS))
            return
        if code == RequestCode.CONTROLLER_GET_METADATA_INFO and self.repl is not None:
            leader = self.repl.leader_id  # DLedger's member state: a follower knows its leader
            self.send(src, response_to(cmd, ResponseCode.SUCCESS, {
                "group": "controller", "controllerLeaderId": leader,
                "controllerLeaderAddress": f"{leader}:9878" if leader else None, "isLeader": self.leader}))
            return
        if code == RequestCode.CONTROLLER_GET_METADATA_INFO:
            self.send(src, response_to(cmd, ResponseCode.SUCCESS, {
                "group": "controller", "controllerLeaderId": self.name if self.leader else None,
                "controllerLeaderAddress": self.address if self.leader else None, "isLeader": self.leader}))
            return
        handler = self._handlers().get(code)
        if handler is None:
            self.send(src, response_to(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                       remark=f" request type {code} not supported"))
            return
        if not self.leader:  # appendEvent on a non-leader (or a stopped scheduler)
            self.send(src, response_to(cmd, ResponseCode.CONTROLLER_NOT_LEADER,
                                       remark="The controller is not in leader state"))
            return
        if B.FIX_FENCE_OLD_INCARNATION in self.bugs and self._fenced_incarnation(cmd):
            fut = Future()
            fut.complete(ControllerResult().fail(ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH,
                                                 "the request comes from an earlier process of the broker"))
        else:
            fut = self._jraft_request(src, cmd) if self.jraft else handler(src, cmd)
        self.spawn(f"processor-{cmd.opaque}", self._process(src, cmd, fut))

    def _fenced_incarnation(self, cmd: Command) -> bool:
        """fix-fence-old-incarnation: note the connection a registration comes on; fence an alterSyncStateSet that
        comes on an *older* one (an earlier process of the master: a request its dead process left in flight).

        Connections are named ``sender#n``, ``n`` growing with each new connection (the simulator: the sender's
        process incarnation; ``rmqha cluster``: the host's accept count), so older is a smaller ``n``. A request on
        a newer connection than the registration this controller saw passes: the master reconnected, or registered
        with another controller of the group (this record is the node's own memory, not replicated state)."""
        h = cmd.header
        if self._channel is None:
            return False
        if cmd.code == RequestCode.CONTROLLER_REGISTER_BROKER and h.get("brokerId") is not None:
            self.registered_on[(h["brokerName"], int(h["brokerId"]))] = self._channel
            return False
        if cmd.code == RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET and h.get("masterBrokerId") is not None:
            known = self.registered_on.get((h["brokerName"], int(h["masterBrokerId"])))
            return known is not None and _connection_number(self._channel) < _connection_number(known)
        return False

    def _process(self, src: str, cmd: Command, fut: Future) -> Job:
        result: ControllerResult | None = yield Await(fut, WAIT_TIMEOUT_OUT)
        if result is None:
            self.send(src, response_to(cmd, ResponseCode.SYSTEM_ERROR, remark="controller request failed"))
            return
        self.send(src, response_to(cmd, result.code, dict(result.header), result.body, result.remark))
        if cmd.code == RequestCode.CONTROLLER_ELECT_MASTER and result.code == ResponseCode.SUCCESS:
            if self.cfg.notify_broker_role_changed and B.ELECT_REQUEST_NOT_NOTIFIED not in self.bugs:
                self.notify_broker_role_changed(result)

    def _handlers(self) -> dict[int, Callable[[str, Command], Future]]:
        return {
            RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET: self._alter,
            RequestCode.CONTROLLER_ELECT_MASTER: self._elect,
            RequestCode.CONTROLLER_REGISTER_BROKER: self._register,
            RequestCode.CONTROLLER_GET_REPLICA_INFO: self._replica_info,
            RequestCode.CONTROLLER_GET_SYNC_STATE_DATA: self._sync_state_data,
            RequestCode.CLEAN_BROKER_DATA: self._clean,
            RequestCode.CONTROLLER_GET_NEXT_BROKER_ID: self._next_id,
            RequestCode.CONTROLLER_APPLY_BROKER_ID: self._apply_id,
        }

    def _jraft_request(self, src: str, cmd: Command) -> Future:
        """The JRaft controller's handlers: each request becomes an entry (``JRaftController.*``)."""
        h, body, code = cmd.header, cmd.body or {}, cmd.code
        if code == RequestCode.CONTROLLER_ELECT_MASTER:
            return self._elect(src, cmd)
        if code == RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET:
            ctx = {"requester": src, "masterBrokerId": h.get("masterBrokerId"), "masterEpoch": h.get("masterEpoch"),
                   "syncStateSetEpoch": body.get("syncStateSetEpoch"), "newSyncStateSet": body.get("syncStateSet")}
            return self._jraft_propose("alterSyncStateSet", {
                "brokerName": h["brokerName"], "masterBrokerId": h.get("masterBrokerId"),
                "masterEpoch": h.get("masterEpoch"), "syncStateSet": list(body.get("syncStateSet", [])),
                "syncStateSetEpoch": body.get("syncStateSetEpoch")}, ctx)
        if code == RequestCode.CONTROLLER_REGISTER_BROKER:
            return self._jraft_propose("registerSuccess", {
                "clusterName": h.get("clusterName", ""), "brokerName": h["brokerName"], "brokerId": h["brokerId"],
                "brokerAddress": h["brokerAddress"]}, {"requester": src})
        if code == RequestCode.CONTROLLER_GET_REPLICA_INFO:
            return self._jraft_propose("getReplicaInfo", {"brokerName": h["brokerName"]})
        if code == RequestCode.CONTROLLER_GET_SYNC_STATE_DATA:
            return self._jraft_propose("getSyncStateData", {"brokerNames": list(body.get("brokerNames", []))})
        if code == RequestCode.CLEAN_BROKER_DATA:
            return self._jraft_propose("cleanBrokerData", {
                "clusterName": h.get("clusterName"), "brokerName": h["brokerName"],
                "brokerControllerIdsToClean": h.get("brokerControllerIdsToClean"),
                "isCleanLivingBroker": bool(h.get("isCleanLivingBroker", False))}, {"requester": src})
        if code == RequestCode.CONTROLLER_GET_NEXT_BROKER_ID:
            return self._jraft_propose("getNextBrokerId", {"clusterName": h.get("clusterName", ""),
                                                           "brokerName": h["brokerName"]})
        return self._jraft_propose("applyBrokerId", {  # CONTROLLER_APPLY_BROKER_ID (the handlers' last code)
            "clusterName": h.get("clusterName", ""), "brokerName": h["brokerName"],
            "appliedBrokerId": h["appliedBrokerId"], "registerCheckCode": h["registerCheckCode"]}, {"requester": src})

    def _alter(self, src: str, cmd: Command) -> Future:
        h, body = cmd.header, cmd.body or {}
        name = h["brokerName"]
        ctx = {"requester": src, "masterBrokerId": h.get("masterBrokerId"), "masterEpoch": h.get("masterEpoch"),
               "syncStateSetEpoch": body.get("syncStateSetEpoch"), "newSyncStateSet": body.get("syncStateSet")}
        return self._submit("alterSyncStateSet", lambda: self.rim.alter_sync_state_set(
            name, h.get("masterBrokerId"), h.get("masterEpoch"), body.get("syncStateSet", []),
            body.get("syncStateSetEpoch"), self._alive), True, ctx)

    def _elect(self, src: str, cmd: Command) -> Future:
        h = cmd.header
        return self.elect_master(h["brokerName"], h.get("brokerId", -1), bool(h.get("designateElect", False)),
                                 h.get("clusterName", ""), requester=src)

    def elect_master(self, broker_name: str, broker_id: int | None, designate: bool, cluster: str = "",
                     requester: str = "controller") -> Future:
        """``Controller.electMaster``; the validation context records who was alive."""
        if requester == "controller":  # ControllerManager.triggerElectMaster's own request (CTL-SCAN-REELECTS)
            self.emit({"k": "ctl.elect-request", "brokerName": broker_name, "requester": requester})
        if self.jraft:
            return self._jraft_propose("electMaster", {
                "clusterName": cluster, "brokerName": broker_name, "brokerId": broker_id,
                "designateElect": designate}, {"requester": requester, "brokerId": broker_id,
                                               "designateElect": designate,
                                               "unclean": self.cfg.enable_elect_unclean_master})

        def supplier() -> ControllerResult:
            result = self.rim.elect_master(broker_name, broker_id, designate, self.elect_policy, cluster)
            ctx_alive.update(self._alive_snapshot(broker_name))
            return result

        ctx_alive: dict[str, bool] = {}
        ctx = {"requester": requester, "brokerId": broker_id, "designateElect": designate, "alive": ctx_alive,
               "unclean": self.cfg.enable_elect_unclean_master}
        return self._submit("electMaster", supplier, True, ctx)

    def _alive_snapshot(self, broker_name: str) -> dict[str, bool]:
        replicas = self.rim.replica_info_table.get(broker_name)
        if replicas is None:
            return {}
        return {str(i): self._alive(replicas.cluster_name, broker_name, i) for i in sorted(replicas.broker_id_info)}

    def _register(self, src: str, cmd: Command) -> Future:
        h = cmd.header
        return self._submit("registerSuccess", lambda: self.rim.register_broker(
            h.get("clusterName", ""), h["brokerName"], h["brokerId"], h["brokerAddress"], self._alive), True,
            {"requester": src})

    def _replica_info(self, src: str, cmd: Command) -> Future:
        name = cmd.header["brokerName"]
        return self._submit("getReplicaInfo", lambda: self.rim.get_replica_info(name), False, {})

    def _sync_state_data(self, src: str, cmd: Command) -> Future:
        names = list((cmd.body or {}).get("brokerNames", []))
        return self._submit("getSyncStateData", lambda: self.rim.get_sync_state_data(names, self._alive), False, {})

    def _clean(self, src: str, cmd: Command) -> Future:
        h = cmd.header
        name, ids, living = h["brokerName"], h.get("brokerControllerIdsToClean"), bool(h.get("isCleanLivingBroker"))

        def supplier() -> ControllerResult:
            ctx_alive.update(self._alive_snapshot(name))  # who was alive when it validated (CTL-CLEAN-SPARES-LIVING)
            return self.rim.clean_broker_data(h.get("clusterName"), name, ids, living, self._alive)

        ctx_alive: dict[str, bool] = {}
        return self._submit("cleanBrokerData", supplier, True,
                            {"requester": src, "alive": ctx_alive, "ids": ids, "living": living})

    def _next_id(self, src: str, cmd: Command) -> Future:
        h = cmd.header
        return self._submit("getNextBrokerId", lambda: self.rim.get_next_broker_id(h.get("clusterName", ""),
                                                                                    h["brokerName"]), False, {})

    def _apply_id(self, src: str, cmd: Command) -> Future:
        h = cmd.header
        return self._submit("applyBrokerId", lambda: self.rim.apply_broker_id(
            h.get("clusterName", ""), h["brokerName"], h["appliedBrokerId"], h["registerCheckCode"]), True,
            {"requester": src})

    # --------------------------------------------------------------------------------- heartbeats

    def on_message(self, src: str, cmd: Command, channel: str | None = None) -> None:
        self._channel = channel  # a heartbeat's channel is its connection (``ctx.channel()``), not its sender
        try:
            super().on_message(src, cmd, channel)
        finally:
            self._channel = None

    def _handle_heartbeat(self, src: str, cmd: Command) -> None:
        h = cmd.header
        if h.get("brokerId") is None:  # CONTROLLER_INVALID_REQUEST; a oneway caller never sees it
            return
        channel = self._channel or src  # the connection it came on (a driver that names none: one per sender)
        if self.jraft:  # RaftBrokerHeartBeatManager.onBrokerHeartbeat: through Raft, stamped with this node's clock
            if self.first_heartbeat < 0:
                self.first_heartbeat = self.now
            self._jraft_propose("heartbeat", {k: h.get(k) for k in (
                "clusterName", "brokerName", "brokerAddr", "brokerId", "heartbeatTimeoutMills", "epoch",
                "maxOffset", "confirmOffset", "electionPriority")})
            self.channels[channel] = (h.get("clusterName", ""), h["brokerName"], h["brokerId"])
            return
        self.heartbeats.on_broker_heartbeat(
            self.now, h.get("clusterName", ""), h["brokerName"], h.get("brokerAddr", ""), h.get("brokerId"),
            h.get("heartbeatTimeoutMills"), channel, h.get("epoch"), h.get("maxOffset"), h.get("confirmOffset"),
            h.get("electionPriority"))

    def on_channel_closed(self, peer: str, channel: str | None = None) -> None:
        """``BrokerHousekeepingService.onChannelClose`` / ``onChannelIdle`` -> ``onBrokerChannelClose(channel)``."""
        chan = peer if channel is None else channel
        if self.jraft:
            found = self.channels.get(chan)
            if found is None:
                return
            known = found
            fut = self._jraft_propose("closeChannel", {"clusterName": known[0], "brokerName": known[1],
                                                       "brokerId": known[2]})

            def closed(result: ControllerResult | None) -> None:  # onBrokerChannelClose: SUCCESS, then inactive
                if result is not None and result.code == ResponseCode.SUCCESS:
                    self.channels.pop(chan, None)
                    self.on_broker_inactive(*known)

            fut.add_done_callback(closed)
            return
        ident = self.heartbeats.on_broker_channel_close(chan)
        if ident is not None:
            self.on_broker_inactive(*ident)

    def _scan_not_active_broker(self) -> Job:
        for ident in self.heartbeats.scan_not_active_broker(self.now):
            self.on_broker_inactive(*ident)
        return
        yield  # pragma: no cover - makes this a generator

    def _jraft_scan(self) -> Job:
        """``RaftBrokerHeartBeatManager.scanNotActiveBroker``: a CHECK_NOT_ACTIVE_BROKER_REQUEST entry."""
        if not self.leader:
            return
        wait_over = self.first_heartbeat + self.cfg.jraft_scan_wait_timeout_ms
        if B.JRAFT_SCAN_AFTER_WAIT in self.bugs:  # 5.3.4+ (PR #9718): skip until the wait after the first heartbeat
            if self.first_heartbeat < 0 or wait_over > self.now:
                return
        elif wait_over < self.now:  # 5.3.3: the test inverted, so only the first wait after the first heartbeat scans
            return
        result: ControllerResult | None = yield Await(self._jraft_propose("checkNotActive", {}), WAIT_TIMEOUT_OUT)
        if result is None or result.code != ResponseCode.SUCCESS:
            return
        for cluster, name, bid in (result.body or {}).get("inactive", []):
            for ch, ident in list(self.channels.items()):
                if ident == (cluster, name, bid):
                    del self.channels[ch]  # RemotingHelper.closeChannel
                    break
            self.on_broker_inactive(cluster, name, bid)

    def _scan_inactive_master_and_trigger_reelect(self) -> Job:
        """``DLedgerController.scanInactiveMasterAndTriggerReelect``: each broker set whose named master is not alive
        (and that has a live replica) goes to the listeners as ``onBrokerInactive(null, brokerName, null)``; the
        sets it found are observed once they have (CTL-SCAN-REELECTS)."""
        if self.leader:
            found = self.rim.scan_need_reelect_broker_sets(self._alive)
            for name in found:
                self.on_broker_inactive(None, name, None)
            if found:
                self.emit({"k": "ctl.scan-inactive", "brokerSets": found})
        return
        yield  # pragma: no cover

    def on_broker_inactive(self, cluster: str | None, broker_name: str, broker_id: int | None) -> None:
        """``ControllerManager.onBrokerInactive``."""
        if not self.leader:
            return
        self.emit({"k": "ctl.inactive", "brokerName": broker_name, "brokerId": broker_id})
        if B.SCAN_REELECT_CHECKS_MASTER in self.bugs and broker_id is None:
            self._elect_if_master(broker_name, broker_id)
            return
        if broker_id is None:
            self.spawn("triggerElectMaster", self._trigger_elect_master(broker_name))
            return
        self._elect_if_master(broker_name, broker_id)

    def _elect_if_master(self, broker_name: str, broker_id: int | None) -> None:
        """``onBrokerInactive`` for one broker: ask the replica info, and trigger an election only when the inactive
        broker is the set's master."""
        fut = self._jraft_propose("getReplicaInfo", {"brokerName": broker_name}) if self.jraft else \
            self._submit("getReplicaInfo", lambda: self.rim.get_replica_info(broker_name), False, {})

        def done(result: ControllerResult | None) -> None:
            if result is None or result.code != ResponseCode.SUCCESS:
                return
            if result.header.get("masterBrokerId") != broker_id:
                return
            self.spawn("triggerElectMaster", self._trigger_elect_master(broker_name))

        fut.add_done_callback(done)

    def _trigger_elect_master(self, broker_name: str) -> Job:
        for _ in range(self.cfg.elect_master_max_retry_count):
            fut = self.elect_master(broker_name, -1, False, "")
            result: ControllerResult | None = yield Await(fut, TRIGGER_WAIT)
            if result is not None and result.code == ResponseCode.SUCCESS:
                if self.cfg.notify_broker_role_changed:
                    self.notify_broker_role_changed(result)
                return

    def notify_broker_role_changed(self, result: ControllerResult) -> None:
        """``notifyBrokerRoleChanged``: a oneway to every alive member of the set."""
        body = result.body or {}
        group = body.get("brokerMemberGroup")
        master = result.header.get("masterBrokerId")
        if group is None or master is None:
            return
        header = {"masterAddress": result.header.get("masterAddress"), "masterBrokerId": master,
                  "masterEpoch": result.header.get("masterEpoch"),
                  "syncStateSetEpoch": result.header.get("syncStateSetEpoch")}
        sss = {"syncStateSet": body.get("syncStateSet", []),
               "syncStateSetEpoch": result.header.get("syncStateSetEpoch")}
        for bid, addr in sorted(group["brokerAddrs"].items()):
            if self._alive(group["cluster"], group["brokerName"], int(bid)) and addr:
                self.send(addr.split(":")[0], Command(RequestCode.NOTIFY_BROKER_ROLE_CHANGED, 0, dict(header),
                                                      dict(sss), oneway=True))


def _connection_number(channel: str) -> int:
    """The ``n`` of a connection named ``sender#n`` (-1 when it names none: a driver with one per sender)."""
    _, _, n = channel.rpartition("#")
    return int(n) if n.isdigit() else -1
