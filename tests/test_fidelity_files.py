"""Issue 6 part 4, files with their boundaries (``[sim] file_boundaries``): the commit log as mapped files of
``mappedFileSizeCommitLog`` bytes, against ``CommitLog.DefaultAppendMessageCallback.doAppend`` (END_OF_FILE and
the BLANK_MAGIC_CODE filler), ``checkMessageAndReturnSize``, ``ReputMessageService.doReput`` (rollNextFile),
``recoverAbnormally`` and the HA transfer (``getCommitLogData``: a batch never crosses a file end).

The part's switch for it, ``append-spans-file`` (caught by STORE-NO-SPAN-FILE), has its scenario in
``impl/sim/scenarios.py`` (``tests/test_bugs.py``).
"""

from __future__ import annotations

import dataclasses

from rmqha.impl import bugs as B
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.world import Simulation
from rmqha.impl.store.commitlog import CommitLog, MessageStore
from rmqha.impl.store.disk import BrokerDisk
from rmqha.impl.store.message import BLANK_MAGIC_CODE, END_FILE_MIN_BLANK_LENGTH, check, encode_blank

FILE = 4096
STORE = dataclasses.replace(default_config("safe").store, mapped_file_size_commit_log=FILE)


def _fill(log: CommitLog, n: int, size: int = 300) -> list[tuple[int, int]]:
    return [log.append_message(f"k{i}", size, i) for i in range(n)]


def test_a_message_that_does_not_fit_goes_to_the_next_file_after_a_filler():
    """doAppend: when msgLen + END_FILE_MIN_BLANK_LENGTH > maxBlank, the rest of the file becomes a filler (its size
    and BLANK_MAGIC_CODE) and the message is written at the start of the next file."""
    log = CommitLog(BrokerDisk(), file_size=FILE)
    wrote = _fill(log, 30)
    for off, size in wrote:
        assert off // FILE == (off + size - 1) // FILE  # never across a file end
    starts = [off for off, _ in wrote]
    moved = [i for i in range(1, len(wrote)) if starts[i] != starts[i - 1] + wrote[i - 1][1]]
    assert moved and all(starts[i] % FILE == 0 for i in moved)
    gap_at = wrote[moved[0] - 1][0] + wrote[moved[0] - 1][1]
    assert FILE - gap_at % FILE >= END_FILE_MIN_BLANK_LENGTH or gap_at % FILE == 0
    size, key = check(log.data, gap_at, len(log.data))
    assert (size, key) == (FILE - gap_at % FILE, None)  # a whole filler: success, nothing to index
    assert len(log.records) == 30 and not log.spans


def test_check_reads_a_filler_and_rejects_a_broken_one():
    """checkMessageAndReturnSize: BLANK_MAGIC_CODE is a valid record of its size; a filler still arriving is
    incomplete; a size below its own header is not a record."""
    blank = encode_blank(100)
    assert check(blank, 0, 100) == (100, None)
    assert check(blank, 0, 60) == (0, None)
    assert int.from_bytes(blank[4:8], "big") == BLANK_MAGIC_CODE
    assert check(b"\x00\x00\x00\x04" + blank[4:8], 0, 8) == (-1, None)


def test_the_reput_rolls_over_a_filler_and_dispatches_every_message():
    """ReputMessageService.doReput: a filler (size 0, success) rolls the reput offset to the next file."""
    store = MessageStore(BrokerDisk(), STORE, controller_mode=False, file_boundaries=True)
    _fill(store.commitlog, 30)
    assert store.do_reput(True) == 30
    assert store.reput_from_offset == store.max_phy_offset


def test_recovery_keeps_fillers_between_files_and_drops_a_trailing_one():
    """recoverAbnormally: a filler moves the scan to the next file; a filler with no file after it ends the scan at
    its start (processOffset), so truncateDirtyFiles cuts it (a slave gets it again from its master)."""
    disk = BrokerDisk()
    log = CommitLog(disk, file_size=FILE)
    wrote = _fill(log, 30)
    full = bytes(disk.commitlog)
    store = MessageStore(BrokerDisk(commitlog=bytearray(full), flushed=len(full)), STORE, controller_mode=False,
                         file_boundaries=True)
    assert store.max_phy_offset == len(full) and len(store.commitlog.records) == 30
    last_end = wrote[-1][0] + wrote[-1][1]
    tail = encode_blank(FILE - last_end % FILE)  # a slave's batch may end at a file end, filler included
    store2 = MessageStore(BrokerDisk(commitlog=bytearray(full + tail), flushed=len(full) + len(tail)), STORE,
                          controller_mode=False, file_boundaries=True)
    assert store2.max_phy_offset == last_end


def test_the_slave_copies_fillers_byte_for_byte_and_batches_stop_at_file_ends():
    """AutoSwitchHAConnection.transferToSlave reads getCommitLogData, which stops at the end of a mapped file: a
    batch never crosses one, and the slave's log is the master's, fillers included, messages at the same offsets."""
    cfg = config_from_dict({"sim": {"file_boundaries": True}, "store": {"mappedFileSizeCommitLog": 16384},
                            "workload": {"produce_interval": 0, "consume_interval": 0}}, default_config("safe"))

    class Rec:
        def __init__(self) -> None:
            self.transfers: list[dict] = []

        def step(self, i, t, ev, obs) -> None:
            self.transfers += [o for o in obs if o["k"] == "ha.transfer"]

        def finish(self, sim) -> None:
            pass

    rec = Rec()
    sim = Simulation(cfg, 1, schedule=[{"t": 9000, "do": "produce", "count": 80, "size": 500}], max_time=20_000,
                     recorder=rec, bugs=frozenset(B.FIXES_ALL))
    assert sim.run() is None
    master = sim.believed_master()
    assert master is not None
    logs = {b: bytes(sim.broker(b).store.commitlog.data) for b in sim.brokers}  # type: ignore[union-attr]
    assert len(set(logs.values())) == 1 and len(logs[master]) > 2 * 16384
    buf, pos, fillers = logs[master], 0, 0
    while pos < len(buf):
        size, key = check(buf, pos, len(buf))
        assert size > 0
        fillers += key is None
        pos += size
    assert fillers >= 2
    assert rec.transfers and all(t["offset"] // 16384 == (t["offset"] + t["size"] - 1) // 16384
                                 for t in rec.transfers if t["size"] > 0)
