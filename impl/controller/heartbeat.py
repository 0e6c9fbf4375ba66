"""DefaultBrokerHeartbeatManager (``C/impl/heartbeat/DefaultBrokerHeartbeatManager.java``).

Rules:

* Key: (clusterName, brokerName, brokerId); a heartbeat naming the wrong cluster is another broker.
* A new entry stores everything but confirmOffset (QUIRK: the constructor drops it; it stays 0).
* An existing entry always refreshes timestamp, timeout and priority; (epoch, maxOffset, confirmOffset)
  change only when epoch rises, or stays equal while maxOffset rises: the pair never goes backwards, even
  after the broker truncated its log.
* ``isBrokerActive``: an entry exists and ``lastUpdate + timeout >= now``.
* ``scanNotActiveBroker`` (every 5 s, first after 2 s): expired entries are removed, their channel closed,
  and every listener told ``onBrokerInactive``. A channel close removes its entry at once and tells them.

Each controller node keeps its own table: it is not replicated (``ControllerManager`` builds one per process;
only ``ReplicasInfoManager``'s events go through DLedger).
"""

from __future__ import annotations

from dataclasses import replace

from ..codes import INT_MAX
from .elect_policy import BrokerLiveInfo

DEFAULT_BROKER_CHANNEL_EXPIRED_TIME = 10_000
Identity = tuple[str, str, int]


class BrokerHeartbeatManager:
    """The live table; time is passed in, nothing here reads a clock."""

    def __init__(self) -> None:
        self.table: dict[Identity, tuple[BrokerLiveInfo, object]] = {}  # identity -> (info, channel)

    def on_broker_heartbeat(self, now: int, cluster: str, broker_name: str, broker_addr: str,
                            broker_id: int | None, timeout: int | None, channel: object, epoch: int | None,
                            max_offset: int | None, confirm_offset: int | None,
                            election_priority: int | None) -> None:
        bid = -1 if broker_id is None else broker_id
        key = (cluster, broker_name, bid)
        real_epoch = -1 if epoch is None else epoch
        real_max = -1 if max_offset is None else max_offset
        real_confirm = -1 if confirm_offset is None else confirm_offset
        real_timeout = DEFAULT_BROKER_CHANNEL_EXPIRED_TIME if timeout is None else timeout
        real_priority = INT_MAX if election_priority is None else election_priority
        prev = self.table.get(key)
        if prev is None:
            info = BrokerLiveInfo(broker_name, broker_addr, bid, now, real_timeout, real_epoch, real_max, 0,
                                  real_priority)
            self.table[key] = (info, channel)
            return
        info, _ = prev
        info = replace(info, last_update_timestamp=now, heartbeat_timeout_millis=real_timeout,
                       election_priority=real_priority)
        if real_epoch > info.epoch or (real_epoch == info.epoch and real_max > info.max_offset):
            info = replace(info, epoch=real_epoch, max_offset=real_max, confirm_offset=real_confirm)
        self.table[key] = (info, channel)

    def is_broker_active(self, now: int, cluster: str, broker_name: str, broker_id: int) -> bool:
        entry = self.table.get((cluster, broker_name, broker_id))
        if entry is None:
            return False
        info = entry[0]
        return info.last_update_timestamp + info.heartbeat_timeout_millis >= now

    def get_broker_live_info(self, cluster: str, broker_name: str, broker_id: int) -> BrokerLiveInfo | None:
        entry = self.table.get((cluster, broker_name, broker_id))
        return entry[0] if entry else None

    def scan_not_active_broker(self, now: int) -> list[Identity]:
        """Remove expired entries; return the identities to report inactive (in table order)."""
        expired = [k for k, (info, _) in self.table.items()
                   if now - info.last_update_timestamp > info.heartbeat_timeout_millis]
        for k in expired:
            del self.table[k]
        return expired

    def on_broker_channel_close(self, channel: object) -> Identity | None:
        """Remove the entry using ``channel``; return its identity to report inactive, if any."""
        for key, (_, ch) in self.table.items():
            if ch == channel:
                del self.table[key]
                return key
        return None
