"""DefaultBrokerHeartbeatManager (``C/impl/heartbeat/DefaultBrokerHeartbeatManager.java``).

Rules:

* Key: (clusterName, brokerName, brokerId) as the heartbeat names it, a null brokerId included: the first such
  heartbeat is stored under a ``None`` id (the entry's brokerId is -1); a heartbeat naming the wrong cluster is
  another broker. Once that entry exists, every lookup with a ``None`` id (a repeat heartbeat, ``isBrokerActive``,
  ``getBrokerLiveInfo``) throws: ``BrokerIdentityInfo.equals`` calls ``brokerId.equals`` on the lookup key's null
  id when the map compares it with the entry of the same hash (``NullBrokerIdError``, Java's NullPointerException).
  ``ControllerRequestProcessor.handleBrokerHeartbeat`` refuses a null brokerId before it gets here, so only a direct
  caller reaches that key. From 5.5.1 (PR #10886, upstream switch identity-equals-null-safe) equals compares with
  ``Objects.equals`` and the lookup finds the entry.
* A new entry stores everything but confirmOffset (QUIRK: the constructor drops it; it stays 0), and the
  channel the heartbeat came on.
* An existing entry always refreshes timestamp, timeout and priority; (epoch, maxOffset, confirmOffset)
  change only when epoch rises, or stays equal while maxOffset rises: the pair never goes backwards, even
  after the broker truncated its log. Its channel is never replaced: after a broker reconnects on a new
  connection, the entry still holds the old one, so closing the *old* connection removes the entry and
  reports the broker inactive, and closing the *new* one finds nothing (the timeout scan must find it).
* ``isBrokerActive``: an entry exists and ``lastUpdate + timeout >= now``.
* ``scanNotActiveBroker`` (every 5 s, first after 2 s): expired entries are removed, their channel closed,
  and every listener told ``onBrokerInactive``. A channel close removes its entry at once and tells them.
  Both report the *entry's* brokerId (-1 for a null key), not the key's.

Each controller node keeps its own table: it is not replicated (``ControllerManager`` builds one per process;
only ``ReplicasInfoManager``'s events go through DLedger).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TypeVar

from ..codes import INT_MAX
from .elect_policy import BrokerLiveInfo

DEFAULT_BROKER_CHANNEL_EXPIRED_TIME = 10_000
Identity = tuple[str, str, int | None]
V = TypeVar("V")


class NullBrokerIdError(Exception):
    """Java's NullPointerException from ``BrokerIdentityInfo.equals`` (``brokerId.equals(...)`` on a null id)."""


def lookup(table: Mapping[Identity, V], key: Identity, null_safe: bool = False) -> V | None:
    """``Map.get(new BrokerIdentityInfo(...))``: a key with a null id throws once an entry of the same hash (the
    same cluster, name and null id) is there to compare with. ``null_safe`` (upstream switch
    identity-equals-null-safe, 5.5.1+, PR #10886: ``Objects.equals`` on each field): the entry is found."""
    entry = table.get(key)
    if entry is not None and key[2] is None and not null_safe:
        raise NullBrokerIdError(f"BrokerIdentityInfo.equals on a null brokerId: {key}")
    return entry


class BrokerHeartbeatManager:
    """The live table; time is passed in, nothing here reads a clock."""

    def __init__(self, null_safe: bool = False) -> None:
        self.table: dict[Identity, tuple[BrokerLiveInfo, object]] = {}  # identity -> (info, channel)
        self.null_safe = null_safe  # BrokerIdentityInfo.equals of 5.5.1+ (``lookup``)

    def on_broker_heartbeat(self, now: int, cluster: str, broker_name: str, broker_addr: str,
                            broker_id: int | None, timeout: int | None, channel: object, epoch: int | None,
                            max_offset: int | None, confirm_offset: int | None,
                            election_priority: int | None) -> None:
        bid = -1 if broker_id is None else broker_id  # realBrokerId: the entry's id
        key = (cluster, broker_name, broker_id)  # BrokerIdentityInfo keeps the id as given, null included
        real_epoch = -1 if epoch is None else epoch
        real_max = -1 if max_offset is None else max_offset
        real_confirm = -1 if confirm_offset is None else confirm_offset
        real_timeout = DEFAULT_BROKER_CHANNEL_EXPIRED_TIME if timeout is None else timeout
        real_priority = INT_MAX if election_priority is None else election_priority
        prev = lookup(self.table, key, self.null_safe)
        if prev is None:
            info = BrokerLiveInfo(broker_name, broker_addr, bid, now, real_timeout, real_epoch, real_max, 0,
                                  real_priority)
            self.table[key] = (info, channel)
            return
        info, kept = prev  # the existing entry keeps its channel (onBrokerHeartbeat's else branch sets none)
        info = replace(info, last_update_timestamp=now, heartbeat_timeout_millis=real_timeout,
                       election_priority=real_priority)
        if real_epoch > info.epoch or (real_epoch == info.epoch and real_max > info.max_offset):
            info = replace(info, epoch=real_epoch, max_offset=real_max, confirm_offset=real_confirm)
        self.table[key] = (info, kept)

    def is_broker_active(self, now: int, cluster: str, broker_name: str, broker_id: int | None) -> bool:
        entry = lookup(self.table, (cluster, broker_name, broker_id), self.null_safe)
        if entry is None:
            return False
        info = entry[0]
        return info.last_update_timestamp + info.heartbeat_timeout_millis >= now

    def get_broker_live_info(self, cluster: str, broker_name: str, broker_id: int | None) -> BrokerLiveInfo | None:
        entry = lookup(self.table, (cluster, broker_name, broker_id), self.null_safe)
        return entry[0] if entry else None

    def scan_not_active_broker(self, now: int) -> list[Identity]:
        """Remove expired entries; return the identities to report inactive (in table order): the key's cluster, the
        entry's brokerName and brokerId (``notifyBrokerInActive(key.clusterName, value.brokerName,
        value.brokerId)``)."""
        expired = [(k, info) for k, (info, _) in self.table.items()
                   if now - info.last_update_timestamp > info.heartbeat_timeout_millis]
        for k, _ in expired:
            del self.table[k]
        return [(k[0], info.broker_name, info.broker_id) for k, info in expired]

    def on_broker_channel_close(self, channel: object) -> Identity | None:
        """Remove the entry holding ``channel`` (the one it was created with); return the identity to report
        inactive (as ``scan_not_active_broker``), if any."""
        for key, (info, ch) in self.table.items():
            if ch == channel:
                del self.table[key]
                return key[0], info.broker_name, info.broker_id
        return None
