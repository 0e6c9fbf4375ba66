"""A broker process in controller mode: ``BrokerController`` with its store, HA service and ReplicasManager.

Rules (``BrokerController`` in controller mode, ``SendMessageProcessor``, ``CommitLog.asyncPutMessage``,
``PullMessageProcessor``):

* Put (``SendMessageProcessor`` -> ``CommitLog.asyncPutMessage``): refused with SERVICE_NOT_AVAILABLE on a
  slave or while fenced (``HookUtils.checkBeforePutMessage``); as SYNC_MASTER, IN_SYNC_REPLICAS_NOT_ENOUGH
  *before* writing when ``inSyncReplicasNums < minInSyncReplicas``; then append, flush (SYNC_FLUSH: before
  answering) and wait for acks: ``needAck`` = ALL when ``allAckInSyncStateSet`` else ``inSyncReplicas``;
  0 or 1 acks at once. The message is never rolled back after a timeout.
* Pull: consumers read dispatched messages only (those ending at or before confirmOffset); a slave serves pulls
  only with ``slaveReadEnable`` (``PullMessageProcessor.rejectRequest``), and then every answer suggests the broker
  to pull from next (``suggestWhichBrokerId``).
* Heartbeat to every controller each second and nameserver registration every 30 s (first after 10 s),
  both skipped while isolated (fenced); a role change registers at once, fenced or not. The registration
  reply gives a slave its master's HA address.
* Async flush every 500 ms (4 dirty pages) and fully every 10 s; reput dispatches shortly after each
  append or confirmOffset move.
* With ``[sim] interleave`` (issue 21) the long steps that RocketMQ runs on threads of their own are cut into
  sub-steps that other events interleave with (``gap``: a seeded pause of 0-20 ms between them): a role change
  (``replicas_manager.py``) and the reput, which dispatches 1-4 messages at a time (``ReputMessageService.doReput``
  loops message by message while puts, acks and HA frames go on). Off, every step runs whole, as before.
  Recovery is not cut: ``BrokerController.initialize`` runs ``DefaultMessageStore.load`` / ``recover`` on the main
  thread before any service thread starts, so nothing interleaves with it (a crash during it is a crash before the
  process ran: the next start recovers the same files).
* A ``crash-at`` fault (``impl/sim/world.py``) aimed at a role change's boundary sets ``trap_points``: the broker then
  says so there (``brk.point``) and waits, and the simulator kills it before anything after the boundary runs.

Theory: this class only routes; decisions live in ``replicas_manager.py``, ``ha/service.py`` and the store.
"""

from __future__ import annotations

from typing import Any

from .. import bugs as B
from ..codes import MASTER_ID, BrokerRole, PutMessageStatus, RequestCode, ResponseCode
from ..config import BrokerConfig, MessageStoreConfig
from ..ha import frames as F
from ..ha.connection import AutoSwitchHAConnection
from ..ha.service import AutoSwitchHAService, GroupCommitRequest
from ..observations import BrkAppend, BrkPutResult
from ..rng import DetRng
from ..runtime import (
    Actor,
    Call,
    Command,
    HAClose,
    HAConnect,
    HAWrite,
    Job,
    Monitor,
    Periodic,
    Sleep,
    Steps,
    response_to,
)
from ..store.commitlog import MessageStore
from ..store.disk import BrokerDisk
from .replicas_manager import ReplicasManager
from .topic_config import TopicConfigManager, sync_loop_ms

PULL_BATCH = 32
GAP_MAX = 20  # [sim] interleave: the longest pause between two sub-steps (ms)
REPUT_BATCH = 4  # [sim] interleave: the most messages one reput sub-step dispatches
TOTAL_PHYSICAL_MEMORY_SIZE = 16 << 30  # StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE: the kit's machines have 16 GiB
WHICH_BROKER_WHEN_CONSUME_SLOWLY = 1  # SubscriptionGroupConfig.whichBrokerWhenConsumeSlowly (default)


class BrokerNode(Actor):
    def __init__(self, name: str, broker_cfg: BrokerConfig, store_cfg: MessageStoreConfig, disk: BrokerDisk,
                 rng: DetRng, controllers: list[str], nameserver: str, bugs: frozenset[str] = frozenset(),
                 election_priority: int | None = None, queues: int = 0, file_boundaries: bool = False,
                 topic_config: bool = False, other_topics: int = 0, topic_persist_us: int = 3,
                 interleave: bool = False, listen_port: int = 10911) -> None:
        super().__init__(name, rng)
        self.broker_cfg = broker_cfg
        self.store_cfg = store_cfg
        self.disk = disk
        self.bugs = bugs
        # BrokerConfig.listenPort (10911) and haListenPort (listenPort + 1): a restart may move them (move-broker)
        self.address = f"{name}:{listen_port}"
        self.ha_address = f"{name}:{listen_port + 1}"
        self.controller_addresses = [f"{c}:9878" for c in controllers]
        self.nameserver = nameserver
        self.election_priority = broker_cfg.broker_election_priority if election_priority is None else election_priority
        self.store = MessageStore(disk, store_cfg, controller_mode=True, bugs=bugs, queues=queues,
                                  file_boundaries=file_boundaries)
        self.ha = AutoSwitchHAService(self, self.store, store_cfg, bugs)
        self.store.on_truncate = self._on_truncate
        self.isolated = True
        self.configured_broker_id = -1  # BrokerConfig.brokerId as seen by the nameserver
        self.data_version = 0  # TopicConfigManager data version's stateVersion
        self.replicas = ReplicasManager(self)
        self.consumer_offsets: dict[str, int] = dict(disk.consumer_offsets)  # ConsumerOffsetManager.load
        # [workload] topic_config: TopicConfigManager.load (topics.json), else the topic is implicit
        self.topics = TopicConfigManager(queues, disk.topics) if topic_config and queues else None
        self.other_topics, self.topic_persist_us = other_topics, topic_persist_us  # [workload] other_topics
        self._reput_scheduled = False
        self._reput_stalled_until = -1
        self._reput_due = -1  # when the scheduled reput runs (-1: none scheduled)
        self._ha_conns: dict[int, AutoSwitchHAConnection] = {}
        self._connect_tokens: dict[int, Any] = {}
        self.interleave = interleave  # [sim] interleave: long steps in sub-steps
        self.rng_gap = rng.fork("interleave")  # drawn only with interleave on
        self.trap_points: dict[str, int] = {}  # a crash-at fault's boundary: point -> step (impl/sim/world.py)

    def _monitors(self) -> list[Monitor]:
        return [self.replicas.monitor]

    def gap(self, point: str, step: int) -> Steps[None]:
        """A boundary between two sub-steps of a long step (``point``, its ``step``-th boundary). With ``[sim]
        interleave`` the strand pauses 0-``GAP_MAX`` ms here (the broker's seeded stream), so that whatever other
        threads do meanwhile (puts, acks, HA frames, the reput) runs in between; a ``crash-at`` trap on this boundary
        makes it say so and wait. Otherwise nothing: the step runs on at once, as it always did."""
        if self.trap_points.get(point) == step:
            self.emit({"k": "brk.point", "point": point, "step": step})
            yield Sleep(0)
        elif self.interleave:
            yield Sleep(self.rng_gap.between(0, GAP_MAX))

    def wait_dispatch(self) -> Steps[None]:
        """``AutoSwitchHAService.changeToMaster``: ``while (dispatchBehindBytes() > 0) Thread.sleep(100)``. With
        ``[sim] interleave`` the reput thread catches up on its own (its stalls included) while the role change
        waits; otherwise the kit dispatches at once (``finish_dispatch``)."""
        if not self.interleave:
            self.finish_dispatch()
            return
        while self.store.dispatch_behind_bytes() > 0:
            self._kick_reput()
            if self.store.dispatch_behind_bytes() <= 0:
                break
            yield Sleep(100)

    # -------------------------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """``BrokerController.start`` in controller mode."""
        if self.store.recovered_past_confirm:  # recoverNormally's dispatch past confirmOffset, seen by checkers
            self.emit({"k": "store.dispatch", "upto": self.store.recovered_past_confirm,
                       "confirm": self.store.confirm_offset, "reputEnd": self.store.max_phy_offset,
                       "recovery": "normal"})
        self.replicas.set_fenced(True)
        if B.UNFENCE_BEFORE_REGISTER in self.bugs:  # the deviation: the store takes writes before RUNNING
            self.store.fenced = False
        Periodic(self, "registerNameServer", 10_000, max(10_000, min(self.broker_cfg.register_name_server_period,
                                                                     60_000)), self._periodic_register)
        Periodic(self, "sendHeartbeat", 1000, self.broker_cfg.broker_heartbeat_interval, self._periodic_heartbeat)
        if self.store.queues:
            Periodic(self, "persistConsumerOffset", 5000, 5000, self._persist_consumer_offsets)
        self._last_thorough = self.now
        self._flush_timer: int | None = None
        self._flush_at = -1
        self.replicas.start()

    def _periodic_heartbeat(self) -> Job:
        if not self.isolated:
            self.replicas.send_heartbeat_to_controller()
        return
        yield  # pragma: no cover

    def _periodic_register(self) -> Job:
        if not self.isolated:
            yield from self._register_broker_all()

    # ---- FlushRealTimeService (ASYNC_FLUSH), event-exact: a put wakes it; it flushes once 4 pages are dirty,
    # and everything when 10 s have passed since the last thorough flush; otherwise it polls every 500 ms.
    def _after_append(self, woken: bool) -> None:
        if self.store_cfg.flush_disk_type == "SYNC_FLUSH":
            return
        store, cfg = self.store, self.store_cfg
        if store.able_to_flush(cfg.flush_commit_log_least_pages):
            if woken:
                store.commitlog.flush()
                return
            poll = cfg.flush_interval_commit_log
            self._arm_flush(self.now + poll - (self.now % poll))
            return
        if store.max_phy_offset > self.disk.flushed:
            self._arm_flush(max(self.now, self._last_thorough + cfg.flush_commit_log_thorough_interval))

    def _arm_flush(self, at: int) -> None:
        if self._flush_timer is not None and self._flush_at <= at:
            return
        self.cancel(self._flush_timer)
        self._flush_at = at
        self._flush_timer = self.after(at - self.now, self._flush_tick)

    def _flush_tick(self) -> None:
        self._flush_timer = None
        cfg = self.store_cfg
        thorough = self.now >= self._last_thorough + cfg.flush_commit_log_thorough_interval
        if thorough:
            self._last_thorough = self.now
        self.store.maybe_flush(thorough)
        self._after_append(False)

    # ---------------------------------------------------------------------------- nameserver

    def register_broker_when_role_change(self) -> None:
        self.spawn("registerBrokerWhenRoleChange", self._register_broker_all())

    def _register_broker_all(self) -> Job:
        header = {"clusterName": self.broker_cfg.cluster_name, "brokerAddr": self.address,
                  "brokerName": self.broker_cfg.broker_name, "brokerId": self.configured_broker_id,
                  "haServerAddr": self.ha_address, "stateVersion": self.data_version}
        if self.topics is not None and B.REGISTER_OMITS_TOPIC_CONFIG not in self.bugs:  # the topicConfigWrapper:
            header["topicConfig"] = self.topics.to_wire()  # its dataVersion's stateVersion is the stateVersion
            header["stateVersion"] = self.topics.version.state_version
        resp = yield Call(self.nameserver, Command(RequestCode.REGISTER_BROKER, 0, header), 3000)
        if resp is not None and resp.code == ResponseCode.SUCCESS:
            ha_addr = resp.header.get("haServerAddr")
            if ha_addr is not None:  # handleRegisterBrokerResult (updateMasterHAServerAddrPeriodically)
                self.ha.update_ha_master_address(ha_addr)

    def next_data_version(self, master_epoch: int) -> None:
        """``getTopicConfigManager().getDataVersion().nextVersion(newMasterEpoch)`` on a role change."""
        self.data_version = master_epoch
        if self.topics is not None:
            self.topics.version.next_version(master_epoch, self.now)

    def persist_topics(self, why: str) -> None:
        """``TopicConfigManager.persist``: topics.json, written at once."""
        topics = self.topics
        assert topics is not None
        self.disk.topics = topics.persisted()
        self.emit({"k": "brk.topic", "read": topics.read, "write": topics.write, "version": topics.version.to_wire(),
                   "why": why})

    def sync_topic_config(self, wire: dict[str, Any]) -> Job:
        """``SlaveSynchronize.syncTopicConfig`` once the versions differ (the slave's sync strand runs it). With
        ``[workload] other_topics`` the delete loop and the put phase take their time: the workload's topic sits
        in the middle of the iteration order, and each delete persists what is left of the table."""
        topics = self.topics
        assert topics is not None
        delete_all = B.FIX_SYNC_DELETES_ONLY_MISSING not in self.bugs
        takes = B.SYNC_TAKES_MASTER_VERSION in self.bugs  # 5.5.0+ (PR #9778): the master's version, set at the end
        if not self.other_topics or not delete_all:
            topics.sync_from_master(wire, self.replicas.master_epoch, self.now, delete_all=delete_all,
                                    takes_version=takes)
            self.persist_topics("sync")
            return
        entries = self.other_topics + (1 if topics.topic is not None else 0)
        position = self.other_topics // 2 if topics.topic is not None else 0
        deleted, put, on_disk = sync_loop_ms(entries, position, self.topic_persist_us)
        topics.begin_sync(wire, takes)
        if topics.topic is not None:
            yield Sleep(deleted)
            topics.delete_topic(self.replicas.master_epoch, self.now)
            self.persist_topics("sync-delete")  # deleteTopicConfig persists the table without it
        else:
            deleted = 0
        yield Sleep(put - deleted)
        topics.put_from(wire, self.replicas.master_epoch, self.now, takes)  # in memory; topics.json follows
        topics.end_sync(wire, takes)
        yield Sleep(on_disk - put)
        self.persist_topics("sync")

    def cover_consume_queues(self) -> None:
        """The fix of F-TOPIC-CONFIG-LOST-ON-FAILOVER: a new master's topic covers the queues its log holds."""
        if self.topics is not None and B.FIX_MASTER_COVERS_ITS_QUEUES in self.bugs:
            ids = [q for q, cq in self.store.consume_queues.items() if cq]
            need = max(ids, default=-1) + 1
            if B.COVER_NARROWS_TOPIC in self.bugs and need and (need, need) != (self.topics.read, self.topics.write):
                self.topics.update_topic_config(need, need, self.replicas.master_epoch, self.now)
                self.persist_topics("cover")
            elif self.topics.cover_queues(ids, self.replicas.master_epoch, self.now):
                self.persist_topics("cover")

    # ------------------------------------------------------------------------------- requests

    def on_request(self, src: str, cmd: Command) -> None:
        code = cmd.code
        if code == RequestCode.SEND_MESSAGE:
            self._put(src, cmd)
        elif code == RequestCode.PULL_MESSAGE:
            self._pull(src, cmd)
        elif code == RequestCode.UPDATE_CONSUMER_OFFSET:  # ConsumerManageProcessor -> ConsumerOffsetManager
            h = cmd.header
            self.consumer_offsets[f"{h['group']}@{h['queueId']}"] = int(h["commitOffset"])
            if not cmd.oneway:
                self.send(src, response_to(cmd, ResponseCode.SUCCESS))
        elif code == RequestCode.QUERY_CONSUMER_OFFSET:
            self._query_consumer_offset(src, cmd)
        elif code == RequestCode.GET_MAX_OFFSET:  # AdminBrokerProcessor.getMaxOffset: getMaxOffsetInQueue
            cq = self.store.consume_queues.get(int(cmd.header["queueId"]), {})
            self.send(src, response_to(cmd, ResponseCode.SUCCESS, {"offset": max(cq) + 1 if cq else 0}))
        elif code == RequestCode.GET_ALL_CONSUMER_OFFSET:  # what a slave's SlaveSynchronize.syncConsumerOffset reads
            self.send(src, response_to(cmd, ResponseCode.SUCCESS, {}, dict(self.consumer_offsets)))
        elif code == RequestCode.UPDATE_AND_CREATE_TOPIC and self.topics is not None:
            # AdminBrokerProcessor.updateAndCreateTopic -> TopicConfigManager.updateTopicConfig (put,
            # updateDataVersion with the store's stateMachineVersion = masterEpoch, persist), then
            # registerIncrementBrokerData: the nameserver hears of it at once
            h = cmd.header
            self.topics.update_topic_config(int(h["readQueueNums"]), int(h["writeQueueNums"]),
                                            self.replicas.master_epoch, self.now)
            self.persist_topics("admin")
            self.send(src, response_to(cmd, ResponseCode.SUCCESS))
            if not self.isolated:
                self.spawn("registerIncrementBrokerData", self._register_broker_all())
        elif code == RequestCode.GET_ALL_TOPIC_CONFIG and self.topics is not None:
            self.send(src, response_to(cmd, ResponseCode.SUCCESS, {}, self.topics.to_wire()))
        elif code == RequestCode.NOTIFY_BROKER_ROLE_CHANGED:
            h, body = cmd.header, cmd.body or {}
            self.spawn("notifyBrokerRoleChanged", self.replicas.change_broker_role(
                h.get("masterBrokerId"), h.get("masterAddress"), h.get("masterEpoch"), h.get("syncStateSetEpoch"),
                set(body.get("syncStateSet", []))))
        elif not cmd.oneway:
            self.send(src, response_to(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED))

    def _put(self, src: str, cmd: Command) -> None:
        store = self.store
        key, size = cmd.header["key"], cmd.header["bodySize"]
        topics = self.topics
        if topics is not None and topics.topic is None:  # msgCheck: no config, autoCreateTopicEnable off
            self.send(src, response_to(cmd, ResponseCode.TOPIC_NOT_EXIST, {"status": "TOPIC_NOT_EXIST", "key": key}))
            return
        if topics is not None and int(cmd.header.get("queueId", 0)) >= max(topics.write, topics.read):
            # AbstractSendMessageProcessor.msgCheck: "request queueId[%d] is illegal" (before the store's checks)
            self.send(src, response_to(cmd, ResponseCode.SYSTEM_ERROR, {"status": "QUEUE_ID_ILLEGAL", "key": key}))
            return
        if store.role == BrokerRole.SLAVE or store.fenced:
            self._put_reply(src, cmd, PutMessageStatus.SERVICE_NOT_AVAILABLE, None)
            return
        need_ack = self.store_cfg.in_sync_replicas
        if store.role == BrokerRole.SYNC_MASTER:  # needHandleHA in controller mode
            if self.ha.in_sync_replicas_nums() < self.store_cfg.min_in_sync_replicas:
                self._put_reply(src, cmd, PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH, None)
                return
            if self.store_cfg.all_ack_in_sync_state_set:
                need_ack = -1
        else:
            need_ack = 0
        queue: dict[str, int] = {}
        if store.queues:  # CommitLog.asyncPutMessage: the queue offset is assigned under the topic-queue lock
            qid = int(cmd.header.get("queueId", 0))
            qid = qid if topics is not None else qid % store.queues
            queue = {"queueId": qid, "queueOffset": store.topic_queue_table.get(qid, 0)}
        offset, wrote = store.commitlog.append_message(key, size, self.now, (queue["queueId"], queue["queueOffset"])
                                                       if queue else None)
        if queue:  # increaseQueueOffset after the append succeeded
            store.topic_queue_table[queue["queueId"]] = queue["queueOffset"] + 1
        appended: BrkAppend = {"k": "brk.append", "key": key, "offset": offset, "size": wrote, "role": store.role.value,
                               "fenced": store.fenced, "masterEpoch": self.replicas.master_epoch,
                               "lastEpoch": self.ha.epoch_cache.last_epoch()}
        if queue:
            appended["queueId"], appended["queueOffset"] = queue["queueId"], queue["queueOffset"]
        self.emit(appended)
        if self.store_cfg.flush_disk_type == "SYNC_FLUSH":
            store.commitlog.flush()
        self._after_append(True)
        self.on_store_appended()
        result = {"offset": offset, "size": wrote}
        if need_ack in (0, 1):
            self._put_reply(src, cmd, PutMessageStatus.PUT_OK, result)
            return

        def done(status: PutMessageStatus, info: dict[str, Any]) -> None:
            self._put_reply(src, cmd, status, dict(result, ack=info))

        self.ha.put_request(GroupCommitRequest(offset + wrote, self.now + self.store_cfg.slave_timeout, need_ack, done))

    def _put_reply(self, src: str, cmd: Command, status: PutMessageStatus, result: dict[str, Any] | None) -> None:
        code = {PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
                PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
                PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
                PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
                PutMessageStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
                PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH: ResponseCode.SYSTEM_ERROR}[status]
        header = {"status": status.value, "key": cmd.header["key"]}
        if result is not None:
            header.update(offset=result["offset"], size=result["size"])
        answered: BrkPutResult = {"k": "brk.put-result", "key": cmd.header["key"], "status": status.value,
                                  "masterEpoch": self.replicas.master_epoch}
        if result is not None:
            answered["end"] = result["offset"] + result["size"]
            if "ack" in result:
                answered["ack"] = result["ack"]
        self.emit(answered)
        self.send(src, response_to(cmd, code, header))

    def _query_consumer_offset(self, src: str, cmd: Command) -> None:
        """``ConsumerManageProcessor.queryConsumerOffset``: the committed offset; none committed and the queue still
        starts at 0 with its first message in memory (always, in the kit): 0; else QUERY_NOT_FOUND."""
        h = cmd.header
        offset = self.consumer_offsets.get(f"{h['group']}@{h['queueId']}")
        if offset is None and B.OFFSET_NOT_FOUND_FROM_LAST not in self.bugs:
            cq = self.store.consume_queues.get(int(h["queueId"]), {})
            offset = 0 if not cq or min(cq) == 0 else None
        if offset is None:
            self.send(src, response_to(cmd, ResponseCode.QUERY_NOT_FOUND))
        else:
            self.send(src, response_to(cmd, ResponseCode.SUCCESS, {"offset": offset}))

    def _persist_consumer_offsets(self) -> Job:
        """``ConsumerOffsetManager.persist`` every flushConsumerOffsetInterval (5 s): consumerOffset.json."""
        self.disk.consumer_offsets = dict(self.consumer_offsets)
        return
        yield  # pragma: no cover

    def _pull(self, src: str, cmd: Command) -> None:
        if not self.broker_cfg.slave_read_enable and self.store.role == BrokerRole.SLAVE:
            # PullMessageProcessor.rejectRequest: "[REJECTREQUEST]system busy" (a slave serves no pull without it)
            self.send(src, response_to(cmd, ResponseCode.SYSTEM_BUSY))
            return
        start = cmd.header.get("queueOffset", 0)
        confirm = self.store.get_confirm_offset()
        if self.store.queues:  # PullMessageProcessor -> DefaultMessageStore.getMessage on one consume queue
            qid = int(cmd.header.get("queueId", 0))
            if self.topics is not None and self.topics.topic is None:  # "topic[%s] not exist, apply first please!"
                self.send(src, response_to(cmd, ResponseCode.TOPIC_NOT_EXIST))
                return
            if self.topics is not None and qid >= self.topics.read:  # "queueId[%d] is illegal"
                self.send(src, response_to(cmd, ResponseCode.SYSTEM_ERROR))
                return
            cq = self.store.consume_queues.get(qid, {})
            got: list[list[Any]] = []
            while start + len(got) in cq and len(got) < PULL_BATCH:
                d = cq[start + len(got)]
                got.append([d.key, d.offset, d.size, d.qoff])
            self._pull_reply(src, cmd, {"confirmOffset": confirm, "nextQueueOffset": start + len(got)}, got)
            return
        msgs = [[d.key, d.offset, d.size] for d in self.store.dispatched[start:start + PULL_BATCH]]
        self._pull_reply(src, cmd, {"confirmOffset": confirm, "nextQueueOffset": start + len(msgs)}, msgs)

    def _pull_reply(self, src: str, cmd: Command, header: dict[str, Any], msgs: list[list[Any]]) -> None:
        """The pull's answer. With ``slaveReadEnable`` it names the broker to pull from next
        (``PullMessageProcessor``: ``suggestWhichBrokerId``): slave ``whichBrokerWhenConsumeSlowly`` when the last
        message pulled starts more than the memory share below the log end (``DefaultMessageStore.getMessage``:
        ``diff > memory``), else the master; a slave that need not serve (the group's min broker id is the master:
        ``minBrokerIdInGroup`` stays 0 without ``enableSlaveActingMaster``) points back to the master, and answers
        PULL_RETRY_IMMEDIATELY when it found nothing."""
        code = ResponseCode.SUCCESS
        if self.broker_cfg.slave_read_enable:
            memory = TOTAL_PHYSICAL_MEMORY_SIZE * self.store_cfg.access_message_in_memory_max_ratio // 100
            slowly = bool(msgs) and self.store.max_phy_offset - msgs[-1][1] > memory
            which = WHICH_BROKER_WHEN_CONSUME_SLOWLY if slowly else MASTER_ID
            if self.configured_broker_id != MASTER_ID and not slowly:
                which = MASTER_ID
                if not msgs:
                    code = ResponseCode.PULL_RETRY_IMMEDIATELY
            header["suggestWhichBrokerId"] = which
        self.send(src, response_to(cmd, code, header, msgs))

    # ------------------------------------------------------------------------------------ reput

    def on_store_appended(self) -> None:
        for c in self.ha.connections.values():
            c.kick()
        self._kick_reput()

    def on_slave_appended(self) -> None:
        self._after_append(False)
        self._kick_reput()

    def on_confirm_changed(self) -> None:
        self._kick_reput()

    def _kick_reput(self) -> None:
        """Wake ReputMessageService when it has something to dispatch; it runs at once unless it lags."""
        if self._reput_scheduled or self.store.reput_end_offset() <= self.store.reput_from_offset:
            return
        lag = self.store_cfg.reput_interval_ms
        if self.now < self._reput_stalled_until:
            lag = max(lag, self._reput_stalled_until - self.now)
        if lag <= 0:
            self._do_reput()
            return
        self._reput_scheduled = True
        self._reput_due = self.now + lag
        self.after(lag, self._reput)

    @property
    def reput_pending(self) -> bool:
        """A reput pass is due (a wake-up with a lag, or the next sub-step of an interleaved pass)."""
        return self._reput_scheduled

    @property
    def reput_stalled_until(self) -> int:
        """Until when the reput thread is stalled (fault ``slow-dispatch``: a later, shorter stall does not wake a
        reput an earlier one put off), or -1."""
        return max(self._reput_stalled_until, self._reput_due)

    def stall_dispatch(self, ms: int) -> None:
        """Fault: the reput thread stalls for ``ms`` (GC, a slow consume-queue disk)."""
        self._reput_stalled_until = self.now + ms

    def _reput(self) -> None:
        self._reput_scheduled = False
        self._reput_due = -1
        self._do_reput()

    def _do_reput(self) -> None:
        end = self.store.reput_end_offset()
        batch = self.rng_gap.between(1, REPUT_BATCH) if self.interleave else None
        if self.store.do_reput(self.configured_broker_id == MASTER_ID, batch):
            self.emit({"k": "store.dispatch", "upto": self.store.reput_from_offset,
                       "confirm": self.store.get_confirm_offset(), "reputEnd": end})
        if batch is not None and not self._reput_scheduled \
                and self.store.reput_end_offset() > self.store.reput_from_offset:
            # ReputMessageService.doReput dispatches message by message; the next ones come after other threads ran
            self._reput_scheduled = True
            self.after(self.rng_gap.between(0, 3), self._reput)

    def finish_dispatch(self) -> None:
        """``changeToMaster`` waits until dispatch has caught up; the reput thread keeps running."""
        self._do_reput()

    def _on_truncate(self, offset: int) -> None:
        self.emit({"k": "store.truncated", "offset": offset, "max": self.store.max_phy_offset})

    # ------------------------------------------------------------------------------- HA streams

    def ha_connect(self, addr: str) -> int:
        token = self.new_opaque()
        self.out.append(HAConnect(token, addr))
        return token

    def ha_write(self, conn: int, data: bytes) -> None:
        self.out.append(HAWrite(conn, data))

    def ha_close(self, conn: int) -> None:
        self._ha_conns.pop(conn, None)
        self.out.append(HAClose(conn))

    def on_ha_connect_result(self, token: int, conn: int | None) -> None:
        client = self.ha.client
        if client is not None:
            client.on_connect_result(token, conn)
        elif conn is not None:
            self.out.append(HAClose(conn))

    def on_ha_accept(self, conn: int, peer: str) -> None:
        self._ha_conns[conn] = self.ha.accept(conn, peer)
        self.emit({"k": "ha.accept", "conn": conn, "peer": peer})

    def on_ha_data(self, conn: int, data: bytes) -> None:
        master_side = self._ha_conns.get(conn)
        if master_side is not None:
            master_side.on_data(data)
            return
        client = self.ha.client
        if client is not None and client.conn == conn:
            client.on_data(data)

    def on_ha_closed(self, conn: int) -> None:
        master_side = self._ha_conns.pop(conn, None)
        if master_side is not None:
            master_side.on_peer_closed()
            return
        client = self.ha.client
        if client is not None and client.conn == conn:
            client.on_closed()

    # ------------------------------------------------------------------------ observation hooks

    def observe_transfer(self, c: AutoSwitchHAConnection, offset: int, size: int, header: bytes | None) -> None:
        epoch = start = None
        if header is not None:
            _, _, _, epoch, start, _ = F._M_TRANSFER.unpack_from(header, 0)
        self.emit({"k": "ha.transfer", "conn": c.conn, "slave": c.slave_id, "offset": offset, "size": size,
                   "epoch": epoch, "start": start,
                   "entries": [[e.epoch, e.start_offset] for e in self.ha.epoch_cache.all_entries()],
                   "max": self.store.max_phy_offset})

    def observe_handshake_done(self, client: Any, frame: F.MasterHandshake, point: int) -> None:
        self.emit({"k": "ha.handshake-done", "conn": client.conn, "point": point, "masterMax": frame.max_offset,
                   "max": self.store.max_phy_offset})

    def observe_slave_append(self, offset: int, size: int) -> None:
        self.emit({"k": "ha.slave-append", "offset": offset, "size": size, "max": self.store.max_phy_offset})

    def observe_expand(self, slave: int, ack: int, confirm: int, epoch_start: int, proposal: list[int]) -> None:
        self.emit({"k": "ha.expand", "slave": slave, "ack": ack, "confirm": confirm, "epochStart": epoch_start,
                   "proposal": proposal})

    # ---------------------------------------------------------------------------------- status

    def status(self) -> dict[str, Any]:
        rm, ha, store = self.replicas, self.ha, self.store
        return {
            "role": "MASTER" if store.role == BrokerRole.SYNC_MASTER else store.role.value,
            "fenced": store.fenced, "state": rm.state.value, "id": rm.broker_controller_id,
            "masterEpoch": rm.master_epoch, "syncStateSetEpoch": rm.sync_state_set_epoch,
            "sss": sorted(rm.sync_state_set), "local": sorted(ha.sync_state_set),
            "remote": sorted(ha.remote_sync_state_set) if ha.is_synchronizing_sync_state_set else None,
            "max": store.max_phy_offset, "flushed": self.disk.flushed, "confirm": store.confirm_offset,
            "epochs": [[e.epoch, e.start_offset] for e in ha.epoch_cache.all_entries()],
            "master": rm.master_broker_id,
        }
