"""Issue 6 part 4, disk versus memory: the abort file and the two recoveries, the clean shutdown, lost files, and
the bytes a truncation leaves in a mapped file, each against the RocketMQ method whose behaviour it checks.

The part's fidelity switch, ``recover-ignores-abort-file`` (caught by SYNC-VISIBLE-BOUND), has its scenario in
``impl/sim/scenarios.py`` (``tests/test_bugs.py`` runs it); its findings, F-RECOVER-NORMALLY-PAST-CONFIRM and
F-TRUNCATED-TAIL-RESURRECTS, replay from ``docs/findings/`` (``tests/test_findings.py``).
"""

from __future__ import annotations

from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.runner import run
from rmqha.impl.sim.world import Simulation
from rmqha.impl.store.commitlog import MessageStore
from rmqha.impl.store.disk import BrokerDisk
from rmqha.impl.store.message import encode

CFG = default_config("safe").store


def _disk(sizes: list[int], *, confirm: int, keep_residue: bool = False) -> BrokerDisk:
    disk = BrokerDisk(keep_residue=keep_residue)
    for i, size in enumerate(sizes):
        disk.commitlog += encode(f"k{i}", b"x" * size, len(disk.commitlog), i)
    disk.flushed = len(disk.commitlog)
    disk.checkpoint_confirm = disk.checkpoint_confirm_flushed = confirm
    return disk


def _ends(disk: BrokerDisk) -> list[int]:
    store = MessageStore(BrokerDisk(commitlog=bytearray(disk.commitlog)), CFG)
    return list(store.commitlog.ends)


def test_abort_file_lifecycle():
    """DefaultMessageStore.load reads ``lastExitOK = !isTempFileExist()``; start creates the abort file
    (createTempFile) and only shutdown deletes it: a fresh store and a cleanly stopped one recover normally, a
    killed one abnormally."""
    disk = BrokerDisk()
    assert MessageStore(disk, CFG).recovered_normally and disk.abort
    assert not MessageStore(disk, CFG).recovered_normally  # killed: the abort file is still there
    disk.stop()
    assert not disk.abort and MessageStore(disk, CFG).recovered_normally and disk.abort


def test_recover_normally_and_abnormally_differ_in_controller_mode():
    """CommitLog.recoverAbnormally rebuilds the consume queue only for messages ending at or before confirmOffset
    and clamps confirmOffset to the last of them; recoverNormally dispatches every message past the consume
    queue's end and clamps confirmOffset only to the scan's end. Both cut a torn tail."""
    disk = _disk([100, 100, 100], confirm=0)
    ends = _ends(disk)
    torn = encode("torn", b"y" * 80, len(disk.commitlog), 9)[:50]
    mid = ends[0] + 10  # a confirmOffset inside the second message
    for normally in (True, False):
        d = _disk([100, 100, 100], confirm=mid)
        d.commitlog += torn
        d.abort = not normally
        store = MessageStore(d, CFG)
        assert store.max_phy_offset == ends[-1], "the torn tail is cut"
        if normally:
            assert [x.offset + x.size for x in store.dispatched] == ends
            assert store.confirm_offset == mid  # below the scan's end: kept
        else:
            assert [x.offset + x.size for x in store.dispatched] == ends[:1]
            assert store.confirm_offset == ends[0]


def test_the_fix_bounds_recover_normally_by_confirm_offset():
    """fix-recover-normally-up-to-confirm: the normal recovery dispatches what the abnormal one would."""
    disk = _disk([100, 100, 100], confirm=0)
    ends = _ends(disk)
    d = _disk([100, 100, 100], confirm=ends[1])
    store = MessageStore(d, CFG, bugs=frozenset({B.FIX_RECOVER_NORMALLY_UP_TO_CONFIRM}))
    assert store.recovered_normally and [x.offset + x.size for x in store.dispatched] == ends[:2]


def test_clean_shutdown_flushes_the_log_and_the_checkpoint():
    """DefaultMessageStore.shutdown flushes the commit log (FlushCommitLogService on shutdown) and the
    checkpoint (StoreCheckpoint.flush) before it deletes the abort file."""
    disk = _disk([100, 200], confirm=50)
    disk.flushed = 10
    disk.checkpoint_confirm_flushed = 0
    disk.abort = True
    disk.stop()
    assert (disk.flushed, disk.checkpoint_confirm_flushed, disk.abort) == (len(disk.commitlog), 50, False)
    assert disk.power_loss() == 0


def test_lost_files_start_as_new():
    """A missing epochFileCheckpoint loads as an empty EpochFileCache; a missing checkpoint as a new
    StoreCheckpoint, confirmPhyOffset 0, which recovery then raises to the log's min offset."""
    disk = _disk([100], confirm=100)
    disk.epoch_file = [(1, 0)]
    disk.lose("epoch")
    disk.lose("checkpoint")
    assert disk.epoch_file is None and disk.checkpoint_confirm == disk.checkpoint_confirm_flushed == 0
    store = MessageStore(disk, CFG)
    assert store.confirm_offset == 0 and store.epoch_cache.entry_size() == 0


def test_truncation_leaves_the_bytes_in_the_file_until_overwritten():
    """MappedFileQueue.truncateDirtyFiles only moves the write, commit and flush positions: the bytes past the
    truncation point stay in the mapped file, new appends overwrite them, and the recovery scan
    (checkMessageAndReturnSize to the first invalid message) reads back whatever whole messages remain."""
    disk = _disk([100, 100, 100], confirm=0, keep_residue=True)
    ends = _ends(disk)
    store = MessageStore(disk, CFG)
    store.truncate_files(ends[0])
    assert store.max_phy_offset == ends[0] and disk.residue_at == ends[0] and disk.residue
    again = MessageStore(disk, CFG)  # killed right after the truncation
    assert again.max_phy_offset == ends[-1], "the cut messages come back"
    # overwritten by a message of another size: the old bytes no longer start a message there
    other = _disk([100, 100, 100], confirm=0, keep_residue=True)
    store = MessageStore(other, CFG)
    store.truncate_files(ends[0])
    store.commitlog.append_data(encode("new", b"z" * 130, ends[0], 7))
    assert MessageStore(other, CFG).max_phy_offset == ends[0] + len(encode("new", b"z" * 130, ends[0], 7))
    # the default store discards them
    plain = _disk([100, 100, 100], confirm=0)
    store = MessageStore(plain, CFG)
    store.truncate_files(ends[0])
    assert MessageStore(plain, CFG).max_phy_offset == ends[0]


def test_a_torn_record_over_the_zeros_of_its_file_is_cut_at_its_start():
    """kill -9 while a write is copied into the mapped file (crash-at torn-write) leaves a prefix of a record and,
    after it, the zeros of the file (MappedFile.init creates it at its full size; fix-truncate-clears-file clears what
    a truncation cuts). CommitLog.recoverAbnormally reads them with the prefix: checkMessageAndReturnSize fails the
    record (its body CRC, or its magic code and size when the cut falls in the header), the scan stops there and the
    file is truncated at the record's start: the prefix and the zeros are gone, the whole messages before stay."""
    for cut in (3, 6, 40, 90):
        disk = _disk([100, 100], confirm=0)
        start = len(disk.commitlog)
        record = encode("torn", b"y" * 80, start, 9)
        disk.commitlog += record[:cut]
        disk.residue, disk.residue_at = bytes(len(record) - cut), start + cut  # as Simulation._tear leaves them
        store = MessageStore(disk, CFG)
        assert store.max_phy_offset == start, cut
        assert not disk.residue and not store.commitlog.torn and len(store.commitlog.records) == 2


def test_a_torn_write_leaves_zeros_with_or_without_residue():
    """Simulation._tear: whatever [sim] file_residue and fix-truncate-clears-file say, the bytes after a torn prefix
    are the file's zeros (for the rest of the record) unless an earlier truncation left bytes there."""
    for bugs in (frozenset(), frozenset({B.FIX_TRUNCATE_CLEARS_FILE})):
        sim = Simulation(default_config("safe"), 1, max_steps=10, bugs=bugs, checker_factory=_NoChecks)
        disk = sim.disks["b1"]
        disk.commitlog += encode("k", b"x" * 100, 0, 1)
        size = len(disk.commitlog)
        sim._tear("b1", 0, size)
        cut = len(disk.commitlog)
        assert 0 < cut < size and disk.residue_at == cut and disk.residue == bytes(size - cut)


class _NoChecks:
    def __init__(self, world: Simulation) -> None:
        pass

    def after_step(self, observations: list[dict[str, Any]]) -> None:
        return None

    def check_at_run_end(self) -> None:
        return None


class _Acts:
    def __init__(self) -> None:
        self.acts: list[dict[str, Any]] = []

    def step(self, step: int, now: int, event: Any, obs: list[dict[str, Any]]) -> None:
        if event and event.get("ev") == "act":
            self.acts.append(event["act"])

    def finish(self, sim: Simulation) -> None:
        pass


def test_the_fault_generator_reaches_the_part_only_when_weighted():
    """stop-broker, lose-epoch-file and lose-checkpoint have weight 0 by default (every existing seed draws as
    before); given a weight they are drawn, and the run's recorded actions carry them."""
    weights = {"stop-broker": 2.0, "lose-epoch-file": 1.0, "lose-checkpoint": 1.0}
    rec = _Acts()
    cfg = config_from_dict({"faults": {"weights": weights}}, default_config("safe"))
    for seed in (1, 2, 3):
        Simulation(cfg, seed, max_steps=20_000, recorder=rec, checker_factory=_NoChecks).run()
    kinds = {(a["do"], a.get("file")) for a in rec.acts}
    assert {("stop", None), ("lose-file", "epoch"), ("lose-file", "checkpoint")} <= kinds
    rec = _Acts()
    Simulation(default_config("safe"), 3, max_steps=20_000, recorder=rec, checker_factory=_NoChecks).run()
    assert not {a["do"] for a in rec.acts} & {"stop", "lose-file"}


def test_a_lost_epoch_file_keeps_a_divergent_tail():
    """AutoSwitchHAClient.doTruncate: "If epochMap is empty, means the broker is a new replicas": a slave whose
    epoch file is gone but whose log is not truncates nothing, so a tail the new master does not have survives
    the handshake (HA-TRUNCATE-PREFIX). Real behaviour, reached only by losing the file: docs/fidelity.md."""
    cfg = config_from_dict({"faults": {"weights": {"lose-epoch-file": 3.0}}}, default_config("safe"))
    r = run(cfg, 11, 20_000, bugs=sorted(B.FIXES_ALL), record=False)
    assert r.violation is not None and r.violation.invariant == "HA-TRUNCATE-PREFIX", r.violation


def test_log_matching_reads_an_epoch_file_that_names_a_start_past_the_log():
    """A power loss cuts the log below the start of an epoch its epoch file still lists: that epoch (and the one
    before it) end at the log end for HA-LOG-MATCHING. Seed 22 of the power-loss profile crashed the checker."""
    r = run(default_config("power-loss"), 22, 20_000, bugs=sorted(B.FIXES_ALL), record=False)
    assert r.steps > 0  # no exception; power loss may lose acked bytes by design (SYNC-CONFIRM-BOUND's exception)
