"""The controller group's replicated log: DLedger's Raft, as the controller nodes of ``[cluster] controllers > 1``
use it (``DLedgerServer``: ``DLedgerLeaderElector``, ``DLedgerEntryPusher``, ``StateMachineCaller``).

Everything that decides who leads, what is committed and what is applied lives here. Theory of operation:

* Each node keeps, on its disk, its term, its vote and its log (``ControllerDisk``); commit and apply positions
  are its own. A follower that hears nothing from a leader for an election timeout (random in
  ``[ELECTION_MIN, ELECTION_MAX]``, from the node's seeded stream) becomes a candidate: term + 1, a vote for
  itself, and a vote request to every peer; a peer grants one vote per term, to a candidate whose log is at
  least as up to date as its own (last term, then last index). A majority makes the candidate leader.
* The leader appends entries of its term and pushes them (``DLedgerEntryPusher``): every ``HEARTBEAT`` ms, or at
  once on an append, each follower gets the entries after what it is known to hold, with the term of the entry
  before them; a follower whose entry there differs answers with a mismatch and the leader steps back. A follower
  drops a conflicting suffix (never a committed entry) and appends.
* An entry commits when a majority holds it and it is of the leader's term (or precedes one that is); the
  leader tells followers its commit position with each push. Each node applies committed entries in order,
  ``apply_delay`` ms after they commit (the ``slow-apply`` fault raises it for a while): the apply position may
  lag the commit position, and the DLedger flavour validates requests on the applied state.
* A higher term anywhere makes a node a follower of that term; a leader that has not heard a majority acknowledge
  its pushes for ``MAX_HEARTBEAT_LEAK`` heartbeats steps down (``DLedgerLeaderElector.maintainAsLeader``).
* JRaft snapshots (``[controller] jRaftSnapshotIntervalSecs``; sofa-jraft 1.3.14, which RocketMQ 5.3.3 uses): each
  node saves its applied state on its own timer (``SnapshotExecutorImpl.doSnapshot``: nothing new since the last
  one, no snapshot) and then drops its log up to its *previous* snapshot (``LogManagerImpl.setSnapshot``:
  ``truncatePrefix(savedLastSnapshotIndex + 1)``). A leader that would push to a follower from an entry it no
  longer has (the entry before it compacted: ``Replicator.fillCommonFields`` finds term 0) sends its snapshot
  instead (``installSnapshot``); the follower loads it (``onSnapshotLoad``), takes it as applied and committed, and
  keeps its log after it if its entry at the snapshot's last index has the snapshot's term, else starts its log
  there (``setSnapshot``: ``truncatePrefix`` / ``reset``).

The invariants this keeps are CTL-ONE-LEADER-PER-TERM and CTL-APPLY-PREFIX (``impl/invariants/``); the
controller's request handling on top of it is ``impl/controller/node.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import bugs as B
from ..codes import RequestCode
from ..observations import CtlRole
from ..runtime import Command, Future
from .log import LogEntry
from .replicas_info import entry_from_dict

if TYPE_CHECKING:
    from .node import ControllerNode

ELECTION_MIN = 1500  # DLedgerConfig: heartbeat interval x (maxHeartBeatLeak + 1), with random back-off
ELECTION_MAX = 3000
HEARTBEAT = 500  # DLedgerConfig.heartBeatTimeIntervalMs (scaled down with the election timeout)
MAX_HEARTBEAT_LEAK = 3  # DLedgerConfig.maxHeartBeatLeak: a leader without a majority's acks for this many beats
MAX_PUSH = 64  # entries per push

FOLLOWER, CANDIDATE, LEADER = "follower", "candidate", "leader"
TERM_CHANGED = "TERM_CHANGED"  # DLedgerResponseCode.TERM_CHANGED: a pending append completed, normally, with this code
_COMPACTED = {"compacted": True}  # the context of a placeholder left where a compacted entry was


@dataclass
class RaftState:
    """What a node persists besides its log: ``currTerm`` and ``voteFor`` (DLedger's ``currterm`` file)."""

    term: int = 0
    voted_for: str | None = None


class Replication:
    """One node's side of the group: role, term, votes, pushes, commit and apply."""

    def __init__(self, node: ControllerNode, peers: list[str], on_leader: Callable[[], None],
                 on_follower: Callable[[], None]) -> None:
        self.node = node
        self.peers = [p for p in peers if p != node.name]
        self.quorum = len(peers) // 2 + 1
        self.state: RaftState = node.disk.raft
        self.role = FOLLOWER
        self.leader_id: str | None = None
        self.commit = 0  # entries known committed
        self.next_index: dict[str, int] = {}
        self.match: dict[str, int] = {}
        self.votes: set[str] = set()
        self.last_ack: dict[str, int] = {}  # peer -> when it last answered a push of this leader
        self.leader_since = 0
        self.apply_delay = 0
        self.apply_delay_until = -1
        self._election_timer: int | None = None
        self._heartbeat_timer: int | None = None
        self._apply_timer: int | None = None
        self._commit_timer: int | None = None
        self._commit_at = 0  # when the commit timer fires
        self._on_leader = on_leader
        self._on_follower = on_follower
        # DLedgerEntryPusher.pendingAppendResponsesByTerm: term -> index -> the future of an append this node made
        # as leader (DLedger flavour; a JRaft entry's closure completes when the entry applies here)
        self.pending: dict[int, dict[int, Future]] = {}

    # ------------------------------------------------------------------------------------ helpers
    @property
    def entries(self) -> list[LogEntry]:
        return self.node.disk.entries

    def _last(self) -> tuple[int, int]:
        """(last index + 1, last term)."""
        if self.node.disk.first_index:  # a JRaft log compacted behind a snapshot
            n = len(self.entries)
            return n, self._term_at(n - 1) or 0
        return len(self.entries), self.entries[-1].term if self.entries else 0

    def _term_at(self, pos: int) -> int | None:
        """The term of the entry at ``pos`` (0 before the log), or ``None`` when it was compacted away
        (``LogManager.getTerm`` answers 0 below the first index, except at the last snapshot's index)."""
        disk = self.node.disk
        if pos < 0:
            return 0
        if pos >= disk.first_index:
            return self.entries[pos].term
        return disk.snapshot_term if pos == disk.snapshot_index - 1 else None

    def _send(self, dst: str, code: RequestCode, body: dict[str, Any]) -> None:
        self.node.send(dst, Command(code, 0, {"term": self.state.term, "from": self.node.name}, body, oneway=True))

    def start(self) -> None:
        for entry in self.entries:  # the committed position survives in DLedger's checkpoint
            if entry.committed:
                self.commit = entry.index + 1
        self._reset_election()

    def _reset_election(self) -> None:
        self.node.cancel(self._election_timer)
        rng = self.node.rng
        self._election_timer = self.node.after(rng.between(ELECTION_MIN, ELECTION_MAX), self._election_timeout)

    def _become_follower(self, term: int, leader: str | None) -> None:
        was_leader = self.role == LEADER
        before = (self.state.term, self.role, self.leader_id)
        if term > self.state.term:
            self.state.term = term
            self.state.voted_for = None
        self.role = FOLLOWER
        self.leader_id = leader
        if before != (self.state.term, FOLLOWER, leader):  # CTL-LEADER-KEPT: what the node knew, what it knows
            change: CtlRole = {"k": "ctl.role", "term": self.state.term, "leader": leader, "wasTerm": before[0],
                               "was": before[1], "wasLeader": before[2]}
            if was_leader:  # DLedgerLeaderElector.maintainAsLeader's evidence: who acked within maxHeartBeatLeak beats
                change["acked"] = self._acked()
                change["ledFor"] = self.node.now - self.leader_since
            self.node.emit(change)
        self.node.cancel(self._heartbeat_timer)
        self._heartbeat_timer = None
        self._reset_election()
        if was_leader:
            self._on_follower()

    # ----------------------------------------------------------------------------------- election
    def _election_timeout(self) -> None:
        self._election_timer = None
        if self.role == LEADER:
            return
        self.role = CANDIDATE
        self.state.term += 1
        self.state.voted_for = self.node.name
        self.votes = {self.node.name}
        self.leader_id = None
        last_index, last_term = self._last()
        self.node.emit({"k": "ctl.candidate", "term": self.state.term})
        for p in self.peers:
            self._send(p, RequestCode.RAFT_VOTE, {"lastIndex": last_index, "lastTerm": last_term})
        self._reset_election()

    def on_vote(self, src: str, term: int, body: dict[str, Any]) -> None:
        if term > self.state.term:
            self._become_follower(term, None)
        last_index, last_term = self._last()
        up_to_date = (body["lastTerm"], body["lastIndex"]) >= (last_term, last_index)
        free = self.state.voted_for in (None, src) or B.TWO_LEADERS_ONE_TERM in self.node.bugs
        granted = term == self.state.term and free and up_to_date
        if B.VOTE_GRANTS_OLDER_TERM in self.node.bugs and term < self.state.term:
            granted = free and up_to_date
        if granted:
            self.state.voted_for = src
            self._reset_election()
            self.node.emit({"k": "ctl.vote", "term": self.state.term, "for": src})
        self._send(src, RequestCode.RAFT_VOTE_REPLY, {"granted": granted})

    def on_vote_reply(self, src: str, term: int, body: dict[str, Any]) -> None:
        if term > self.state.term:
            self._become_follower(term, None)
            return
        if self.role != CANDIDATE or term != self.state.term or not body["granted"]:
            return
        self.votes.add(src)
        if len(self.votes) >= self.quorum:
            self._become_leader()

    def _become_leader(self) -> None:
        self.role = LEADER
        self.leader_id = self.node.name
        self.node.cancel(self._election_timer)
        self._election_timer = None
        n = len(self.entries)
        self.next_index = {p: n for p in self.peers}
        self.match = {p: 0 for p in self.peers}
        self.last_ack = {}
        self.leader_since = self.node.now
        self.node.emit({"k": "ctl.elected", "term": self.state.term})
        self._heartbeat()
        self._on_leader()
        self._complete_other_terms()

    def _complete_other_terms(self) -> None:
        """``QuorumAckChecker.doWork`` on a leader: every pending append of another term completes, as a *normal*
        completion, with code TERM_CHANGED, whatever became of its entry (``DLedgerController
        .appendToDLedgerAndWait`` ignores the code)."""
        stale = {t: futures for t, futures in self.pending.items() if t != self.state.term}
        for t, futures in sorted(stale.items()):
            del self.pending[t]
            self.node.emit({"k": "ctl.term-changed", "node": self.node.name, "term": self.state.term, "oldTerm": t,
                            "indexes": sorted(futures)})
            for index in sorted(futures):
                futures[index].complete(TERM_CHANGED)

    def complete_pending(self, index: int, value: Any) -> None:
        """``DLedgerEntryPusher.completeResponseFuture(index)`` once the entry applied: only the *current* term's
        pending append at that index completes (an append of an earlier term waits for TERM_CHANGED)."""
        future = self.pending.get(self.state.term, {}).pop(index, None)
        if future is not None:
            future.complete(value)

    # ------------------------------------------------------------------------------------ pushing
    def append(self, entry: LogEntry) -> None:
        """The leader appends an entry of its term and pushes it at once (``DLedgerServer.handleAppend``; its
        future waits in the pending map, ``waitAck``)."""
        entry.term = self.state.term
        self.entries.append(entry)
        if not self.node.jraft:
            self.pending.setdefault(entry.term, {})[entry.index] = entry.future
        for p in self.peers:
            self._push(p)
        self._advance_commit()

    def _heartbeat(self) -> None:
        self._heartbeat_timer = None
        if self.role != LEADER:
            return
        window = MAX_HEARTBEAT_LEAK * HEARTBEAT
        if self._acked() < self.quorum and self.node.now - self.leader_since > window:
            self.node.emit({"k": "ctl.step-down", "term": self.state.term})
            self._become_follower(self.state.term, None)
            return
        idle_skip = B.LEADER_SKIPS_IDLE_HEARTBEAT in self.node.bugs
        for p in self.peers:
            if not idle_skip or self.next_index.get(p, 0) < len(self.entries):
                self._push(p)
        self._heartbeat_timer = self.node.after(HEARTBEAT, self._heartbeat)

    def _acked(self) -> int:
        """The members (this leader included) that answered one of its pushes within the last ``MAX_HEARTBEAT_LEAK``
        heartbeats."""
        since = self.node.now - MAX_HEARTBEAT_LEAK * HEARTBEAT
        return 1 + sum(1 for p in self.peers if self.last_ack.get(p, -1) >= since)

    def _push(self, peer: str) -> None:
        start = self.next_index.get(peer, len(self.entries))
        prev_term = self._term_at(start - 1)
        if prev_term is None:  # Replicator.fillCommonFields: "logIndex was compacted" -> installSnapshot
            self._send_snapshot(peer)
            return
        batch = [[e.term, None if e.event is None else e.event.to_dict(), e.ctx]
                 for e in self.entries[start:start + MAX_PUSH]]
        self._send(peer, RequestCode.RAFT_APPEND, {"prevIndex": start, "prevTerm": prev_term, "entries": batch,
                                                   "commit": self.commit})

    def on_append(self, src: str, term: int, body: dict[str, Any]) -> None:
        if term < self.state.term:
            self._send(src, RequestCode.RAFT_APPEND_REPLY, {"ok": False, "match": 0})
            return
        if term > self.state.term or self.role != FOLLOWER or self.leader_id != src:
            self._become_follower(term, src)
        else:
            self._reset_election()
        prev = body["prevIndex"]
        entries = self.entries
        first = self.node.disk.first_index  # below it: compacted, committed, the same on every node
        if prev > len(entries) or (prev > 0 and self._term_at(prev - 1) not in (None, body["prevTerm"])):
            hint = len(entries) if prev > len(entries) else prev - 1  # where the leader should push from
            self._send(src, RequestCode.RAFT_APPEND_REPLY, {"ok": False, "match": hint})
            return
        for i, (eterm, event, ctx) in enumerate(body["entries"]):
            idx = prev + i
            if idx < first:
                continue
            if idx < len(entries):
                if entries[idx].term == eterm:
                    continue
                assert idx >= self.commit, "a committed entry conflicts"
                del entries[idx:]
            entries.append(LogEntry(idx, None if event is None else entry_from_dict(event), ctx, 0, term=eterm))
        match = prev + len(body["entries"])
        self._send(src, RequestCode.RAFT_APPEND_REPLY, {"ok": True, "match": match})
        new_commit = min(body["commit"], match)
        if B.FOLLOWER_COMMITS_WITH_ENTRIES in self.node.bugs and not body["entries"]:
            new_commit = self.commit
        if new_commit > self.commit:
            self._mark_committed(new_commit)

    # ---------------------------------------------------------------------------- JRaft snapshots
    def save_snapshot(self, data: bytes) -> None:
        """``onSnapshotSave`` of this node's applied state, then ``LogManagerImpl.setSnapshot``: the log is dropped
        up to the previous snapshot (the entries since it stay for followers that need them)."""
        disk, applied = self.node.disk, self.node.applied
        if applied <= disk.snapshot_index:  # nothing applied since the last snapshot
            return
        previous = disk.snapshot_index
        disk.snapshot, disk.snapshot_index, disk.snapshot_term = data, applied, self.entries[applied - 1].term
        self._compact(previous)
        self.node.emit({"k": "ctl.snapshot", "node": self.node.name, "index": applied, "firstIndex": disk.first_index})

    def _compact(self, upto: int) -> None:
        """Drop the entries below ``upto``: their slots keep only the term (nothing reads the rest again)."""
        disk = self.node.disk
        for pos in range(disk.first_index, upto):
            old = self.entries[pos]
            self.entries[pos] = LogEntry(pos, None, _COMPACTED, 0, committed=True, term=old.term)
        disk.first_index = max(disk.first_index, upto)

    def _send_snapshot(self, peer: str) -> None:
        disk = self.node.disk
        assert disk.snapshot is not None, "a compacted log without a snapshot"
        self._send(peer, RequestCode.RAFT_INSTALL_SNAPSHOT,
                   {"index": disk.snapshot_index, "lastTerm": disk.snapshot_term, "data": disk.snapshot.hex()})

    def on_install_snapshot(self, src: str, term: int, body: dict[str, Any]) -> None:
        """The follower's side of ``installSnapshot``: load the leader's snapshot (``onSnapshotLoad``), take it as
        applied and committed, and fix up the log (``LogManagerImpl.setSnapshot``); answer as a push would."""
        if term < self.state.term:
            self._send(src, RequestCode.RAFT_APPEND_REPLY, {"ok": False, "match": 0})
            return
        if term > self.state.term or self.role != FOLLOWER or self.leader_id != src:
            self._become_follower(term, src)
        else:
            self._reset_election()
        index, last_term = body["index"], body["lastTerm"]
        disk = self.node.disk
        if index > self.node.applied:
            data = bytes.fromhex(body["data"])
            self.node.install_snapshot(data, index)
            keep = index <= len(self.entries) and self.entries[index - 1].term == last_term
            previous = disk.snapshot_index
            disk.snapshot, disk.snapshot_index, disk.snapshot_term = data, index, last_term
            if keep:  # setSnapshot: the log holds the snapshot's last entry; drop it up to the previous snapshot
                self._compact(previous)
            else:  # truncatePrefix / reset: the log starts after the snapshot
                del self.entries[min(index, len(self.entries)):]
                while len(self.entries) < index:
                    self.entries.append(LogEntry(len(self.entries), None, _COMPACTED, 0, committed=True, term=0))
                self._compact(index)
            if index > self.commit:
                self._mark_committed(index)
            self.node.emit({"k": "ctl.install-snapshot", "node": self.node.name, "index": index, "kept": keep})
        self._send(src, RequestCode.RAFT_APPEND_REPLY, {"ok": True, "match": index})

    def on_append_reply(self, src: str, term: int, body: dict[str, Any]) -> None:
        if B.STALE_REPLY_DEPOSES in self.node.bugs and term < self.state.term:
            self._become_follower(term, None)
            return
        if term > self.state.term:
            self._become_follower(term, None)
            return
        if self.role != LEADER or term != self.state.term:
            return
        self.last_ack[src] = self.node.now
        if body["ok"]:
            self.match[src] = max(self.match.get(src, 0), body["match"])
            self.next_index[src] = max(self.next_index.get(src, 0), body["match"])
            self._advance_commit()
            if self.next_index[src] < len(self.entries):
                self._push(src)
        else:
            self.next_index[src] = max(0, min(self.next_index.get(src, 0) - 1, body["match"]))
            self._push(src)

    def _advance_commit(self) -> None:
        if self.role != LEADER:
            return
        n = len(self.entries)
        for idx in range(n, self.commit, -1):
            held = 1 + sum(1 for p in self.peers if self.match.get(p, 0) >= idx)
            entry = self.entries[idx - 1]
            if held >= self.quorum and entry.term == self.state.term and entry.ready_at <= self.node.now:
                self._mark_committed(idx)
                break  # and the entries still held back after it: the timer for the next release
        pending = [e.ready_at for e in self.entries[self.commit:] if e.ready_at > self.node.now]
        if not pending:
            return
        release = min(pending)  # a slow-commit window holds entries back: look again at the first release
        if self._commit_timer is not None and self._commit_at <= release:
            return
        # (a later window with a shorter hold can release an entry before the one the timer waits for:
        # QuorumAckChecker.doWork polls without pause, so the quorum index moves at the first release)
        self.node.cancel(self._commit_timer)
        self._commit_at = release
        self._commit_timer = self.node.after(release - self.node.now, self._commit_retry)

    def _commit_retry(self) -> None:
        self._commit_timer = None
        if B.COMMIT_WAITS_FOR_ACK in self.node.bugs:  # the release finds no quorum check: the next ack runs one
            return
        self._advance_commit()

    # ---------------------------------------------------------------------------- commit & apply
    def _mark_committed(self, upto: int) -> None:
        for entry in self.entries[self.commit:upto]:
            entry.committed = True
            entry.committed_at = self.node.now
        self.commit = upto
        self._schedule_apply()

    def _schedule_apply(self) -> None:
        if self._apply_timer is not None:
            return
        delay = self.apply_delay if self.node.now < self.apply_delay_until else 0
        if delay:
            self._apply_timer = self.node.after(delay, self._apply_now)
        else:
            self._apply_now()

    def _apply_now(self) -> None:
        self._apply_timer = None
        while self.node.applied < self.commit:
            entry = self.entries[self.node.applied]
            entry.applied_at = self.node.now
            self.node.apply_committed(entry)

    def slow_apply(self, extra_ms: int, duration_ms: int) -> None:
        """Fault: for ``duration_ms``, committed entries apply ``extra_ms`` late on this node."""
        self.apply_delay = extra_ms
        self.apply_delay_until = self.node.now + duration_ms
