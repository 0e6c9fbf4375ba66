"""The topic's config on a broker: ``TopicConfigManager`` and ``SlaveSynchronize.syncTopicConfig``.

Everything that changes a broker's topic config lives here (``[workload] topic_config``; the kit has one
topic, so the table is that topic's read and write queue counts and the manager's data version).

Rules (RocketMQ 5.3.3):

* ``DataVersion`` is (timestamp, counter, stateVersion); ``nextVersion(v)`` stamps the clock, bumps the counter
  and sets stateVersion to ``v``; ``assignNewOne`` copies all three; two versions are equal only when all three
  are (``DataVersion.equals``).
* ``TopicConfigManager.updateTopicConfig`` (an admin's ``UPDATE_AND_CREATE_TOPIC``, ``AdminBrokerProcessor
  .updateAndCreateTopic``): put the config, ``updateDataVersion`` (``nextVersion(stateMachineVersion)``, the
  store's masterEpoch in controller mode: ``AutoSwitchHAService.changeToMaster/Slave`` set it), persist
  topics.json; the broker then registers at once (``registerIncrementBrokerData``).
* ``ReplicasManager.changeToMaster`` / ``changeToSlave``: ``getDataVersion().nextVersion(newMasterEpoch)``.
* ``SlaveSynchronize.syncTopicConfig`` (slave, every ``syncAll``): read the master's table and version
  (``GET_ALL_TOPIC_CONFIG``); if the versions differ, ``assignNewOne`` the master's version, then (5.3.2+,
  apache/rocketmq#9207) ``deleteTopicConfig`` every entry, each delete bumping the version and persisting, then
  put the master's entries and persist. QUIRK: the bumps leave the slave's version unequal to the master's, so
  every later sync repeats the delete-and-put (upstream: apache/rocketmq#9984, PR #9996). With
  ``[workload] other_topics`` the loop takes time (``sync_loop_ms``): each delete persists what is left of the
  table, so the workload's topic is missing, in memory and in topics.json, from its turn in the iteration until
  the put phase (finding F-SYNC-DELETES-EVERY-TOPIC; its fix ``fix-sync-deletes-only-missing`` deletes only what
  the master no longer has, as PR #9996 does). Without other topics the loop is one step.
* 5.5.0 (apache/rocketmq PR #9778): the delete inside the if (the fix's rule, which the 5.5.0+ profiles have) and,
  upstream switch ``sync-takes-master-version``, no ``assignNewOne`` first, ``putTopicConfig`` without a bump and
  ``setDataVersion`` of the master's version at the end: the two versions are then equal, and the next sync skips.
* ``AbstractSendMessageProcessor.msgCheck``: a send to queue id >= max(write, read) fails (SYSTEM_ERROR,
  "request queueId[%d] is illegal"); ``PullMessageProcessor``: a pull of queue id >= read fails likewise.

The fix switch ``fix-master-covers-its-queues`` (finding F-TOPIC-CONFIG-LOST-ON-FAILOVER): a broker that turns
master widens the topic to cover every queue its consume queues hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class DataVersion:
    """``org.apache.rocketmq.remoting.protocol.DataVersion``."""

    timestamp: int = 0
    counter: int = 0
    state_version: int = 0

    def next_version(self, state_version: int, now: int) -> None:
        self.timestamp, self.counter, self.state_version = now, self.counter + 1, state_version

    def assign_new_one(self, other: DataVersion) -> None:
        self.timestamp, self.counter, self.state_version = other.timestamp, other.counter, other.state_version

    def to_wire(self) -> list[int]:
        return [self.timestamp, self.counter, self.state_version]

    @classmethod
    def from_wire(cls, w: list[int]) -> DataVersion:
        return cls(int(w[0]), int(w[1]), int(w[2]))


@dataclass
class TopicConfig:
    """One topic's queue counts (``TopicConfig.readQueueNums`` / ``writeQueueNums``)."""

    read: int
    write: int

    def to_wire(self) -> dict[str, int]:
        return {"read": self.read, "write": self.write}


class TopicConfigManager:
    """A broker's topic table (one topic), its data version, and topics.json (``persisted``)."""

    def __init__(self, initial: int, persisted: dict[str, Any] | None) -> None:
        if persisted:  # TopicConfigManager.load: topics.json
            self.topic: TopicConfig | None = (TopicConfig(**persisted["topic"]) if persisted.get("topic")
                                              else None)
            self.version = DataVersion.from_wire(persisted["version"])
        else:  # the topic as deployed on every broker before the run (mqadmin updateTopic at set-up)
            self.topic = TopicConfig(initial, initial)
            self.version = DataVersion()

    def persisted(self) -> dict[str, Any]:
        """What ``persist`` writes to topics.json."""
        return {"topic": None if self.topic is None else self.topic.to_wire(), "version": self.version.to_wire()}

    @property
    def read(self) -> int:
        return 0 if self.topic is None else self.topic.read

    @property
    def write(self) -> int:
        return 0 if self.topic is None else self.topic.write

    def update_topic_config(self, read: int, write: int, state_version: int, now: int) -> None:
        """``updateTopicConfig``: put, updateDataVersion (the caller persists and registers)."""
        self.topic = TopicConfig(read, write)
        self.version.next_version(state_version, now)

    def differs(self, wire: dict[str, Any]) -> bool:
        """``!getDataVersion().equals(topicWrapper.getDataVersion())``."""
        return DataVersion.from_wire(wire["version"]) != self.version

    def sync_from_master(self, wire: dict[str, Any], state_version: int, now: int, *,
                         delete_all: bool = True, takes_version: bool = False) -> bool:
        """``syncTopicConfig`` on the master's answer, in one step; True when the table was rewritten (and
        persisted). ``delete_all`` False: the fix (delete only what the master no longer has). ``takes_version``:
        5.5.0's version handling (``begin_sync``, ``put_from``, ``end_sync``)."""
        if not self.differs(wire):
            return False
        self.begin_sync(wire, takes_version)
        if delete_all or not wire.get("topic"):
            self.delete_topic(state_version, now)
        self.put_from(wire, state_version, now, takes_version)
        self.end_sync(wire, takes_version)
        return True

    def begin_sync(self, wire: dict[str, Any], takes_version: bool = False) -> None:
        """5.3.3: ``assignNewOne`` of the master's version before the loops; 5.5.0 (PR #9778): nothing."""
        if not takes_version:
            self.version.assign_new_one(DataVersion.from_wire(wire["version"]))

    def end_sync(self, wire: dict[str, Any], takes_version: bool = False) -> None:
        """5.5.0 (PR #9778): ``setDataVersion`` of the master's version after the loops (5.3.3: nothing)."""
        if takes_version:
            self.version.assign_new_one(DataVersion.from_wire(wire["version"]))

    def delete_topic(self, state_version: int, now: int) -> None:
        """``deleteTopicConfig`` of the workload's topic: remove, updateDataVersion (the caller persists)."""
        if self.topic is not None:
            self.topic = None
            self.version.next_version(state_version, now)

    def put_from(self, wire: dict[str, Any], state_version: int, now: int, takes_version: bool = False) -> None:
        """``updateSingleTopicConfigWithoutPersist`` (bumps the version; 5.3.4's ``putTopicConfig`` and one
        ``updateDataVersion`` after the loop bump it as often, for the kit's one topic); the caller persists after
        the loop. 5.5.0 (``takes_version``): ``putTopicConfig`` only, no bump."""
        if wire.get("topic"):
            self.topic = TopicConfig(**wire["topic"])
            if not takes_version:
                self.version.next_version(state_version, now)

    def cover_queues(self, queue_ids: list[int], state_version: int, now: int) -> bool:
        """The fix: widen the topic so every queue id in ``queue_ids`` is readable and writable."""
        need = max(queue_ids, default=-1) + 1
        if need <= min(self.read, self.write):
            return False
        self.update_topic_config(max(self.read, need), max(self.write, need), state_version, now)
        return True

    def to_wire(self) -> dict[str, Any]:
        """``GET_ALL_TOPIC_CONFIG``'s body and the registration's topicConfigWrapper."""
        return self.persisted()


def sync_loop_ms(entries: int, position: int, per_topic_us: int) -> tuple[int, int, int]:
    """The timing of ``syncTopicConfig``'s loops over a table of ``entries`` topics present on both sides, the
    workload's at ``position`` in the iteration: when its delete has been persisted, when the put phase has put
    it back in memory, and when the final persist is on disk (ms after the loop starts). Delete ``k`` persists the
    ``entries - k - 1`` entries left; the put phase persists all of them once."""
    def done_by(j: int) -> int:  # the first j deletes: sum over k < j of (entries - k - 1) entries written
        return per_topic_us * (j * (entries - 1) - j * (j - 1) // 2)

    deleted, put = done_by(position + 1), done_by(entries)
    return deleted // 1000, put // 1000, (put + entries * per_topic_us) // 1000
