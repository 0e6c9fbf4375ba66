"""ReplicasManager: the broker's view of the controller (``B/controller/ReplicasManager.java``).

Everything that changes a broker's role, epochs or SyncStateSet lives here.

Rules:

* Start-up (``startBasicService``, retried every 5 s): find the controller leader (3 tries, 1 s apart),
  register (up to 5 tries, random sleep < 1 s), send one heartbeat, then RUNNING and un-fenced once a
  master is known (from registration) or ``brokerElect`` succeeds. Fenced until then: no writes, no
  periodic heartbeats, no periodic nameserver registration.
* ``register``: a persisted id (``brokerIdentity``) skips to registration; else a temp file holds the id
  from ``getNextBrokerId`` and a check code ``addr;now``; ``applyBrokerId`` failure clears it; success
  persists the id. ``registerBrokerToController`` follows the master it reports (if alive).
* Role changes are ``synchronized`` and guarded by a strictly greater masterEpoch (``changeBrokerRole``,
  ``changeToMaster``, ``changeToSlave``); an SSS is adopted only with a greater syncStateSetEpoch
  (``changeSyncStateSet``). A broker already master takes ``changeToMasterWhenLastRoleIsMaster``; a slave
  whose master id is unchanged only bumps versions. HA's boolean results are ignored.
* ``schedulingSyncBrokerMetadata`` (every 5 s): a higher controller mE -> follow its master, or
  ``brokerElect`` if there is none (holding the monitor across that RPC); equal mE on a master -> adopt the
  controller's SSS. METADATA_NOT_EXIST -> register again and sleep 2 s.
* A role change runs in sub-steps (``_change_to_master``, ``_change_to_slave``); with ``[sim] interleave`` other
  threads' work (puts, acks, HA frames, the reput) runs between them, as it does while RocketMQ's role-change thread
  holds this monitor.
* ``checkSyncStateSetAndDoReport`` (master, every 5 s and right after becoming master): shrink, add self,
  report when different from the confirmed SSS. ``doReportSyncStateSetChanged`` sends alterSyncStateSet
  with the current mE and sE; success adopts the reply; failure is only logged (the union stays).

The invariant this keeps is BRK-EPOCH-MONO (``impl/invariants/``).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any

from .. import bugs as B
from ..codes import MASTER_ID, BrokerRole, RequestCode, ResponseCode
from ..runtime import Acquire, Call, Command, Executor, Job, Monitor, Periodic, Release, Sleep, Steps, TaskFailed
from ..wire import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    ElectMasterRequestHeader,
    ElectMasterResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoRequestHeader,
    GetReplicaInfoResponseHeader,
    RegisterBrokerToControllerRequestHeader,
    RegisterBrokerToControllerResponseHeader,
    SyncStateSetBody,
    decode_header,
)

if TYPE_CHECKING:
    from .broker import BrokerNode

RETRY_INTERVAL = 5000


class State(Enum):
    INITIAL = "INITIAL"
    FIRST_TIME_SYNC_CONTROLLER_METADATA_DONE = "FIRST_TIME_SYNC_CONTROLLER_METADATA_DONE"
    REGISTER_TO_CONTROLLER_DONE = "REGISTER_TO_CONTROLLER_DONE"
    RUNNING = "RUNNING"
    SHUTDOWN = "SHUTDOWN"


class RegisterState(Enum):
    INITIAL = "INITIAL"
    CREATE_TEMP_METADATA_FILE_DONE = "CREATE_TEMP_METADATA_FILE_DONE"
    CREATE_METADATA_FILE_DONE = "CREATE_METADATA_FILE_DONE"
    REGISTERED = "REGISTERED"


def _epoch(value: int | None) -> int:
    """An epoch the controller sent with a master: Java's ``Integer`` unboxed (never null when a master is named)."""
    assert value is not None
    return value


class ReplicasManager:
    def __init__(self, node: BrokerNode) -> None:
        self.node = node
        self.cfg = node.broker_cfg
        self.ha = node.ha
        self.monitor = Monitor()
        self.state = State.INITIAL
        self.register_state = RegisterState.INITIAL
        self.broker_controller_id: int | None = None
        self.master_broker_id: int | None = None
        self.master_address = ""
        self.master_epoch = 0
        self.sync_state_set: set[int] = set()
        self.sync_state_set_epoch = 0
        self.controller_addresses = list(node.controller_addresses)
        # scanAvailableControllerAddresses: the addresses that accepted a connection at the last scan (with one
        # controller address the kit skips the scan: every request goes to it)
        self.available_controller_addresses: list[str] = []
        self.controller_leader_address = ""
        self.check_sss_task: Periodic | None = None
        self.sync_metadata_started = False
        self.ha_listener_executor = Executor(node, "AutoSwitchHAService_Executor")
        self.slave_sync_task: Periodic | None = None
        # lastSyncTimeMs = System.currentTimeMillis() at construction (the process start): a slave's first syncAll
        # waits until 10 s after the start, at the first 3 s tick past it
        self.last_slave_sync = node.now

    # --------------------------------------------------------------------------------- helpers

    def _controller(self) -> str:
        return self.controller_leader_address.split(":")[0]

    def _call(self, code: RequestCode, header: Mapping[str, Any], body: Any = None) -> Call:
        return Call(self._controller(), Command(code, 0, header, body), self.cfg.rpc_timeout)

    def is_master_state(self) -> bool:
        return self.node.store.role == BrokerRole.SYNC_MASTER

    # ---------------------------------------------------------------------------------- start-up

    def start(self) -> None:
        self.state = State.INITIAL
        if len(self.controller_addresses) > 1:  # start(): scan once now, then every 3 s
            self._scan_available_controller_addresses()
            Periodic(self.node, "scanAvailableControllerAddresses", 3000, 3000, self._scan_job)
        self.node.spawn("ReplicasManager.start", self._start())

    def _scan_job(self) -> Job:
        self._scan_available_controller_addresses()
        return
        yield  # pragma: no cover

    def _scan_available_controller_addresses(self) -> None:
        """``scanAvailableControllerAddresses``: each address is checked on the scan executor; a reachable one is
        added, an unreachable one removed."""
        for address in self.controller_addresses:
            self.node.spawn("scanAvailableControllerAddresses", self._check_reachable(address))

    def _check_reachable(self, address: str) -> Job:
        """``BrokerOuterAPI.checkAddressReachable`` -> ``NettyRemotingClient.isAddressReachable``: a connect to the
        address, given up after ``NettySystemConfig.connectTimeoutMillis`` (3 s) with no answer."""
        asked = self.node.now
        if B.REACHABLE_CHECK_GIVES_UP_EARLY in self.node.bugs:  # the deviation: half the connect timeout
            resp = yield Call(address.split(":")[0], Command(RequestCode.CHECK_REACHABLE, 0, {}), 1500)
        else:
            resp = yield Call(address.split(":")[0], Command(RequestCode.CHECK_REACHABLE, 0, {}), 3000)
        available = self.available_controller_addresses
        if resp is not None and address not in available:
            available.append(address)
            available.sort(key=self.controller_addresses.index)
        elif resp is None and address in available:
            available.remove(address)
            self.node.emit({"k": "brk.controller-unreachable", "address": address, "waited": self.node.now - asked})

    def _start(self) -> Job:
        ok = yield from self._start_basic_service()
        retries = 0
        while not ok and self.state != State.SHUTDOWN:
            yield Sleep(RETRY_INTERVAL)
            retries += 1
            ok = yield from self._start_basic_service()

    def _start_basic_service(self) -> Steps[bool]:
        if self.state == State.SHUTDOWN:
            return False
        if self.state == State.INITIAL:
            if (yield from self._scheduling_sync_controller_metadata()):
                self.state = State.FIRST_TIME_SYNC_CONTROLLER_METADATA_DONE
            else:
                return False
        if self.state == State.FIRST_TIME_SYNC_CONTROLLER_METADATA_DONE:
            for _ in range(5):
                if (yield from self._register()):
                    self.state = State.REGISTER_TO_CONTROLLER_DONE
                    break
                yield Sleep(self.node.rng.below(1000))
            if self.state != State.REGISTER_TO_CONTROLLER_DONE:
                return False
        if self.state == State.REGISTER_TO_CONTROLLER_DONE:
            self.send_heartbeat_to_controller()
            if self.master_broker_id is not None or (yield from self._broker_elect()):
                self.state = State.RUNNING
                self.set_fenced(False)
            else:
                return False
        if not self.sync_metadata_started:
            self.sync_metadata_started = True
            Periodic(self.node, "syncBrokerMetadata", 3000, self.cfg.sync_broker_metadata_period,
                     self._sync_broker_metadata)
            self.ha.register_sync_state_set_changed_listener(self._on_sync_state_set_changed)
        return True

    def set_fenced(self, fenced: bool) -> None:
        self.node.isolated = fenced
        self.node.store.fenced = fenced
        self.node.emit({"k": "brk.fenced", "fenced": fenced})

    def _scheduling_sync_controller_metadata(self) -> Steps[bool]:
        for _ in range(3):
            if (yield from self._update_controller_metadata()):
                Periodic(self.node, "updateControllerMetadata", 3000, self.cfg.sync_controller_metadata_period,
                         self._update_controller_metadata_job)
                return True
            yield Sleep(1000)
        return False

    def _update_controller_metadata_job(self) -> Job:
        yield from self._update_controller_metadata()

    def _update_controller_metadata(self) -> Steps[bool]:
        many = len(self.controller_addresses) > 1
        for address in list(self.available_controller_addresses) if many else self.controller_addresses:
            resp = yield Call(address.split(":")[0], Command(RequestCode.CONTROLLER_GET_METADATA_INFO, 0, {}),
                              self.cfg.rpc_timeout)
            if resp is not None and resp.code == ResponseCode.SUCCESS and resp.header.get("controllerLeaderAddress"):
                self.controller_leader_address = resp.header["controllerLeaderAddress"]
                return True
        return False

    # ---------------------------------------------------------------------------------- register

    def _register(self) -> Steps[bool]:
        disk = self.node.disk
        self._confirm_now_registering_state()
        if not self._check_metadata_valid():
            return False
        if self.register_state == RegisterState.INITIAL:
            ask: GetNextBrokerIdRequestHeader = {"clusterName": self.cfg.cluster_name,
                                                 "brokerName": self.cfg.broker_name}
            resp = yield self._call(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, ask)
            if resp is None or resp.code != ResponseCode.SUCCESS or resp.header.get("nextBrokerId") is None:
                return False
            code = f"{self.node.address};{self.node.now}"
            next_id = decode_header(resp.header, GetNextBrokerIdResponseHeader)["nextBrokerId"]
            disk.temp_identity = (self.cfg.cluster_name, self.cfg.broker_name, next_id, code)
            self.register_state = RegisterState.CREATE_TEMP_METADATA_FILE_DONE
        if self.register_state == RegisterState.CREATE_TEMP_METADATA_FILE_DONE:
            temp = disk.temp_identity
            assert temp is not None
            apply: ApplyBrokerIdRequestHeader = {"clusterName": self.cfg.cluster_name,
                                                 "brokerName": self.cfg.broker_name, "appliedBrokerId": temp[2],
                                                 "registerCheckCode": temp[3]}
            resp = yield self._call(RequestCode.CONTROLLER_APPLY_BROKER_ID, apply)
            if resp is None or resp.code != ResponseCode.SUCCESS:
                disk.temp_identity = None
                self.register_state = RegisterState.INITIAL
                return False
            disk.broker_identity = (temp[0], temp[1], temp[2])
            disk.temp_identity = None
            self._set_id(temp[2])
            self.register_state = RegisterState.CREATE_METADATA_FILE_DONE
        if self.register_state == RegisterState.CREATE_METADATA_FILE_DONE:
            if not (yield from self._register_broker_to_controller()):
                return False
            self.register_state = RegisterState.REGISTERED
        return True

    def _set_id(self, broker_id: int) -> None:
        self.broker_controller_id = broker_id
        self.ha.local_broker_id = broker_id
        self.node.emit({"k": "brk.identity", "brokerId": broker_id})

    def _confirm_now_registering_state(self) -> None:
        disk = self.node.disk
        if disk.broker_identity is not None:
            self.register_state = RegisterState.CREATE_METADATA_FILE_DONE
            self._set_id(disk.broker_identity[2])
            return
        if disk.temp_identity is not None:
            self.register_state = RegisterState.CREATE_TEMP_METADATA_FILE_DONE

    def _check_metadata_valid(self) -> bool:
        disk = self.node.disk
        names = (self.cfg.cluster_name, self.cfg.broker_name)
        if self.register_state == RegisterState.CREATE_TEMP_METADATA_FILE_DONE:
            return disk.temp_identity is not None and disk.temp_identity[:2] == names
        if self.register_state == RegisterState.CREATE_METADATA_FILE_DONE:
            return disk.broker_identity is not None and disk.broker_identity[:2] == names
        return True

    def _register_broker_to_controller(self) -> Steps[bool]:
        register: RegisterBrokerToControllerRequestHeader = {
            "clusterName": self.cfg.cluster_name, "brokerName": self.cfg.broker_name,
            "brokerId": self.broker_controller_id, "brokerAddress": self.node.address}
        resp = yield self._call(RequestCode.CONTROLLER_REGISTER_BROKER, register)
        if resp is None or resp.code != ResponseCode.SUCCESS:
            return False
        h = decode_header(resp.header, RegisterBrokerToControllerResponseHeader)
        master = h.get("masterBrokerId")
        if master is None:
            return True
        sss = (resp.body or {}).get("syncStateSet", [])
        if master == self.broker_controller_id:
            yield from self.change_to_master(_epoch(h["masterEpoch"]), _epoch(h["syncStateSetEpoch"]), set(sss))
        else:
            yield from self.change_to_slave(h.get("masterAddress"), _epoch(h["masterEpoch"]), master)
        return True

    def _broker_elect(self) -> Steps[bool]:
        elect: ElectMasterRequestHeader = {"clusterName": self.cfg.cluster_name, "brokerName": self.cfg.broker_name,
                                           "brokerId": self.broker_controller_id, "designateElect": False}
        resp = yield self._call(RequestCode.CONTROLLER_ELECT_MASTER, elect)
        if resp is None or resp.code not in (ResponseCode.SUCCESS, ResponseCode.CONTROLLER_MASTER_STILL_EXIST):
            return False
        h = decode_header(resp.header, ElectMasterResponseHeader)
        address, master = h.get("masterAddress"), h.get("masterBrokerId")
        if not address or master is None:
            return False
        sss = set((resp.body or {}).get("syncStateSet", []))
        if master == self.broker_controller_id:
            yield from self.change_to_master(_epoch(h["masterEpoch"]), _epoch(h["syncStateSetEpoch"]), sss)
        else:
            yield from self.change_to_slave(address, _epoch(h["masterEpoch"]), master)
        return True

    def send_heartbeat_to_controller(self) -> None:
        node = self.node
        for address in self.controller_addresses:
            beat: BrokerHeartbeatRequestHeader = {
                "clusterName": self.cfg.cluster_name, "brokerAddr": node.address, "brokerName": self.cfg.broker_name,
                "brokerId": self.broker_controller_id, "epoch": self.ha.epoch_cache.last_epoch(),
                "maxOffset": node.store.max_phy_offset, "confirmOffset": node.store.get_confirm_offset(),
                "heartbeatTimeoutMills": self.cfg.controller_heartbeat_timeout_mills,
                "electionPriority": node.election_priority}
            node.send(address.split(":")[0], Command(RequestCode.BROKER_HEARTBEAT, 0, beat, oneway=True))

    # ------------------------------------------------------------------------------ role changes

    def change_broker_role(self, master_id: int | None, master_addr: str | None, master_epoch: int | None,
                           sss_epoch: int | None, sss: set[int]) -> Job:
        yield Acquire(self.monitor)
        if master_id is not None and master_epoch is not None and master_epoch > self.master_epoch:
            if master_id == self.broker_controller_id:
                yield from self.change_to_master(master_epoch, sss_epoch or 0, sss)
            else:
                yield from self.change_to_slave(master_addr, master_epoch, master_id)
        yield Release(self.monitor)

    def change_to_master(self, new_master_epoch: int, sss_epoch: int, sss: set[int]) -> Job:
        yield Acquire(self.monitor)
        yield from self._change_to_master(new_master_epoch, sss_epoch, sss)
        yield Release(self.monitor)

    def _change_to_master(self, new_master_epoch: int, sss_epoch: int, sss: set[int]) -> Steps[None]:
        """``changeToMaster`` (the caller holds the monitor). Its sub-steps, with ``node.gap`` between them (``[sim]
        interleave``; a ``crash-at`` role-change trap): the SyncStateSet | the HA service's switch up to the epoch
        append (``AutoSwitchHAService.changeToMaster``) | the wait for dispatch and the queue table | the store's
        role, the records, the periodic check and the registration. Puts are refused until the store's role switches
        (``HookUtils.checkBeforePutMessage``: a SLAVE takes none), so nothing is written before the new epoch."""
        if new_master_epoch <= self.master_epoch:
            return
        node = self.node
        old_epoch = self.master_epoch
        self.master_epoch = new_master_epoch
        if self.master_broker_id is not None and self.master_broker_id == self.broker_controller_id \
                and node.configured_broker_id == MASTER_ID:
            self.change_sync_state_set(set(sss), sss_epoch)
            self.ha.change_to_master_when_last_role_is_master(new_master_epoch)
            yield from node.gap("role-change", 1)
            node.next_data_version(new_master_epoch)
            node.emit({"k": "brk.role", "role": "MASTER", "masterEpoch": new_master_epoch, "previous": old_epoch,
                       "again": True})
            node.spawn("checkSyncStateSetAndDoReport", self._check_sync_state_set_and_do_report())
            node.register_broker_when_role_change()
            return
        self.change_sync_state_set(set(sss), sss_epoch)
        yield from node.gap("role-change", 1)
        ok = self.ha.change_to_master_epoch(new_master_epoch)
        yield from node.gap("role-change", 2)
        if ok:
            if not (node.interleave and B.ROLE_CHANGE_SKIPS_DISPATCH_WAIT in node.bugs):
                # the deviation skips the wait; without interleave the reput's catch-up is part of this step anyway
                yield from node.wait_dispatch()
            self.ha.after_dispatch()
        yield from node.gap("role-change", 3)
        self._take_master_role()
        self._scheduling_check_sync_state_set()
        self._handle_slave_synchronize(False)
        node.next_data_version(new_master_epoch)
        node.cover_consume_queues()
        node.emit({"k": "brk.role", "role": "MASTER", "masterEpoch": new_master_epoch, "previous": old_epoch,
                   "again": False, "haAccepted": ok})
        node.spawn("checkSyncStateSetAndDoReport", self._check_sync_state_set_and_do_report())
        node.register_broker_when_role_change()

    def _take_master_role(self) -> None:
        """``setBrokerId(MASTER_ID)``, ``setBrokerRole(SYNC_MASTER)``, the master records."""
        node = self.node
        node.configured_broker_id = MASTER_ID
        node.store.role = BrokerRole.SYNC_MASTER
        self.master_address = node.address
        self.master_broker_id = self.broker_controller_id

    def change_to_slave(self, new_master_address: str | None, new_master_epoch: int, new_master_id: int) -> Job:
        yield Acquire(self.monitor)
        yield from self._change_to_slave(new_master_address, new_master_epoch, new_master_id)
        yield Release(self.monitor)

    def _change_to_slave(self, new_master_address: str | None, new_master_epoch: int,
                         new_master_id: int) -> Steps[None]:
        """``changeToSlave`` (the caller holds the monitor). Sub-steps, ``node.gap`` between them: the store's role
        (puts refused from here on) | the records and the HA service's switch (its connections dropped, a fresh
        client) | the data version and the registration."""
        if new_master_epoch <= self.master_epoch:
            return
        node = self.node
        old_epoch = self.master_epoch
        self.master_epoch = new_master_epoch
        if new_master_id == self.master_broker_id:
            self.ha.change_to_slave_when_master_not_change(new_master_address, new_master_epoch)
            node.next_data_version(new_master_epoch)
            node.emit({"k": "brk.role", "role": "SLAVE", "masterEpoch": new_master_epoch, "previous": old_epoch,
                       "master": new_master_id, "again": True})
            node.register_broker_when_role_change()
            return
        self._stop_check_sync_state_set()
        node.store.role = BrokerRole.SLAVE
        self._handle_slave_synchronize(True)
        yield from node.gap("role-change", 1)
        if self.broker_controller_id is None:
            # QUIRK-ROLE-NO-ID: a notification that reaches a restarted broker before startBasicService has
            # loaded its id. ``brokerConfig.setBrokerId(brokerControllerId)`` unboxes a null Long
            # (BrokerIdentity.setBrokerId(long)): NullPointerException, turned into an error reply by
            # AdminBrokerProcessor.notifyBrokerRoleChanged. masterEpoch and the SLAVE role stay set; the master
            # id, its address and the HA client do not change, and later syncs of the same epoch do nothing.
            node.emit({"k": "brk.role", "role": "SLAVE", "masterEpoch": new_master_epoch, "previous": old_epoch,
                       "master": new_master_id, "again": False, "aborted": "NullPointerException: no broker id yet"})
            return
        node.configured_broker_id = self.broker_controller_id
        self.master_address = new_master_address or ""
        self.master_broker_id = new_master_id
        ok = self.ha.change_to_slave(new_master_address, new_master_epoch, self.broker_controller_id)
        yield from node.gap("role-change", 2)
        node.next_data_version(new_master_epoch)
        node.emit({"k": "brk.role", "role": "SLAVE", "masterEpoch": new_master_epoch, "previous": old_epoch,
                   "master": new_master_id, "again": False, "haAccepted": ok})
        node.register_broker_when_role_change()

    def change_sync_state_set(self, new_sss: set[int], new_epoch: int) -> None:
        """``changeSyncStateSet``: only a strictly greater sE is adopted (caller holds the monitor)."""
        if new_epoch > self.sync_state_set_epoch:
            self.sync_state_set_epoch = new_epoch
            self.sync_state_set = set(new_sss)
            self.ha.set_sync_state_set(set(new_sss))
            self.node.emit({"k": "brk.sss", "syncStateSet": sorted(new_sss), "syncStateSetEpoch": new_epoch})

    def _change_sync_state_set_locked(self, new_sss: set[int], new_epoch: int) -> Job:
        yield Acquire(self.monitor)
        self.change_sync_state_set(new_sss, new_epoch)
        yield Release(self.monitor)

    # -------------------------------------------------------------------------------- periodic jobs

    def _sync_broker_metadata(self) -> Job:
        ask: GetReplicaInfoRequestHeader = {"brokerName": self.cfg.broker_name}
        resp = yield self._call(RequestCode.CONTROLLER_GET_REPLICA_INFO, ask)
        if resp is None:
            if B.SYNC_METADATA_TASK_DIES in self.node.bugs:  # the deviation: nothing catches the timeout
                raise TaskFailed("getReplicaInfo: RemotingTimeoutException")
            return
        if resp.code == ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST:
            yield from self._register_broker_to_controller()
            yield Sleep(2000)
            return
        if resp.code != ResponseCode.SUCCESS:
            return
        h, body = decode_header(resp.header, GetReplicaInfoResponseHeader), resp.body or {}
        new_epoch = h.get("masterEpoch", 0)
        master = h.get("masterBrokerId")
        address = h.get("masterAddress")
        yield Acquire(self.monitor)
        if new_epoch > self.master_epoch:
            if address and master is not None:
                if master == self.broker_controller_id:
                    yield from self._change_to_master(new_epoch, body.get("syncStateSetEpoch", 0),
                                                      set(body.get("syncStateSet", [])))
                else:
                    yield from self._change_to_slave(address, new_epoch, master)
            elif B.SYNC_SKIPS_BROKER_ELECT not in self.node.bugs:
                yield from self._broker_elect()
        elif new_epoch == self.master_epoch and self.is_master_state():
            self.change_sync_state_set(set(body.get("syncStateSet", [])), body.get("syncStateSetEpoch", 0))
        yield Release(self.monitor)

    def _handle_slave_synchronize(self, slave: bool) -> None:
        """``ReplicasManager.handleSlaveSynchronize``: a slave runs ``SlaveSynchronize.syncAll`` (here its topic
        config with ``[workload] topic_config``, then its consumer offsets) when 10 s have passed since the last
        sync, checked every 3 s; a master stops it. With topic queues only (``[workload] queues``): the single
        implicit queue has no consumer offsets."""
        if not self.node.store.queues:
            return
        if self.slave_sync_task is not None:
            self.slave_sync_task.cancel()
            self.slave_sync_task = None
        if slave:
            self.slave_sync_task = Periodic(self.node, "slaveSynchronize", 3000, 3000, self._slave_sync)

    def _slave_sync(self) -> Job:
        node = self.node
        if node.now - self.last_slave_sync <= 10_000:
            return
        if not self.master_address:  # each sync checks masterAddr != null; the time is taken all the same
            self.last_slave_sync = node.now
            return
        master = self.master_address.split(":")[0]
        if node.topics is not None and B.SLAVE_SKIPS_TOPIC_SYNC not in node.bugs:  # syncAll: syncTopicConfig first
            resp = yield Call(master, Command(RequestCode.GET_ALL_TOPIC_CONFIG, 0, {}), self.cfg.rpc_timeout)
            if resp is not None and resp.code == ResponseCode.SUCCESS and resp.body and node.topics.differs(resp.body):
                yield from node.sync_topic_config(resp.body)
        resp = yield Call(master, Command(RequestCode.GET_ALL_CONSUMER_OFFSET, 0, {}), self.cfg.rpc_timeout)
        if resp is not None and resp.code == ResponseCode.SUCCESS:
            node.consumer_offsets.update(resp.body or {})  # syncConsumerOffset: getOffsetTable().putAll(...)
        self.last_slave_sync = node.now  # lastSyncTimeMs: after syncAll, each part's failure caught and logged

    def _scheduling_check_sync_state_set(self) -> None:
        self._stop_check_sync_state_set()
        self.check_sss_task = Periodic(self.node, "checkSyncStateSet", 3000, self.cfg.check_sync_state_set_period,
                                       self._check_sync_state_set_and_do_report)

    def _stop_check_sync_state_set(self) -> None:
        if self.check_sss_task is not None:
            self.check_sss_task.cancel()
            self.check_sss_task = None

    def _check_sync_state_set_and_do_report(self) -> Job:
        new_sss = self.ha.maybe_shrink_sync_state_set()
        if self.broker_controller_id is not None:
            new_sss.add(self.broker_controller_id)
        if self.sync_state_set == new_sss:
            return
        yield from self._do_report_sync_state_set_changed(new_sss)

    def _on_sync_state_set_changed(self, sss: set[int]) -> None:
        """The HA service's listener: the report runs later, on its single-threaded executor."""
        keep = B.FIX_PROPOSAL_KEEPS_EPOCHS in self.node.bugs
        epochs = (self.master_epoch, self.sync_state_set_epoch) if keep else None
        self.ha_listener_executor.submit(self._do_report_sync_state_set_changed(sss, epochs))

    def _do_report_sync_state_set_changed(self, new_sss: set[int],
                                          epochs: tuple[int, int] | None = None) -> Job:
        # RocketMQ reads the epochs when the job runs, however long ago the set was decided
        master_epoch, sss_epoch = epochs if epochs is not None else (self.master_epoch, self.sync_state_set_epoch)
        body: SyncStateSetBody = {"syncStateSet": sorted(new_sss), "syncStateSetEpoch": sss_epoch}
        header: AlterSyncStateSetRequestHeader = {"brokerName": self.cfg.broker_name,
                                                  "masterBrokerId": self.broker_controller_id,
                                                  "masterEpoch": master_epoch}
        resp = yield self._call(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, header, body)
        self.node.emit({"k": "brk.alter", "proposal": sorted(new_sss), "masterEpoch": header["masterEpoch"],
                        "syncStateSetEpoch": body["syncStateSetEpoch"],
                        "code": None if resp is None else int(resp.code)})
        if resp is not None and resp.code == ResponseCode.SUCCESS and resp.body is not None:
            yield from self._change_sync_state_set_locked(set(resp.body["syncStateSet"]),
                                                          resp.body["syncStateSetEpoch"])

    def shutdown(self) -> None:
        self.state = State.SHUTDOWN
