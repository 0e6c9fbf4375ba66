"""Clients: a producer, a consumer and an admin tool. Their calls and outcomes are the client history.

* Producer (``DefaultMQProducer`` sync send, one attempt per message): sends to the master its cached route
  names (refreshed every ``route_refresh`` ms and after a failed send); waits ``send_timeout`` ms; the
  outcome is the broker's status, ``TIMEOUT`` (unknown), or ``NO_ROUTE``.
* Consumer: pulls the master's dispatched messages from a queue offset, in order, every
  ``consume_interval`` ms; everything it receives is *seen*. With the brokers' ``slaveReadEnable`` it pulls each
  queue from the broker the last answer suggested, or from any broker of the route when that one is not in it
  (``PullAPIWrapper``, ``MQClientInstance.findBrokerAddressInSubscribe``): slaves too.
* Admin (``mqadmin electMaster`` / ``cleanBrokerData``): one-shot controller calls; ``updateTopic`` (with
  ``[workload] topic_config``): one broker call to the master.

Each invocation and outcome is observed (``client.*``) so the checkers and the trace see the history.
"""

from __future__ import annotations

from typing import Any

from .. import bugs as B
from ..codes import MASTER_ID, RequestCode, ResponseCode
from ..rng import DetRng
from ..runtime import Actor, Call, Command, Job, Periodic, Steps
from .config import WorkloadConfig


class ProducerNode(Actor):
    def __init__(self, name: str, cfg: WorkloadConfig, broker_name: str, nameserver: str, rng: DetRng,
                 bugs: frozenset[str] = frozenset()) -> None:
        super().__init__(name, rng)
        self.cfg = cfg
        self.bugs = bugs
        self.broker_name = broker_name
        self.nameserver = nameserver
        self.master: str | None = None
        self.seq = 0
        self.in_flight = 0
        self._refreshing = False
        self.write_queues = 0  # [workload] topic_config: writeQueueNums of the cached route (0: cfg.queues)

    def start(self) -> None:
        Periodic(self, "updateTopicRouteInfoFromNameServer", 10, self.cfg.route_refresh, self._refresh_route)
        if self.cfg.produce_interval > 0:
            self.after(self.cfg.produce_start + self.rng.exp_ms(self.cfg.produce_interval), self._auto_send)

    def _auto_send(self) -> None:
        self.produce(1)
        self.after(self.rng.exp_ms(self.cfg.produce_interval), self._auto_send)

    def produce(self, count: int = 1, size: int | None = None) -> list[str]:
        keys = []
        for _ in range(count):
            self.seq += 1
            key = f"{self.name}-{self.seq}"
            body = size if size is not None else self.rng.between(self.cfg.message_size_min, self.cfg.message_size_max)
            keys.append(key)
            self.spawn("send", self._send(key, body))
        return keys

    def _send(self, key: str, body: int) -> Job:
        if self.master is None:  # tryToFindTopicPublishInfo: no cached route, ask the nameserver now
            yield from self._fetch_route()
        target = self.master
        self.emit({"k": "client.send", "key": key, "target": target})
        if target is None:
            self.emit({"k": "client.send-result", "key": key, "status": "NO_ROUTE", "target": None})
            self._kick_refresh()
            return
        self.in_flight += 1
        header: dict[str, Any] = {"key": key, "bodySize": body, "brokerName": self.broker_name}
        if self.cfg.queues:  # selectOneMessageQueue: round robin over the topic's queues
            header["queueId"] = int(key.rsplit("-", 1)[1]) % (self.write_queues or self.cfg.queues)
        resp = yield Call(target, Command(RequestCode.SEND_MESSAGE, 0, header), self.cfg.send_timeout)
        self.in_flight -= 1
        if resp is None:
            self.emit({"k": "client.send-result", "key": key, "status": "TIMEOUT", "target": target})
            self._kick_refresh()
            return
        status = resp.header.get("status", f"CODE_{resp.code}")
        self.emit({"k": "client.send-result", "key": key, "status": status, "target": target,
                   "offset": resp.header.get("offset")})
        if resp.code not in (ResponseCode.SUCCESS, ResponseCode.FLUSH_SLAVE_TIMEOUT, ResponseCode.FLUSH_DISK_TIMEOUT):
            self._kick_refresh()

    def _kick_refresh(self) -> None:
        if not self._refreshing:
            self.spawn("refreshRoute", self._refresh_route())

    def _refresh_route(self) -> Job:
        if self._refreshing:
            return
        self._refreshing = True
        yield from self._fetch_route()
        self._refreshing = False

    def _fetch_route(self) -> Job:
        resp = yield Call(self.nameserver, Command(RequestCode.GET_ROUTEINFO_BY_TOPIC, 0,
                                                   {"brokerName": self.broker_name}), 3000)
        if resp is not None and resp.code == ResponseCode.SUCCESS:
            if self.master is not None and B.ROUTE_CHANGE_IGNORES_ADDRESSES in self.bugs:
                return  # the deviation: the same broker set, so "unchanged" (topicRouteDataChanged)
            addr = resp.header.get("masterAddr")
            self.master = addr.split(":")[0] if addr else None
            self.write_queues = int(resp.header.get("writeQueueNums", 0))


GROUP = "c1-group"  # the consumer group of c1


class ConsumerNode(Actor):
    """The consumer. With ``slave_read`` (the brokers' ``slaveReadEnable``) it picks its broker per queue as
    RocketMQ's client does; without, every answer would name the master, and it pulls from the master the route
    names (a pull sent to a slave would be refused: ``rejectRequest``)."""

    def __init__(self, name: str, cfg: WorkloadConfig, broker_name: str, nameserver: str, rng: DetRng,
                 slave_read: bool = False) -> None:
        super().__init__(name, rng)
        self.cfg = cfg
        self.broker_name = broker_name
        self.nameserver = nameserver
        self.queue_offset = 0
        self.master: str | None = None
        self.queue_offsets: dict[int, int] = {}  # [workload] queues: next offset per queue
        self.next_queue = 0
        self.read_queues = 0  # [workload] topic_config: readQueueNums of the route (0: cfg.queues)
        self.slave_read = slave_read
        self.addrs: dict[int, str] = {}  # slave_read: the route's brokerAddrs (broker id -> address)
        self.pull_from: dict[int, int] = {}  # slave_read: queue id -> the broker id suggested by its last answer

    def start(self) -> None:
        if self.cfg.consume_interval > 0:
            Periodic(self, "pull", self.cfg.consume_interval, self.cfg.consume_interval, self._pull)
            Periodic(self, "route", 10, self.cfg.route_refresh, self._route)
            if self.cfg.queues:  # MQClientInstance.persistAllConsumerOffset every persistConsumerOffsetInterval
                Periodic(self, "persistConsumerOffset", 5000, 5000, self._commit_offsets)

    def _route(self) -> Job:
        resp = yield Call(self.nameserver, Command(RequestCode.GET_ROUTEINFO_BY_TOPIC, 0,
                                                   {"brokerName": self.broker_name}), 3000)
        if resp is not None and resp.code == ResponseCode.SUCCESS:
            addr = resp.header.get("masterAddr")
            self.master = addr.split(":")[0] if addr else None
            self.read_queues = int(resp.header.get("readQueueNums", 0))
            if self.slave_read:
                self.addrs = {int(k): v for k, v in (resp.header.get("brokerAddrs") or {}).items()}

    def _broker_for(self, qid: int) -> str | None:
        """With ``slave_read``: ``MQClientInstance.findBrokerAddressInSubscribe(brokerName,
        recalculatePullFromWhichNode(mq), false)``: the broker the queue's last answer suggested (the master at
        first), else for a slave id the next id, else the first broker of the route (``HashMap`` order: the lowest
        id). Without: the master."""
        if not self.slave_read:
            return self.master
        want = self.pull_from.get(qid, MASTER_ID)
        addr = self.addrs.get(want)
        if addr is None and want != MASTER_ID:
            addr = self.addrs.get(want + 1)
        if addr is None and self.addrs:
            addr = self.addrs[min(self.addrs)]
        return addr.split(":")[0] if addr else None

    def _suggested(self, qid: int, resp: Command) -> None:
        """``PullAPIWrapper.processPullResult`` -> ``updatePullFromWhichNode``: the next pull of the queue goes where
        the answer says."""
        if self.slave_read and "suggestWhichBrokerId" in resp.header:
            self.pull_from[qid] = int(resp.header["suggestWhichBrokerId"])

    def _pull(self) -> Job:
        if not self.cfg.queues:
            target = self._broker_for(0)
        elif self.slave_read and self.master is None and self.addrs:
            target = self.addrs[min(self.addrs)].split(":")[0]  # any broker; the queue's own is picked below
        else:
            target = self.master
        if target is None:
            yield from self._route()
            return
        if self.cfg.queues:
            yield from self._pull_queue(target)
            return
        resp = yield Call(target, Command(RequestCode.PULL_MESSAGE, 0, {"queueOffset": self.queue_offset}), 3000)
        if resp is None:
            yield from self._route()
            return
        self._suggested(0, resp)
        if resp.code != ResponseCode.SUCCESS:
            return
        confirm = resp.header.get("confirmOffset", -1)
        for key, offset, size in resp.body or []:
            self.emit({"k": "client.seen", "key": key, "broker": target, "offset": offset, "end": offset + size,
                       "confirm": confirm})
        self.queue_offset = resp.header.get("nextQueueOffset", self.queue_offset)

    def _pull_queue(self, target: str) -> Job:
        """``DefaultMQPushConsumer`` over several queues: one pull per tick, the queues in turn, each from its own
        next offset (``PullAPIWrapper``: nextBeginOffset)."""
        n = self.read_queues or self.cfg.queues  # the rebalance gives the one consumer every readable queue
        qid = self.next_queue % n
        self.next_queue = (qid + 1) % n
        if qid not in self.queue_offsets:  # RebalancePushImpl.computePullFromWhere: ask the broker first
            found = yield from self._query_offset(target, qid)  # the master (fetchConsumeOffsetFromBroker), or any
            if found is None:
                return
            self.queue_offsets[qid] = found
        start = self.queue_offsets[qid]
        if self.slave_read:
            target = self._broker_for(qid) or target
        resp = yield Call(target, Command(RequestCode.PULL_MESSAGE, 0, {"queueId": qid, "queueOffset": start}), 3000)
        if resp is None:
            yield from self._route()
            return
        self._suggested(qid, resp)
        if resp.code != ResponseCode.SUCCESS:
            return
        confirm = resp.header.get("confirmOffset", -1)
        for key, offset, size, qoff in resp.body or []:
            self.emit({"k": "client.seen", "key": key, "broker": target, "offset": offset, "end": offset + size,
                       "confirm": confirm, "queueId": qid, "queueOffset": qoff})
        self.queue_offsets[qid] = resp.header.get("nextQueueOffset", start)

    def _query_offset(self, target: str, qid: int) -> Steps[int | None]:
        """The group's committed offset (QUERY_CONSUMER_OFFSET); QUERY_NOT_FOUND under CONSUME_FROM_LAST_OFFSET:
        the queue's max offset (GET_MAX_OFFSET). None: no answer, try at the next pull."""
        header = {"group": GROUP, "queueId": qid}
        resp = yield Call(target, Command(RequestCode.QUERY_CONSUMER_OFFSET, 0, header), 3000)
        if resp is not None and resp.code == ResponseCode.SUCCESS:
            return int(resp.header["offset"])
        if resp is None or resp.code != ResponseCode.QUERY_NOT_FOUND:
            return None
        resp = yield Call(target, Command(RequestCode.GET_MAX_OFFSET, 0, {"queueId": qid}), 3000)
        return int(resp.header["offset"]) if resp is not None and resp.code == ResponseCode.SUCCESS else None

    def _commit_offsets(self) -> Job:
        """RemoteBrokerOffsetStore.persistAll: each queue's offset to the master (updateConsumeOffsetToBroker)."""
        if self.master is not None:
            for qid, offset in sorted(self.queue_offsets.items()):
                self.send(self.master, Command(RequestCode.UPDATE_CONSUMER_OFFSET, 0,
                                               {"group": GROUP, "queueId": qid, "commitOffset": offset}, oneway=True))
        return
        yield  # pragma: no cover


class AdminNode(Actor):
    """``mqadmin``: each call is one controller request; the answer is observed."""

    def __init__(self, name: str, controller: str, rng: DetRng) -> None:
        super().__init__(name, rng)
        self.controller = controller

    def start(self) -> None:
        pass

    def call(self, code: RequestCode, header: dict[str, Any], body: Any = None) -> None:
        self.spawn("admin", self._call(code, header, body))

    def call_broker(self, broker: str, code: RequestCode, header: dict[str, Any]) -> None:
        """A broker admin call (``mqadmin updateTopic``): the answer is observed like a controller call's."""
        self.spawn("admin", self._call(code, header, None, broker))

    def _call(self, code: RequestCode, header: dict[str, Any], body: Any, to: str | None = None) -> Job:
        resp = yield Call(to or self.controller, Command(code, 0, header, body), 5000)
        self.emit({"k": "admin.result", "code": int(code), "request": header,
                   "response": None if resp is None else {"code": int(resp.code), "header": resp.header}})
