"""F-EPOCH-ENTRY-LOST-ON-RECONNECT's reproduction (``rmqha/real/repros/epoch_entry.py``): its parsing of RocketMQ's
store-log lines and the byte count of a new master's first frames, and (``-m slow``) the real runs: reproduced on
5.3.3 (the slave forgets the epoch at its reconnect and truncates the epoch's acknowledged messages at its next
handshake), not on 5.5.0 (``doTruncate`` keeps the epoch cache when the consistent point is the slave's end)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqha.real.repro import NOT_REPRODUCED, REPRODUCED
from rmqha.real.repros import REPROS
from rmqha.real.repros.epoch_entry import entries, first_frame_bytes, handshakes
from tests.real_repro import check_repro

# store.log lines as RocketMQ 5.3.3 writes them (AutoSwitchHAClient.HAClientReader.processReadResult, doTruncate)
HS = ("2026-11-28 08:19:55 INFO AutoSwitchHAClient - Receive handshake, masterMaxPosition 14592, "
      "masterEpochEntries:[EpochEntry{epoch=1, startOffset=0, endOffset=9223372036854775807}, "
      "EpochEntry{epoch=2, startOffset=4861, endOffset=9223372036854775807}], try truncate log")
LOCAL = ("2026-11-28 08:19:55 INFO AutoSwitchHAClient - local epoch entries is [EpochEntry{epoch=1, startOffset=0, "
         "endOffset=14592}]")
TRUNC = "2026-11-28 08:19:55 INFO AutoSwitchHAClient - truncateOffset is 4861"
DONE = "2026-11-28 08:19:55 INFO AutoSwitchHAClient - Truncate slave log to 4861 success, change to transfer state"


def test_registered() -> None:
    r = REPROS["F-EPOCH-ENTRY-LOST-ON-RECONNECT"]
    assert r.invariant.startswith("SYNC-SSS-HOLDS-ACKED")
    assert r.config["store"]["haSendHeartbeatInterval"] == 5000
    assert r.config["broker"]["controllerHeartBeatTimeoutMills"] == 10000
    assert set(r.expect) == {"5.3.3", "5.4.0", "5.5.0"}


def test_first_frames_are_the_handshake_and_one_transfer_header() -> None:
    # AutoSwitchHAConnection: HANDSHAKE_HEADER_SIZE 20, EPOCH_ENTRY_SIZE 12, TRANSFER_HEADER_SIZE 36
    assert first_frame_bytes(2) == 20 + 24 + 36 == 80
    assert first_frame_bytes(1) == 68


def test_handshakes_are_read_from_the_store_log() -> None:
    assert entries(HS) == [(1, 0), (2, 4861)]
    first = "2026-11-28 08:19:18 INFO AutoSwitchHAClient - Receive handshake, masterMaxPosition 4861, " \
            "masterEpochEntries:[EpochEntry{epoch=1, startOffset=0, endOffset=9223372036854775807}]"
    hs = handshakes([first, HS, "2026-11-28 08:19:55 INFO AutoSwitchHAClient - master epoch entries is [...]",
                     LOCAL, TRUNC, DONE])
    assert len(hs) == 2
    assert hs[0]["master_max"] == 4861 and hs[0]["truncate"] is None and hs[0]["local"] is None
    h = hs[1]
    assert h["master_max"] == 14592 and h["master"] == [(1, 0), (2, 4861)]
    assert h["local"] == [(1, 0)] and h["local_end"] == 14592 and h["truncate"] == 4861
    assert h["lines"][-1] == DONE
    assert handshakes([LOCAL, TRUNC]) == []  # lines before any handshake belong to none


@pytest.mark.slow
@pytest.mark.parametrize(("version", "want"), [("5.3.3", REPRODUCED), ("5.5.0", NOT_REPRODUCED)])
def test_real_epoch_entry_repro(tmp_path: Path, version: str, want: str) -> None:
    check_repro("F-EPOCH-ENTRY-LOST-ON-RECONNECT", version, want, tmp_path / "run")
