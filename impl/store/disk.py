"""What a broker keeps across a crash: its files.

A process crash (``kill -9``) keeps the page cache, so every written byte survives; a power loss keeps only
what was flushed. The files are those of RocketMQ's store root: the commit log, ``epochFileCheckpoint``,
the ``checkpoint`` (with ``confirmPhyOffset``), ``brokerIdentity`` and ``brokerIdentity-temp``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
