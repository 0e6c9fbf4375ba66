"""An entry of the controller's replicated event log (DLedger's ``DLedgerEntry`` carrying an ``EventMessage``).

The controller node appends entries and applies them in order (``node.py``); a replicated group's nodes copy them
to each other (``raft.py``). An entry outlives the process that wrote it (``ControllerDisk``); its future, which a
request waits on, does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..runtime import Future
from .replicas_info import EventMessage, RequestEntry


@dataclass
class LogEntry:
    """One DLedger entry: an event (``None`` for an empty proposal; a ``RequestEntry`` in the JRaft flavour) and how
    it was validated."""

    index: int
    event: EventMessage | RequestEntry | None
    ctx: dict[str, Any]
    ready_at: int
    committed: bool = False
    future: Future = field(default_factory=Future)
    term: int = 0  # the replicated group's term (``[cluster] controllers > 1``)
    committed_at: int = -1  # when this node learnt it committed (a replicated group's node; LIVE-CTL-APPLIED)
    applied_at: int = -1  # when this node applied it (the same; -1: not yet, or through a snapshot)
