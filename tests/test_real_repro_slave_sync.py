"""The slave-sync reproductions (``rmqha/real/repros/slave_sync.py``): their helpers on planted files and log lines,
and (``-m slow``) the real runs on RocketMQ 5.3.3 (both reproduce) and 5.5.0 (F-SYNC-DELETES-EVERY-TOPIC does not:
the delete loop is fixed there)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rmqha.real import maven, netns
from rmqha.real.repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, run_repro
from rmqha.real.repros import REPROS
from rmqha.real.repros.slave_sync import (
    TopicsWatch,
    classify_send,
    loop_times,
    read_topics,
    read_topics_as_loaded,
    topic_batch,
)
from rmqha.real.spec import run_id

# ----------------------------------------------------------------------------------------- helpers


def test_both_findings_are_registered_with_their_invariant() -> None:
    for fid in ("F-SYNC-DELETES-EVERY-TOPIC", "F-TOPIC-CONFIG-LOST-ON-FAILOVER"):
        r = REPROS[fid]
        assert r.invariant == "QUEUE-ACKED-READABLE"
        assert r.config == {"cluster": {"brokers": 2}}
        assert set(r.expect) == {"5.3.3", "5.4.0", "5.5.0"}
    assert REPROS["F-SYNC-DELETES-EVERY-TOPIC"].expect["5.5.0"].startswith("fixed")


def test_topic_batch_is_what_update_topic_list_reads() -> None:
    (t,) = topic_batch(["A"], 2)
    assert t == {"topicName": "A", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6}


def _topics_json(names: list[str]) -> str:
    table = {n: {"topicName": n, "readQueueNums": 4, "writeQueueNums": 4, "perm": 6} for n in names}
    # RocketMQ writes it pretty-printed (ConfigManager.encode(true)): spaces around the colons
    return json.dumps({"dataVersion": {"counter": 3, "stateVersion": 0, "timestamp": 1}, "topicConfigTable": table},
                      indent="\t", separators=(",", " : "))


def test_read_topics_takes_a_whole_file_and_refuses_a_half_written_one(tmp_path: Path) -> None:
    p = tmp_path / "topics.json"
    assert read_topics(p) is None
    text = _topics_json(["A", "B"])
    p.write_text(text)
    assert set(read_topics(p) or {}) == {"A", "B"}
    p.write_text(text[: len(text) // 2])  # MixAll.string2File rewrites in place: a reader can see half of it
    assert read_topics(p) is None


def test_read_topics_as_loaded_falls_back_to_the_bak_as_config_manager_load_does(tmp_path: Path) -> None:
    (tmp_path / "topics.json.bak").write_text(_topics_json(["A"]))
    (tmp_path / "topics.json").write_text(_topics_json(["A", "B"]))
    t, which = read_topics_as_loaded(tmp_path)
    assert set(t or {}) == {"A", "B"} and which == "topics.json"
    (tmp_path / "topics.json").write_text("")  # a SIGKILL during 5.3.3's in-place rewrite leaves it empty
    t, which = read_topics_as_loaded(tmp_path)
    assert set(t or {}) == {"A"} and which == "topics.json.bak (topics.json empty)"


class _Spec:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root

    def store_dir(self, node: str) -> Path:
        return self.root / node / "store"


class _Lab:
    def __init__(self, root: Path) -> None:
        self.spec = _Spec(root)

    def now(self) -> int:
        return 1234


def test_topics_watch_sees_the_topic_absent_only_in_a_whole_file(tmp_path: Path) -> None:
    lab: Any = _Lab(tmp_path)
    p = tmp_path / "b1" / "store" / "config" / "topics.json"
    p.parent.mkdir(parents=True)
    w = TopicsWatch(lab, "b1", "ReproSync")
    assert w.look() is None  # no file yet
    p.write_text(_topics_json(["X", "ReproSync", "Y"]))
    lk = w.look()
    assert lk is not None and lk.complete and lk.has and lk.count == 3
    half = _topics_json(["X", "Y"])
    p.write_text(half[: len(half) - 40])
    lk = w.look()
    assert lk is not None and not lk.complete and not w.absent
    p.write_text(_topics_json(["X", "Y"]))
    lk = w.look()
    assert lk is not None and lk.complete and not lk.has and lk.count == 2
    assert [a.count for a in w.absent] == [2] and w.min_count_absent == 2
    assert w.keep(lk, "x.json").read_bytes() == p.read_bytes()


def test_classify_send() -> None:
    assert classify_send({"status": "SEND_OK"}) == "ok"
    assert classify_send({"status": "error", "code": 17,
                          "error": "MQBrokerException: CODE: 17  DESC: topic[T] not exist, apply first please!"}) \
        == "no-topic"
    assert classify_send({"status": "error", "error": "MQClientException: No route info of this topic: T"}) \
        == "no-route"
    assert classify_send({"status": "error", "code": 1,
                          "error": "MQBrokerException: CODE: 1  DESC: request queueId[5] is illegal"}) == "queue"
    assert classify_send({"status": "error", "error": "RemotingConnectException: connect failed"}) == "other"


def test_loop_times_reads_each_long_delete_loop_from_the_broker_log() -> None:
    head = "INFO BrokerControllerScheduledThread1 - "
    lines = [f"2026-01-01 00:00:00 {head}delete topic config OK, topic: TopicConfig [topicName=S{i}, ...]"
             for i in range(5)]
    lines.append(f"2026-01-01 00:00:01 {head}Update slave topic config from master, 10.0.0.1:10911")  # short: skipped
    lines += [f"2026-01-01 00:00:{10 + i // 50:02d} {head}delete topic config OK, topic: TopicConfig "
              f"[topicName=T{i}, ...]" for i in range(200)]
    lines.append(f"2026-01-01 00:00:30 {head}Update slave topic config from master, 10.0.0.1:10911")
    assert loop_times(lines) == [(200, 20.0)]


# ----------------------------------------------------------------------------------------- real runs


def _ready() -> None:
    ok, why = netns.available()
    if ok and not maven.maven_status()[0]:
        ok, why = False, "no Maven"
    if not ok:
        if os.environ.get("RMQHA_REQUIRE_REAL") == "1":
            pytest.fail(f"real RocketMQ runs are required here: {why}")
        pytest.skip(f"real RocketMQ: {why}")


@pytest.mark.slow
@pytest.mark.parametrize(("fid", "version", "want"), [
    ("F-SYNC-DELETES-EVERY-TOPIC", "5.3.3", REPRODUCED),
    ("F-SYNC-DELETES-EVERY-TOPIC", "5.5.0", NOT_REPRODUCED),
    ("F-TOPIC-CONFIG-LOST-ON-FAILOVER", "5.3.3", REPRODUCED),
    ("F-TOPIC-CONFIG-LOST-ON-FAILOVER", "5.5.0", REPRODUCED),
])
def test_real_slave_sync_repro(tmp_path: Path, fid: str, version: str, want: str) -> None:
    _ready()
    out = run_repro(REPROS[fid], version, tmp_path / "run")
    if out.verdict == INCONCLUSIVE:  # a window the run did not hit: says nothing either way
        pytest.skip(f"{fid} on {version}: inconclusive: {out.why}")
    assert out.verdict == want, (out.why, out.evidence)
    assert netns.existing(run_id(tmp_path / "run")) == []
