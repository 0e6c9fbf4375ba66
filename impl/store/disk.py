"""What a broker keeps across a crash: its files.

A process crash (``kill -9``) keeps the page cache, so every written byte survives; a power loss keeps only
what was flushed. The files are those of RocketMQ's store root: the commit log, ``epochFileCheckpoint``,
the ``checkpoint`` (with ``confirmPhyOffset``), ``brokerIdentity`` and ``brokerIdentity-temp``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
    cq_end: int = 0  # [workload] queues: the commit-log end the consume-queue files cover (they survive a crash)
    consumer_offsets: dict[str, int] = field(default_factory=dict)  # consumerOffset.json: "group@queueId" -> offset
    # [workload] topic_config: topics.json (TopicConfigManager.persist); None: no file
    topics: dict[str, Any] | None = None
    abort: bool = False  # the abort file: created at start, deleted by a clean shutdown (DefaultMessageStore)
    # [sim] file_residue: truncation only moves the mapped file's write position, so the bytes past it stay in the
    # file until new data overwrites them (MappedFileQueue.truncateDirtyFiles); recovery scans the file. Also, with
    # or without it, the zeros a torn write (crash-at torn-write) leaves after its prefix
    keep_residue: bool = False
    residue_at: int = 0
    residue: bytes = b""

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
        self.residue = b""  # what the disk held under an unflushed page is not modelled
        return lost

    def truncated(self, offset: int) -> None:
        """Note a truncation at ``offset`` before the bytes go: with ``keep_residue`` they stay in the file."""
        if not self.keep_residue:
            return
        end = len(self.commitlog)
        self.residue = bytes(self.commitlog[offset:end]) + self.file_tail(end)
        self.residue_at = offset

    def file_tail(self, end: int) -> bytes:
        """The bytes the mapped file still holds past ``end`` (an earlier truncation's leftovers)."""
        if self.residue and self.residue_at <= end < self.residue_at + len(self.residue):
            return self.residue[end - self.residue_at:]
        return b""

    def stop(self) -> None:
        """A clean shutdown (``DefaultMessageStore.shutdown``): flush the log and the checkpoint, delete the
        abort file."""
        self.flushed = len(self.commitlog)
        self.checkpoint_confirm_flushed = self.checkpoint_confirm
        self.abort = False

    def lose(self, file: str) -> None:
        """A file gone while the broker was down: the next start reads it as new."""
        if file == "epoch":
            self.epoch_file = None
        elif file == "checkpoint":
            self.checkpoint_confirm = self.checkpoint_confirm_flushed = 0
        elif file == "identity":  # storePathBrokerIdentity and its -temp file (ReplicasManager's BrokerMetadata,
            self.broker_identity = self.temp_identity = None  # TempBrokerMetadata): the broker applies for an id anew
        else:
            raise ValueError(f"unknown file {file!r} (epoch, checkpoint, identity)")

    def write_epoch_file(self, lines: list[tuple[int, int]]) -> None:
        self.epoch_file = list(lines)
