"""Physical offsets at full width: a commit log that starts past offset 0.

RocketMQ's offsets are Java ``long``s; a set that has run for a while has deleted its oldest mapped files, so
its logs start (``getMinPhyOffset``) and end far past 2^31 and 2^32. The kit keeps a log's bytes in memory, so it
cannot hold gigabytes; ``BasedLog`` holds the bytes from physical offset ``base`` on and answers lengths, indexes
and slices in physical offsets (the bytes before ``base`` read as nothing). With ``base`` 0 the kit uses a plain
``bytearray`` instead, so the default path is unchanged.

This module is a leaf: the store and the message codec import it.
"""

from __future__ import annotations

from typing import Any, SupportsIndex


class BasedLog(bytearray):
    """The bytes of a log from physical offset ``base`` on; ``len()`` is the physical end offset."""

    base: int

    def __init__(self, base: int, data: bytes = b"") -> None:
        super().__init__(data)
        self.base = base

    def __len__(self) -> int:
        return bytearray.__len__(self) + self.base

    def _raw(self, k: slice) -> slice:
        base = self.base
        start = base if k.start is None else max(k.start, base)
        stop = None if k.stop is None else max(k.stop, base) - base
        return slice(start - base, stop, k.step)

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return bytearray.__getitem__(self, self._raw(k))
        return bytearray.__getitem__(self, k - self.base)

    def __delitem__(self, k: SupportsIndex | slice) -> None:
        if isinstance(k, slice):
            bytearray.__delitem__(self, self._raw(k))
        else:
            bytearray.__delitem__(self, int(k) - self.base)

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (BasedLog, (self.base, bytes(self)))

    def __repr__(self) -> str:
        return f"BasedLog(base={self.base}, {bytearray.__len__(self)} bytes)"


def base_of(buf: bytes | bytearray | memoryview) -> int:
    """The physical offset of ``buf``'s first byte (0 unless it is a ``BasedLog``)."""
    return buf.base if type(buf) is BasedLog else 0
