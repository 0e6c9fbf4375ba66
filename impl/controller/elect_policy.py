"""DefaultElectPolicy, exactly (``C/elect/impl/DefaultElectPolicy.java``).

Rules:

* Two tiers: the SSS first; only if it yields nothing, every registered replica (unclean election on).
* ``tryElect``: keep the candidates the liveness predicate accepts; none -> null. The old master wins if
  it is a candidate and no other broker is preferred (the caller turns that into MASTER_STILL_EXIST). A
  preferred (admin-designated) broker wins if it is a candidate, otherwise the tier yields null. Else sort
  the candidates' live infos by epoch desc, maxOffset desc, electionPriority asc and take the first.
* The comparator narrows the maxOffset difference to a Java ``int`` (QUIRK: a gap of 2^31 bytes or more can
  flip the order; 5.5.1, PR #10579, upstream switch elect-compares-long-offsets: ``Long.compare``). Candidates
  that compare equal collapse to the first inserted, and insertion follows ``HashSet<Long>`` order, i.e.
  ascending id for small ids: ties go to the smallest id.
* Without a live-info getter: the first candidate in that order.

The invariant this policy keeps is CTL-CLEAN-ELECTION (``impl/invariants/``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..codes import to_int32

AlivePredicate = Callable[[str, str, int], bool]


@dataclass(frozen=True)
class BrokerLiveInfo:
    """``BrokerLiveInfo``: what the controller's heartbeat table knows of one broker."""

    broker_name: str
    broker_addr: str
    broker_id: int
    last_update_timestamp: int
    heartbeat_timeout_millis: int
    epoch: int
    max_offset: int
    confirm_offset: int
    election_priority: int


LiveInfoGetter = Callable[[str, str, int], "BrokerLiveInfo | None"]


def compare_live_info(o1: BrokerLiveInfo, o2: BrokerLiveInfo, long_offsets: bool = False) -> int:
    """The policy's comparator, with Java's int arithmetic. ``long_offsets``: 5.5.1's (PR #10579), which compares
    each key with ``Integer.compare`` / ``Long.compare`` (the sign only, no narrowing)."""
    if long_offsets:
        for a, b in ((o2.epoch, o1.epoch), (o2.max_offset, o1.max_offset),
                     (o1.election_priority, o2.election_priority)):
            if a != b:
                return -1 if a < b else 1
        return 0
    if o1.epoch == o2.epoch:
        if o1.max_offset == o2.max_offset:
            return to_int32(o1.election_priority - o2.election_priority)
        return to_int32(o2.max_offset - o1.max_offset)
    return to_int32(o2.epoch - o1.epoch)


class ElectionFailed(Exception):
    """A candidate passed the predicate but has no live info: RocketMQ's sort throws (``DefaultElectPolicy.tryElect``:
the comparator reads the missing ``BrokerLiveInfo``)."""


class ElectPolicy:
    """``DefaultElectPolicy(validPredicate, brokerLiveInfoGetter)``; either may be ``None``."""

    def __init__(self, valid: AlivePredicate | None = None, live_info: LiveInfoGetter | None = None) -> None:
        self.valid = valid
        self.live_info = live_info
        self.long_offsets = False  # the comparator of 5.5.1+ (ReplicasInfoManager.elect_master sets it)

    def elect(self, cluster: str, broker_name: str, sss: set[int] | None, all_replicas: set[int] | None,
              old_master: int | None, prefer: int | None) -> int | None:
        new_master = None
        if sss is not None:
            new_master = self._try_elect(cluster, broker_name, sss, old_master, prefer)
        if new_master is not None:
            return new_master
        if all_replicas is not None:
            new_master = self._try_elect(cluster, broker_name, all_replicas, old_master, prefer)
        return new_master

    def _try_elect(self, cluster: str, broker_name: str, brokers: set[int], old_master: int | None,
                   prefer: int | None) -> int | None:
        candidates = sorted(brokers)  # HashSet<Long> iteration order for small ids
        if self.valid is not None:
            candidates = [b for b in candidates if self.valid(cluster, broker_name, b)]
        if not candidates:
            return None
        if old_master in candidates and (prefer is None or prefer == old_master):
            return old_master
        if prefer is not None:
            return prefer if prefer in candidates else None
        if self.live_info is not None:
            ordered: list[BrokerLiveInfo] = []  # TreeSet insertion with the comparator
            for b in candidates:
                info = self.live_info(cluster, broker_name, b)
                if info is None:
                    raise ElectionFailed(f"no live info for broker {b} of {broker_name}")
                _tree_insert(ordered, info, self.long_offsets)
            return ordered[0].broker_id
        return candidates[0]


def _tree_insert(ordered: list[BrokerLiveInfo], info: BrokerLiveInfo, long_offsets: bool = False) -> None:
    """Insert like ``TreeSet.add``: an element comparing equal to a present one is dropped."""
    for i, other in enumerate(ordered):
        c = compare_live_info(info, other, long_offsets)
        if c == 0:
            return
        if c < 0:
            ordered.insert(i, info)
            return
    ordered.append(info)
