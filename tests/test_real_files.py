"""The parsers of real RocketMQ files (``rmqha/real/files.py``) on files real clusters wrote (``tests/data/real``).

The expected values are the brokers' and the controller's own view at the time (``mqadmin`` output kept in
``views/``, and what the producer's ``SendResult`` said), not just "it parses"."""

from __future__ import annotations

import os
import random
import re
import shutil
import struct
import time
from itertools import pairwise
from pathlib import Path

import pytest
from rmqha.impl.controller.jraft import RaftLiveTable, execute
from rmqha.impl.controller.replicas_info import ReplicasInfoManager, RequestEntry, entry_from_dict, event_from_dict

from rmqha.real import files as F
from rmqha.real import maven
from rmqha.real.files import RealFileError, StopReason

DATA = Path(__file__).resolve().parent / "data" / "real"
V533, V551 = DATA / "5.3.3", DATA / "5.5.1"

# -------------------------------------------------------------------------------- the brokers' own views


def view(version: Path, name: str) -> str:
    return (version / "views" / name).read_text()


def view_max_offset(version: Path, name: str) -> int:
    return int(re.search(r"commitLogMaxOffset\s*:\s*(\d+)", view(version, name)).group(1))


def view_epochs(text: str) -> dict[str, list[tuple[int, int, int]]]:
    """``getBrokerEpoch``: broker address -> [(epoch, start, end)] (the last end is the broker's max offset)."""
    out: dict[str, list[tuple[int, int, int]]] = {}
    addr = ""
    for line in text.splitlines():
        m = re.match(r"#brokerAddr\s+(\S+)", line)
        if m:
            addr = m.group(1)
            out[addr] = []
        m = re.match(r"#Epoch: EpochEntry\{epoch=(\d+), startOffset=(\d+), endOffset=(\d+)\}", line)
        if m:
            out[addr].append((int(m.group(1)), int(m.group(2)), int(m.group(3))))
    return out


def view_sss(text: str) -> dict[str, object]:
    """``getSyncStateSet``: master id, master epoch, SSS epoch, SSS, and every replica's id -> address."""
    def num(key: str) -> int:
        return int(re.search(rf"#{key}\s+(-?\d+)", text).group(1))

    replicas = {int(i): a for i, a in re.findall(r"brokerId=(\d+), brokerAddress='([^']+)'", text)}
    in_sync = {int(i) for i in re.findall(r"^InSyncReplica:\s+ReplicaIdentity\{brokerName='\w+', brokerId=(\d+)", text,
                                         re.M)}
    return {"master": num("MasterBrokerId"), "masterEpoch": num("MasterEpoch"),
            "syncStateSetEpoch": num("SyncStateSetEpoch"), "syncStateSet": sorted(in_sync), "replicas": replicas}


def view_queue_max(version: Path) -> dict[int, int]:
    text = view(version, "final_topicstatus.txt")
    return {int(q): int(mx) for q, mx in re.findall(r"^bs1\s+(\d+)\s+\d+\s+(\d+)", text, re.M)}


def kit_state(rim: ReplicasInfoManager) -> dict[str, object]:
    snap = rim.snapshot()["bs1"]
    return {"master": snap["master"], "masterEpoch": snap["masterEpoch"],
            "syncStateSetEpoch": snap["syncStateSetEpoch"], "syncStateSet": snap["syncStateSet"],
            "replicas": {int(i): v[0] for i, v in snap["replicas"].items()}}


# ------------------------------------------------------------------------------------------- commit log

# What the producer's SendResult said: key -> (queue id, queue offset, offsetMsgId).
SENT_533 = {
    "key-95": (1, 23, "7F0000010000A2F8000000000000A63E"),
    "key-99": (1, 24, "7F0000010000A2F8000000000000AD32"),
    "key-127": (2, 31, "7F0000010000A302000000000000DDF9"),
    "key-129": (0, 32, "7F0000010000A302000000000000E175"),
    "key-148": (1, 36, "7F0000010000A30C000000000000FB87"),
    "key-149": (2, 36, "7F0000010000A30C000000000000FCE1"),
}
SENT_551 = {
    "key-38": (0, 9, "7F0000010000A35C0000000000003437"),
    "key-39": (1, 9, "7F0000010000A35C0000000000003590"),
    "key-53": (0, 13, "7F0000010000A366000000000000496F"),
    "key-54": (1, 13, "7F0000010000A3660000000000004AC8"),
    "key-64": (2, 15, "7F0000010000A3700000000000005842"),
}
UNIQ_533 = {"key-99": "FD000000000000000000000000000002376830946E097D523A270063",
            "key-129": "FD0000000000000000000000000000023E6430946E097D534E66001D",
            "key-149": "FD00000000000000000000000000000248E430946E097D54DF5F0013"}

CASES = [
    # version, messages, max offset, blanks, per-epoch masters (start -> store host), sent
    (V533, 150, 65083, [(32475, 293)], {0: "127.0.0.1:41720", 44783: "127.0.0.1:41730", 58163: "127.0.0.1:41740"},
     SENT_533),
    (V551, 65, 22939, [(7925, 267), (16127, 257)],
     {0: "127.0.0.1:41820", 14057: "127.0.0.1:41830", 19489: "127.0.0.1:41840"}, SENT_551),
]


@pytest.mark.parametrize(("version", "count", "max_offset", "blanks", "masters", "sent"), CASES,
                         ids=["5.3.3", "5.5.1"])
def test_commitlog_matches_the_brokers_view(version, count, max_offset, blanks, masters, sent):
    cl = F.read_commitlog(version / "b3/store/commitlog")
    # every broker reported this max offset (brokerStatus), and it is where the data ends
    for name in (version / "views").glob("final_status_*.txt"):
        assert view_max_offset(version, name.name) == max_offset
    assert cl.end_offset == cl.last_message_end == max_offset
    assert cl.stop.reason is StopReason.ZEROS and cl.stop.offset == max_offset
    assert [(b.physical_offset, b.size) for b in cl.blanks] == blanks
    for b in cl.blanks:  # a filler runs to the end of its mapped file
        assert (b.physical_offset + b.size) % cl.mapped_file_size == 0
    assert len(cl.messages) == count
    assert [m.keys for m in cl.messages] == [(f"key-{i}",) for i in range(count)]
    assert all(m.topic == "TopicA" and m.body_crc_ok and m.magic_version == 1 for m in cl.messages)
    assert all(m.body.startswith(f"body-{i}-".encode()) for i, m in enumerate(cl.messages))
    assert all(m.tags == f"tag{i % 3}" and m.properties["CLUSTER"] == "c1" for i, m in enumerate(cl.messages))
    # messages and fillers tile the log from 0 to its end
    spans = sorted([(m.physical_offset, m.end_offset) for m in cl.messages]
                   + [(b.physical_offset, b.physical_offset + b.size) for b in cl.blanks])
    assert spans[0][0] == 0 and spans[-1][1] == max_offset
    assert all(a[1] == b[0] for a, b in pairwise(spans))
    by_key = {m.keys[0]: m for m in cl.messages}
    for key, (qid, qoff, msg_id) in sent.items():
        m = by_key[key]
        assert (m.queue_id, m.queue_offset, m.offset_msg_id) == (qid, qoff, msg_id)
        assert cl.message_at(m.physical_offset) is m
    # each epoch's messages were stored by that epoch's master
    starts = sorted(masters)
    for m in cl.messages:
        start = max(s for s in starts if s <= m.physical_offset)
        assert m.store_host == masters[start]
    # per queue, queue offsets run 0, 1, 2, ... and end at topicStatus' max offset
    per_queue: dict[int, list[int]] = {}
    for m in cl.messages:
        per_queue.setdefault(m.queue_id, []).append(m.queue_offset)
    assert {q: len(v) for q, v in per_queue.items()} == view_queue_max(version)
    assert all(v == list(range(len(v))) for v in per_queue.values())


def test_commitlog_533_uniq_keys_and_details():
    cl = F.read_commitlog(V533 / "b3/store/commitlog")
    by_key = {m.keys[0]: m for m in cl.messages}
    for key, uniq in UNIQ_533.items():
        assert by_key[key].uniq_key == uniq
    m = by_key["key-0"]
    assert (m.physical_offset, m.size, m.sys_flag, m.flag, m.reconsume_times) == (0, 444, 0, 0, 0)
    assert m.born_host.startswith("127.0.0.1:") and m.store_timestamp >= m.born_timestamp
    assert m.prepared_transaction_offset == 0 and m.transaction_type == 0
    assert len(m.body) == 200 and set(m.properties) >= {"KEYS", "TAGS", "UNIQ_KEY", "WAIT"}
    assert cl.unread_files == 0 and cl.min_offset == 0 and len(cl.files) == 2


def test_consume_queues_index_the_commit_log():
    for version in (V533, V551):
        cl = F.read_commitlog(version / "b3/store/commitlog")
        queues = F.read_consume_queues(version / "b3/store", "TopicA")
        assert F.list_consume_queue_topics(version / "b3/store") == ["TopicA"]
        assert {q: len(u) for q, u in queues.items()} == view_queue_max(version)
        for qid, units in queues.items():
            assert [u.queue_offset for u in units] == list(range(len(units)))
            for u in units:
                m = cl.message_at(u.commitlog_offset)
                assert m is not None and (m.size, m.queue_id, m.queue_offset) == (u.size, qid, u.queue_offset)
                assert u.tags_code == F.java_string_hash(m.tags)
        one = F.read_consume_queue(version / "b3/store/consumequeue/TopicA/0")
        assert one.stop.reason is StopReason.ZEROS and one.max_queue_offset == len(queues[0])
        assert one.min_queue_offset == 0


# ------------------------------------------------------------------------------------------ epoch files


def test_epoch_files_match_get_broker_epoch():
    for version, ports in ((V533, (41720, 41730, 41740)), (V551, (41820, 41830, 41840))):
        final = view_epochs(view(version, "final_epoch.txt"))
        for n, port in enumerate(ports, 1):
            ef = F.read_epoch_file(version / f"b{n}/store/epochFileCheckpoint")
            assert ef.valid and ef.checksum_ok and ef.count_ok and ef.declared_crc != 0
            seen = final[f"127.0.0.1:{port}"]
            assert ef.pairs() == [(e, s) for e, s, _ in seen]
            # the file's ends are the next starts; the broker shows its max offset for the open last entry
            assert [x.end_offset for x in ef.entries[:-1]] == [end for _, _, end in seen[:-1]]
            assert ef.entries[-1].end_offset is None
            assert F.load_epoch_file(version / f"b{n}/store") == ef
    # the copy of the killed master: one epoch, as getBrokerEpoch said before the kill
    for version in (V533, V551):
        p1 = view_epochs(view(version, "p1_epoch.txt"))
        killed = F.load_epoch_file(version / "b1-killed/store")
        assert killed.pairs() == [(1, 0)] and all(v[0][:2] == (1, 0) for v in p1.values())


def test_epoch_file_533_b1_missed_epoch_3():
    """Observed, not a parser property: in the 5.3.3 run b1 (a slave after its restart) kept its HA connection to
    b2 after b3 became master (b2's HA port came from the nameserver before b2 re-registered as a slave), so it
    replicated epoch 3's bytes from a slave and its epoch file still ends at epoch 2; the broker itself reports the
    same (getBrokerEpoch), and its commit log holds what b3 holds."""
    b1 = F.read_epoch_file(V533 / "b1/store/epochFileCheckpoint")
    b3 = F.read_epoch_file(V533 / "b3/store/epochFileCheckpoint")
    assert b1.pairs() == [(1, 0), (2, 44783)] and b3.pairs() == [(1, 0), (2, 44783), (3, 58163)]
    assert view_epochs(view(V533, "final_epoch.txt"))["127.0.0.1:41720"] == [(1, 0, 44783), (2, 44783, 65083)]
    assert F.read_store_checkpoint(V533 / "b1/store").confirm_phy_offset == 65083
    sss = view_sss(view(V533, "final_sss.txt"))
    assert sss["syncStateSet"] == [2, 3] and sss["master"] == 3  # b1 is alive but out of the SSS
    excerpt = view(V533, "b1_ha_log_excerpt.txt")
    assert "masterBrokerId=3" in excerpt and "connect to master 127.0.0.1:41732" in excerpt


def test_epoch_bak_is_the_previous_version():
    for version in (V533, V551):
        main = F.read_epoch_file(version / "b3/store/epochFileCheckpoint")
        bak = F.read_epoch_file(version / "b3/store/epochFileCheckpoint.bak")
        assert bak.valid and bak.pairs() == main.pairs()[:2]


# --------------------------------------------------------------------------- checkpoint, identity, abort


def test_checkpoints_identity_and_abort():
    for version, end, p1_end in ((V533, 65083, 44783), (V551, 22939, 14057)):
        cl = F.read_commitlog(version / "b3/store/commitlog")
        for n in (1, 2, 3):
            store = F.read_broker_store(version / f"b{n}/store")
            assert store.identity == F.BrokerIdentity("c1", "bs1", n)
            assert store.temp_identity is None and not store.abort
            assert store.checkpoint.confirm_phy_offset == end and store.checkpoint.master_flushed_offset == 0
        # the final master's physicMsgTimestamp is its last message's store time
        ck = F.read_store_checkpoint(version / "b3/store/checkpoint")
        assert ck.physic_msg_timestamp == cl.messages[-1].store_timestamp
        # addresses: the SSS view lists id -> address; brokerN listened on the Nth port
        ports = view_sss(view(version, "final_sss.txt"))["replicas"]
        assert sorted(ports) == [1, 2, 3]
        killed = F.read_broker_store(version / "b1-killed/store")
        assert killed.abort and killed.abort_pid > 0 and killed.identity.broker_id == 1
        assert killed.checkpoint.confirm_phy_offset == p1_end == view_max_offset(version, "p1_status_" +
                                                                                  ports[1].split(":")[1] + ".txt")
        assert killed.commitlog is None


def test_temp_identity(tmp_path):
    p = tmp_path / "brokerIdentity-temp"
    p.write_text("c1#bs1#2#127.0.0.1:41730;1795593693745")
    t = F.read_temp_broker_identity(p)
    assert (t.broker_id, t.check_address, t.check_timestamp) == (2, "127.0.0.1:41730", 1795593693745)
    assert F.read_temp_broker_identity(tmp_path).register_check_code.endswith(";1795593693745")


# ----------------------------------------------------------------------------------------- DLedger log

EVENTS_533 = ["empty", "ApplyBrokerId", "ElectMaster", "ApplyBrokerId", "ApplyBrokerId", "AlterSyncStateSet",
              "AlterSyncStateSet", "ElectMaster", "AlterSyncStateSet", "AlterSyncStateSet", "ElectMaster",
              "CleanBrokerData", "AlterSyncStateSet", "ElectMaster", "ElectMaster", "ElectMaster"]
EVENTS_551 = EVENTS_533[:11] + ["AlterSyncStateSet", "AlterSyncStateSet", "CleanBrokerData"] + ["ElectMaster"] * 4


def replay(entries: list[F.ControllerEntry], upto: int) -> ReplicasInfoManager:
    rim = ReplicasInfoManager()
    for e in entries:
        if e.index > upto:
            break
        for ev in e.events:
            rim.apply_event(event_from_dict(ev.to_kit()))
    return rim


@pytest.mark.parametrize(("version", "kinds", "p1_at", "final_at", "end_epoch"), [(V533, EVENTS_533, 6, 12, 6),
                                                                                   (V551, EVENTS_551, 6, 12, 7)],
                         ids=["5.3.3", "5.5.1"])
def test_dledger_log_replays_to_the_controllers_view(version, kinds, p1_at, final_at, end_epoch):
    log = F.read_dledger_log(version / "ctl")
    assert log.directory.name == "dledger-n0" and log.stop.reason is StopReason.ZEROS
    assert [e.index for e in log.entries] == list(range(len(kinds)))
    assert {e.term for e in log.entries} == {0} and log.current_term == 0 and log.vote_for == "n0"
    assert log.committed_index == log.checkpoint.end_index == len(kinds) - 1 == log.ledger_end_index
    assert log.committed_source == "checkpoint" and log.committed_entries() == log.entries
    assert [e.events[0].to_kit()["type"] if e.events else "empty" for e in log.entries] == kinds
    assert all(len(e.events) <= 1 and e.chain_crc == 0 and e.body_crc == 0 for e in log.entries)
    assert all(e.pos == (0 if i == 0 else log.entries[i - 1].pos + log.entries[i - 1].size)
               for i, e in enumerate(log.entries))
    # the kit's controller state machine, fed the real events, reaches what the controller said
    assert kit_state(replay(log.entries, p1_at)) == view_sss(view(version, "p1_sss.txt"))
    assert kit_state(replay(log.entries, final_at)) == view_sss(view(version, "final_sss.txt"))
    # at the stop the masters went, and the controller's scan logged a not-elected event three times
    end = replay(log.entries, log.ledger_end_index).snapshot()["bs1"]
    assert end["master"] is None and end["masterEpoch"] == end_epoch
    assert [e.events[0].new_master_elected for e in log.entries[-3:]] == [False] * 3
    for e in log.entries:
        for ev in e.events:
            assert event_from_dict(ev.to_kit()).to_dict() == ev.to_kit()
    assert len(log.kit_events()) == len(kinds) - 1


def test_dledger_event_fields_533():
    log = F.read_dledger_log(V533 / "ctl/dledger-n0")
    ev = log.entries[1].events[0]
    assert ev == F.ApplyBrokerIdEvent("c1", "bs1", "127.0.0.1:41720", 1, "127.0.0.1:41720;1795593685488")
    assert log.entries[2].events[0] == F.ElectMasterEvent("bs1", True, 1)
    assert log.entries[6].events[0] == F.AlterSyncStateSetEvent("bs1", frozenset({1, 2, 3}))
    assert log.entries[11].events[0] == F.CleanBrokerDataEvent("bs1", frozenset({99}))
    assert log.entries[13].events[0] == F.ElectMasterEvent("bs1", False, None)
    assert log.entries[13].events[0].to_kit() == {"type": "ElectMaster", "newMasterElected": False,
                                                  "brokerName": "bs1", "newMasterBrokerId": None}
    assert F.read_dledger_log(V533 / "ctl/dledger-n0/data").entries == log.entries
    assert F.read_dledger_checkpoint(V533 / "ctl/dledger-n0") == F.DLedgerCheckpoint(15, 15)


def test_list_event_layout_and_update_address():
    bodies = [e.body for e in F.read_dledger_log(V533 / "ctl").entries[1:3]]
    listed = b"".join(b[:2] + struct.pack(">i", len(b) - 2) + b[2:] for b in bodies)
    events = F.decode_controller_events(listed)
    assert [type(e).__name__ for e in events] == ["ApplyBrokerIdEvent", "ElectMasterEvent"]
    upd = b"\x00\x06" + b'{"brokerAddress":"127.0.0.1:41799","brokerId":2,"brokerName":"bs1","clusterName":"c1"}'
    (ev,) = F.decode_controller_events(upd)
    assert ev.to_kit() == {"type": "UpdateBrokerAddress", "clusterName": "c1", "brokerName": "bs1",
                           "brokerAddress": "127.0.0.1:41799", "brokerId": 2}
    (clean_all,) = F.decode_controller_events(b'\x00\x05{"brokerName":"bs1"}')
    assert clean_all.broker_id_set_to_clean is None
    (unknown,) = F.decode_controller_events(b'\x00\x04{"x":1}')
    with pytest.raises(RealFileError):
        unknown.to_kit()


# --------------------------------------------------------------------------------------------- JRaft


def jraft_replay(entries: list[F.JraftEntry], before: int) -> ReplicasInfoManager:
    """The kit's JRaft state machine over the real requests, entries with index < ``before``."""
    rim, live = ReplicasInfoManager(), RaftLiveTable()
    for e in entries:
        if e.index >= before:
            break
        if e.request is not None and e.request.in_kit:
            req = entry_from_dict(e.request.to_kit())
            assert isinstance(req, RequestEntry)
            execute(rim, live, req, now=req.stamp)
    return rim


def test_jraft_dump_533_replays_to_the_controllers_view():
    entries = F.read_jraft_dump(V533 / "jraft/jraft-dump.jsonl.gz")
    assert [e.index for e in entries] == list(range(1, len(entries) + 1)) and len(entries) == 549
    assert entries[0].type == "ENTRY_TYPE_CONFIGURATION" and entries[0].peers == ("127.0.0.1:41912",)
    assert all(e.type == "ENTRY_TYPE_DATA" and e.request is not None for e in entries[1:])
    ops = [e.request.op for e in entries[1:]]
    # 5.3.3's RaftBrokerHeartBeatManager never proposes its scan (apache/rocketmq#9717, fixed after 5.3.3)
    assert "checkNotActive" not in ops and ops.count("heartbeat") == 423
    elect = entries[4].request
    assert (elect.name, elect.ext_fields["brokerId"], elect.ext_fields["designateElect"]) == (
        "CONTROLLER_ELECT_MASTER", "1", "false")
    assert elect.to_kit()["stamp"] == int(elect.ext_fields["invokeTime"])
    first_stop_close = next(e.index for e in entries[400:] if e.request.op == "closeChannel")
    assert first_stop_close == 530
    assert kit_state(jraft_replay(entries, 59)) == view_sss(view(V533 / "jraft", "p1_sss.txt"))
    assert kit_state(jraft_replay(entries, 302)) == view_sss(view(V533 / "jraft", "p2_sss.txt"))
    assert kit_state(jraft_replay(entries, first_stop_close)) == view_sss(view(V533 / "jraft", "final_sss.txt"))


def test_jraft_dump_551_replays_to_the_controllers_view():
    entries = F.read_jraft_dump(V551 / "jraft/jraft-dump.jsonl.gz")
    ops = [e.request.op for e in entries if e.request]
    assert ops.count("checkNotActive") == 19  # the scan runs in 5.5.x
    scan = next(e.request for e in entries if e.request and e.request.op == "checkNotActive")
    assert scan.to_kit() == {"type": "Request", "op": "checkNotActive", "args": {},
                             "stamp": int(scan.ext_fields["checkTimeMillis"])}
    # two brokers raced for id 2 (both asked getNextBrokerId first); the second CAS fails when it applies
    applies = [(e.index, e.request.to_kit()["args"]) for e in entries if e.request and e.request.op == "applyBrokerId"]
    assert [(i, a["appliedBrokerId"], a["registerCheckCode"].split(";")[0]) for i, a in applies] == [
        (3, 1, "127.0.0.1:41960"), (31, 2, "127.0.0.1:41970"), (32, 2, "127.0.0.1:41980"), (37, 3, "127.0.0.1:41980")]
    rim, live = ReplicasInfoManager(), RaftLiveTable()
    codes = {}
    for e in entries[:40]:
        if e.request is not None and e.request.in_kit:
            req = entry_from_dict(e.request.to_kit())
            res = execute(rim, live, req, now=req.stamp)
            codes[e.index] = None if res is None else res.code
    assert (codes[31], codes[32], codes[37]) == (0, 2014, 0)  # CONTROLLER_BROKER_ID_INVALID
    first_stop_close = 276
    assert entries[first_stop_close - 1].request.op == "closeChannel"
    assert kit_state(jraft_replay(entries, 63)) == view_sss(view(V551 / "jraft", "p1_sss.txt"))
    assert kit_state(jraft_replay(entries, first_stop_close)) == view_sss(view(V551 / "jraft", "final_sss.txt"))


def test_jraft_heartbeat_and_live_info_requests():
    entries = F.read_jraft_dump(V533 / "jraft/jraft-dump.jsonl.gz")
    hb = next(e.request for e in entries if e.request and e.request.op == "heartbeat")
    kit = hb.to_kit()
    assert kit["args"]["clusterName"] == "c1" and kit["args"]["brokerId"] == 1
    assert kit["args"]["heartbeatTimeoutMills"] == 10000 and kit["stamp"] == int(hb.ext_fields["lastUpdateTimestamp"])
    live = next(e.request for e in entries if e.request and e.request.op == "getBrokerLiveInfo")
    assert not live.in_kit and live.to_kit()["op"] == "getBrokerLiveInfo"
    sync = next(e.request for e in entries if e.request and e.request.op == "alterSyncStateSet")
    assert sync.body_json() == {"syncStateSet": [1, 2], "syncStateSetEpoch": 1}


def test_jraft_dump_command():
    cmd = F.jraft_dump_command("java", "/cp/a.jar", "/classes", "/store")
    assert cmd == ["java", "-cp", "/classes:/cp/a.jar", "JraftDump", "/store/log"]


def test_jraft_dump_compiles():
    """``JraftDump.java`` compiles against RocketMQ's classpath: ``rmqha real fetch`` compiles every source of
    ``rmqha/real/java`` with javac against the resolved jars (run on a real log by hand: both versions)."""
    install = maven.cached(maven.PINNED)
    if install is None:
        why = f"RocketMQ {maven.PINNED} is not fetched (rmqha real fetch)"
        if os.environ.get("RMQHA_REQUIRE_REAL"):
            pytest.fail(why)
        pytest.skip(why)
    assert (install.tool_classes / "JraftDump.class").is_file()


# ------------------------------------------------------------------------------------ malformed input


def copy_commitlog(tmp_path: Path) -> Path:
    d = tmp_path / "commitlog"
    shutil.copytree(V551 / "b3/store/commitlog", d)
    return d


def test_commitlog_torn_tail(tmp_path):
    d = copy_commitlog(tmp_path)
    last = d / "00000000000000016384"
    last.write_bytes(last.read_bytes()[:22594 - 16384 + 100])  # cut inside key-64
    cl = F.read_commitlog(d)
    assert cl.stop.reason is StopReason.TORN and cl.stop.offset == 22594 and cl.end_offset == 22594
    assert len(cl.messages) == 64
    with pytest.raises(RealFileError, match="torn"):
        F.read_commitlog(d, strict=True)


def test_commitlog_bad_magic_bad_record_bad_crc(tmp_path):
    d = copy_commitlog(tmp_path)
    first = d / "00000000000000000000"
    data = bytearray(first.read_bytes())
    good = F.read_commitlog(d).messages
    third = good[2].physical_offset
    data[third + 4:third + 8] = b"\x12\x34\x56\x78"
    first.write_bytes(bytes(data))
    cl = F.read_commitlog(d)
    assert cl.stop.reason is StopReason.BAD_MAGIC and cl.stop.offset == third and len(cl.messages) == 2
    assert cl.unread_files == 2
    with pytest.raises(RealFileError, match="bad-magic"):
        F.read_commitlog(d, strict=True)
    # a physical offset field that is not the record's position
    data = bytearray((V551 / "b3/store/commitlog/00000000000000000000").read_bytes())
    data[good[1].physical_offset + 28:good[1].physical_offset + 36] = struct.pack(">q", 7)
    first.write_bytes(bytes(data))
    cl = F.read_commitlog(d)
    assert cl.stop.reason is StopReason.BAD_RECORD and len(cl.messages) == 1
    # a size that overruns the file, and one that contradicts the fields
    for total in (100000, good[0].size + 1):
        data = bytearray((V551 / "b3/store/commitlog/00000000000000000000").read_bytes())
        data[0:4] = struct.pack(">i", total)
        first.write_bytes(bytes(data))
        assert F.read_commitlog(d).stop.reason is StopReason.BAD_RECORD
    # a flipped body byte: parsing goes on, the CRC says so
    data = bytearray((V551 / "b3/store/commitlog/00000000000000000000").read_bytes())
    data[good[0].physical_offset + 90] ^= 0xFF  # inside the body (it starts at 88 for IPv4 hosts)
    first.write_bytes(bytes(data))
    cl = F.read_commitlog(d)
    assert len(cl.messages) == 65 and [m.body_crc_ok for m in cl.messages[:2]] == [False, True]


def test_commitlog_layout_errors(tmp_path):
    with pytest.raises(RealFileError, match="no commit log directory"):
        F.read_commitlog(tmp_path / "nope")
    d = copy_commitlog(tmp_path)
    (d / "garbage.txt").write_text("x")
    with pytest.raises(RealFileError, match="not a commit log file name"):
        F.read_commitlog(d)
    (d / "garbage.txt").unlink()
    (d / "00000000000000008192").write_bytes(b"\x00" * 100)
    with pytest.raises(RealFileError, match="expected the mapped size"):
        F.read_commitlog(d)
    (d / "00000000000000008192").unlink()
    with pytest.raises(RealFileError, match="expected the mapped size 16384"):
        F.read_commitlog(d)
    empty = tmp_path / "empty"
    empty.mkdir()
    cl = F.read_commitlog(empty)
    assert cl.messages == [] and cl.stop.reason is StopReason.END_OF_DATA


def test_commitlog_large_preallocated_file_is_fast(tmp_path):
    d = tmp_path / "commitlog"
    d.mkdir()
    real = (V533 / "b3/store/commitlog/00000000000000000000").read_bytes()
    size = 64 << 20
    with open(d / "00000000000000000000", "wb") as fh:
        fh.write(real[:32475])  # the messages of the first file, then 64 MiB of (sparse) zeros
        fh.truncate(size)
    t0 = time.perf_counter()
    cl = F.read_commitlog(d)
    assert time.perf_counter() - t0 < 2.0
    assert cl.mapped_file_size == size and len(cl.messages) == 73 and cl.stop.reason is StopReason.ZEROS
    assert cl.end_offset == 32475


def test_epoch_file_malformed(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(V533 / "b3/store", root, ignore=shutil.ignore_patterns("commitlog", "consumequeue"))
    main = root / "epochFileCheckpoint"
    # a wrong checksum: the file does not hold, the broker loads .bak
    main.write_text(main.read_text().replace("1339343775", "1339343776"))
    bad = F.read_epoch_file(main)
    assert not bad.checksum_ok and not bad.valid and bad.count_ok
    assert F.load_epoch_file(root).path.name == "epochFileCheckpoint.bak"
    # a count that does not match
    main.write_text("4\n1339343775\n1-0\n2-44783\n3-58163\n")
    assert not F.read_epoch_file(main).count_ok and F.read_epoch_file(main).checksum_ok
    # a checksum of 0 is not checked; a line that is not a-b is skipped but counted in the CRC
    main.write_text("2\n0\n1-0\nx\n2-44783\n")
    ef = F.read_epoch_file(main)
    assert ef.valid and ef.pairs() == [(1, 0), (2, 44783)] and ef.skipped_lines == ("x",)
    for text in ("", "2\n", "two\n0\n", "1\n0\nx-1\n", "1\n0\n1-99999999999999999999\n"):
        main.write_text(text)
        with pytest.raises(RealFileError):
            F.read_epoch_file(main)
    main.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(RealFileError, match="not UTF-8"):
        F.read_epoch_file(main)
    assert F.load_epoch_file(root).path.name == "epochFileCheckpoint.bak"
    (root / "epochFileCheckpoint.bak").write_text("1\n5\n1-0\n")
    with pytest.raises(RealFileError, match="backup epoch file"):
        F.load_epoch_file(root)
    (root / "epochFileCheckpoint.bak").unlink()
    assert F.load_epoch_file(root) is None  # the broker starts with an empty cache
    main.unlink()
    assert F.load_epoch_file(root) is None


def test_small_files_malformed(tmp_path):
    p = tmp_path / "checkpoint"
    p.write_bytes((V533 / "b3/store/checkpoint").read_bytes()[:39])
    with pytest.raises(RealFileError, match="needs 40"):
        F.read_store_checkpoint(p)
    with pytest.raises(RealFileError, match="no store checkpoint"):
        F.read_store_checkpoint(tmp_path / "nope")
    ident = tmp_path / "brokerIdentity"
    for text in ("c1#bs1", "c1#bs1#one", "#bs1#1", ""):
        ident.write_text(text)
        with pytest.raises(RealFileError):
            F.read_broker_identity(ident)
    ck = tmp_path / "dledger-checkpoint"
    ck.write_text("committedIndex=abc\n")
    with pytest.raises(RealFileError, match="not an integer"):
        F.read_dledger_checkpoint(ck)


def copy_dledger(tmp_path: Path, version: Path = V533) -> Path:
    d = tmp_path / "dledger-n0"
    shutil.copytree(version / "ctl/dledger-n0", d)
    return d


def test_dledger_malformed(tmp_path):
    d = copy_dledger(tmp_path)
    f = d / "data/00000000000000000000"
    raw = f.read_bytes()
    entries = F.read_dledger_log(d).entries
    f.write_bytes(raw[:entries[5].pos + 60])
    log = F.read_dledger_log(d)
    assert log.stop.reason is StopReason.TORN and [e.index for e in log.entries] == [0, 1, 2, 3, 4]
    with pytest.raises(RealFileError, match="torn"):
        F.read_dledger_log(d, strict=True)
    for pos, patch, reason in ((entries[3].pos, struct.pack(">i", 7), StopReason.BAD_MAGIC),
                               (entries[3].pos + 24, struct.pack(">q", 5), StopReason.BAD_RECORD),  # pos field
                               (entries[3].pos + 8, struct.pack(">q", 9), StopReason.BAD_RECORD),  # index gap
                               (entries[3].pos + 4, struct.pack(">i", 30), StopReason.BAD_RECORD)):
        data = bytearray(raw)
        data[pos:pos + len(patch)] = patch
        f.write_bytes(bytes(data))
        log = F.read_dledger_log(d)
        assert log.stop.reason is reason and len(log.entries) == 3 and log.stop.offset == entries[3].pos
    data = bytearray(raw)
    data[entries[2].pos + 48 + 2] = ord("[")  # the event's JSON no longer parses as an object
    f.write_bytes(bytes(data))
    with pytest.raises(RealFileError, match="entry 2"):
        F.read_dledger_log(d)
    with pytest.raises(RealFileError, match="no DLedger store"):
        F.read_dledger_log(tmp_path / "nowhere")


def test_dledger_blank_filler_rolls_to_the_next_file(tmp_path):
    """A 2-file log made from the real entries: the first file ends with DLedger's blank (-1, remaining)."""
    real = F.read_dledger_log(V533 / "ctl").entries
    size = 1024
    data = tmp_path / "dledger-n0/data"
    data.mkdir(parents=True)
    files: list[bytearray] = [bytearray()]
    for e in real:
        raw = bytearray((V533 / "ctl/dledger-n0/data/00000000000000000000").read_bytes()[e.pos:e.pos + e.size])
        if len(files[-1]) + e.size + 8 > size:
            rest = size - len(files[-1])
            files[-1] += struct.pack(">ii", -1, rest) + b"\x00" * (rest - 8)
            files.append(bytearray())
        raw[24:32] = struct.pack(">q", (len(files) - 1) * size + len(files[-1]))
        files[-1] += raw
    for n, content in enumerate(files):
        (data / f"{n * size:020d}").write_bytes(bytes(content) + b"\x00" * (size - len(content)))
    log = F.read_dledger_log(tmp_path / "dledger-n0")
    assert len(files) == 3 and [e.index for e in log.entries] == list(range(16))
    assert [e.events for e in log.entries] == [e.events for e in real]
    assert log.checkpoint is None and log.committed_source == "ledger-end" and log.committed_entries() == log.entries


def test_jraft_dump_malformed(tmp_path):
    good = '{"index":1,"term":1,"type":"ENTRY_TYPE_NO_OP","data":"","peers":[]}'
    assert F.parse_jraft_dump(good + "\n\n")[0].request is None
    for text, msg in (("not json", "not JSON"), ("[1]", "not a JSON object"), ('{"index":1}', "lacks"),
                      ('{"index":1,"term":1,"type":"ENTRY_TYPE_DATA","data":"@@"}', "base64"),
                      ('{"index":1,"term":1,"type":"ENTRY_TYPE_DATA","data":"AAAAAQ=="}', "remoting frame")):
        with pytest.raises(RealFileError, match=msg):
            F.parse_jraft_dump(text)
    gz = tmp_path / "dump.jsonl.gz"
    gz.write_bytes(b"\x1f\x8b garbage")
    with pytest.raises(RealFileError, match="gzip"):
        F.read_jraft_dump(gz)


def test_random_corruption_raises_only_real_file_errors(tmp_path):
    """Flipped bytes and cut files anywhere: a result or a RealFileError, never another exception."""
    rng = random.Random(20251125)
    sources = {
        "commitlog": V551 / "b3/store/commitlog",
        "dledger": V533 / "ctl/dledger-n0",
        "epoch": V533 / "b3/store/epochFileCheckpoint",
        "ident": V533 / "b3/store/brokerIdentity",
        "cq": V533 / "b3/store/consumequeue/TopicA/0",
        "dump": V551 / "jraft/jraft-dump.jsonl.gz",
    }
    readers = {
        "commitlog": lambda p: F.read_commitlog(p, strict=rng.random() < 0.5),
        "dledger": lambda p: F.read_dledger_log(p, strict=rng.random() < 0.5),
        "epoch": F.load_epoch_file,
        "ident": F.read_broker_identity,
        "cq": lambda p: F.read_consume_queue(p, strict=rng.random() < 0.5),
        "dump": F.read_jraft_dump,
    }
    import gzip

    dump_text = gzip.decompress(sources["dump"].read_bytes()).splitlines(keepends=True)[:60]
    for i in range(150):
        kind = rng.choice(sorted(sources))
        work = tmp_path / f"case{i}"
        src = sources[kind]
        if src.is_dir():
            shutil.copytree(src, work)
            targets = [p for p in work.rglob("*") if p.is_file() and p.stat().st_size and p.name != "currterm"]
        else:
            work.mkdir()
            shutil.copy(src, work / src.name)
            targets = [work / src.name]
        target = rng.choice(targets)
        if kind == "dump":
            data = bytearray(b"".join(dump_text))
            target = work / "dump.jsonl"
            (work / src.name).unlink()
        else:
            data = bytearray(target.read_bytes())
        limit = min(len(data), 3000)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(limit)] = rng.randrange(256)
        if rng.random() < 0.3:
            data = data[:rng.randrange(len(data) + 1)]
        target.write_bytes(bytes(data))
        arg = work if src.is_dir() else target
        try:
            readers[kind](arg)
        except RealFileError as exc:
            assert "\n" not in str(exc)


def test_v2_magic_and_ipv6_hosts(tmp_path):
    """Magic v2 (topic length as a short) and IPv6 born/store hosts (sysFlag 0x10/0x20), made from a real record."""
    raw = (V533 / "b3/store/commitlog/00000000000000000000").read_bytes()
    first = F.read_commitlog(V533 / "b3/store/commitlog").messages[0]
    rec = raw[:first.size]
    head, born, store_ts, store, tail = rec[:48], rec[48:56], rec[56:64], rec[64:72], rec[72:]
    body_len = struct.unpack(">i", tail[12:16])[0]
    topic_at = 16 + body_len
    v6 = bytes(15) + b"\x01"
    new = (head[:36] + struct.pack(">i", 0x30) + head[40:48] + v6 + born[4:] + store_ts + v6 + store[4:]
           + tail[:topic_at] + struct.pack(">h", tail[topic_at]) + tail[topic_at + 1:])
    new = struct.pack(">ii", len(new), F.MESSAGE_MAGIC_V2) + new[8:]
    d = tmp_path / "commitlog"
    d.mkdir()
    (d / "00000000000000000000").write_bytes(new + bytes(4096 - len(new)))
    cl = F.read_commitlog(d, strict=True)
    (m,) = cl.messages
    assert (m.magic_version, m.sys_flag, m.size) == (2, 0x30, first.size + 25)
    assert m.store_host == "[0:0:0:0:0:0:0:1]:41720" and m.born_host.startswith("[0:0:0:0:0:0:0:1]:")
    assert (m.topic, m.keys, m.body, m.body_crc_ok) == ("TopicA", ("key-0",), first.body, True)
    assert m.offset_msg_id == (v6 + struct.pack(">i", 41720) + bytes(8)).hex().upper()
