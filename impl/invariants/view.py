"""What the invariant checks may read of a running cluster: a narrow, read-only view.

The simulator (``impl/sim/world.Simulation``) implements it; so can any driver that holds the nodes' objects. The
checks never see the driver itself: not its heap, its network, its fault generator or its trace.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..broker.broker import BrokerNode
from ..broker.legacy import LegacyBrokerNode
from ..config import MessageStoreConfig
from ..controller.node import ControllerNode
from ..runtime import Actor
from ..store.disk import BrokerDisk

AnyBroker = BrokerNode | LegacyBrokerNode
"""A broker process: controller mode (5.x) or the 4.x master/slave broker."""


class NameServerView(Protocol):
    """What NS-ROUTE-HIGHEST-EPOCH reads of the nameserver (``RouteInfoManager``)."""

    broker_addrs: dict[str, dict[int, str]]  # brokerName -> broker id -> address
    live: dict[str, tuple[int, str, str]]  # address -> (stateVersion, haServerAddr, node)
    master_claims: dict[str, dict[str, int]]  # brokerName -> address -> stateVersion it registered as master with
    queue_data: dict[str, tuple[int, int]]  # brokerName -> (readQueueNums, writeQueueNums) of the topic's route


class ClusterView(Protocol):
    """The cluster as the checks see it after a step."""

    step: int
    now: int
    brokers: list[str]
    controllers: list[str]
    nameserver: str
    touched: set[str]  # nodes that handled something in the step
    acted: bool  # a fault action ran in the step
    inc: dict[str, int]  # node -> incarnation (restarts so far)
    started_at: dict[str, int]  # node -> when its current process started (ms)
    disks: dict[str, BrokerDisk]  # what each broker has on disk (kept across crashes)

    @property
    def store_config(self) -> MessageStoreConfig: ...

    @property
    def broker_name(self) -> str: ...

    @property
    def legacy(self) -> bool:
        """A 4.x master/slave run (no controller)."""
        ...

    def broker(self, name: str) -> AnyBroker | None:
        """The broker's process, or None while it is down."""
        ...

    def is_paused(self, node: str) -> bool:
        """The process is stopped (SIGSTOP): it handles nothing until it resumes."""
        ...

    @property
    def topic_config(self) -> bool:
        """The brokers keep the topic's config (``[workload] topic_config``: TopicConfigManager, topics.json)."""
        ...

    @property
    def net_delay(self) -> int:
        """The network's longest one-way delay with no fault in force (ms)."""
        ...

    def disturbed(self) -> bool:
        """A fault's effect is in force now: a cut link, a paused process, or a lasting effect (a lossy or slow
        network window, a slow commit, apply or dispatch) not over yet. A broker that is down is not counted."""
        ...

    def controller_node(self) -> ControllerNode | None:
        """The controller that serves (a replicated group's current leader, caught up), if any."""
        ...

    def nameserver_node(self) -> NameServerView | None:
        """The nameserver's process, or None while it is down."""
        ...

    def ha_peer(self, conn: int) -> str | None:
        """The accepting (master) side of HA connection ``conn``."""
        ...

    def processes(self) -> dict[str, Actor]:
        """Every process that runs (up, not paused), by node name: what LIVE-TASKS reads."""
        ...

    def tail_stalled(self) -> tuple[int, int, int] | None:
        """The run's settle tail used its whole step budget before its last progress check: (steps, from, to), the
        simulated ms it covered; None otherwise (no tail, or one that ended itself)."""
        ...

    def tail_idle(self) -> tuple[str, str, int, int, int] | None:
        """The first service of the run's settle tail that woke up with nothing to do more often in one quiet second
        than LIVE-IDLE-WAKEUPS allows: (node, callback, wake-ups, allowed, the second's start ms); None otherwise."""
        ...

    def fail(self, invariant: str, message: str, state: dict[str, Any] | None = None) -> None:
        """Record a violation (the first one of a run stops it)."""
        ...
