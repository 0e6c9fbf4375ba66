"""A node's durable files in its folder, written where the core says they are durable.

A broker's ``BrokerDisk`` becomes ``commitlog`` (the bytes, appended, rewritten after a truncation) and
``store.json`` (flushed position, epoch file, checkpoint, identity, consume-queue end, consumer offsets, abort
file). A controller's ``ControllerDisk`` becomes ``controller.pickle`` (its log entries and raft term/vote).
Writes go to the page cache (no fsync) before the effects of the step leave the process: a SIGKILL keeps them,
as it keeps a real broker's mapped files; a power loss is a simulator fault only.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

from ..impl.controller.log import LogEntry
from ..impl.controller.node import ControllerDisk
from ..impl.store.disk import BrokerDisk


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class BrokerFiles:
    """Mirror of one ``BrokerDisk`` in a folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.log_path = folder / "commitlog"
        self.meta_path = folder / "store.json"
        self._len = 0
        self._gen = -1
        self._meta = b""

    def load(self) -> BrokerDisk:
        disk = BrokerDisk()
        if self.log_path.exists():
            disk.commitlog = bytearray(self.log_path.read_bytes())
        if self.meta_path.exists():
            m = json.loads(self.meta_path.read_text(encoding="utf-8"))
            disk.flushed = min(int(m["flushed"]), len(disk.commitlog))
            disk.epoch_file = None if m["epochFile"] is None else [(int(e), int(s)) for e, s in m["epochFile"]]
            disk.checkpoint_confirm = int(m["checkpointConfirm"])
            disk.checkpoint_confirm_flushed = int(m["checkpointConfirmFlushed"])
            ident, temp = m["identity"], m["tempIdentity"]
            disk.broker_identity = None if ident is None else (str(ident[0]), str(ident[1]), int(ident[2]))
            disk.temp_identity = None if temp is None else (str(temp[0]), str(temp[1]), int(temp[2]), str(temp[3]))
            disk.generation = int(m["generation"])
            disk.cq_end = int(m["cqEnd"])
            disk.consumer_offsets = {str(k): int(v) for k, v in m["consumerOffsets"].items()}
            disk.topics = m.get("topics")
            disk.abort = bool(m["abort"])
        self._len, self._gen = len(disk.commitlog), disk.generation
        return disk

    def save(self, disk: BrokerDisk) -> None:
        n = len(disk.commitlog)
        if disk.generation != self._gen or n < self._len:
            _replace(self.log_path, bytes(disk.commitlog))
        elif n > self._len:
            with open(self.log_path, "ab") as f:
                f.write(disk.commitlog[self._len:n])
        self._len, self._gen = n, disk.generation
        meta = json.dumps(_meta(disk), sort_keys=True).encode()
        if meta != self._meta:
            _replace(self.meta_path, meta)
            self._meta = meta


def _meta(disk: BrokerDisk) -> dict[str, Any]:
    return {"flushed": disk.flushed, "epochFile": disk.epoch_file, "checkpointConfirm": disk.checkpoint_confirm,
            "checkpointConfirmFlushed": disk.checkpoint_confirm_flushed, "identity": disk.broker_identity,
            "tempIdentity": disk.temp_identity, "generation": disk.generation, "cqEnd": disk.cq_end,
            "consumerOffsets": disk.consumer_offsets, "abort": disk.abort, "topics": disk.topics}


class ControllerFiles:
    """Mirror of one ``ControllerDisk``: the entries without their futures (a restarted process has no waiters)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "controller.pickle"
        self._fp: tuple[Any, ...] = ()

    def load(self) -> ControllerDisk:
        disk = ControllerDisk()
        if self.path.exists():
            saved = pickle.loads(self.path.read_bytes())  # our own file, written by save()
            entries, raft = saved[:2]
            disk.entries = [LogEntry(i, ev, ctx, ready, committed, term=term)
                            for i, ev, ctx, ready, committed, term in entries]
            disk.raft = raft
            if len(saved) > 2:  # a JRaft node's snapshot ([controller] jRaftSnapshotIntervalSecs)
                disk.snapshot, disk.snapshot_index, disk.snapshot_term, disk.first_index = saved[2]
        self._fp = self._fingerprint(disk)
        return disk

    @staticmethod
    def _fingerprint(disk: ControllerDisk) -> tuple[Any, ...]:
        last = disk.entries[-1] if disk.entries else None
        return (len(disk.entries), sum(1 for e in disk.entries if e.committed),
                None if last is None else (last.index, last.term), pickle.dumps(disk.raft), disk.snapshot_index,
                disk.first_index)

    def save(self, disk: ControllerDisk) -> None:
        fp = self._fingerprint(disk)
        if fp == self._fp:
            return
        entries = [(e.index, e.event, e.ctx, e.ready_at, e.committed, e.term) for e in disk.entries]
        snap = (disk.snapshot, disk.snapshot_index, disk.snapshot_term, disk.first_index)
        _replace(self.path, pickle.dumps((entries, disk.raft, snap) if disk.snapshot is not None
                                         else (entries, disk.raft)))
        self._fp = fp
