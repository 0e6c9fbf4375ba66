"""What a broker keeps across a crash: its files.

A process crash (``kill -9``) keeps the page cache, so every written byte survives; a power loss keeps only
what was flushed. The files are those of RocketMQ's store root: the commit log, ``epochFileCheckpoint``,
the ``checkpoint`` (with ``confirmPhyOffset``), ``brokerIdentity`` and ``brokerIdentity-temp``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .offsets import BasedLog


@dataclass
class BrokerDisk:
    commitlog: bytearray = field(default_factory=bytearray)  # every written byte (page cache)
    flushed: int = 0  # bytes known to be on disk
    epoch_file: list[tuple[int, int]] | None = None  # (epoch, startOffset) lines; None: no file yet
    checkpoint_confirm: int = 0  # StoreCheckpoint.confirmPhyOffset, as last written (a new file holds 0)
    checkpoint_confirm_flushed: int = 0  # ... as last flushed
    broker_identity: tuple[str, str, int] | None = None  # cluster#brokerName#id
    temp_identity: tuple[str, str, int, str] | None = None  # cluster#brokerName#id#registerCheckCode
    generation: int = 0  # bumped whenever bytes are removed from the log (checkers cache on it)

    @classmethod
    def fresh(cls, base: int = 0) -> BrokerDisk:
        """An empty store whose log starts at physical offset ``base`` (``[sim] base_offset``): the files of a set
        with a long history, its older files deleted on every replica; the checkpoint already points there."""
        if base == 0:
            return cls()
        return cls(commitlog=BasedLog(base), flushed=base, checkpoint_confirm=base, checkpoint_confirm_flushed=base)

    def power_loss(self) -> int:
        """Lose the unflushed tail; returns the number of bytes lost."""
        lost = len(self.commitlog) - self.flushed
        del self.commitlog[self.flushed:]
        if lost:
            self.generation += 1
        self.checkpoint_confirm = self.checkpoint_confirm_flushed
        return lost

    def write_epoch_file(self, lines: list[tuple[int, int]]) -> None:
        self.epoch_file = list(lines)
