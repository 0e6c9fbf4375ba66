"""EpochFileCache (``S/ha/autoswitch/EpochFileCache.java``).

Rules:

* Entries (epoch, startOffset, endOffset) with epochs and starts strictly increasing together; every entry
  but the last has ``end == next.start``; the last defaults to +inf (``Long.MAX_VALUE``).
* ``appendEntry`` rejects an entry whose epoch *or* start is not greater than the last one's
  (QUIRK-EPOCH-EQ: an epoch that wrote no bytes cannot be recorded); callers ignore the ``False``.
  With the fix switch ``fix-epoch-eq-replaces-empty-epoch`` (finding F-EPOCH-EQ-SPLICE) an entry with the
  last one's start and a greater epoch replaces the last entry: that epoch holds no bytes, so nothing is lost.
* ``truncateSuffixByOffset`` removes entries with ``start >= offset``; it then resets the new last entry's
  end on a *copy* (QUIRK: the real last entry keeps the old end until the next append).
* ``findConsistentPoint`` walks local entries by descending epoch; the first epoch present on both sides
  with the same start gives ``min(local.end, other.end)``; none gives -1. With the fix switch above, a local entry
  the other side has replaced (it holds a greater epoch at the same start, after the same entry) gives its start:
  the other side wrote nothing under it, so a slave whose empty epoch its new master replaced still finds a point.
* The file (``epochFileCheckpoint``) is rewritten on every change; an empty list is never written (QUIRK).

Theory: a slave and its master agree on every byte of an epoch they share from its start (HA-LOG-MATCHING),
so the latest shared epoch start bounds the common prefix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..codes import LONG_MAX


@dataclass
class EpochEntry:
    epoch: int
    start_offset: int
    end_offset: int = LONG_MAX

    def copy(self) -> EpochEntry:
        return EpochEntry(self.epoch, self.start_offset, self.end_offset)

    def to_list(self) -> list[int]:
        return [self.epoch, self.start_offset, self.end_offset]


class EpochFileCache:
    """In-memory ``TreeMap<epoch, entry>`` plus an optional persistence hook (the checkpoint file)."""

    def __init__(self, persist: Callable[[list[tuple[int, int]]], None] | None = None) -> None:
        self._map: dict[int, EpochEntry] = {}  # kept sorted by epoch
        self._persist = persist
        self.version = 0  # bumped on every change (checkers cache on it)
        self.unchecked = False  # the bug switch epoch-append-unchecked: appendEntry without its guard

    # ---- construction
    def init_cache_from_entries(self, entries: list[EpochEntry]) -> None:
        self._init_entries(entries)
        self._flush()

    def init_cache_from_file(self, lines: list[tuple[int, int]]) -> None:
        self._init_entries([EpochEntry(e, s) for e, s in lines])

    def _init_entries(self, entries: list[EpochEntry]) -> None:
        self._map = {}
        prev: EpochEntry | None = None
        for entry in entries:
            self._map[entry.epoch] = entry
            if prev is not None:
                prev.end_offset = entry.start_offset
            prev = entry
        self._map = dict(sorted(self._map.items()))

    def empty_last_epoch(self, entry: EpochEntry) -> int | None:
        """The epoch of the last entry if ``entry`` starts where it does with a greater epoch (that epoch holds no
        bytes: what ``append_entry(replace_empty=True)`` replaces), else None."""
        last = self._last() if self._map else None
        if last is None or last.start_offset != entry.start_offset or last.epoch >= entry.epoch:
            return None
        return last.epoch

    # ---- mutation
    def append_entry(self, entry: EpochEntry, replace_empty: bool = False) -> bool:
        """``replace_empty`` is the fix switch fix-epoch-eq-replaces-empty-epoch (F-EPOCH-EQ-SPLICE)."""
        if self._map:
            last = self._last()
            if replace_empty and self.empty_last_epoch(entry) is not None:
                # the entry before the empty one already ends at this start
                del self._map[last.epoch]
                self._map[entry.epoch] = entry.copy()
                self.version += 1
                self._flush()
                return True
            if (last.epoch >= entry.epoch or last.start_offset >= entry.start_offset) and not self.unchecked:
                return False
            last.end_offset = entry.start_offset
        self._map[entry.epoch] = entry.copy()
        self.version += 1
        self._flush()
        return True

    def set_last_epoch_entry_end_offset(self, end_offset: int) -> None:
        if self._map:
            last = self._last()
            if last.start_offset <= end_offset:
                last.end_offset = end_offset
                self.version += 1

    def truncate_suffix_by_epoch(self, truncate_epoch: int) -> None:
        self._truncate_suffix(lambda e: e.epoch >= truncate_epoch)

    def truncate_suffix_by_offset(self, truncate_offset: int) -> None:
        self._truncate_suffix(lambda e: e.start_offset >= truncate_offset)

    def _truncate_suffix(self, pred: Callable[[EpochEntry], bool]) -> None:
        self._map = {k: v for k, v in self._map.items() if not pred(v)}
        entry = self.last_entry()
        if entry is not None:
            entry.end_offset = LONG_MAX  # QUIRK: a copy; the real last entry keeps its old end
        self._flush()

    def truncate_prefix_by_offset(self, truncate_offset: int) -> None:
        self._map = {k: v for k, v in self._map.items() if not v.end_offset <= truncate_offset}
        self._flush()

    def _flush(self) -> None:
        self.version += 1
        if self._persist is not None and self._map:  # QUIRK: an empty list is not written
            self._persist([(e.epoch, e.start_offset) for e in self._map.values()])

    # ---- queries (every returned entry is a copy)
    def _last(self) -> EpochEntry:
        return self._map[next(reversed(self._map))]

    def pairs(self) -> list[tuple[int, int]]:
        """(epoch, start) of every entry, without copying entries."""
        return [(e.epoch, e.start_offset) for e in self._map.values()]

    def entry_size(self) -> int:
        return len(self._map)

    def first_entry(self) -> EpochEntry | None:
        return self._map[next(iter(self._map))].copy() if self._map else None

    def last_entry(self) -> EpochEntry | None:
        return self._last().copy() if self._map else None

    def last_epoch(self) -> int:
        return self._last().epoch if self._map else -1

    def get_entry(self, epoch: int) -> EpochEntry | None:
        e = self._map.get(epoch)
        return e.copy() if e is not None else None

    def find_epoch_entry_by_offset(self, offset: int) -> EpochEntry | None:
        for e in self._map.values():
            if e.start_offset <= offset < e.end_offset:
                return e.copy()
        return None

    def next_entry(self, epoch: int) -> EpochEntry | None:
        for k, e in self._map.items():
            if k >= epoch + 1:
                return e.copy()
        return None

    def all_entries(self) -> list[EpochEntry]:
        return [e.copy() for e in self._map.values()]

    def find_consistent_point(self, compare: EpochFileCache, larger_end: bool = False,
                              replaced: bool = False) -> int:
        """``larger_end`` is the bug switch consistent-point-uses-max (max instead of min); ``replaced`` the fix
        switch fix-epoch-eq-replaces-empty-epoch (an entry the other side replaced ends at its start)."""
        mine = list(self._map)
        for i in range(len(mine) - 1, -1, -1):
            local = self._map[mine[i]]
            other = compare.get_entry(local.epoch)
            if other is not None and other.start_offset == local.start_offset:
                pick = max if larger_end else min
                return pick(local.end_offset, other.end_offset)
            if replaced and other is None and compare._replaced(local, self._map[mine[i - 1]] if i else None):
                return local.start_offset
        return -1

    def _replaced(self, entry: EpochEntry, before: EpochEntry | None) -> bool:
        """This cache holds, at ``entry``'s start, a greater epoch right after ``before`` (the entry that preceded
        ``entry`` elsewhere, or none): what ``append_entry(replace_empty=True)`` leaves when it replaced ``entry``."""
        ours = list(self._map.values())
        for j, e in enumerate(ours):
            if e.start_offset == entry.start_offset and e.epoch > entry.epoch:
                prev = ours[j - 1] if j else None
                return (prev is None and before is None) or (
                    prev is not None and before is not None and (prev.epoch, prev.start_offset)
                    == (before.epoch, before.start_offset))
        return False
